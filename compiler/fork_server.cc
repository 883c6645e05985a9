#include "compiler/fork_server.h"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>

#include "compiler/process_channel.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

// Passes descriptor `fd` over `socket`, or, with fd -1, one byte saying no
// process could be forked.
bool SendDescriptor(int socket, int fd) {
  char byte = fd < 0 ? 0 : 1;
  iovec data{&byte, 1};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
  }
  ssize_t sent;
  while ((sent = sendmsg(socket, &message, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  return sent == 1;
}

// The descriptor the server passed, -1 where it forked none, or nullopt once
// the server is gone.
std::optional<int> ReceiveDescriptor(int socket) {
  char byte = 0;
  iovec data{&byte, 1};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t received;
  while ((received = recvmsg(socket, &message, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  // A descriptor that could not be taken (no room for it) is a channel lost.
  if (received != 1 || (message.msg_flags & MSG_CTRUNC)) return std::nullopt;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(header), sizeof fd);
      return fd;
    }
  }
  return -1;
}

// One request's process: runs `work`, replies on `reply`, and ends.
[[noreturn]] void RunRequest(int reply, size_t item, const ForkServer::Work& work) {
  SendMessage(reply, RunOrExitOnThrow([&] { return work(item); }));
  _exit(0);
}

// The server's whole life: prepares, says whether it could, then forks a
// process per request until this process closes its end.
[[noreturn]] void Serve(int socket, const ForkServer::Prepare& prepare,
                        const ForkServer::Work& work) {
  CloseInheritedDescriptors(socket);
  absl::Status prepared;
  try {
    prepared = prepare();
  } catch (const std::exception& error) {
    prepared = absl::InternalError(error.what());
  }
  if (!SendMessage(socket, prepared.ok() ? "" : std::string(prepared.message())) || !prepared.ok())
    _exit(0);
  // Its requests' processes are waited for, so that the CPU time they spent
  // counts in this process's, and so in its parent's.
  const auto wait_for_ended = [] {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  };
  for (uint64_t item; ReceiveAll(socket, &item, sizeof item); wait_for_ended()) {
    int ends[2];
    pid_t pid = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0) {
      pid = fork();
      if (pid == 0) {
        close(ends[0]);
        close(socket);
        RunRequest(ends[1], item, work);
      }
      close(ends[1]);
      if (pid < 0) close(ends[0]);
    }
    const bool sent = SendDescriptor(socket, pid < 0 ? -1 : ends[0]);
    if (pid >= 0) close(ends[0]);
    if (!sent) break;
  }
  for (pid_t ended; (ended = wait(nullptr)) > 0 || (ended < 0 && errno == EINTR);) {
  }
  _exit(0);
}

}  // namespace

std::unique_ptr<ForkServer> ForkServer::Start(Prepare prepare, Work work) {
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) return nullptr;
  std::fflush(nullptr);  // or the server's copy of a buffer could be written twice
  const pid_t pid = fork();
  if (pid < 0) {
    close(ends[0]);
    close(ends[1]);
    return nullptr;
  }
  if (pid == 0) Serve(ends[1], prepare, work);
  close(ends[1]);
  return std::unique_ptr<ForkServer>(new ForkServer(pid, ends[0]));
}

ForkServer::~ForkServer() {
  close(socket_);
  int status;
  while (!reaped_ && waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

absl::Status ForkServer::Prepared() {
  if (!prepared_) {
    std::string why;
    int status = 0;
    if (!ReceiveMessage(socket_, why)) {
      reaped_ = waitpid(pid_, &status, WNOHANG) == pid_;
      prepared_ = absl::UnavailableError(
          fmt::format("its server process {}", reaped_ ? HowItEnded(status) : "ended"));
    } else
      prepared_ = why.empty() ? absl::OkStatus() : absl::UnavailableError(why);
  }
  return *prepared_;
}

absl::StatusOr<std::string> ForkServer::Run(size_t item) {
  int reply;
  {
    std::lock_guard lock(mutex_);
    if (absl::Status prepared = Prepared(); !prepared.ok()) return prepared;
    const uint64_t request = item;
    std::optional<int> passed;
    if (!SendAll(socket_, &request, sizeof request) || !(passed = ReceiveDescriptor(socket_))) {
      prepared_ = absl::UnavailableError("its server process ended");
      return *prepared_;
    }
    if (*passed < 0) return absl::UnavailableError("no process could be forked for it");
    reply = *passed;
  }
  std::string bytes;
  const bool replied = ReceiveMessage(reply, bytes);
  close(reply);
  if (!replied) return absl::InternalError("its process died (see any message above)");
  return bytes;
}

}  // namespace spreplay

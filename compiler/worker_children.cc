#include "compiler/worker_children.h"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

bool SendAll(int socket, const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    // MSG_NOSIGNAL: a dead peer is an error to report, not SIGPIPE.
    const ssize_t sent = send(socket, bytes, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    bytes += sent;
    size -= static_cast<size_t>(sent);
  }
  return true;
}

bool ReceiveAll(int socket, void* data, size_t size) {
  char* bytes = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t received = recv(socket, bytes, size, 0);
    if (received < 0 && errno == EINTR) continue;
    if (received <= 0) return false;
    bytes += received;
    size -= static_cast<size_t>(received);
  }
  return true;
}

bool SendMessage(int socket, std::string_view bytes) {
  const uint64_t size = bytes.size();
  return SendAll(socket, &size, sizeof size) && SendAll(socket, bytes.data(), bytes.size());
}

bool ReceiveMessage(int socket, std::string& bytes) {
  uint64_t size = 0;
  if (!ReceiveAll(socket, &size, sizeof size)) return false;
  bytes.resize(size);
  return ReceiveAll(socket, bytes.data(), size);
}

// The child's status when its work threw: the parent reports how it ended.
constexpr int kThrew = 70;

// A child's whole life: an item and its payload in, what `work` made of
// them out, until the parent closes its end.
[[noreturn]] void Serve(int socket, size_t worker, const ChildWork& work) {
  std::string payload;
  for (uint64_t item; ReceiveAll(socket, &item, sizeof item) && ReceiveMessage(socket, payload);) {
    std::string reply;
    try {
      reply = work(item, worker, payload);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "spreplay: a worker process failed: %s\n", error.what());
      _exit(kThrew);
    } catch (...) {
      std::fprintf(stderr, "spreplay: a worker process failed\n");
      _exit(kThrew);
    }
    if (!SendMessage(socket, reply)) break;
  }
  // Not exit(): the parent's atexit handlers and static destructors are the
  // parent's to run, and its stdio buffers its to flush.
  _exit(0);
}

// Closes every descriptor above stdio but `keep`: a pipe another thread of
// the parent has open (to a ptxas it runs) would otherwise stay open here
// for the child's whole life, and that thread would wait for its end.
void CloseInheritedDescriptors(int keep) {
  for (int fd = STDERR_FILENO + 1; fd < keep; ++fd) close(fd);
  if (close_range(static_cast<unsigned>(keep) + 1, ~0u, 0) != 0) {
    for (int fd = keep + 1; fd < 65536; ++fd) close(fd);
  }
}

std::string HowItEnded(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended";
}

}  // namespace

WorkerChildren::WorkerChildren(size_t workers, ChildWork work, WithoutChild without_child)
    : children_(workers), work_(std::move(work)), without_child_(without_child) {}

WorkerChildren::~WorkerChildren() {
  for (size_t worker = 0; worker < children_.size(); ++worker) Stop(worker);
}

absl::Status WorkerChildren::Start(size_t worker) {
  std::lock_guard lock(mutex_);
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    return absl::ResourceExhaustedError(
        fmt::format("no socket for a worker process: {}", strerror(errno)));
  std::fflush(nullptr);  // or the child's copy of a buffer could be written twice
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close(ends[0]);
    close(ends[1]);
    return absl::ResourceExhaustedError(
        fmt::format("no worker process could be started: {}", strerror(error)));
  }
  if (pid == 0) {
    // Among them the other children's sockets: a copy would keep one open
    // after the parent closes its end, and that child would never exit.
    CloseInheritedDescriptors(ends[1]);
    Serve(ends[1], worker, work_);
  }
  close(ends[1]);
  children_[worker] = {pid, ends[0]};
  return absl::OkStatus();
}

absl::StatusOr<std::string> WorkerChildren::Run(size_t item, size_t worker,
                                                std::string_view payload) {
  if (children_[worker].pid < 0) {
    if (absl::Status started = Start(worker); !started.ok()) {
      if (without_child_ == WithoutChild::kFail) return started;
      return work_(item, worker, payload);
    }
  }
  const int socket = children_[worker].socket;
  const uint64_t request = item;
  std::string reply;
  if (SendAll(socket, &request, sizeof request) && SendMessage(socket, payload) &&
      ReceiveMessage(socket, reply))
    return reply;
  return absl::InternalError(fmt::format("its worker process {}", Stop(worker)));
}

std::string WorkerChildren::Stop(size_t worker) {
  pid_t pid;
  {
    std::lock_guard lock(mutex_);
    Child& child = children_[worker];
    if (child.pid < 0) return "";
    close(child.socket);
    pid = child.pid;
    child = {};
  }
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited < 0) return fmt::format("ended, how is unknown ({})", strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == kThrew) return "failed (see its message above)";
  return HowItEnded(status);
}

}  // namespace spreplay

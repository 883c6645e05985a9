#include "compiler/worker_children.h"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "compiler/process_channel.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

// A child's whole life: an item and its payload in, what `work` made of
// them out, until the parent closes its end.
[[noreturn]] void Serve(int socket, size_t worker, const ChildWork& work) {
  std::string payload;
  for (uint64_t item; ReceiveAll(socket, &item, sizeof item) && ReceiveMessage(socket, payload);) {
    const std::string reply = RunOrExitOnThrow([&] { return work(item, worker, payload); });
    if (!SendMessage(socket, reply)) break;
  }
  // Not exit(): the parent's atexit handlers and static destructors are the
  // parent's to run, and its stdio buffers its to flush.
  _exit(0);
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
  if (WIFEXITED(status) && WEXITSTATUS(status) == kThrewExitStatus)
    return "failed (see its message above)";
  return HowItEnded(status);
}

}  // namespace spreplay

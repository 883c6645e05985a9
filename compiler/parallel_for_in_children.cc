#include "compiler/parallel_for_in_children.h"

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "compiler/parallel_for.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

using ChildWork = std::function<std::string(size_t item, size_t worker)>;

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

// A child's whole life: an item's index in, what `work` made of it out, until
// the parent closes its end.
[[noreturn]] void Serve(int socket, size_t worker, const ChildWork& work) {
  for (uint64_t item; ReceiveAll(socket, &item, sizeof item);) {
    const std::string reply = work(item, worker);
    const uint64_t size = reply.size();
    if (!SendAll(socket, &size, sizeof size) || !SendAll(socket, reply.data(), reply.size())) break;
  }
  // Not exit(): the parent's atexit handlers and static destructors are the
  // parent's to run, and its stdio buffers its to flush.
  _exit(0);
}

std::string HowItEnded(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended";
}

// Each worker's child process, and the parent's end of the socket to it.
class Children {
 public:
  Children(size_t workers, const ChildWork& work) : children_(workers), work_(work) {}
  ~Children() {
    for (size_t worker = 0; worker < children_.size(); ++worker) Stop(worker);
  }
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;

  // Forks `worker`'s child; false where it cannot.
  bool Start(size_t worker) {
    // Held across the fork: a child must know every other child's socket
    // at the moment it is forked (below).
    std::lock_guard lock(mutex_);
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) return false;
    std::fflush(nullptr);  // or the child's copy of a buffer could be written twice
    const pid_t pid = fork();
    if (pid < 0) {
      close(ends[0]);
      close(ends[1]);
      return false;
    }
    if (pid == 0) {
      // A copy of another child's socket would keep it open after the parent
      // closes its end, and that child would never be told to exit.
      for (const Child& other : children_) {
        if (other.socket >= 0) close(other.socket);
      }
      close(ends[0]);
      Serve(ends[1], worker, work_);
    }
    close(ends[1]);
    children_[worker] = {pid, ends[0]};
    return true;
  }

  absl::StatusOr<std::string> Run(size_t item, size_t worker) {
    if (children_[worker].pid < 0 && !Start(worker)) return work_(item, worker);
    const int socket = children_[worker].socket;
    const uint64_t request = item;
    uint64_t size = 0;
    std::string reply;
    bool answered =
        SendAll(socket, &request, sizeof request) && ReceiveAll(socket, &size, sizeof size);
    if (answered) {
      reply.resize(size);
      answered = ReceiveAll(socket, reply.data(), size);
    }
    if (answered) return reply;
    return absl::InternalError(fmt::format("its worker process {}", Stop(worker)));
  }

  // Ends `worker`'s child, if it has one: closing the parent's end is its
  // cue to exit. How it ended.
  std::string Stop(size_t worker) {
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
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return HowItEnded(status);
  }

 private:
  struct Child {
    pid_t pid = -1;
    int socket = -1;
  };
  std::mutex mutex_;
  std::vector<Child> children_;
  const ChildWork& work_;
};

}  // namespace

void ParallelForInChildren(
    size_t count, size_t workers, const ChildWork& child,
    const std::function<void(size_t item, size_t worker, const RunInChild& in_child)>& parent) {
  if (count == 0) return;
  workers = std::max<size_t>(1, std::min(workers, count));
  Children children(workers, child);
  for (size_t worker = 0; worker < workers; ++worker) children.Start(worker);
  ParallelFor(count, workers, [&](size_t item, size_t worker) {
    parent(item, worker, [&] { return children.Run(item, worker); });
  });
}

}  // namespace spreplay

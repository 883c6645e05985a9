#pragma once
// A child process that makes some state once (a configuration's shared Slang
// modules, loaded from source) and then forks a process of its own for each
// request: each starts from a copy of that state, which it may spend, and
// replies through a socket whose other end the server hands back. So
// requests from many threads run at once, none pays for the state again,
// and a crash takes down one request, never this process.

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace spreplay {

class ForkServer {
 public:
  using Prepare = std::function<absl::Status()>;
  using Work = std::function<std::string(size_t item)>;

  // Forks the server, which runs `prepare` and then serves `work`. Call it
  // before any other thread starts: the server must inherit no lock another
  // thread holds. Null where no process can be forked.
  static std::unique_ptr<ForkServer> Start(Prepare prepare, Work work);
  ~ForkServer();  // ends the server once its requests in flight are done
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  // `item` run in a process forked from the prepared server (waiting for it
  // to be prepared), or why not: Unavailable where `prepare` failed, the
  // server is gone or could fork no process, so that the caller may run it
  // elsewhere; Internal where that process died.
  absl::StatusOr<std::string> Run(size_t item);

 private:
  ForkServer(pid_t pid, int socket) : pid_(pid), socket_(socket) {}
  // The server's answer to whether it is prepared; under mutex_.
  absl::Status Prepared();

  std::mutex mutex_;
  const pid_t pid_;
  bool reaped_ = false;  // Prepared() waited for it: its pid may be another process's now
  const int socket_;
  std::optional<absl::Status> prepared_;
};

}  // namespace spreplay

#include "compiler/process_channel.h"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>

#include "fmt/format.h"

namespace spreplay {

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

std::string RunOrExitOnThrow(const std::function<std::string()>& work) {
  try {
    return work();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "spreplay: a worker process failed: %s\n", error.what());
  } catch (...) {
    std::fprintf(stderr, "spreplay: a worker process failed\n");
  }
  _exit(kThrewExitStatus);
}

}  // namespace spreplay

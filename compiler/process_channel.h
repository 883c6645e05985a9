#pragma once
// Messages between this process and the ones it forks, over a socket of a
// socketpair: each a length, then its bytes. And what a forked process does
// first, and how one ended, in words.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace spreplay {

// False once the peer is gone (a dead peer is an error, not SIGPIPE).
bool SendAll(int socket, const void* data, size_t size);
bool ReceiveAll(int socket, void* data, size_t size);
bool SendMessage(int socket, std::string_view bytes);
bool ReceiveMessage(int socket, std::string& bytes);

// Closes every descriptor above stdio but `keep`: a pipe another thread of
// the parent has open (to a ptxas it runs) would otherwise stay open in the
// forked process for its whole life, and that thread would wait for its end.
void CloseInheritedDescriptors(int keep);

// A waitpid status, as "was killed by signal 11 (Segmentation fault)".
std::string HowItEnded(int status);

// The status a forked process exits with when its work threw; it says so on
// stderr first.
inline constexpr int kThrewExitStatus = 70;

// What `work` returns; where it throws, a forked process has no caller to
// throw to: it says so on stderr and exits with kThrewExitStatus.
std::string RunOrExitOnThrow(const std::function<std::string()>& work);

}  // namespace spreplay

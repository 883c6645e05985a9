#include "replayer/recorded_working_directory.h"

#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace spreplay {
namespace {

// The directory getcwd() reports on this thread; null for the real one. The
// one piece of state that must be global: libc's callers have no other way in.
thread_local const std::string* recorded_directory = nullptr;

using GetcwdFn = char* (*)(char*, size_t);

GetcwdFn RealGetcwd() {
  static const GetcwdFn real = reinterpret_cast<GetcwdFn>(dlsym(RTLD_NEXT, "getcwd"));
  return real;
}

// getcwd's contract (with glibc's extension: a null buffer is allocated).
char* CopyDirectory(const std::string& directory, char* buffer, size_t size) {
  const size_t needed = directory.size() + 1;
  if (!buffer) {
    if (size != 0 && size < needed) {
      errno = ERANGE;
      return nullptr;
    }
    buffer = static_cast<char*>(std::malloc(size == 0 ? needed : size));
    if (!buffer) {
      errno = ENOMEM;
      return nullptr;
    }
  } else if (size < needed) {
    errno = size == 0 ? EINVAL : ERANGE;
    return nullptr;
  }
  std::memcpy(buffer, directory.c_str(), needed);
  return buffer;
}

}  // namespace

bool TakeOverWorkingDirectoryForNvrtc() {
  unsetenv("PWD");
  return dlsym(RTLD_DEFAULT, "getcwd") != reinterpret_cast<void*>(RealGetcwd());
}

RecordedWorkingDirectory::RecordedWorkingDirectory(const std::string& directory)
    : previous_(recorded_directory) {
  if (!directory.empty()) recorded_directory = &directory;
}

RecordedWorkingDirectory::~RecordedWorkingDirectory() { recorded_directory = previous_; }

}  // namespace spreplay

extern "C" __attribute__((visibility("default"))) char* getcwd(char* buffer, size_t size) {
  if (const std::string* directory = spreplay::recorded_directory)
    return spreplay::CopyDirectory(*directory, buffer, size);
  const spreplay::GetcwdFn real = spreplay::RealGetcwd();
  if (!real) {
    errno = ENOSYS;
    return nullptr;
  }
  return real(buffer, size);
}

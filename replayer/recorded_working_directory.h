#pragma once
// NVRTC writes the working directory of the process it runs in into PTX with
// debug information: in the path of every relative #line file and as the
// DWARF unit's compilation directory. A replay must reproduce the recording
// process's directory on whichever thread it runs, without changing the
// compiling process's own, which its other threads share.
//
// So this library answers getcwd() itself: with the recorded directory on a
// thread inside a RecordedWorkingDirectory scope, with the real one anywhere
// else. Its definition takes the place of libc's only in an executable that
// exports it, which replayer/CMakeLists.txt arranges for every executable
// linking the replayer.

#include <string>

namespace spreplay {

// NVRTC reads $PWD before it calls getcwd(), so a process that replays must
// drop $PWD before it starts threads. Returns whether getcwd() is answered
// here; without that, a replay's line information names the compiling
// process's directory.
bool TakeOverWorkingDirectoryForNvrtc();

// For the life of the scope, getcwd() on this thread returns `directory`
// ("" leaves it alone).
class RecordedWorkingDirectory {
 public:
  explicit RecordedWorkingDirectory(const std::string& directory);
  // It keeps a pointer to `directory`, which must outlive the scope.
  explicit RecordedWorkingDirectory(std::string&&) = delete;
  ~RecordedWorkingDirectory();
  RecordedWorkingDirectory(const RecordedWorkingDirectory&) = delete;
  RecordedWorkingDirectory& operator=(const RecordedWorkingDirectory&) = delete;

 private:
  const std::string* previous_;
};

}  // namespace spreplay

#pragma once
// The working directory of this process as the compilers running in it see
// it. NVRTC (like LLVM) prefers $PWD to getcwd() when both name the same
// directory, so a directory entered through a symbolic link keeps the link's
// path; that is the path that ends up in PTX with debug information.

#include <string>

namespace spreplay {

// $PWD if it is absolute and names the same directory as ".", else getcwd();
// "" if neither can be had.
std::string WorkingDirectoryAsToolsSeeIt();

}  // namespace spreplay

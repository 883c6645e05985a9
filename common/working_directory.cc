#include "common/working_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace spreplay {

std::string WorkingDirectoryAsToolsSeeIt() {
  if (const char* pwd = std::getenv("PWD"); pwd && pwd[0] == '/') {
    struct stat named = {};
    struct stat dot = {};
    if (stat(pwd, &named) == 0 && stat(".", &dot) == 0 && named.st_dev == dot.st_dev &&
        named.st_ino == dot.st_ino)
      return pwd;
  }
  std::string buffer(4096, '\0');
  if (!getcwd(buffer.data(), buffer.size())) return "";
  buffer.resize(buffer.find('\0'));
  return buffer;
}

}  // namespace spreplay

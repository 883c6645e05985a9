#pragma once
// The subcommands of the spreplay tool. Each returns the process exit code:
// 0 success, 1 the work failed, 2 the command line was wrong.

#include <span>

namespace spreplay {

int RunCompile(std::span<char*> args);
int RunExplain(std::span<char*> args);
int RunExtract(std::span<char*> args);
int RunInspect(std::span<char*> args);
int RunMerge(std::span<char*> args);
int RunVerify(std::span<char*> args);
int RunVersion(std::span<char*> args);

}  // namespace spreplay

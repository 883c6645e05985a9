#include "replayer/replayer_slang.h"

#include <cstdlib>

#include "build_info/slang_build.h"
#include "common/fmt_absl.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

absl::StatusOr<SlangLibrary> OpenBuiltForSlang() {
  // The console script names the slangpy's library by path (--slangpy DIR):
  // by file name, the dynamic loader would search this binary's RPATH, the
  // slangpy beside spreplay, before anything else.
  const char* named = std::getenv("SPREPLAY_SLANG_LIBRARY");
  absl::StatusOr<SlangLibrary> opened =
      OpenSlangLibrary(named && *named ? named : SPREPLAY_SLANG_FILE_NAME);
  if (!opened.ok()) {
    return absl::FailedPreconditionError(fmt::format(
        "Slang is missing: this spreplay tool replays kernels with Slang {} ({}), loaded from a "
        "slangpy that bundles it, installed beside spreplay or named with --slangpy DIR ({}); "
        "spreplay supports {}",
        kSlangBuild, SPREPLAY_SLANG_FILE_NAME, opened.status().message(), kSupportedBuilds));
  }
  // A library of another build is never called beyond asking its build.
  if (absl::Status same = RequireThisSlangBuild(*opened, "tool"); !same.ok()) return same;
  return opened;
}

}  // namespace

absl::StatusOr<const SlangLibrary*> ReplayerSlang() {
  static const absl::StatusOr<SlangLibrary> slang = OpenBuiltForSlang();
  if (!slang.ok()) return slang.status();
  return &*slang;
}

}  // namespace spreplay

#include "replayer/replayer_slang.h"

#include "common/fmt_absl.h"
#include "fmt/format.h"

namespace spreplay {

absl::StatusOr<const SlangLibrary*> ReplayerSlang() {
  static const absl::StatusOr<SlangLibrary> slang =
      [](absl::StatusOr<SlangLibrary> opened) -> absl::StatusOr<SlangLibrary> {
    if (opened.ok()) return opened;
    return absl::FailedPreconditionError(fmt::format(
        "Slang is missing: spreplay replays kernels with the Slang of the slangpy it was built "
        "for ({}), loaded from that slangpy installed beside spreplay ({}); install that "
        "slangpy into the Python environment spreplay is installed in (pip install spreplay "
        "installs it)",
        SPREPLAY_SLANG_FILE_NAME, opened.status().message()));
  }(OpenSlangLibrary(SPREPLAY_SLANG_FILE_NAME));
  if (!slang.ok()) return slang.status();
  return &*slang;
}

}  // namespace spreplay

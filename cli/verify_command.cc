// spreplay verify ARCHIVE: checks every kernel image and every module's IR
// against its checksum, and says nothing else. For CI and deploy scripts:
// the exit status is 0 only for an archive with no damaged byte.

#include <string_view>

#include "archive/archive.h"
#include "archive/verify_blobs.h"
#include "cli/commands.h"
#include "common/fmt_absl.h"
#include "fmt/format.h"

namespace spreplay {

int RunVerify(std::span<char*> args) {
  if (args.size() != 1 || std::string_view(args[0]).starts_with("-")) {
    fmt::print(stderr, "usage: spreplay verify ARCHIVE\n");
    return 2;
  }
  const std::string path = args[0];
  absl::StatusOr<Archive> archive = Archive::Open(path);
  if (!archive.ok()) {
    fmt::print(stderr, "spreplay: {}\n", archive.status());
    return 1;
  }
  const BlobDamage damage = VerifyEveryBlob(*archive);
  for (const std::string& message : damage.damaged) fmt::print(stderr, "spreplay: {}\n", message);
  if (!damage.damaged.empty()) {
    fmt::print(stderr, "spreplay: {}\n", DamageSummary(damage, path));
    return 1;
  }
  fmt::print("{}: intact ({} kernel images, {} module IR)\n", path, damage.blobs_checked,
             damage.modules_checked);
  return 0;
}

}  // namespace spreplay

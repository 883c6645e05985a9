#include <string_view>

#include "archive/archive.h"
#include "cli/commands.h"
#include "common/capnp_digest.h"
#include "common/fmt_absl.h"
#include "common/whole_file.h"
#include "fmt/format.h"

namespace spreplay {

int RunExtract(std::span<char*> args) {
  constexpr std::string_view kUsage =
      "usage: spreplay extract ARCHIVE KEY -o OUT.fatbin   (KEY: hex, a prefix is enough)\n";
  std::string archive_path, key_prefix, output;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if ((arg == "-o" || arg == "--output") && i + 1 < args.size()) {
      output = args[++i];
    } else if (archive_path.empty()) {
      archive_path = arg;
    } else if (key_prefix.empty()) {
      key_prefix = arg;
    } else {
      fmt::print(stderr, "{}", kUsage);
      return 2;
    }
  }
  if (archive_path.empty() || key_prefix.empty() || output.empty()) {
    fmt::print(stderr, "{}", kUsage);
    return 2;
  }
  absl::StatusOr<Archive> archive = Archive::Open(archive_path);
  if (!archive.ok()) {
    fmt::print(stderr, "spreplay extract: {}\n", archive.status());
    return 1;
  }
  std::optional<ArchivedKernel> match;
  for (size_t i = 0; i < archive->kernel_count(); ++i) {
    ArchivedKernel kernel = archive->kernel(i);
    if (!HexOf(kernel.entry.getKey()).starts_with(key_prefix)) continue;
    if (match) {
      fmt::print(stderr, "spreplay extract: '{}' matches more than one kernel; give more digits\n",
                 key_prefix);
      return 1;
    }
    match = kernel;
  }
  if (!match) {
    fmt::print(stderr, "spreplay extract: no kernel in {} has a key starting with '{}'\n",
               archive_path, key_prefix);
    return 1;
  }
  // An OptiX program is archived as the PTX OptiX compiles; every other kernel as a fatbin.
  const bool optix = match->entry.getOptix();
  absl::StatusOr<std::span<const std::byte>> fatbin =
      optix ? archive->Blob(*match, schema::BlobKind::PTX, match->entry.getPtxArch())
            : archive->Blob(*match, schema::BlobKind::FATBIN);
  if (!fatbin.ok()) {
    fmt::print(stderr, "spreplay extract: {}\n", fatbin.status());
    return 1;
  }
  const std::string_view bytes(reinterpret_cast<const char*>(fatbin->data()), fatbin->size());
  if (absl::Status written = WriteFile(output, bytes); !written.ok()) {
    fmt::print(stderr, "spreplay extract: {}\n", written);
    return 1;
  }
  if (optix) fmt::print(stderr, "spreplay extract: an OptiX program: wrote its PTX\n");
  return 0;
}

}  // namespace spreplay

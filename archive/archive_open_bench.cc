// Measures what the runtime pays at Python import time: opening a 10,000-kernel archive (map,
// header, index checksum, index validation) and serving lookups from it.
//
// Usage: archive_open_bench [kernel_count]   (default 10000)

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "archive/archive.h"
#include "archive/archive_writer.h"
#include "common/fmt_absl.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

constexpr int kRepetitions = 21;
constexpr int kLookups = 1000;
constexpr size_t kFatbinSize = 4096;
constexpr int kDependenciesPerKernel = 6;

Digest KeyOf(uint64_t i) { return Sha256Of(fmt::format("kernel {}", i)); }

// Roughly the shape of a real entry: a few dependencies, several SASS arches, one fatbin.
absl::Status BuildArchive(const std::string& path, size_t kernel_count) {
  ArchiveProvenance provenance;
  provenance.toolchain = "slangpy 0.43.1 slang 2026.12";
  provenance.spreplay_version = "0.1.0";
  ArchiveWriter writer(std::move(provenance));
  for (size_t i = 0; i < kernel_count; ++i) {
    KernelMetadata metadata;
    metadata.key = KeyOf(i);
    metadata.call_site = {.module_name = "mlp",
                          .function_name = fmt::format("layer_{}", i),
                          .call_kind = "call",
                          .wrapper_module_name = fmt::format("wrapper_{:016x}", i),
                          .entry_point_name = "compute_main"};
    metadata.session_digest = Sha256Of("session");
    metadata.program_digest = Sha256Of(fmt::format("program {}", i));
    metadata.sass_arches = {75, 80, 86, 89, 90, 100, 120};
    metadata.ptx_arch = 75;
    for (int d = 0; d < kDependenciesPerKernel; ++d) {
      metadata.manifest.push_back({.digest = Sha256Of(fmt::format("dep {}", d)),
                                   .recorded_path = fmt::format("/src/shaders/dep_{}.slang", d)});
    }
    std::vector<std::byte> fatbin(kFatbinSize, std::byte{0});
    const std::string tag = fmt::format("fatbin {}", i);
    std::copy_n(reinterpret_cast<const std::byte*>(tag.data()), tag.size(), fatbin.begin());
    absl::Status status = writer.Add(
        std::move(metadata), {{.kind = schema::BlobKind::FATBIN, .bytes = std::move(fatbin)}});
    if (!status.ok()) return status;
  }
  return writer.Write(path);
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int Run(size_t kernel_count) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     fmt::format("archive_open_bench_{}.spra", ::getpid());
  if (absl::Status status = BuildArchive(path.string(), kernel_count); !status.ok()) {
    fmt::print(stderr, "cannot build the archive: {}\n", status);
    return 1;
  }
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  std::vector<Digest> lookup_keys;
  for (int i = 0; i < kLookups; ++i) {
    lookup_keys.push_back(KeyOf(static_cast<uint64_t>(i) * 7 % kernel_count));
  }
  std::vector<double> open_ms;
  std::vector<double> lookup_ms;
  std::vector<double> first_blob_ms;
  uint64_t index_size = 0;
  for (int repetition = 0; repetition < kRepetitions; ++repetition) {
    Clock::time_point start = Clock::now();
    absl::StatusOr<Archive> archive = Archive::Open(path.string());
    open_ms.push_back(ms_since(start));
    if (!archive.ok()) {
      fmt::print(stderr, "{}\n", archive.status());
      return 1;
    }
    index_size = archive->header().index_size;
    start = Clock::now();
    size_t found = 0;
    for (const Digest& key : lookup_keys) found += archive->Find(key).has_value();
    lookup_ms.push_back(ms_since(start));
    if (found != kLookups) {
      fmt::print(stderr, "only {} of {} lookups hit\n", found, kLookups);
      return 1;
    }
    const std::optional<ArchivedKernel> kernel = archive->Find(KeyOf(repetition));
    start = Clock::now();
    const bool served = archive->Blob(*kernel, schema::BlobKind::FATBIN).ok();
    first_blob_ms.push_back(ms_since(start));
    if (!served) return 1;
  }
  fmt::print("archive: {} kernels, {} bytes, index {} bytes\n", kernel_count,
             std::filesystem::file_size(path), index_size);
  fmt::print("open (map + validate):       {:8.3f} ms  (median of {})\n", Median(open_ms),
             kRepetitions);
  fmt::print("{} lookups:                {:8.3f} ms\n", kLookups, Median(lookup_ms));
  fmt::print("first fatbin served (CRC):   {:8.3f} ms  ({} bytes)\n", Median(first_blob_ms),
             kFatbinSize);
  std::filesystem::remove(path);
  return 0;
}

}  // namespace
}  // namespace spreplay

int main(int argc, char** argv) {
  const size_t kernel_count = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000;
  if (kernel_count == 0) {
    fmt::print(stderr, "usage: archive_open_bench [kernel_count > 0]\n");
    return 2;
  }
  return spreplay::Run(kernel_count);
}

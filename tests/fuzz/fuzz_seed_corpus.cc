// Writes small valid archives and traces into DIR/archive and DIR/trace for the fuzzers to mutate.
// Valid seeds matter: checksums guard most of both formats, and random mutation alone would
// almost never produce an input that gets past them.
//
// Usage: fuzz_seed_corpus DIR

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "archive/archive_writer.h"
#include "common/fmt_absl.h"
#include "fmt/format.h"
#include "recorder/trace_log.h"

namespace spreplay {
namespace {

std::vector<std::byte> Bytes(std::string_view text) {
  const auto bytes = std::as_bytes(std::span(text.data(), text.size()));
  return {bytes.begin(), bytes.end()};
}

KernelMetadata Kernel(int i) {
  KernelMetadata metadata;
  metadata.key = Sha256Of(fmt::format("seed kernel {}", i));
  metadata.call_site = {.module_name = "mlp",
                        .function_name = fmt::format("f{}", i),
                        .call_kind = i % 2 == 0 ? "call" : "bwds",
                        .wrapper_module_name = "w",
                        .entry_point_name = "main"};
  metadata.manifest = {{.digest = Sha256Of("dep"), .recorded_path = "/a.slang"}};
  metadata.session_digest = Sha256Of("session");
  metadata.program_digest = Sha256Of(fmt::format("program {}", i));
  metadata.sass_arches = {80, 90};
  metadata.ptx_arch = 80;
  return metadata;
}

absl::Status WriteArchives(const std::filesystem::path& dir) {
  ArchiveProvenance provenance;
  provenance.toolchain = "slangpy 0.43.1 slang 2026.12";
  provenance.spreplay_version = "0.1.0";
  ArchiveWriter empty(provenance);
  if (absl::Status status = empty.Write((dir / "empty.spra").string()); !status.ok()) {
    return status;
  }
  ArchiveWriter one(provenance);
  absl::Status status = one.Add(
      Kernel(0), {{.kind = schema::BlobKind::FATBIN, .arch = 0, .bytes = Bytes("fatbin 0")},
                  {.kind = schema::BlobKind::PTX, .arch = 80, .bytes = Bytes(".version 8.0")},
                  {.kind = schema::BlobKind::CUBIN,
                   .arch = 90,
                   .bytes = Bytes("\x7f"
                                  "ELF")}});
  if (status.ok()) status = one.Write((dir / "one_kernel.spra").string());
  if (!status.ok()) return status;
  // Three kernels sharing one fatbin: exercises the search and shared blob offsets.
  ArchiveWriter three(provenance);
  for (int i = 0; i < 3 && status.ok(); ++i) {
    status = three.Add(Kernel(i),
                       {{.kind = schema::BlobKind::FATBIN, .arch = 0, .bytes = Bytes("shared")}});
  }
  if (status.ok()) status = three.Write((dir / "three_kernels.spra").string());
  if (!status.ok()) return status;
  // A kernel with two serialized modules, one importing the other, and one left out.
  ArchiveWriter modules(provenance);
  status =
      modules.Add(Kernel(0), {{.kind = schema::BlobKind::FATBIN, .arch = 0, .bytes = Bytes("f")}});
  ModuleMetadata library;
  library.key = Sha256Of("module slangpy");
  library.content_digest = Sha256Of("content slangpy");
  library.session_digest = Sha256Of("session");
  library.name = "slangpy";
  library.requested_name = "slangpy";
  library.files = {{.digest = Sha256Of("dep"),
                    .root = schema::PathRoot::SEARCH_PATH,
                    .root_index = 1,
                    .relative_path = "slangpy.slang",
                    .recorded_path = "/venv/slangpy/slang/slangpy.slang"}};
  library.file_path = library.files[0];
  ModuleMetadata wrapper = library;
  wrapper.key = Sha256Of("module wrapper");
  wrapper.name = "wrapper";
  wrapper.requested_name = "";
  wrapper.source_lookup = Sha256Of("wrapper text");
  wrapper.path = "0123456789abcdef0123456789abcdef01234567";
  wrapper.imports = {library.key};
  modules.AddModule(library, "RIFF library IR");
  modules.AddModule(wrapper, "RIFF wrapper IR");
  modules.AddUnservedModule({Sha256Of("session"), "noise.slang", "debug information"});
  if (status.ok()) status = modules.Write((dir / "modules.spra").string());
  return status;
}

absl::Status WriteTraces(const std::filesystem::path& dir) {
  std::filesystem::remove(dir / "frames.sprt");
  absl::StatusOr<TraceLogWriter> writer = TraceLogWriter::Open((dir / "frames.sprt").string());
  if (!writer.ok()) return writer.status();
  for (std::string_view payload : {"", "a", "record with some bytes", "0123456789abcdef"}) {
    if (absl::Status status = writer->Append(Bytes(payload)); !status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace spreplay

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: fuzz_seed_corpus DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir / "archive");
  std::filesystem::create_directories(dir / "trace");
  absl::Status status = spreplay::WriteArchives(dir / "archive");
  if (status.ok()) status = spreplay::WriteTraces(dir / "trace");
  if (!status.ok()) {
    fmt::print(stderr, "fuzz_seed_corpus: {}\n", status);
    return 1;
  }
  return 0;
}

#include "archive/archive_writer.h"

#include <algorithm>
#include <set>
#include <span>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "archive/archive_format.h"
#include "archive/atomic_file.h"
#include "archive/blob_kind.h"
#include "archive/module_entry.h"
#include "capnp/message.h"
#include "capnp/serialize.h"
#include "common/capnp_digest.h"
#include "common/crc32c.h"
#include "common/fmt_absl.h"
#include "fmt/format.h"
#include "kj/string.h"

namespace spreplay {
namespace {

struct BlobPlacement {
  uint64_t offset = 0;
  uint32_t crc32c = 0;
  Digest sha256;
};

// Where every distinct blob goes, in file order.
struct BlobLayout {
  absl::flat_hash_map<Digest, BlobPlacement> by_sha256;
  std::vector<std::pair<uint64_t, std::span<const std::byte>>> writes;
  uint64_t end = kArchiveHeaderSize;
};

// Cap'n Proto's text setters want a NUL-terminated string; std::string provides one.
kj::StringPtr AsText(const std::string& text) { return kj::StringPtr(text.c_str(), text.size()); }

absl::Status CheckBinaries(const Digest& key, bool optix,
                           const std::vector<KernelBinary>& binaries) {
  std::set<std::pair<schema::BlobKind, uint32_t>> seen;
  int fatbins = 0;
  int ptxs = 0;
  for (const KernelBinary& binary : binaries) {
    const std::string kind = BlobKindName(binary.kind);
    if (binary.kind == schema::BlobKind::UNSPECIFIED) {
      return absl::InvalidArgumentError(
          fmt::format("kernel {} has a binary of unspecified kind", key.ToHex()));
    }
    if (binary.bytes.empty()) {
      return absl::InvalidArgumentError(
          fmt::format("kernel {} has an empty {} for arch {}", key.ToHex(), kind, binary.arch));
    }
    ptxs += binary.kind == schema::BlobKind::PTX;
    if (binary.kind == schema::BlobKind::FATBIN) {
      ++fatbins;
      if (binary.arch != 0) {
        return absl::InvalidArgumentError(fmt::format(
            "kernel {} has a fatbin with arch {}: a fatbin spans arches and takes arch 0",
            key.ToHex(), binary.arch));
      }
    }
    if (!seen.emplace(binary.kind, binary.arch).second) {
      return absl::InvalidArgumentError(
          fmt::format("kernel {} has two {} blobs for arch {}", key.ToHex(), kind, binary.arch));
    }
  }
  if (optix && (fatbins != 0 || ptxs != 1)) {
    return absl::InvalidArgumentError(fmt::format(
        "OptiX kernel {} has {} fatbins and {} PTX blobs: the runtime serves exactly one PTX",
        key.ToHex(), fatbins, ptxs));
  }
  if (!optix && fatbins != 1) {
    return absl::InvalidArgumentError(fmt::format(
        "kernel {} has {} fatbins: the runtime serves exactly one", key.ToHex(), fatbins));
  }
  return absl::OkStatus();
}

// Lays `bytes` out in the blob region (once per content) and describes it in `out`.
void PlaceBlob(schema::BlobKind kind, uint32_t arch, std::span<const std::byte> bytes,
               BlobLayout& layout, schema::Blob::Builder out) {
  const Digest sha256 = Sha256Of(bytes);
  auto [placement, is_new] = layout.by_sha256.try_emplace(sha256);
  if (is_new) {
    placement->second = BlobPlacement{.offset = AlignUpTo(layout.end, kArchiveBlobAlignment),
                                      .crc32c = Crc32c(bytes),
                                      .sha256 = sha256};
    layout.writes.emplace_back(placement->second.offset, bytes);
    layout.end = placement->second.offset + bytes.size();
  }
  out.setKind(kind);
  out.setArch(arch);
  out.setOffset(placement->second.offset);
  out.setSize(bytes.size());
  out.setCrc32c(placement->second.crc32c);
  out.setSha256(DataOf(sha256));
}

void FillCallSite(const KernelCallSite& call_site, schema::CallSite::Builder out) {
  out.setModuleName(AsText(call_site.module_name));
  out.setFunctionName(AsText(call_site.function_name));
  out.setCallKind(AsText(call_site.call_kind));
  out.setWrapperModuleName(AsText(call_site.wrapper_module_name));
  out.setEntryPointName(AsText(call_site.entry_point_name));
}

void FillEntry(const KernelMetadata& metadata, const std::vector<KernelBinary>& binaries,
               BlobLayout& layout, schema::KernelEntry::Builder out) {
  out.setKey(DataOf(metadata.key));
  FillCallSite(metadata.call_site, out.initCallSite());
  auto manifest = out.initManifest(static_cast<unsigned>(metadata.manifest.size()));
  for (size_t i = 0; i < metadata.manifest.size(); ++i) {
    manifest[i].setDigest(DataOf(metadata.manifest[i].digest));
    manifest[i].setPath(AsText(metadata.manifest[i].recorded_path));
  }
  out.setSessionDigest(DataOf(metadata.session_digest));
  out.setProgramDigest(DataOf(metadata.program_digest));
  auto sass_arches = out.initSassArches(static_cast<unsigned>(metadata.sass_arches.size()));
  for (size_t i = 0; i < metadata.sass_arches.size(); ++i)
    sass_arches.set(i, metadata.sass_arches[i]);
  out.setPtxArch(metadata.ptx_arch);
  out.setOptix(metadata.optix);

  auto blobs = out.initBlobs(static_cast<unsigned>(binaries.size()));
  for (size_t i = 0; i < binaries.size(); ++i) {
    PlaceBlob(binaries[i].kind, binaries[i].arch, binaries[i].bytes, layout, blobs[i]);
  }
}

void FillModule(const ModuleMetadata& metadata, std::string_view ir, BlobLayout& layout,
                schema::ModuleEntry::Builder out) {
  FillModuleEntry(metadata, out);
  PlaceBlob(schema::BlobKind::SLANG_MODULE, 0, std::as_bytes(std::span(ir.data(), ir.size())),
            layout, out.initBlob());
}

}  // namespace

ArchiveWriter::ArchiveWriter(ArchiveProvenance provenance) : provenance_(std::move(provenance)) {}

absl::Status ArchiveWriter::Add(KernelMetadata metadata, std::vector<KernelBinary> binaries) {
  if (absl::Status status = CheckBinaries(metadata.key, metadata.optix, binaries); !status.ok())
    return status;
  const Digest key = metadata.key;
  kernels_.insert_or_assign(key, Kernel{std::move(metadata), std::move(binaries)});
  return absl::OkStatus();
}

void ArchiveWriter::AddUnbuilt(UnbuiltKernel kernel) {
  const Digest key = kernel.key;
  unbuilt_.insert_or_assign(key, std::move(kernel));
}

void ArchiveWriter::AddSessionSettings(const Digest& digest, std::vector<std::string> settings) {
  session_settings_.insert_or_assign(digest, std::move(settings));
}

void ArchiveWriter::AddModule(ModuleMetadata metadata, std::string ir) {
  const Digest key = metadata.key;
  modules_.insert_or_assign(key, Module{std::move(metadata), std::move(ir)});
}

void ArchiveWriter::AddUnservedModule(UnservedModule module) {
  unserved_modules_.insert_or_assign({module.session_digest, module.name},
                                     std::move(module.reason));
}

absl::Status ArchiveWriter::Write(const std::string& path) const {
  capnp::MallocMessageBuilder message;
  auto index = message.initRoot<schema::ArchiveIndex>();
  index.setFormatVersion(kArchiveFormatVersion);
  index.setToolchain(AsText(provenance_.toolchain));
  index.setSpreplayVersion(AsText(provenance_.spreplay_version));
  auto creation = index.initCreation();
  creation.setCreatedUnixSeconds(provenance_.created_unix_seconds);
  creation.setHost(AsText(provenance_.host));
  creation.setCommand(AsText(provenance_.command));

  BlobLayout layout;
  auto entries = index.initEntries(static_cast<unsigned>(kernels_.size()));
  unsigned position = 0;
  for (const auto& [key, kernel] : kernels_) {
    FillEntry(kernel.metadata, kernel.binaries, layout, entries[position++]);
  }
  unsigned unbuilt_count = 0;
  for (const auto& [key, kernel] : unbuilt_) unbuilt_count += !kernels_.contains(key);
  auto unbuilt = index.initUnbuilt(unbuilt_count);
  position = 0;
  for (const auto& [key, kernel] : unbuilt_) {
    if (kernels_.contains(key)) continue;
    auto out = unbuilt[position++];
    out.setKey(DataOf(key));
    FillCallSite(kernel.call_site, out.initCallSite());
    out.setReason(AsText(kernel.reason));
  }
  auto sessions = index.initSessions(static_cast<unsigned>(session_settings_.size()));
  position = 0;
  for (const auto& [digest, settings] : session_settings_) {
    auto out = sessions[position++];
    out.setDigest(DataOf(digest));
    auto lines = out.initSettings(static_cast<unsigned>(settings.size()));
    for (unsigned i = 0; i < settings.size(); ++i) lines.set(i, AsText(settings[i]));
  }

  auto modules = index.initModules(static_cast<unsigned>(modules_.size()));
  position = 0;
  std::set<std::pair<Digest, std::string>> served_modules;
  for (const auto& [key, module] : modules_) {
    FillModule(module.metadata, module.ir, layout, modules[position++]);
    served_modules.insert({module.metadata.session_digest, module.metadata.name});
  }
  unsigned unserved_count = 0;
  for (const auto& [which, reason] : unserved_modules_)
    unserved_count += !served_modules.contains(which);
  auto unserved = index.initUnservedModules(unserved_count);
  position = 0;
  for (const auto& [which, reason] : unserved_modules_) {
    if (served_modules.contains(which)) continue;
    FillUnservedModule({which.first, which.second, reason}, unserved[position++]);
  }
  // Re-laid into one segment sized to fit: readers then never follow far pointers, which in
  // Cap'n Proto 0.9 look segments up under a mutex that concurrent lookups would contend on.
  capnp::MallocMessageBuilder single_segment(message.sizeInWords() + 1);
  single_segment.setRoot(index.asReader());
  const kj::Array<capnp::word> index_words = capnp::messageToFlatArray(single_segment);
  const auto index_bytes = std::as_bytes(std::span(index_words.begin(), index_words.size()));
  ArchiveHeader header;
  header.index_offset = AlignUpTo(layout.end, kArchiveIndexAlignment);
  header.index_size = index_bytes.size();
  header.index_crc32c = Crc32c(index_bytes);
  header.file_size = header.index_offset + header.index_size;

  absl::StatusOr<AtomicFileWriter> file = AtomicFileWriter::Create(path);
  if (!file.ok()) return file.status();
  uint64_t written = 0;
  auto write_at = [&](uint64_t offset, std::span<const std::byte> bytes) {
    absl::Status status = file->WriteZeros(offset - written);
    if (status.ok()) status = file->Write(bytes);
    written = offset + bytes.size();
    return status;
  };
  absl::Status status = write_at(0, EncodeArchiveHeader(header));
  for (const auto& [offset, bytes] : layout.writes) {
    if (status.ok()) status = write_at(offset, bytes);
  }
  if (status.ok()) status = write_at(header.index_offset, index_bytes);
  if (status.ok()) status = file->Commit();
  if (!status.ok()) {
    return absl::Status(status.code(),
                        fmt::format("cannot write kernel archive {}: {}", path, status));
  }
  return absl::OkStatus();
}

}  // namespace spreplay

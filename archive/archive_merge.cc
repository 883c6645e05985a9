#include "archive/archive_merge.h"

#include <map>
#include <set>
#include <utility>

#include "archive/archive.h"
#include "archive/archive_writer.h"
#include "archive/module_entry.h"
#include "common/capnp_digest.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

Digest DigestOf(capnp::Data::Reader data) { return DigestFromData(data).value_or(Digest{}); }

std::string TextOf(capnp::Text::Reader text) { return std::string(text.cStr(), text.size()); }

KernelCallSite CallSiteOf(schema::CallSite::Reader call_site) {
  return {TextOf(call_site.getModuleName()), TextOf(call_site.getFunctionName()),
          TextOf(call_site.getCallKind()), TextOf(call_site.getWrapperModuleName()),
          TextOf(call_site.getEntryPointName())};
}

KernelMetadata KernelMetadataOf(schema::KernelEntry::Reader entry) {
  KernelMetadata metadata;
  metadata.key = DigestOf(entry.getKey());
  metadata.call_site = CallSiteOf(entry.getCallSite());
  for (auto dependency : entry.getManifest())
    metadata.manifest.push_back({DigestOf(dependency.getDigest()), TextOf(dependency.getPath())});
  metadata.session_digest = DigestOf(entry.getSessionDigest());
  metadata.program_digest = DigestOf(entry.getProgramDigest());
  for (uint32_t arch : entry.getSassArches()) metadata.sass_arches.push_back(arch);
  metadata.ptx_arch = entry.getPtxArch();
  metadata.optix = entry.getOptix();
  return metadata;
}

template <typename Bytes>
std::vector<std::byte> Copy(const Bytes& bytes) {
  return std::vector<std::byte>(bytes.begin(), bytes.end());
}

struct ModuleSource {
  const Archive* archive;
  size_t position;
  ModuleMetadata metadata;
};

}  // namespace

absl::StatusOr<ArchiveMergeSummary> MergeArchives(const std::vector<std::string>& inputs,
                                                  const std::string& output) {
  if (inputs.empty()) return absl::InvalidArgumentError("no archives to merge");
  std::vector<Archive> archives;
  for (const std::string& input : inputs) {
    absl::StatusOr<Archive> archive = Archive::Open(input);
    if (!archive.ok()) return archive.status();
    if (!archives.empty() &&
        archive->index().getToolchain() != archives[0].index().getToolchain()) {
      return absl::FailedPreconditionError(
          fmt::format("{} was built for {}, {} for {}: compile every shard with the same slangpy",
                      inputs[0], archives[0].index().getToolchain().cStr(), input,
                      archive->index().getToolchain().cStr()));
    }
    archives.push_back(*std::move(archive));
  }

  // The provenance is the first input's: every shard of one compile carries
  // the same, so the merge is byte-identical to that compile's archive.
  const auto first = archives[0].index();
  ArchiveProvenance provenance;
  provenance.toolchain = TextOf(first.getToolchain());
  provenance.spreplay_version = TextOf(first.getSpreplayVersion());
  provenance.created_unix_seconds = first.getCreation().getCreatedUnixSeconds();
  provenance.host = TextOf(first.getCreation().getHost());
  provenance.command = TextOf(first.getCreation().getCommand());
  ArchiveWriter writer(provenance);

  std::map<std::pair<Digest, std::string>, std::string> refused;  // (session, name) -> why
  std::map<Digest, ModuleSource> modules;
  for (const Archive& archive : archives) {
    const auto index = archive.index();
    for (size_t i = 0; i < archive.kernel_count(); ++i) {
      const ArchivedKernel kernel = archive.kernel(i);
      std::vector<KernelBinary> binaries;
      for (auto blob : kernel.entry.getBlobs()) {
        absl::StatusOr<std::span<const std::byte>> bytes =
            archive.Blob(kernel, blob.getKind(), blob.getArch());
        if (!bytes.ok()) return bytes.status();
        binaries.push_back({blob.getKind(), blob.getArch(), Copy(*bytes)});
      }
      if (absl::Status added = writer.Add(KernelMetadataOf(kernel.entry), std::move(binaries));
          !added.ok())
        return added;
    }
    for (auto unbuilt : index.getUnbuilt())
      writer.AddUnbuilt({DigestOf(unbuilt.getKey()), CallSiteOf(unbuilt.getCallSite()),
                         TextOf(unbuilt.getReason())});
    for (auto session : index.getSessions()) {
      std::vector<std::string> settings;
      for (auto line : session.getSettings()) settings.push_back(TextOf(line));
      writer.AddSessionSettings(DigestOf(session.getDigest()), std::move(settings));
    }
    for (auto unserved : index.getUnservedModules())
      refused.try_emplace({DigestOf(unserved.getSessionDigest()), TextOf(unserved.getName())},
                          TextOf(unserved.getReason()));
    for (size_t i = 0; i < index.getModules().size(); ++i) {
      ModuleMetadata metadata = ModuleMetadataOf(index.getModules()[i]);
      const Digest key = metadata.key;
      // A module one shard verified by kernels keeps that shard's IR over
      // another's, verified by its layout alone.
      auto known = modules.find(key);
      if (known != modules.end() &&
          known->second.metadata.verified_by == schema::ModuleVerification::KERNELS &&
          metadata.verified_by != schema::ModuleVerification::KERNELS)
        continue;
      modules.insert_or_assign(key, ModuleSource{&archive, i, std::move(metadata)});
    }
  }

  // A module is archived only if no shard refused it and every import is
  // archived: what one compile verifying every kernel would have decided.
  ArchiveMergeSummary summary;
  std::set<Digest> dropped;
  for (const auto& [key, module] : modules) {
    if (refused.contains({module.metadata.session_digest, module.metadata.name}))
      dropped.insert(key);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [key, module] : modules) {
      if (dropped.contains(key)) continue;
      for (const Digest& imported : module.metadata.imports) {
        if (modules.contains(imported) && !dropped.contains(imported)) continue;
        auto named = modules.find(imported);
        refused.try_emplace(
            {module.metadata.session_digest, module.metadata.name},
            fmt::format("it imports '{}', which is not archived",
                        named != modules.end() ? named->second.metadata.name : imported.ToHex()));
        dropped.insert(key);
        changed = true;
        break;
      }
    }
  }
  for (auto& [key, module] : modules) {
    if (dropped.contains(key)) {
      ++summary.modules_dropped;
      continue;
    }
    absl::StatusOr<std::span<const std::byte>> ir = module.archive->ModuleIr(module.position);
    if (!ir.ok()) return ir.status();
    writer.AddModule(std::move(module.metadata),
                     std::string(reinterpret_cast<const char*>(ir->data()), ir->size()));
  }
  for (const auto& [which, reason] : refused)
    writer.AddUnservedModule({which.first, which.second, reason});

  summary.kernels = writer.kernel_count();
  summary.modules = writer.module_count();
  if (absl::Status written = writer.Write(output); !written.ok()) return written;
  return summary;
}

}  // namespace spreplay

#include "archive/module_entry.h"

#include "common/capnp_digest.h"
#include "kj/string.h"

namespace spreplay {
namespace {

// Cap'n Proto's text setters want a NUL-terminated string; std::string provides one.
kj::StringPtr AsText(const std::string& text) { return kj::StringPtr(text.c_str(), text.size()); }

std::string TextOf(capnp::Text::Reader text) { return std::string(text.cStr(), text.size()); }

Digest DigestOf(capnp::Data::Reader data) { return DigestFromData(data).value_or(Digest{}); }

void FillModuleFile(const ArchivedModuleFile& file, schema::ModuleFile::Builder out) {
  if (file.digest != Digest{}) out.setDigest(DataOf(file.digest));
  out.setRoot(file.root);
  out.setRootIndex(file.root_index);
  out.setRelativePath(AsText(file.relative_path));
  out.setRecordedPath(AsText(file.recorded_path));
}

ArchivedModuleFile ModuleFileOf(schema::ModuleFile::Reader file) {
  return {DigestOf(file.getDigest()), file.getRoot(), file.getRootIndex(),
          TextOf(file.getRelativePath()), TextOf(file.getRecordedPath())};
}

}  // namespace

void FillModuleEntry(const ModuleMetadata& metadata, schema::ModuleEntry::Builder out) {
  out.setKey(DataOf(metadata.key));
  out.setContentDigest(DataOf(metadata.content_digest));
  out.setSessionDigest(DataOf(metadata.session_digest));
  out.setName(AsText(metadata.name));
  out.setRequestedName(AsText(metadata.requested_name));
  if (metadata.source_lookup) out.setSourceLookup(DataOf(*metadata.source_lookup));
  out.setPath(AsText(metadata.path));
  FillModuleFile(metadata.file_path, out.initFilePath());
  if (metadata.requested_file) FillModuleFile(*metadata.requested_file, out.initRequestedFile());
  out.setVerifiedBy(metadata.verified_by);
  auto files = out.initFiles(static_cast<unsigned>(metadata.files.size()));
  for (size_t i = 0; i < metadata.files.size(); ++i) FillModuleFile(metadata.files[i], files[i]);
  auto imports = out.initImports(static_cast<unsigned>(metadata.imports.size()));
  for (size_t i = 0; i < metadata.imports.size(); ++i) imports.set(i, DataOf(metadata.imports[i]));
}

ModuleMetadata ModuleMetadataOf(schema::ModuleEntry::Reader entry) {
  ModuleMetadata metadata;
  metadata.key = DigestOf(entry.getKey());
  metadata.content_digest = DigestOf(entry.getContentDigest());
  metadata.session_digest = DigestOf(entry.getSessionDigest());
  metadata.name = TextOf(entry.getName());
  metadata.requested_name = TextOf(entry.getRequestedName());
  if (entry.getSourceLookup().size() > 0)
    metadata.source_lookup = DigestOf(entry.getSourceLookup());
  metadata.path = TextOf(entry.getPath());
  metadata.file_path = ModuleFileOf(entry.getFilePath());
  if (entry.hasRequestedFile()) metadata.requested_file = ModuleFileOf(entry.getRequestedFile());
  metadata.verified_by = entry.getVerifiedBy();
  for (auto file : entry.getFiles()) metadata.files.push_back(ModuleFileOf(file));
  for (auto imported : entry.getImports()) metadata.imports.push_back(DigestOf(imported));
  return metadata;
}

void FillUnservedModule(const UnservedModule& module, schema::UnservedModule::Builder out) {
  out.setSessionDigest(DataOf(module.session_digest));
  out.setName(AsText(module.name));
  out.setReason(AsText(module.reason));
}

UnservedModule UnservedModuleOf(schema::UnservedModule::Reader entry) {
  return {DigestOf(entry.getSessionDigest()), TextOf(entry.getName()), TextOf(entry.getReason())};
}

}  // namespace spreplay

#pragma once
// A module's metadata as a schema::ModuleEntry, and a module not archived as a
// schema::UnservedModule, and back. The archive's index
// stores modules so, and so does the compile cache's record of what a session
// configuration's modules stage verified.

#include "archive/archive_writer.h"
#include "schema/archive.capnp.h"

namespace spreplay {

// Every field but the blob, which only an archive has.
void FillModuleEntry(const ModuleMetadata& metadata, schema::ModuleEntry::Builder out);
ModuleMetadata ModuleMetadataOf(schema::ModuleEntry::Reader entry);

void FillUnservedModule(const UnservedModule& module, schema::UnservedModule::Builder out);
UnservedModule UnservedModuleOf(schema::UnservedModule::Reader entry);

}  // namespace spreplay

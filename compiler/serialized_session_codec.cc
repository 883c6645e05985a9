#include "compiler/serialized_session_codec.h"

#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include "capnp/message.h"
#include "capnp/serialize.h"
#include "fmt/format.h"
#include "kj/array.h"
#include "kj/exception.h"
#include "recorder/record_encoding.h"
#include "schema/serialized_session.capnp.h"

namespace spreplay {
namespace {

kj::ArrayPtr<const kj::byte> BytesOf(const std::string& text) {
  return {reinterpret_cast<const kj::byte*>(text.data()), text.size()};
}

// Cap'n Proto lists hold fewer than 2^29 elements, and its blobs fewer than
// 2^29 bytes; past either, encoding throws (kj::Exception), which ends the
// worker process that serialized the session with the reason.
unsigned ListSize(size_t size) {
  if (size >= (size_t{1} << 29)) throw std::length_error("a serialized session list is too long");
  return static_cast<unsigned>(size);
}

std::string StringOf(capnp::Data::Reader bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

absl::StatusOr<SerializedSession> Decode(schema::SerializedSession::Reader in) {
  SerializedSession session;
  for (schema::SerializedModule::Reader module : in.getModules()) {
    SerializedModule& out = session.modules.emplace_back();
    if (module.hasDescription()) {
      // A module's description has no children.
      absl::StatusOr<ComponentPtr> description =
          DecodeComponent(module.getDescription(), [](const Digest& digest) {
            return absl::DataLossError(
                fmt::format("a module description names a child, {}", digest.ToHex()));
          });
      if (!description.ok()) return description.status();
      out.description = *std::move(description);
    } else {
      out.description = Component::Opaque("undescribable");
    }
    out.ir = StringOf(module.getIr());
    for (uint32_t index : module.getImports()) {
      // Imports are loaded before the module that imports them.
      if (index >= session.modules.size() - 1)
        return absl::DataLossError("a module imports one the session loaded after it");
      out.imports.push_back(index);
    }
    out.source_only = module.getSourceOnly();
  }
  for (schema::ProgramUses::Reader uses : in.getUses()) {
    if (uses.isError()) {
      session.uses.emplace_back(
          absl::Status(static_cast<absl::StatusCode>(uses.getError().getCode()),
                       std::string(uses.getError().getMessage())));
      continue;
    }
    std::vector<size_t> modules;
    for (uint32_t index : uses.getModules()) {
      if (index >= session.modules.size())
        return absl::DataLossError("a program uses a module the session does not hold");
      modules.push_back(index);
    }
    session.uses.emplace_back(std::move(modules));
  }
  for (capnp::Data::Reader layout : in.getLayouts()) session.layouts.push_back(StringOf(layout));
  for (auto codes : in.getEntryPointCodes()) {
    std::vector<std::string>& out = session.entry_point_codes.emplace_back();
    for (capnp::Data::Reader code : codes) out.push_back(StringOf(code));
  }
  if (session.layouts.size() != session.uses.size() ||
      session.entry_point_codes.size() != session.uses.size())
    return absl::DataLossError("its programs' uses, layouts and codes do not agree in number");
  return session;
}

}  // namespace

std::string EncodeSerializedSession(const SerializedSession& session) {
  capnp::MallocMessageBuilder message;
  auto out = message.initRoot<schema::SerializedSession>();
  auto modules = out.initModules(ListSize(session.modules.size()));
  for (size_t i = 0; i < session.modules.size(); ++i) {
    const SerializedModule& module = session.modules[i];
    if (module.description && module.description->kind != Component::Kind::kOpaque)
      EncodeComponent(*module.description, modules[i].initDescription());
    modules[i].setIr(BytesOf(module.ir));
    auto imports = modules[i].initImports(ListSize(module.imports.size()));
    for (size_t j = 0; j < module.imports.size(); ++j)
      imports.set(j, static_cast<uint32_t>(module.imports[j]));
    modules[i].setSourceOnly(module.source_only);
  }
  auto uses = out.initUses(ListSize(session.uses.size()));
  for (size_t p = 0; p < session.uses.size(); ++p) {
    if (!session.uses[p].ok()) {
      auto error = uses[p].initError();
      error.setCode(static_cast<uint8_t>(session.uses[p].status().code()));
      error.setMessage(std::string(session.uses[p].status().message()));
      continue;
    }
    auto modules_used = uses[p].initModules(ListSize(session.uses[p]->size()));
    for (size_t j = 0; j < session.uses[p]->size(); ++j)
      modules_used.set(j, static_cast<uint32_t>((*session.uses[p])[j]));
  }
  auto layouts = out.initLayouts(ListSize(session.layouts.size()));
  for (size_t p = 0; p < session.layouts.size(); ++p) layouts.set(p, BytesOf(session.layouts[p]));
  auto codes = out.initEntryPointCodes(ListSize(session.entry_point_codes.size()));
  for (size_t p = 0; p < session.entry_point_codes.size(); ++p) {
    auto program_codes = codes.init(p, ListSize(session.entry_point_codes[p].size()));
    for (size_t j = 0; j < session.entry_point_codes[p].size(); ++j)
      program_codes.set(j, BytesOf(session.entry_point_codes[p][j]));
  }
  const kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  const kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

absl::StatusOr<SerializedSession> DecodeSerializedSession(std::string_view bytes) {
  if (bytes.size() % sizeof(capnp::word) != 0)
    return absl::DataLossError("a serialized session's bytes are not whole words");
  try {
    kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
    std::memcpy(words.begin(), bytes.data(), bytes.size());
    capnp::ReaderOptions options;
    // The bytes come from a worker of this compile, and a session's IR runs
    // to tens of megabytes.
    options.traversalLimitInWords = std::numeric_limits<uint64_t>::max();
    capnp::FlatArrayMessageReader message(words, options);
    return Decode(message.getRoot<schema::SerializedSession>());
  } catch (const kj::Exception& e) {
    return absl::DataLossError(
        fmt::format("a serialized session does not read: {}", e.getDescription().cStr()));
  }
}

}  // namespace spreplay

#include "compiler/module_stage_cache.h"

#include <cstring>
#include <functional>

#include "absl/container/flat_hash_set.h"
#include "archive/module_entry.h"
#include "capnp/message.h"
#include "capnp/serialize.h"
#include "common/capnp_digest.h"
#include "compiler/tool_identity.h"
#include "interpose/key_hasher.h"
#include "kj/array.h"
#include "kj/exception.h"
#include "replayer/replayer.h"
#include "schema/compile_cache.capnp.h"

namespace spreplay {
namespace {

// Hashes a program's tree with what its digests leave out: digests are
// path-independent, and the stage's metadata is not.
class TreeHasher {
 public:
  TreeHasher(const Trace& trace, KeyHasher& hasher) : trace_(trace), hasher_(hasher) {}

  void Visit(const ComponentPtr& root) {
    ForEachDistinctNode(root, [this](const Component& node) { VisitNode(node); });
  }

 private:
  void VisitNode(const Component& node) {
    if (!visited_.insert(&node).second) return;
    hasher_.Hash(node.digest).Text(node.name).Text(node.path).Text(node.requested_name);
    // Digests normalize a text's paths; the stage serializes the text itself.
    if (node.source) hasher_.Hash(Sha256Of(*node.source));
    hasher_.Integer(static_cast<int64_t>(node.dependencies.size()));
    for (const SourceFile& file : node.dependencies) {
      hasher_.Text(file.path).Hash(file.content);
      if (trace_.FindSource(file.content)) continue;
      // A module loaded from a string that this one imports: its own files.
      // Neither is a file the trace lacks, which drops the program.
      if (absl::StatusOr<ComponentPtr> module = trace_.FindComponent(file.content); module.ok())
        Visit(*module);
      else
        hasher_.Text("missing");
    }
  }

  const Trace& trace_;
  KeyHasher& hasher_;
  absl::flat_hash_set<const Component*> visited_;
};

// A cache entry's bytes as a Cap'n Proto message, or nullopt if they are
// not one: the cache checked the entry's SHA-256, so a foreign or truncated
// entry reads as a miss all the same.
template <typename T>
std::optional<T> ReadEntry(const std::optional<std::string>& bytes,
                           const std::function<std::optional<T>(capnp::MessageReader&)>& read) {
  if (!bytes || bytes->size() % sizeof(capnp::word) != 0) return std::nullopt;
  try {
    kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes->size() / sizeof(capnp::word));
    std::memcpy(words.begin(), bytes->data(), bytes->size());
    capnp::FlatArrayMessageReader message(words);
    return read(message);
  } catch (const kj::Exception&) {
    return std::nullopt;
  }
}

absl::Status PutMessage(const CompileCache& cache, const Digest& name,
                        capnp::MessageBuilder& message) {
  const kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  const kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
  return cache.Put(name,
                   std::string_view(reinterpret_cast<const char*>(bytes.begin()), bytes.size()));
}

// Stored outcomes hold no IR: TakeVerifiedIr fills it in from the cache.
std::vector<std::pair<ModuleMetadata, std::string>> ArchivedWithoutIr(
    capnp::List<schema::ModuleEntry>::Reader entries) {
  std::vector<std::pair<ModuleMetadata, std::string>> archived;
  for (const auto entry : entries) archived.emplace_back(ModuleMetadataOf(entry), std::string());
  return archived;
}

// The IR stays in the cache under each module's key (VerifiedIrName).
template <typename OutcomeBuilder>
void StoreArchivedWithoutIr(const std::vector<std::pair<ModuleMetadata, std::string>>& archived,
                            OutcomeBuilder stored) {
  auto entries = stored.initArchived(static_cast<unsigned>(archived.size()));
  for (size_t i = 0; i < archived.size(); ++i) FillModuleEntry(archived[i].first, entries[i]);
}

// What reaches a configuration's verdicts: this build of spreplay, the Slang
// that replays and the toolchain the app recorded with. Another of any of them
// decides afresh.
KeyHasher& HashDeciders(KeyHasher& hasher, const SessionGroup& group) {
  return hasher.Text(ToolIdentity()).Text(SlangBuildTag()).Text(group.toolchain);
}

}  // namespace

Digest ModuleStageOutcomeName(const Trace& trace, const SessionGroup& group) {
  KeyHasher hasher("spreplay.module-stage-outcome.v1");
  HashDeciders(hasher, group);
  hasher.Hash(group.content).Hash(group.location);
  TreeHasher trees(trace, hasher);
  hasher.Integer(static_cast<int64_t>(group.kernels.size()));
  for (const KernelRecord* record : group.kernels) {
    hasher.Hash(record->key).Hash(Sha256Of(record->code)).Hash(record->program);
    hasher.Integer(record->entry_point_index).Integer(record->target_index);
    if (absl::StatusOr<ComponentPtr> program = trace.ProgramOf(*record); program.ok())
      trees.Visit(*program);
    else
      hasher.Text(std::string(program.status().message()));
  }
  hasher.Integer(static_cast<int64_t>(group.loads.size()));
  for (const ModuleLoadRecord* load : group.loads) {
    hasher.Hash(load->module).Text(load->name);
    if (absl::StatusOr<ComponentPtr> module = trace.ModuleOf(*load); module.ok())
      trees.Visit(*module);
    else
      hasher.Text(std::string(module.status().message()));
  }
  hasher.Integer(static_cast<int64_t>(group.recorded.size()));
  // Which modules are a kernel's, by name: verified by kernels or not at all.
  for (const KernelRecord* record : group.recorded) {
    hasher.Hash(record->key).Hash(record->program);
    hasher.Integer(static_cast<int64_t>(record->module_names.size()));
    for (const std::string& name : record->module_names) hasher.Text(name);
  }
  return hasher.Finish();
}

bool TakeVerifiedIr(const CompileCache& cache,
                    std::vector<std::pair<ModuleMetadata, std::string>>& archived) {
  for (auto& [metadata, ir] : archived) {
    std::optional<std::string> verified = cache.Get(VerifiedIrName(metadata.key));
    if (!verified) return false;
    ir = *std::move(verified);
  }
  return true;
}

Digest VerifiedIrName(const Digest& module_key) {
  return KeyHasher("spreplay.verified-ir.v1").Hash(module_key).Text(SlangBuildTag()).Finish();
}

std::optional<GroupOutcome> LoadModuleStageOutcome(const CompileCache& cache, const Digest& name) {
  std::optional<GroupOutcome> outcome =
      ReadEntry<GroupOutcome>(cache.Get(name), [](capnp::MessageReader& message) {
        const auto stored = message.getRoot<schema::ModuleStageOutcome>();
        GroupOutcome read;
        read.archived = ArchivedWithoutIr(stored.getArchived());
        for (const auto refused : stored.getRefused())
          read.refused.push_back(UnservedModuleOf(refused));
        return std::optional<GroupOutcome>(std::move(read));
      });
  if (!outcome || !TakeVerifiedIr(cache, outcome->archived)) return std::nullopt;
  return outcome;
}

absl::Status StoreModuleStageOutcome(const CompileCache& cache, const Digest& name,
                                     const GroupOutcome& outcome) {
  capnp::MallocMessageBuilder message;
  auto stored = message.initRoot<schema::ModuleStageOutcome>();
  StoreArchivedWithoutIr(outcome.archived, stored);
  auto refused = stored.initRefused(static_cast<unsigned>(outcome.refused.size()));
  for (size_t i = 0; i < outcome.refused.size(); ++i)
    FillUnservedModule(outcome.refused[i], refused[i]);
  return PutMessage(cache, name, message);
}

Digest ModuleProgramIdentity(const Trace& trace, const KernelRecord* record,
                             const ComponentPtr& program) {
  KeyHasher hasher("spreplay.module-stage-program.v1");
  if (record) {
    hasher.Text("kernel").Hash(record->key).Hash(Sha256Of(record->code)).Hash(record->program);
    hasher.Integer(record->entry_point_index).Integer(record->target_index);
  } else {
    hasher.Text("module");
  }
  TreeHasher(trace, hasher).Visit(program);
  return hasher.Finish();
}

Digest ModulePartEvidenceName(const SessionGroup& group,
                              const std::vector<std::string>& request_directories,
                              std::span<const Digest> identities) {
  KeyHasher hasher("spreplay.module-part-evidence.v1");
  HashDeciders(hasher, group);
  hasher.Hash(group.content).Hash(group.location);
  hasher.Integer(static_cast<int64_t>(request_directories.size()));
  for (const std::string& directory : request_directories) hasher.Text(directory);
  hasher.Integer(static_cast<int64_t>(identities.size()));
  for (const Digest& identity : identities) hasher.Hash(identity);
  return hasher.Finish();
}

namespace {

kj::StringPtr TextPtr(const std::string& text) { return {text.c_str(), text.size()}; }

std::string TextOf(capnp::Text::Reader text) { return {text.cStr(), text.size()}; }

void FillModuleNode(const ModuleNodeKey& module, schema::ModuleNode::Builder out) {
  out.setDigest(DataOf(module.first));
  out.setName(TextPtr(module.second));
}

std::optional<ModuleNodeKey> ModuleNodeOf(schema::ModuleNode::Reader node) {
  absl::StatusOr<Digest> digest = DigestFromData(node.getDigest());
  if (!digest.ok()) return std::nullopt;
  return ModuleNodeKey(*digest, TextOf(node.getName()));
}

Digest ModuleStagePartsName(const SessionGroup& group) {
  KeyHasher hasher("spreplay.module-stage-parts.v1");
  HashDeciders(hasher, group);
  return hasher.Hash(group.content).Hash(group.location).Finish();
}

}  // namespace

std::optional<PartEvidence> LoadModulePartEvidence(const CompileCache& cache, const Digest& name) {
  return ReadEntry<PartEvidence>(cache.Get(name), [](capnp::MessageReader& message) {
    const auto stored = message.getRoot<schema::ModulePartEvidence>();
    PartEvidence read;
    const size_t module_count = stored.getModules().size();
    // Indices out of range would send the decision out of bounds.
    const auto indices = [&](capnp::List<uint32_t>::Reader list) {
      std::optional<std::vector<size_t>> out(std::in_place);
      for (const uint32_t index : list) {
        if (index >= module_count) return std::optional<std::vector<size_t>>();
        out->push_back(index);
      }
      return out;
    };
    for (const auto module : stored.getModules()) {
      PartEvidence::Module& proven = read.modules.emplace_back();
      proven.metadata = ModuleMetadataOf(module.getMetadata());
      std::optional<ModuleNodeKey> node = ModuleNodeOf(module.getNode());
      std::optional<std::vector<size_t>> imports = indices(module.getImports());
      if (!node || !imports) return std::optional<PartEvidence>();
      proven.node = *std::move(node);
      proven.refusal = TextOf(module.getRefusal());
      proven.imports = *std::move(imports);
    }
    for (const auto program : stored.getPrograms()) {
      PartEvidence::Program& proven = read.programs.emplace_back();
      std::optional<std::vector<size_t>> modules = indices(program.getModules());
      if (!modules) return std::optional<PartEvidence>();
      proven.kernel = program.getKernel();
      proven.failure = TextOf(program.getFailure());
      proven.modules = *std::move(modules);
    }
    return std::optional<PartEvidence>(std::move(read));
  });
}

absl::Status StoreModulePartEvidence(const CompileCache& cache, const Digest& name,
                                     const PartEvidence& evidence) {
  capnp::MallocMessageBuilder message;
  auto stored = message.initRoot<schema::ModulePartEvidence>();
  const auto fill_indices = [](const std::vector<size_t>& indices, auto list) {
    for (size_t i = 0; i < indices.size(); ++i) list.set(i, static_cast<uint32_t>(indices[i]));
  };
  auto modules = stored.initModules(static_cast<unsigned>(evidence.modules.size()));
  for (size_t i = 0; i < evidence.modules.size(); ++i) {
    const PartEvidence::Module& module = evidence.modules[i];
    FillModuleEntry(module.metadata, modules[i].initMetadata());
    FillModuleNode(module.node, modules[i].initNode());
    modules[i].setRefusal(TextPtr(module.refusal));
    fill_indices(module.imports,
                 modules[i].initImports(static_cast<unsigned>(module.imports.size())));
  }
  auto programs = stored.initPrograms(static_cast<unsigned>(evidence.programs.size()));
  for (size_t i = 0; i < evidence.programs.size(); ++i) {
    const PartEvidence::Program& program = evidence.programs[i];
    programs[i].setKernel(program.kernel);
    programs[i].setFailure(TextPtr(program.failure));
    fill_indices(program.modules,
                 programs[i].initModules(static_cast<unsigned>(program.modules.size())));
  }
  return PutMessage(cache, name, message);
}

std::vector<std::vector<PartProgram>> LoadModuleStageParts(const CompileCache& cache,
                                                           const SessionGroup& group) {
  using Parts = std::vector<std::vector<PartProgram>>;
  std::optional<Parts> parts =
      ReadEntry<Parts>(cache.Get(ModuleStagePartsName(group)), [](capnp::MessageReader& message) {
        Parts read;
        for (const auto stored : message.getRoot<schema::ModuleStageParts>().getParts()) {
          std::vector<PartProgram>& part = read.emplace_back();
          for (const auto program : stored) {
            absl::StatusOr<Digest> identity = DigestFromData(program.getIdentity());
            if (!identity.ok()) return std::optional<Parts>();
            part.push_back({*identity, std::nullopt});
            if (program.hasUnusedModule()) {
              part.back().unused_module = ModuleNodeOf(program.getUnusedModule());
              if (!part.back().unused_module) return std::optional<Parts>();
            }
          }
        }
        return std::optional<Parts>(std::move(read));
      });
  return parts ? *std::move(parts) : Parts{};
}

absl::Status StoreModuleStageParts(const CompileCache& cache, const SessionGroup& group,
                                   const std::vector<std::vector<PartProgram>>& parts) {
  capnp::MallocMessageBuilder message;
  auto stored =
      message.initRoot<schema::ModuleStageParts>().initParts(static_cast<unsigned>(parts.size()));
  for (size_t i = 0; i < parts.size(); ++i) {
    auto programs = stored.init(static_cast<unsigned>(i), static_cast<unsigned>(parts[i].size()));
    for (size_t j = 0; j < parts[i].size(); ++j) {
      programs[j].setIdentity(DataOf(parts[i][j].identity));
      if (parts[i][j].unused_module)
        FillModuleNode(*parts[i][j].unused_module, programs[j].initUnusedModule());
    }
  }
  return PutMessage(cache, ModuleStagePartsName(group), message);
}

}  // namespace spreplay

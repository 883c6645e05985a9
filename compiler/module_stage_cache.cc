#include "compiler/module_stage_cache.h"

#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "archive/module_entry.h"
#include "capnp/message.h"
#include "capnp/serialize.h"
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

}  // namespace

Digest ModuleStageOutcomeName(const Trace& trace, const SessionGroup& group) {
  KeyHasher hasher("spreplay.module-stage-outcome.v1");
  hasher.Text(SPREPLAY_VERSION).Text(SlangBuildTag()).Text(group.toolchain);
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

Digest VerifiedIrName(const Digest& module_key) {
  return KeyHasher("spreplay.verified-ir.v1").Hash(module_key).Text(SlangBuildTag()).Finish();
}

std::optional<GroupOutcome> LoadModuleStageOutcome(const CompileCache& cache, const Digest& name) {
  const std::optional<std::string> bytes = cache.Get(name);
  if (!bytes || bytes->size() % sizeof(capnp::word) != 0) return std::nullopt;
  // The cache checked the entry's SHA-256; a parse failure means a foreign
  // or truncated entry all the same, and reads as a miss.
  GroupOutcome outcome;
  try {
    kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes->size() / sizeof(capnp::word));
    std::memcpy(words.begin(), bytes->data(), bytes->size());
    capnp::FlatArrayMessageReader message(words);
    const auto stored = message.getRoot<schema::ModuleStageOutcome>();
    for (const auto entry : stored.getArchived()) {
      ModuleMetadata metadata = ModuleMetadataOf(entry);
      std::optional<std::string> ir = cache.Get(VerifiedIrName(metadata.key));
      if (!ir) return std::nullopt;
      outcome.archived.emplace_back(std::move(metadata), *std::move(ir));
    }
    for (const auto refused : stored.getRefused())
      outcome.refused.push_back(UnservedModuleOf(refused));
  } catch (const kj::Exception&) {
    return std::nullopt;
  }
  return outcome;
}

absl::Status StoreModuleStageOutcome(const CompileCache& cache, const Digest& name,
                                     const GroupOutcome& outcome) {
  capnp::MallocMessageBuilder message;
  auto stored = message.initRoot<schema::ModuleStageOutcome>();
  auto archived = stored.initArchived(static_cast<unsigned>(outcome.archived.size()));
  for (size_t i = 0; i < outcome.archived.size(); ++i)
    FillModuleEntry(outcome.archived[i].first, archived[i]);
  auto refused = stored.initRefused(static_cast<unsigned>(outcome.refused.size()));
  for (size_t i = 0; i < outcome.refused.size(); ++i)
    FillUnservedModule(outcome.refused[i], refused[i]);
  const kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  const kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
  return cache.Put(name,
                   std::string_view(reinterpret_cast<const char*>(bytes.begin()), bytes.size()));
}

}  // namespace spreplay

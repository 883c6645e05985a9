#include "compiler/module_parts.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <span>
#include <type_traits>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "common/fmt_absl.h"
#include "compiler/ptx_comparison.h"
#include "compiler/trace_snapshot.h"
#include "fmt/format.h"
#include "interpose/key_hasher.h"
#include "interpose/module_keys.h"
#include "interpose/path_roots.h"

namespace spreplay {
namespace {

schema::PathRoot SchemaRoot(PathRoot root) {
  switch (root) {
    case PathRoot::kAbsolute:
      return schema::PathRoot::ABSOLUTE;
    case PathRoot::kSlangpy:
      return schema::PathRoot::SLANGPY;
    case PathRoot::kSearchPath:
      return schema::PathRoot::SEARCH_PATH;
    case PathRoot::kWorkingDirectory:
      return schema::PathRoot::WORKING_DIRECTORY;
    case PathRoot::kRequestDirectory:
      return schema::PathRoot::REQUEST_DIRECTORY;
  }
  return schema::PathRoot::ABSOLUTE;
}

ArchivedModuleFile Rooted(const SessionConfig& config, const std::string& path,
                          const Digest& digest,
                          const std::vector<std::string>& request_directories) {
  const RootedPath rooted = RootPath(config, path, request_directories);
  return {digest, SchemaRoot(rooted.root), rooted.index, rooted.relative, path};
}

ModuleMetadata MetadataOf(const SessionGroup& group, const SerializedSession& serialized,
                          size_t index, const std::vector<std::string>& request_directories,
                          schema::ModuleVerification verified_by) {
  const Component& module = *serialized.modules[index].description;
  ModuleMetadata metadata;
  metadata.verified_by = verified_by;
  metadata.key = IrModuleKey(group.toolchain, group.content, module);
  metadata.content_digest = module.digest;
  metadata.session_digest = group.content;
  metadata.name = module.name;
  metadata.requested_name = module.requested_name;
  if (module.source) {
    metadata.path = module.path;
    metadata.source_lookup =
        SourceModuleLookup(group.toolchain, group.content, module.name,
                           IsPseudoPath(module.path) ? "" : module.path, *module.source);
  } else {
    metadata.file_path = Rooted(group.config, module.path, Digest{}, request_directories);
    if (module.requested_name.starts_with('/'))
      metadata.requested_file =
          Rooted(group.config, module.requested_name, Digest{}, request_directories);
  }
  for (const SourceFile& file : module.dependencies)
    metadata.files.push_back(Rooted(group.config, file.path, file.content, request_directories));
  for (size_t imported : serialized.modules[index].imports)
    metadata.imports.push_back(
        IrModuleKey(group.toolchain, group.content, *serialized.modules[imported].description));
  return metadata;
}

// What a part's session must hold for a program: the bytes of each file, and
// the text of each module loaded from a string, by its name. Slang keeps one
// module per name in a session and hands it out again for a load of the same
// name with another text.
struct SessionContents {
  absl::flat_hash_map<std::string, const std::string*> files;
  absl::flat_hash_map<std::string, Digest> string_modules;
};

SessionContents ContentsOf(const RecordedProgram& program) {
  SessionContents contents;
  for (const auto& [path, bytes] : program.snapshot->files)
    contents.files.emplace(path, bytes.get());
  ForEachDistinctNode(program.program, [&](const Component& node) {
    if (node.kind == Component::Kind::kModule && node.source)
      contents.string_modules.emplace(node.name, node.digest);
  });
  for (const ComponentPtr& module : program.snapshot->string_modules)
    contents.string_modules.emplace(module->name, module->digest);
  return contents;
}

template <typename Map>
bool Agree(const Map& program, const Map& part) {
  return std::all_of(program.begin(), program.end(), [&](const auto& entry) {
    auto it = part.find(entry.first);
    if (it == part.end()) return true;
    if constexpr (std::is_pointer_v<typename Map::mapped_type>)
      return *it->second == *entry.second;
    else
      return it->second == entry.second;
  });
}

// The programs' indices, split so that each part's programs agree on every
// file and every string module's text. A hot reload records one path with
// two contents in one session configuration, and processes of one app may
// each load another text under one module name (sgl numbers the modules
// `load_program` makes of `additional_source` per process); a Slang session
// holds one of each, so each version's programs are serialized and verified
// in a session of their own.
std::vector<std::vector<size_t>> ConsistentParts(const std::vector<RecordedProgram>& programs,
                                                 std::span<const size_t> indices) {
  std::vector<std::vector<size_t>> parts;
  std::vector<SessionContents> contents_of_part;
  for (size_t p : indices) {
    const SessionContents contents = ContentsOf(programs[p]);
    size_t part = 0;
    while (part < parts.size() &&
           !(Agree(contents.files, contents_of_part[part].files) &&
             Agree(contents.string_modules, contents_of_part[part].string_modules)))
      ++part;
    if (part == parts.size()) {
      parts.emplace_back();
      contents_of_part.emplace_back();
    }
    parts[part].push_back(p);
    contents_of_part[part].files.insert(contents.files.begin(), contents.files.end());
    contents_of_part[part].string_modules.insert(contents.string_modules.begin(),
                                                 contents.string_modules.end());
  }
  return parts;
}

// Whether a rebuild's error is Slang's verdict on the trace's sources, which
// every compile of them reaches again: a diagnostic, IR that does not load,
// a layout or an entry point's code that differs from the source's. An
// internal error, or a worker process that died (also internal), may be
// this run's alone; a rebuild that never ran is unknown. A rebuild whose PTX
// differs from the recording's counts as a verdict: where Slang's output
// varies from run to run, remembering it only keeps modules on source.
bool IsVerdictOnTheTrace(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kUnimplemented:
      return true;
    default:
      return false;
  }
}

// Why `program` does not stand for its modules, or "". `record`: its
// kernel, or null for a module no kernel used.
std::string FailureOf(const Trace& trace, const RecordedProgram& program,
                      const KernelRecord* record, const absl::StatusOr<std::string>& code) {
  std::string failure;
  if (!code.ok()) {
    failure = std::string(code.status().message());
  } else if (record) {
    failure = DescribePtxDifference(record->code, *code);
  }
  if (failure.empty()) return "";
  std::string first_line = failure.substr(0, failure.find('\n'));
  if (first_line.ends_with(':')) first_line.pop_back();
  const std::string label =
      record ? KernelLabel(trace, *record) : fmt::format("module '{}'", program.program->name);
  return fmt::format("{} rebuilt over IR: {}", label, first_line);
}

// The file (or "its text", for a module from a string) of `module` that
// declares a user attribute, if one does. slangpy's test_reflection.py
// crashes, in Slang, reading such an attribute's arguments on a module loaded
// from IR; neither layouts nor code show it, so no such module is archived.
std::optional<std::string> DeclaresUserAttribute(const Component& module,
                                                 const std::vector<RecordedProgram>& programs) {
  constexpr std::string_view kDeclaration = "__AttributeUsage";
  if (module.source && module.source->find(kDeclaration) != std::string::npos) return "its text";
  for (const SourceFile& file : module.dependencies) {
    for (const RecordedProgram& program : programs) {
      auto it = program.snapshot->files.find(file.path);
      if (it == program.snapshot->files.end()) continue;
      if (it->second->find(kDeclaration) != std::string::npos)
        return std::filesystem::path(file.path).filename().string();
      break;
    }
  }
  return std::nullopt;
}

// The modules of every recorded kernel of `group`'s configuration.
absl::flat_hash_set<ModuleNodeKey> KernelModules(const Trace& trace, const SessionGroup& group) {
  absl::flat_hash_set<ModuleNodeKey> modules;
  for (const KernelRecord* record : group.recorded) {
    absl::StatusOr<ComponentPtr> program = trace.ProgramOf(*record);
    if (!program.ok()) continue;
    ForEachDistinctNode(*program, [&](const Component& node) {
      if (node.kind == Component::Kind::kModule) modules.insert(NodeKeyOf(node));
    });
  }
  return modules;
}

absl::flat_hash_map<ModuleNodeKey, size_t> ModulesByNodeKey(const SerializedSession& serialized) {
  absl::flat_hash_map<ModuleNodeKey, size_t> by_node_key;
  for (size_t i = 0; i < serialized.modules.size(); ++i)
    by_node_key.try_emplace(NodeKeyOf(*serialized.modules[i].description), i);
  return by_node_key;
}

// The modules (indices into its serialized session) program `p` of `part`
// used: as the session found them, or, where it did not get that far, those
// of its tree.
std::vector<size_t> ModulesOf(const PartWork& part, size_t p,
                              const absl::flat_hash_map<ModuleNodeKey, size_t>& by_node_key) {
  if (part.serialized.uses[p].ok()) return *part.serialized.uses[p];
  std::vector<size_t> modules;
  ForEachDistinctNode(part.programs[p].program, [&](const Component& node) {
    if (auto it = by_node_key.find(NodeKeyOf(node));
        node.kind == Component::Kind::kModule && it != by_node_key.end())
      modules.push_back(it->second);
  });
  return modules;
}

}  // namespace

PartEvidence EvidenceOf(const Trace& trace, const SessionGroup& group, const PartWork& part,
                        const std::vector<std::string>& request_directories,
                        const absl::flat_hash_set<const KernelRecord*>& verified) {
  const SerializedSession& serialized = part.serialized;
  PartEvidence evidence;
  for (size_t i = 0; i < serialized.modules.size(); ++i) {
    const SerializedModule& module = serialized.modules[i];
    PartEvidence::Module& proven = evidence.modules.emplace_back();
    // Which verification it is archived under is the decision's to say.
    proven.metadata =
        MetadataOf(group, serialized, i, request_directories, schema::ModuleVerification::KERNELS);
    proven.node = NodeKeyOf(*module.description);
    proven.refusal = module.source_only;
    if (std::optional<std::string> declaring =
            DeclaresUserAttribute(*module.description, part.programs);
        declaring && proven.refusal.empty())
      proven.refusal = fmt::format(
          "{} declares a user attribute ([__AttributeUsage]), whose arguments "
          "Slang's reflection of a module loaded from IR can crash on",
          *declaring);
    proven.imports = module.imports;
  }
  const absl::flat_hash_map<ModuleNodeKey, size_t> by_node_key = ModulesByNodeKey(serialized);
  for (size_t p = 0; p < part.programs.size(); ++p) {
    const KernelRecord* record = part.records[p];
    PartEvidence::Program& program = evidence.programs.emplace_back();
    program.kernel = record != nullptr;
    program.left_out = record && !verified.contains(record);
    if (!program.left_out)
      program.failure = FailureOf(trace, part.programs[p], record, part.codes[p]);
    program.modules = ModulesOf(part, p, by_node_key);
    if (!program.left_out && !part.codes[p].ok() && !IsVerdictOnTheTrace(part.codes[p].status()))
      evidence.refused_by_this_run = true;
  }
  return evidence;
}

PartitionOutcome Decide(const PartEvidence& evidence,
                        const absl::flat_hash_set<ModuleNodeKey>& kernel_modules,
                        const std::function<std::string(size_t module)>& ir_of) {
  const std::vector<PartEvidence::Module>& modules = evidence.modules;
  // A module is archived only if every kernel built with it was rebuilt
  // from IR exactly, and so were its imports.
  absl::flat_hash_map<size_t, std::string> refusals;
  for (size_t i = 0; i < modules.size(); ++i) {
    if (!modules[i].refusal.empty()) refusals.try_emplace(i, modules[i].refusal);
  }
  absl::flat_hash_set<size_t> used;
  absl::flat_hash_set<size_t> used_by_kernels;
  for (const PartEvidence::Program& program : evidence.programs) {
    if (program.left_out) continue;
    for (size_t module : program.modules) {
      // A module's layout says nothing for the kernels built with it.
      if (!program.kernel && kernel_modules.contains(modules[module].node)) continue;
      used.insert(module);
      if (program.kernel) used_by_kernels.insert(module);
      if (!program.failure.empty()) refusals.try_emplace(module, program.failure);
    }
  }
  PartitionOutcome outcome;
  outcome.refused_by_this_run = evidence.refused_by_this_run;
  std::vector<bool> archived(modules.size(), false);
  for (size_t i = 0; i < modules.size(); ++i) {
    if (!used.contains(i)) continue;
    auto refusal = refusals.find(i);
    for (size_t imported : modules[i].imports) {
      // An import this part left undecided (a kernel's module, which only
      // kernels decide, under a module no kernel used) is CombineParts' to check.
      if (refusal == refusals.end() && used.contains(imported) && !archived[imported]) {
        refusal = refusals
                      .try_emplace(i, fmt::format("it imports '{}', which is not archived",
                                                  modules[imported].metadata.name))
                      .first;
      }
    }
    const ModuleMetadata& metadata = modules[i].metadata;
    if (refusal != refusals.end()) {
      outcome.refused.push_back(
          {metadata.key, {metadata.session_digest, metadata.name, refusal->second}});
      continue;
    }
    archived[i] = true;
    ModuleMetadata decided = metadata;
    decided.verified_by = used_by_kernels.contains(i) ? schema::ModuleVerification::KERNELS
                                                      : schema::ModuleVerification::LAYOUT;
    outcome.archived.emplace_back(std::move(decided), ir_of(i));
  }
  return outcome;
}

size_t ProgramsPerSession(size_t programs, const SessionSize& size) {
  if (size.programs_per_session > 0)
    return std::clamp<size_t>(programs, 1, size.programs_per_session);
  const size_t sessions =
      std::clamp<size_t>(programs / kProgramsWorthASession, 1, std::max<size_t>(size.workers, 1));
  return std::max<size_t>((programs + sessions - 1) / sessions, 1);
}

GroupWork GatherGroup(const Trace& trace, const SessionGroup& group) {
  GroupWork work;
  for (const KernelRecord* record : group.kernels) {
    // Under the names the app gave its modules: wrappers that differ in
    // their derived names alone are archived, and verified, one by one.
    absl::StatusOr<ComponentPtr> program = trace.ProgramOf(*record);
    if (!program.ok()) continue;
    absl::StatusOr<Snapshot> snapshot = SnapshotFor(trace, *program);
    if (!snapshot.ok()) continue;
    work.snapshots.push_back(*std::move(snapshot));
    work.programs.push_back(
        {*program, &work.snapshots.back(), record->entry_point_index, record->target_index});
    work.records.push_back(record);
  }
  work.kernel_modules = KernelModules(trace, group);
  absl::flat_hash_set<ModuleNodeKey> unused;
  for (const ModuleLoadRecord* load : group.loads) {
    absl::StatusOr<ComponentPtr> module = trace.ModuleOf(*load);
    if (!module.ok() || work.kernel_modules.contains(NodeKeyOf(**module)) ||
        !unused.insert(NodeKeyOf(**module)).second)
      continue;
    absl::StatusOr<Snapshot> snapshot = SnapshotFor(trace, *module);
    if (!snapshot.ok()) continue;
    work.snapshots.push_back(*std::move(snapshot));
    work.programs.push_back({*module, &work.snapshots.back(), 0, 0});
    work.records.push_back(nullptr);
  }
  // Modules asked for by absolute path outside every root of the session
  // (sgl's load_program(path)): their files are rooted at the request's
  // directory, which a request from a moved app names anew.
  std::vector<std::string> requested_by_path;
  for (const RecordedProgram& program : work.programs) {
    ForEachDistinctNode(program.program, [&](const Component& node) {
      if (node.kind == Component::Kind::kModule && !node.source &&
          node.requested_name.starts_with('/'))
        requested_by_path.push_back(node.requested_name);
    });
  }
  work.request_directories = RequestDirectories(group.config, requested_by_path);
  return work;
}

double RecordedSeconds(const std::vector<const KernelRecord*>& records, size_t program) {
  return records[program] ? records[program]->compile_seconds : 0;
}

namespace {

void AddPart(GroupWork& work, std::span<const size_t> programs, size_t group_index,
             std::vector<PartWork>& parts) {
  PartWork part;
  part.group = group_index;
  for (size_t p : programs) {
    part.programs.push_back(work.programs[p]);
    part.records.push_back(work.records[p]);
    part.indices.push_back(p);
    part.recorded_seconds += RecordedSeconds(work.records, p);
  }
  work.parts.push_back(parts.size());
  parts.push_back(std::move(part));
}

}  // namespace

void SplitIntoParts(GroupWork& work, std::span<const size_t> programs, size_t group_index,
                    const SessionSize& size, std::vector<PartWork>& parts) {
  for (std::vector<size_t> indices : ConsistentParts(work.programs, programs)) {
    if (size.programs_per_session == 0 && size.own_session_seconds > 0 && indices.size() > 1) {
      auto heaviest = std::max_element(indices.begin(), indices.end(), [&](size_t a, size_t b) {
        return RecordedSeconds(work.records, a) < RecordedSeconds(work.records, b);
      });
      double next_seconds = 0;
      for (size_t p : indices)
        if (p != *heaviest) next_seconds = std::max(next_seconds, RecordedSeconds(work.records, p));
      // The next heaviest kernel waits for the whole set's modules: unless
      // the heaviest outlasts it by more than a worker's share, their chains
      // end about together, and the session would cost CPU for no earlier end.
      if (RecordedSeconds(work.records, *heaviest) - next_seconds > size.own_session_seconds) {
        AddPart(work, std::span(&*heaviest, 1), group_index, parts);
        indices.erase(heaviest);
      }
    }
    // In recorded order, so that programs built from the same modules (one
    // test file's kernels, one feature's) mostly share a session.
    const size_t most = ProgramsPerSession(indices.size(), size);
    for (size_t first = 0; first < indices.size(); first += most) {
      const size_t end = std::min(indices.size(), first + most);
      AddPart(work, std::span(indices).subspan(first, end - first), group_index, parts);
    }
  }
}

GroupOutcome CombineParts(std::vector<PartitionOutcome> parts) {
  absl::flat_hash_set<Digest> refused;
  absl::flat_hash_map<Digest, std::string> names;
  GroupOutcome outcome;
  for (PartitionOutcome& part : parts) {
    outcome.refused_by_this_run |= part.refused_by_this_run;
    for (auto& [key, module] : part.refused) {
      names.try_emplace(key, module.name);
      if (refused.insert(key).second) outcome.refused.push_back(std::move(module));
    }
  }
  // Verified by kernels in any part, it is archived as such.
  absl::flat_hash_map<Digest, size_t> archived;
  for (PartitionOutcome& part : parts) {
    for (auto& entry : part.archived) {
      if (refused.contains(entry.first.key)) continue;
      auto [it, inserted] = archived.try_emplace(entry.first.key, outcome.archived.size());
      if (inserted) {
        outcome.archived.push_back(std::move(entry));
      } else if (entry.first.verified_by == schema::ModuleVerification::KERNELS) {
        outcome.archived[it->second].first.verified_by = schema::ModuleVerification::KERNELS;
      }
    }
  }
  // A module is served only with its imports, which another part may have
  // refused, or none archived: then it goes too, and what imports it.
  for (bool dropped = true; dropped;) {
    dropped = false;
    absl::flat_hash_set<Digest> kept;
    for (const auto& [metadata, ir] : outcome.archived) kept.insert(metadata.key);
    std::erase_if(outcome.archived, [&](const std::pair<ModuleMetadata, std::string>& entry) {
      const ModuleMetadata& metadata = entry.first;
      auto missing = std::find_if(metadata.imports.begin(), metadata.imports.end(),
                                  [&](const Digest& key) { return !kept.contains(key); });
      if (missing == metadata.imports.end()) return false;
      auto name = names.find(*missing);
      outcome.refused.push_back({metadata.session_digest, metadata.name,
                                 fmt::format("it imports '{}', which is not archived",
                                             name != names.end() ? name->second : "a module")});
      names.try_emplace(metadata.key, metadata.name);
      dropped = true;
      return true;
    });
  }
  return outcome;
}

std::string PartLabel(const Trace& trace, const PartWork& part) {
  const std::string first = part.records.empty() || !part.records.front()
                                ? fmt::format("module '{}'", part.programs.front().program->name)
                                : KernelLabel(trace, *part.records.front());
  return fmt::format("{} program(s), the first {}", part.programs.size(), first);
}

}  // namespace spreplay

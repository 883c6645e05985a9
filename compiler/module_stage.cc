#include "compiler/module_stage.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <type_traits>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/fmt_absl.h"
#include "common/seconds_since.h"
#include "compiler/compile_timeline.h"
#include "compiler/module_stage_cache.h"
#include "compiler/ptx_comparison.h"
#include "compiler/trace_snapshot.h"
#include "fmt/format.h"
#include "interpose/key_hasher.h"
#include "interpose/module_keys.h"
#include "interpose/path_roots.h"
#include "replayer/ir_modules.h"

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

// What one set of a group's programs, verified together, says of each module
// they use, by module key.
struct PartitionOutcome {
  std::vector<std::pair<ModuleMetadata, std::string>> archived;
  std::vector<std::pair<Digest, UnservedModule>> refused;
};

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
std::vector<std::vector<size_t>> ConsistentParts(const std::vector<RecordedProgram>& programs) {
  std::vector<std::vector<size_t>> parts;
  std::vector<SessionContents> contents_of_part;
  for (size_t p = 0; p < programs.size(); ++p) {
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

// One part of a group (ConsistentParts): its programs are serialized in one
// session, then each is rebuilt over that IR on whichever worker is free.
struct PartWork {
  size_t group = 0;
  std::vector<RecordedProgram> programs;
  std::vector<const KernelRecord*> records;  // null for a module no kernel used
  SerializedSession serialized;
  std::vector<absl::StatusOr<std::string>> codes;
  std::vector<double> rebuild_seconds;
  double serialize_seconds = 0;
  // What the app's compiles of its kernels took: the longest parts start first.
  double recorded_seconds = 0;
  std::string builder_error;  // why no Slang could be set up to serialize it, if so
};

// What the parts of one group share.
struct GroupWork {
  std::deque<Snapshot> snapshots;  // stable addresses for RecordedProgram
  absl::flat_hash_set<ModuleNodeKey> kernel_modules;
  std::vector<std::string> request_directories;
  std::vector<size_t> parts;  // indices into the stage's parts
};

// `kernel_modules`: the modules of every recorded kernel of the group.
// `verified`: the kernels that compiled; the part's other kernels are left
// out, as if the app had not built them.
PartitionOutcome DecidePart(const Trace& trace, const SessionGroup& group, const PartWork& part,
                            const std::vector<std::string>& request_directories,
                            const absl::flat_hash_set<ModuleNodeKey>& kernel_modules,
                            const absl::flat_hash_set<const KernelRecord*>& verified) {
  const std::vector<RecordedProgram>& programs = part.programs;
  const std::vector<const KernelRecord*>& records = part.records;
  const SerializedSession& serialized = part.serialized;
  const std::vector<absl::StatusOr<std::string>>& codes = part.codes;

  // A module is archived only if every kernel built with it was rebuilt
  // from IR exactly, and so were its imports.
  absl::flat_hash_map<size_t, std::string> refusals;
  for (size_t i = 0; i < serialized.modules.size(); ++i) {
    if (!serialized.modules[i].source_only.empty())
      refusals.try_emplace(i, serialized.modules[i].source_only);
    if (std::optional<std::string> declaring =
            DeclaresUserAttribute(*serialized.modules[i].description, programs))
      refusals.try_emplace(
          i, fmt::format("{} declares a user attribute ([__AttributeUsage]), whose arguments "
                         "Slang's reflection of a module loaded from IR can crash on",
                         *declaring));
  }
  absl::flat_hash_set<size_t> used;
  absl::flat_hash_set<size_t> used_by_kernels;
  absl::flat_hash_map<ModuleNodeKey, size_t> by_node_key;
  for (size_t i = 0; i < serialized.modules.size(); ++i)
    by_node_key.try_emplace(NodeKeyOf(*serialized.modules[i].description), i);
  for (size_t p = 0; p < programs.size(); ++p) {
    if (records[p] && !verified.contains(records[p])) continue;
    const std::string reason = FailureOf(trace, programs[p], records[p], codes[p]);
    std::vector<size_t> modules;
    if (serialized.uses[p].ok()) {
      modules = *serialized.uses[p];
    } else {
      ForEachDistinctNode(programs[p].program, [&](const Component& node) {
        if (auto it = by_node_key.find(NodeKeyOf(node));
            node.kind == Component::Kind::kModule && it != by_node_key.end())
          modules.push_back(it->second);
      });
    }
    for (size_t module : modules) {
      // A module's layout says nothing for the kernels built with it.
      if (!records[p] &&
          kernel_modules.contains(NodeKeyOf(*serialized.modules[module].description)))
        continue;
      used.insert(module);
      if (records[p]) used_by_kernels.insert(module);
      if (!reason.empty()) refusals.try_emplace(module, reason);
    }
  }
  PartitionOutcome outcome;
  std::vector<bool> archived(serialized.modules.size(), false);
  for (size_t i = 0; i < serialized.modules.size(); ++i) {
    if (!used.contains(i)) continue;
    const SerializedModule& module = serialized.modules[i];
    auto refusal = refusals.find(i);
    for (size_t imported : module.imports) {
      if (refusal == refusals.end() && !archived[imported]) {
        refusal = refusals
                      .try_emplace(i, fmt::format("it imports '{}', which is not archived",
                                                  serialized.modules[imported].description->name))
                      .first;
      }
    }
    const Digest key = IrModuleKey(group.toolchain, group.content, *module.description);
    if (refusal != refusals.end()) {
      outcome.refused.push_back({key, {group.content, module.description->name, refusal->second}});
      continue;
    }
    archived[i] = true;
    outcome.archived.emplace_back(
        MetadataOf(group, serialized, i, request_directories,
                   used_by_kernels.contains(i) ? schema::ModuleVerification::KERNELS
                                               : schema::ModuleVerification::LAYOUT),
        module.ir);
  }
  return outcome;
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

// The group's programs, split into parts (added to `parts`) that its
// sessions serialize and rebuild.
GroupWork PrepareGroup(const Trace& trace, const SessionGroup& group, size_t group_index,
                       std::vector<PartWork>& parts) {
  GroupWork work;
  std::vector<RecordedProgram> programs;
  std::vector<const KernelRecord*> records;
  for (const KernelRecord* record : group.kernels) {
    // Under the names the app gave its modules: wrappers that differ in
    // their derived names alone are archived, and verified, one by one.
    absl::StatusOr<ComponentPtr> program = trace.ProgramOf(*record);
    if (!program.ok()) continue;
    absl::StatusOr<Snapshot> snapshot = SnapshotFor(trace, *program);
    if (!snapshot.ok()) continue;
    work.snapshots.push_back(*std::move(snapshot));
    programs.push_back(
        {*program, &work.snapshots.back(), record->entry_point_index, record->target_index});
    records.push_back(record);
  }
  work.kernel_modules = KernelModules(trace, group);
  // The modules the app asked for that no recorded kernel was built with,
  // each a program of its own.
  absl::flat_hash_set<ModuleNodeKey> unused;
  for (const ModuleLoadRecord* load : group.loads) {
    absl::StatusOr<ComponentPtr> module = trace.ModuleOf(*load);
    if (!module.ok() || work.kernel_modules.contains(NodeKeyOf(**module)) ||
        !unused.insert(NodeKeyOf(**module)).second)
      continue;
    absl::StatusOr<Snapshot> snapshot = SnapshotFor(trace, *module);
    if (!snapshot.ok()) continue;
    work.snapshots.push_back(*std::move(snapshot));
    programs.push_back({*module, &work.snapshots.back(), 0, 0});
    records.push_back(nullptr);
  }
  // Modules asked for by absolute path outside every root of the session
  // (sgl's load_program(path)): their files are rooted at the request's
  // directory, which a request from a moved app names anew.
  std::vector<std::string> requested_by_path;
  for (const RecordedProgram& program : programs) {
    ForEachDistinctNode(program.program, [&](const Component& node) {
      if (node.kind == Component::Kind::kModule && !node.source &&
          node.requested_name.starts_with('/'))
        requested_by_path.push_back(node.requested_name);
    });
  }
  work.request_directories = RequestDirectories(group.config, requested_by_path);
  for (const std::vector<size_t>& indices : ConsistentParts(programs)) {
    PartWork part;
    part.group = group_index;
    for (size_t p : indices) {
      part.programs.push_back(programs[p]);
      part.records.push_back(records[p]);
      if (records[p]) part.recorded_seconds += records[p]->compile_seconds;
    }
    work.parts.push_back(parts.size());
    parts.push_back(std::move(part));
  }
  return work;
}

// A module that several parts use (slangpy's library, say) is archived
// once, and only if it passed in every part that used it.
GroupOutcome CombineParts(std::vector<PartitionOutcome> parts) {
  absl::flat_hash_set<Digest> refused;
  GroupOutcome outcome;
  for (PartitionOutcome& part : parts) {
    for (auto& [key, module] : part.refused) {
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
  return outcome;
}

// A label for the timeline: the part's first kernel, or its first module.
std::string PartLabel(const Trace& trace, const PartWork& part) {
  const std::string first = part.records.empty() || !part.records.front()
                                ? fmt::format("module '{}'", part.programs.front().program->name)
                                : KernelLabel(trace, *part.records.front());
  return fmt::format("{} program(s), the first {}", part.programs.size(), first);
}

}  // namespace

// Every part's session is serialized on whichever worker is free, then every
// program is rebuilt over its part's IR on whichever worker is free: a
// configuration of many kernels (an app's one session, say) is spread over
// every worker instead of running after the others on one. The longest work
// starts first.
struct ModuleStage::State {
  const Trace& trace;
  const CompileCache& cache;
  CompileTimeline* timeline;
  std::vector<SessionGroup> groups;
  std::vector<Digest> names;  // of each group's outcome in the cache
  std::vector<GroupOutcome> outcomes;
  std::vector<size_t> to_verify;  // the groups the cache had no outcome for
  size_t cached_groups = 0;
  std::vector<GroupWork> works;  // per group
  std::vector<PartWork> parts;
  std::vector<size_t> parts_longest_first;
  std::vector<std::pair<size_t, size_t>> rebuilds;  // (part, program)
  absl::flat_hash_map<const KernelRecord*, std::pair<size_t, size_t>> program_of;
  // Per worker: its Slang, made on first use, or why it could not be.
  std::vector<std::unique_ptr<IrModuleBuilder>> builders;
  std::vector<std::string> builder_errors;
  std::vector<IrRebuildSession> sessions;

  State(const Trace& trace, const CompileCache& cache, size_t workers, CompileTimeline* timeline)
      : trace(trace),
        cache(cache),
        timeline(timeline),
        builders(workers),
        builder_errors(workers),
        sessions(workers) {}

  IrModuleBuilder* BuilderFor(size_t worker) {
    if (!builders[worker] && builder_errors[worker].empty()) {
      absl::StatusOr<std::unique_ptr<IrModuleBuilder>> builder = IrModuleBuilder::Create();
      if (builder.ok())
        builders[worker] = *std::move(builder);
      else
        builder_errors[worker] = std::string(builder.status().message());
    }
    return builders[worker].get();
  }
};

namespace {

// The trace's session configurations that `candidates` and the trace's
// module loads name.
std::vector<SessionGroup> GroupsOf(const Trace& trace,
                                   const std::vector<const KernelRecord*>& candidates) {
  std::vector<SessionGroup> groups;
  absl::flat_hash_map<Digest, size_t> group_of;
  auto group_for = [&](const Digest& location, const Digest& content,
                       const std::string& toolchain) -> SessionGroup* {
    auto [it, inserted] = group_of.try_emplace(location, groups.size());
    if (inserted) {
      absl::StatusOr<SessionConfig> config = trace.FindSession(location);
      if (!config.ok()) {
        group_of.erase(it);
        return nullptr;
      }
      groups.push_back({content, location, *std::move(config), toolchain, {}, {}, {}});
    }
    return &groups[it->second];
  };
  for (const KernelRecord* record : candidates) {
    if (SessionGroup* group =
            group_for(record->session_location, record->session, record->toolchain))
      group->kernels.push_back(record);
  }
  // Configurations that built no kernel compile archives are archived for
  // the modules the app asked them for.
  for (const ModuleLoadRecord& load : trace.module_loads()) {
    if (SessionGroup* group = group_for(load.session_location, load.session, load.toolchain))
      group->loads.push_back(&load);
  }
  for (const KernelRecord& record : trace.kernels()) {
    if (auto it = group_of.find(record.session_location); it != group_of.end())
      groups[it->second].recorded.push_back(&record);
  }
  return groups;
}

}  // namespace

ModuleStage::ModuleStage(const Trace& trace, const std::vector<const KernelRecord*>& candidates,
                         const CompileCache& cache, size_t workers, CompileTimeline* timeline)
    : state_(std::make_unique<State>(trace, cache, std::max<size_t>(workers, 1), timeline)) {
  State& state = *state_;
  state.groups = GroupsOf(trace, candidates);
  const size_t count = state.groups.size();
  state.names.resize(count);
  state.outcomes.resize(count);
  state.works.resize(count);
  // A configuration whose inputs are unchanged since a compile that used this
  // cache gets that compile's outcome, and its modules' IR, from the cache.
  for (size_t i = 0; i < count; ++i) {
    if (cache.enabled()) {
      state.names[i] = ModuleStageOutcomeName(trace, state.groups[i]);
      if (std::optional<GroupOutcome> remembered = LoadModuleStageOutcome(cache, state.names[i])) {
        state.outcomes[i] = *std::move(remembered);
        ++state.cached_groups;
        continue;
      }
    }
    state.to_verify.push_back(i);
    state.works[i] = PrepareGroup(trace, state.groups[i], i, state.parts);
  }
  std::vector<PartWork>& parts = state.parts;
  state.parts_longest_first.resize(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) state.parts_longest_first[i] = i;
  std::stable_sort(
      state.parts_longest_first.begin(), state.parts_longest_first.end(),
      [&](size_t a, size_t b) { return parts[a].recorded_seconds > parts[b].recorded_seconds; });
  // Every program of every part, the parts' longest first, and within a
  // part its longest kernels first; a worker keeps its session from one
  // program of a part to the next.
  for (size_t index : state.parts_longest_first) {
    PartWork& part = parts[index];
    part.codes.resize(part.programs.size(), absl::UnknownError("not rebuilt over IR"));
    part.rebuild_seconds.resize(part.programs.size(), 0);
    std::vector<size_t> programs(part.programs.size());
    for (size_t p = 0; p < programs.size(); ++p) programs[p] = p;
    std::stable_sort(programs.begin(), programs.end(), [&](size_t a, size_t b) {
      const double seconds_a = part.records[a] ? part.records[a]->compile_seconds : 0;
      const double seconds_b = part.records[b] ? part.records[b]->compile_seconds : 0;
      return seconds_a > seconds_b;
    });
    for (size_t p : programs) {
      state.rebuilds.emplace_back(index, p);
      if (part.records[p]) state.program_of.try_emplace(part.records[p], index, p);
    }
  }
}

ModuleStage::~ModuleStage() = default;

size_t ModuleStage::serialize_count() const { return state_->parts.size(); }

void ModuleStage::Serialize(size_t item, size_t worker) {
  State& state = *state_;
  PartWork& part = state.parts[state.parts_longest_first[item]];
  IrModuleBuilder* builder = state.BuilderFor(worker);
  if (!builder) {
    part.builder_error = state.builder_errors[worker];
    return;
  }
  std::optional<CompileTimeline::Scope> span;
  if (state.timeline)
    span.emplace(*state.timeline, "serialize", PartLabel(state.trace, part), worker);
  const auto start = std::chrono::steady_clock::now();
  part.serialized = builder->Serialize(state.groups[part.group].config, part.programs);
  part.serialize_seconds = SecondsSince(start);
}

size_t ModuleStage::rebuild_count() const { return state_->rebuilds.size(); }

void ModuleStage::Rebuild(size_t item, size_t worker) {
  State& state = *state_;
  auto [index, p] = state.rebuilds[item];
  PartWork& part = state.parts[index];
  if (!part.builder_error.empty()) return;
  IrModuleBuilder* builder = state.BuilderFor(worker);
  if (!builder) {
    part.codes[p] = absl::InternalError(state.builder_errors[worker]);
    return;
  }
  std::optional<CompileTimeline::Scope> span;
  if (state.timeline) {
    span.emplace(*state.timeline, "rebuild",
                 part.records[p] ? KernelLabel(state.trace, *part.records[p])
                                 : fmt::format("module '{}'", part.programs[p].program->name),
                 worker);
  }
  const auto start = std::chrono::steady_clock::now();
  part.codes[p] = builder->RebuildOneFromIr(state.groups[part.group].config, part.programs,
                                            part.serialized, p, state.sessions[worker]);
  part.rebuild_seconds[p] = SecondsSince(start);
}

std::optional<RebuiltKernel> ModuleStage::RebuiltKernelOf(const KernelRecord& record) const {
  auto it = state_->program_of.find(&record);
  if (it == state_->program_of.end()) return std::nullopt;
  const PartWork& part = state_->parts[it->second.first];
  if (!part.builder_error.empty()) return std::nullopt;
  const size_t p = it->second.second;
  return RebuiltKernel{&part.codes[p], part.serialize_seconds, part.rebuild_seconds[p]};
}

ModuleStageReport ModuleStage::Finish(const std::vector<const KernelRecord*>& verified_kernels,
                                      ArchiveWriter& writer,
                                      const std::function<void(const std::string&)>& progress) {
  State& state = *state_;
  // Slang's sessions go first: they hold what the builders' global sessions made.
  state.sessions.clear();
  state.builders.clear();
  ModuleStageReport report;
  report.groups = state.groups.size();
  report.cached_groups = state.cached_groups;
  for (const PartWork& part : state.parts) {
    report.seconds += part.serialize_seconds;
    for (double seconds : part.rebuild_seconds) report.seconds += seconds;
  }
  const absl::flat_hash_set<const KernelRecord*> verified(verified_kernels.begin(),
                                                          verified_kernels.end());
  for (size_t group : state.to_verify) {
    SessionGroup& session_group = state.groups[group];
    const GroupWork& work = state.works[group];
    auto unbuilt = std::find_if(work.parts.begin(), work.parts.end(), [&](size_t index) {
      return !state.parts[index].builder_error.empty();
    });
    if (unbuilt != work.parts.end()) {
      state.outcomes[group].refused.push_back(
          {session_group.content, "*", state.parts[*unbuilt].builder_error});
      continue;
    }
    std::vector<PartitionOutcome> decided;
    for (size_t index : work.parts)
      decided.push_back(DecidePart(state.trace, session_group, state.parts[index],
                                   work.request_directories, work.kernel_modules, verified));
    state.outcomes[group] = CombineParts(std::move(decided));
    // Remembered under the kernels that compiled, as a compile of a trace
    // holding only those would look it up.
    const size_t candidates = session_group.kernels.size();
    std::erase_if(session_group.kernels,
                  [&](const KernelRecord* record) { return !verified.contains(record); });
    if (session_group.kernels.size() != candidates && state.cache.enabled())
      state.names[group] = ModuleStageOutcomeName(state.trace, session_group);
  }
  for (size_t group : state.to_verify) {
    GroupOutcome& outcome = state.outcomes[group];
    // Every archive of this module key holds the first IR verified under it.
    bool all_stored = true;
    for (auto& [metadata, ir] : outcome.archived) {
      const Digest name = VerifiedIrName(metadata.key);
      if (std::optional<std::string> verified_before = state.cache.Get(name)) {
        ir = *std::move(verified_before);
      } else if (absl::StatusOr<std::string> first = state.cache.PutFirst(name, ir); first.ok()) {
        ir = *std::move(first);  // another compile may have stored it meanwhile
      } else {
        all_stored = false;
        if (progress) progress(fmt::format("warning: {}", first.status().message()));
      }
    }
    // An outcome with a refusal is not remembered: what refused may have
    // been this run's environment (its NVRTC, say, or a builder that could
    // not be made), not the trace.
    if (all_stored && outcome.refused.empty() && state.cache.enabled()) {
      if (absl::Status status = StoreModuleStageOutcome(state.cache, state.names[group], outcome);
          !status.ok() && progress)
        progress(fmt::format("warning: {}", status.message()));
    }
  }
  for (GroupOutcome& outcome : state.outcomes) {
    for (auto& [metadata, ir] : outcome.archived) {
      report.ir_bytes += ir.size();
      ++report.archived;
      writer.AddModule(std::move(metadata), std::move(ir));
    }
    for (UnservedModule& refused : outcome.refused) {
      if (progress)
        progress(fmt::format("module '{}' not archived as IR: {}", refused.name, refused.reason));
      ++report.refused;
      writer.AddUnservedModule(std::move(refused));
    }
  }
  return report;
}

}  // namespace spreplay

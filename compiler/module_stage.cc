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
#include "compiler/parallel_for.h"
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
PartitionOutcome DecidePart(const Trace& trace, const SessionGroup& group, const PartWork& part,
                            const std::vector<std::string>& request_directories,
                            const absl::flat_hash_set<ModuleNodeKey>& kernel_modules) {
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

// Verifies the modules of `groups[to_verify]`, into `outcomes`. Every
// part's session is serialized on whichever worker is free, then every
// program is rebuilt over its part's IR on whichever worker is free: a group
// of many kernels (an app's one session, say) is spread over every worker
// instead of running after the others on one. The longest work starts first.
void VerifyGroups(const Trace& trace, const std::vector<SessionGroup>& groups,
                  const std::vector<size_t>& to_verify, size_t workers, CompileTimeline* timeline,
                  std::vector<GroupOutcome>& outcomes) {
  std::vector<GroupWork> works(groups.size());
  std::vector<PartWork> parts;
  for (size_t group : to_verify) works[group] = PrepareGroup(trace, groups[group], group, parts);
  std::vector<size_t> by_work(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) by_work[i] = i;
  std::stable_sort(by_work.begin(), by_work.end(), [&](size_t a, size_t b) {
    return parts[a].recorded_seconds > parts[b].recorded_seconds;
  });

  std::vector<std::unique_ptr<IrModuleBuilder>> builders(workers);
  std::vector<std::string> builder_errors(workers);
  auto builder_for = [&](size_t worker) -> IrModuleBuilder* {
    if (!builders[worker] && builder_errors[worker].empty()) {
      absl::StatusOr<std::unique_ptr<IrModuleBuilder>> builder = IrModuleBuilder::Create();
      if (builder.ok())
        builders[worker] = *std::move(builder);
      else
        builder_errors[worker] = std::string(builder.status().message());
    }
    return builders[worker].get();
  };
  ParallelFor(by_work.size(), workers, [&](size_t item, size_t worker) {
    PartWork& part = parts[by_work[item]];
    IrModuleBuilder* builder = builder_for(worker);
    if (!builder) {
      part.builder_error = builder_errors[worker];
      return;
    }
    std::optional<CompileTimeline::Scope> span;
    if (timeline) span.emplace(*timeline, "serialize", PartLabel(trace, part), worker);
    part.serialized = builder->Serialize(groups[part.group].config, part.programs);
    part.codes.resize(part.programs.size(), absl::UnknownError("not rebuilt"));
  });

  // Every program of every part, the parts' longest first, and within a
  // part its longest kernels first; a worker keeps its session from one
  // program of a part to the next.
  std::vector<std::pair<size_t, size_t>> rebuilds;
  for (size_t index : by_work) {
    PartWork& part = parts[index];
    if (part.codes.empty()) continue;  // no builder
    std::vector<size_t> programs(part.programs.size());
    for (size_t p = 0; p < programs.size(); ++p) programs[p] = p;
    std::stable_sort(programs.begin(), programs.end(), [&](size_t a, size_t b) {
      const double seconds_a = part.records[a] ? part.records[a]->compile_seconds : 0;
      const double seconds_b = part.records[b] ? part.records[b]->compile_seconds : 0;
      return seconds_a > seconds_b;
    });
    for (size_t p : programs) rebuilds.emplace_back(index, p);
  }
  std::vector<IrRebuildSession> sessions(workers);
  ParallelFor(rebuilds.size(), workers, [&](size_t item, size_t worker) {
    auto [index, p] = rebuilds[item];
    PartWork& part = parts[index];
    IrModuleBuilder* builder = builder_for(worker);
    if (!builder) {
      part.codes[p] = absl::InternalError(builder_errors[worker]);
      return;
    }
    std::optional<CompileTimeline::Scope> span;
    if (timeline) {
      span.emplace(*timeline, "rebuild",
                   part.records[p] ? KernelLabel(trace, *part.records[p])
                                   : fmt::format("module '{}'", part.programs[p].program->name),
                   worker);
    }
    part.codes[p] = builder->RebuildOneFromIr(groups[part.group].config, part.programs,
                                              part.serialized, p, sessions[worker]);
  });
  sessions.clear();
  builders.clear();

  for (size_t group : to_verify) {
    const GroupWork& work = works[group];
    auto unbuilt = std::find_if(work.parts.begin(), work.parts.end(),
                                [&](size_t index) { return !parts[index].builder_error.empty(); });
    if (unbuilt != work.parts.end()) {
      outcomes[group].refused.push_back(
          {groups[group].content, "*", parts[*unbuilt].builder_error});
      continue;
    }
    std::vector<PartitionOutcome> decided;
    for (size_t index : work.parts)
      decided.push_back(DecidePart(trace, groups[group], parts[index], work.request_directories,
                                   work.kernel_modules));
    outcomes[group] = CombineParts(std::move(decided));
  }
}

}  // namespace

ModuleStageReport ArchiveVerifiedModules(const Trace& trace,
                                         const std::vector<const KernelRecord*>& kernels,
                                         size_t workers, const CompileCache& cache,
                                         ArchiveWriter& writer,
                                         const std::function<void(const std::string&)>& progress,
                                         CompileTimeline* timeline) {
  const auto start = std::chrono::steady_clock::now();
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
  for (const KernelRecord* record : kernels) {
    if (SessionGroup* group =
            group_for(record->session_location, record->session, record->toolchain))
      group->kernels.push_back(record);
  }
  // Configurations that built no verified kernel are archived for the
  // modules the app asked them for.
  for (const ModuleLoadRecord& load : trace.module_loads()) {
    if (SessionGroup* group = group_for(load.session_location, load.session, load.toolchain))
      group->loads.push_back(&load);
  }
  for (const KernelRecord& record : trace.kernels()) {
    if (auto it = group_of.find(record.session_location); it != group_of.end())
      groups[it->second].recorded.push_back(&record);
  }
  // A configuration whose inputs are unchanged since a compile that used this
  // cache gets that compile's outcome, and its modules' IR, from the cache.
  std::vector<Digest> names(groups.size());
  std::vector<GroupOutcome> outcomes(groups.size());
  std::vector<size_t> to_verify;
  ModuleStageReport report;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (cache.enabled()) {
      names[i] = ModuleStageOutcomeName(trace, groups[i]);
      if (std::optional<GroupOutcome> remembered = LoadModuleStageOutcome(cache, names[i])) {
        outcomes[i] = *std::move(remembered);
        ++report.cached_groups;
        continue;
      }
    }
    to_verify.push_back(i);
  }
  VerifyGroups(trace, groups, to_verify, workers, timeline, outcomes);

  report.groups = groups.size();
  for (size_t group : to_verify) {
    // Every archive of this module key holds the first IR verified under it.
    bool all_stored = true;
    for (auto& [metadata, ir] : outcomes[group].archived) {
      const Digest name = VerifiedIrName(metadata.key);
      if (std::optional<std::string> verified_before = cache.Get(name)) {
        ir = *std::move(verified_before);
      } else if (absl::StatusOr<std::string> first = cache.PutFirst(name, ir); first.ok()) {
        ir = *std::move(first);  // another compile may have stored it meanwhile
      } else {
        all_stored = false;
        if (progress) progress(fmt::format("warning: {}", first.status().message()));
      }
    }
    // An outcome with a refusal is not remembered: what refused may have
    // been this run's environment (its NVRTC, say, or a builder that could
    // not be made), not the trace.
    if (all_stored && outcomes[group].refused.empty() && cache.enabled()) {
      if (absl::Status status = StoreModuleStageOutcome(cache, names[group], outcomes[group]);
          !status.ok() && progress)
        progress(fmt::format("warning: {}", status.message()));
    }
  }
  for (GroupOutcome& outcome : outcomes) {
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
  report.seconds = SecondsSince(start);
  return report;
}

}  // namespace spreplay

#include "compiler/module_stage.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/fmt_absl.h"
#include "common/seconds_since.h"
#include "compiler/code_from_child.h"
#include "compiler/compile_timeline.h"
#include "compiler/fork_server.h"
#include "compiler/module_parts.h"
#include "compiler/module_stage_cache.h"
#include "compiler/serialized_session_codec.h"
#include "fmt/format.h"
#include "replayer/ir_modules.h"

namespace spreplay {

// Every part's session is serialized on whichever worker is free, and each
// of its programs is rebuilt over its IR on whichever worker is free once it
// is: a configuration of many kernels (an app's one session, say) is spread
// over every worker instead of running after the others on one. The longest
// work starts first.
struct ModuleStage::State {
  const Trace& trace;
  const CompileCache& cache;
  CompileTimeline* timeline;
  std::vector<SessionGroup> groups;
  std::vector<Digest> names;  // of each group's outcome in the cache
  std::vector<GroupOutcome> outcomes;
  std::vector<size_t> to_verify;  // the groups the cache had no outcome for
  std::vector<GroupWork> works;   // per group
  // Per group, with the cache: each program's ModuleProgramIdentity, and the
  // parts it is verified in this time, remembered or not, by those identities.
  std::vector<std::vector<Digest>> identities;
  std::vector<std::vector<std::vector<PartProgram>>> parts_of_group;
  std::vector<PartWork> parts;
  std::vector<size_t> parts_longest_first;
  std::vector<std::pair<size_t, size_t>> rebuilds;  // (part, program)
  absl::flat_hash_map<const KernelRecord*, std::pair<size_t, size_t>> program_of;
  // Per worker: its Slang, made on first use, or why it could not be.
  std::vector<std::unique_ptr<IrModuleBuilder>> builders;
  std::vector<std::string> builder_errors;
  std::vector<IrRebuildSession> sessions;
  // Per part: how many of its rebuilds are not done; its bytes go with the last.
  std::unique_ptr<std::atomic<size_t>[]> rebuilds_left;
  // In a worker's child: the part whose IR it holds, in parts[i].serialized.
  std::optional<size_t> held_part;
  // Per group of several parts: the process that loaded the modules its
  // programs share, from whose copies its parts are serialized (null: each
  // part loads them itself), and how many of its parts are left to take.
  std::vector<std::unique_ptr<ForkServer>> servers;
  std::unique_ptr<std::atomic<size_t>[]> serializations_left;
  std::unique_ptr<std::atomic<bool>[]> served_warm;  // some part came from the server
  // In a group's server: that group's shared modules, loaded.
  std::unique_ptr<WarmSession> warm;

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

  // Takes each part of `group` the cache remembers whole, and returns the
  // group's other programs: those to verify.
  std::vector<size_t> TakeRememberedParts(size_t group) {
    GroupWork& work = works[group];
    std::vector<size_t> unverified;
    if (!cache.enabled()) {
      for (size_t p = 0; p < work.programs.size(); ++p) unverified.push_back(p);
      return unverified;
    }
    std::vector<Digest>& ids = identities[group];
    absl::flat_hash_map<Digest, size_t> program_of;
    for (size_t p = 0; p < work.programs.size(); ++p) {
      ids.push_back(ModuleProgramIdentity(trace, work.records[p], work.programs[p].program));
      program_of.try_emplace(ids.back(), p);
    }
    std::vector<bool> remembered(work.programs.size(), false);
    for (std::vector<PartProgram>& part : LoadModuleStageParts(cache, groups[group])) {
      std::optional<std::vector<std::optional<size_t>>> programs =
          Whole(work, part, program_of, remembered);
      if (!programs) continue;
      std::vector<Digest> part_ids;
      for (const PartProgram& program : part) part_ids.push_back(program.identity);
      std::optional<PartEvidence> evidence = LoadModulePartEvidence(
          cache, ModulePartEvidenceName(groups[group], work.request_directories, part_ids));
      if (!evidence || evidence->programs.size() != part.size()) continue;
      // The part is decided again under the configuration's kernel modules
      // of today: a module no kernel used that a kernel is now built with is
      // that kernel's part's to decide.
      for (size_t j = 0; j < part.size(); ++j) evidence->programs[j].left_out = !(*programs)[j];
      PartitionOutcome outcome =
          Decide(*evidence, work.kernel_modules, [](size_t) { return std::string(); });
      // A module it now archives that no compile verified before.
      if (!TakeVerifiedIr(cache, outcome.archived)) continue;
      for (const std::optional<size_t>& p : *programs) {
        if (p) remembered[*p] = true;
      }
      work.remembered.push_back(std::move(outcome));
      parts_of_group[group].push_back(std::move(part));
    }
    for (size_t p = 0; p < work.programs.size(); ++p) {
      if (!remembered[p]) unverified.push_back(p);
    }
    return unverified;
  }

  // Each program of `part` as a program of `work`, or nullopt if one is
  // missing or another remembered part took it. A module no kernel used that
  // a kernel is now built with is left to that kernel's part: it has no
  // program of `work` here.
  static std::optional<std::vector<std::optional<size_t>>> Whole(
      const GroupWork& work, const std::vector<PartProgram>& part,
      const absl::flat_hash_map<Digest, size_t>& program_of, const std::vector<bool>& taken) {
    std::vector<std::optional<size_t>> programs;
    bool any = false;
    for (const PartProgram& program : part) {
      auto it = program_of.find(program.identity);
      if (it != program_of.end() && !taken[it->second] &&
          std::find(programs.begin(), programs.end(), it->second) == programs.end()) {
        programs.push_back(it->second);
        any = true;
      } else if (program.unused_module && work.kernel_modules.contains(*program.unused_module)) {
        programs.push_back(std::nullopt);
      } else {
        return std::nullopt;
      }
    }
    if (!any) return std::nullopt;
    return programs;
  }

  // Remembers what `part` of `group` proved, `evidence`, when it is the
  // trace's verdict on the part's programs, every kernel of them compiled;
  // and the IR of the modules it archived, `outcome`, whose IR becomes the
  // first verified under each module's key.
  void RememberPart(size_t group, const PartWork& part, const PartEvidence& evidence,
                    PartitionOutcome& outcome,
                    const std::function<void(const std::string&)>& progress) {
    if (!cache.enabled() || evidence.refused_by_this_run) return;
    std::vector<Digest> ids;
    std::vector<PartProgram> programs;
    for (size_t i = 0; i < part.programs.size(); ++i) {
      if (evidence.programs[i].left_out) return;
      ids.push_back(identities[group][part.indices[i]]);
      programs.push_back({ids.back(), std::nullopt});
      if (!part.records[i]) programs.back().unused_module = NodeKeyOf(*part.programs[i].program);
    }
    for (auto& [metadata, ir] : outcome.archived) {
      absl::StatusOr<std::string> first = cache.PutFirst(VerifiedIrName(metadata.key), ir);
      if (!first.ok()) {
        if (progress) progress(fmt::format("warning: {}", first.status().message()));
        return;
      }
      ir = *std::move(first);
    }
    const GroupWork& work = works[group];
    const Digest name = ModulePartEvidenceName(groups[group], work.request_directories, ids);
    if (absl::Status status = StoreModulePartEvidence(cache, name, evidence); !status.ok()) {
      if (progress) progress(fmt::format("warning: {}", status.message()));
      return;
    }
    parts_of_group[group].push_back(std::move(programs));
  }

  // In a worker's child process, where no other thread uses them: the
  // builder the parent warmed, else the worker's own.
  IrModuleBuilder* WarmBuilder(size_t worker) {
    for (const std::unique_ptr<IrModuleBuilder>& builder : builders) {
      if (builder) return builder.get();
    }
    return BuilderFor(worker);
  }

  // In a worker's child: makes `index` the part it holds, dropping the IR of
  // the one it held, and the session that loaded it.
  void Hold(size_t index, size_t worker, SerializedSession serialized) {
    Release(worker);
    parts[index].serialized = std::move(serialized);
    held_part = index;
  }

  void Release(size_t worker) {
    if (held_part) parts[*held_part].serialized = {};
    held_part = std::nullopt;
    sessions[worker] = {};
  }

  // Starts a server for each group of several parts that loads the modules
  // their programs share once; before any thread starts. Each holds a Slang
  // session as a worker's child does, so there are no more of them than
  // Slang workers, nor than `most`, for the groups of the most parts.
  void StartServers(size_t most) {
    IrModuleBuilder* builder = BuilderFor(0);
    if (!builder) return;
    std::vector<size_t> split;
    for (size_t group : to_verify) {
      if (works[group].parts.size() >= 2) split.push_back(group);
    }
    std::stable_sort(split.begin(), split.end(), [&](size_t a, size_t b) {
      return works[a].parts.size() > works[b].parts.size();
    });
    split.resize(std::min({split.size(), builders.size(), most}));
    for (size_t group : split) {
      servers[group] = ForkServer::Start(
          [this, builder, group] {
            std::vector<RecordedProgram> programs;
            for (size_t index : works[group].parts)
              programs.insert(programs.end(), parts[index].programs.begin(),
                              parts[index].programs.end());
            absl::StatusOr<std::unique_ptr<WarmSession>> made =
                builder->Warm(groups[group].config, programs);
            if (!made.ok()) return made.status();
            warm = *std::move(made);
            return absl::OkStatus();
          },
          [this, builder](size_t item) {
            PartWork& part = parts[parts_longest_first[item]];
            return EncodeCodeFromChild(EncodeSerializedSession(builder->Serialize(
                                           groups[part.group].config, part.programs, warm.get())),
                                       {});
          });
    }
  }

  // Serialization `item`'s reply: from a copy of its group's server, or,
  // where that server could not load the shared modules or its copy died,
  // from the worker's child like any other.
  absl::StatusOr<std::string> SerializedBy(size_t item, const RunInChild& in_child) {
    const size_t group = parts[parts_longest_first[item]].group;
    absl::StatusOr<std::string> reply = absl::UnavailableError("no server");
    if (servers[group]) reply = servers[group]->Run(item);
    if (reply.ok()) served_warm[group] = true;
    if (!reply.ok()) reply = in_child({});
    // Its last part taken, the server's memory goes.
    if (--serializations_left[group] == 0) servers[group].reset();
    return reply;
  }

  std::string SerializeInChild(size_t item, size_t worker) {
    const size_t index = parts_longest_first[item];
    PartWork& part = parts[index];
    IrModuleBuilder* builder = WarmBuilder(worker);
    if (!builder) return EncodeCodeFromChild(absl::InternalError(builder_errors[worker]), {});
    Hold(index, worker, builder->Serialize(groups[part.group].config, part.programs));
    return EncodeCodeFromChild(EncodeSerializedSession(part.serialized), {});
  }

  std::string RebuildInChild(size_t item, size_t worker, std::string_view payload) {
    auto [index, p] = rebuilds[item];
    PartWork& part = parts[index];
    if (!payload.empty()) {
      absl::StatusOr<SerializedSession> serialized = DecodeSerializedSession(payload);
      if (!serialized.ok()) {
        Release(worker);
        return Rebuilt(serialized.status(), {});
      }
      Hold(index, worker, *std::move(serialized));
    } else if (held_part != index) {
      return std::string(kSendItsIr);
    }
    IrModuleBuilder* builder = WarmBuilder(worker);
    if (!builder) return Rebuilt(absl::InternalError(builder_errors[worker]), {});
    const auto start = std::chrono::steady_clock::now();
    const absl::StatusOr<std::string> code = builder->RebuildOneFromIr(
        groups[part.group].config, part.programs, part.serialized, p, sessions[worker]);
    return Rebuilt(code, {SecondsSince(start)});
  }

  // A rebuild's reply from a worker's child: what it rebuilt, or that it
  // holds no IR of the program's part, which the parent then sends. Only the
  // child knows what it holds: it serialized the part, was sent it, or was
  // forked again since.
  static constexpr std::string_view kRebuilt = "R";
  static constexpr std::string_view kSendItsIr = "I";
  static std::string Rebuilt(const absl::StatusOr<std::string>& code,
                             const std::vector<double>& seconds) {
    return std::string(kRebuilt) + EncodeCodeFromChild(code, seconds);
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
                         const CompileCache& cache, size_t workers, size_t programs_per_session,
                         CompileTimeline* timeline)
    : state_(std::make_unique<State>(trace, cache, std::max<size_t>(workers, 1), timeline)) {
  State& state = *state_;
  state.groups = GroupsOf(trace, candidates);
  const size_t count = state.groups.size();
  state.names.resize(count);
  state.outcomes.resize(count);
  state.works.resize(count);
  state.identities.resize(count);
  state.parts_of_group.resize(count);
  // A configuration whose inputs are unchanged since a compile that used this
  // cache gets that compile's outcome, and its modules' IR, from the cache.
  std::vector<std::vector<size_t>> unverified(count);
  double recorded = 0;  // of the kernels left to verify
  for (size_t i = 0; i < count; ++i) {
    if (cache.enabled()) {
      state.names[i] = ModuleStageOutcomeName(trace, state.groups[i]);
      if (std::optional<GroupOutcome> remembered = LoadModuleStageOutcome(cache, state.names[i])) {
        state.outcomes[i] = *std::move(remembered);
        continue;
      }
    }
    state.to_verify.push_back(i);
    state.works[i] = GatherGroup(trace, state.groups[i]);
    unverified[i] = state.TakeRememberedParts(i);
    for (size_t p : unverified[i]) {
      if (const KernelRecord* record = state.works[i].records[p])
        recorded += record->compile_seconds;
    }
  }
  SessionSize size{programs_per_session, state.builders.size()};
  if (size.workers > 1) size.own_session_seconds = recorded / static_cast<double>(size.workers);
  for (size_t i : state.to_verify)
    SplitIntoParts(state.works[i], unverified[i], i, size, state.parts);
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
      return RecordedSeconds(part.records, a) > RecordedSeconds(part.records, b);
    });
    for (size_t p : programs) {
      state.rebuilds.emplace_back(index, p);
      if (part.records[p]) state.program_of.try_emplace(part.records[p], index, p);
    }
  }
  state.servers.resize(count);
  state.serializations_left = std::make_unique<std::atomic<size_t>[]>(count);
  state.served_warm = std::make_unique<std::atomic<bool>[]>(count);
  for (size_t group : state.to_verify)
    state.serializations_left[group] = state.works[group].parts.size();
  state.rebuilds_left = std::make_unique<std::atomic<size_t>[]>(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) state.rebuilds_left[i] = parts[i].programs.size();
}

ModuleStage::~ModuleStage() = default;

void ModuleStage::WarmSlang(size_t servers) {
  if (!state_->parts.empty()) state_->StartServers(servers);
}

size_t ModuleStage::serialize_count() const { return state_->parts.size(); }

size_t ModuleStage::PartOfSerialization(size_t item) const {
  return state_->parts_longest_first[item];
}

void ModuleStage::Serialize(size_t item, size_t worker, const RunInChild& in_child) {
  State& state = *state_;
  const size_t index = state.parts_longest_first[item];
  PartWork& part = state.parts[index];
  std::optional<CompileTimeline::Scope> span;
  if (state.timeline)
    span.emplace(*state.timeline, "serialize", PartLabel(state.trace, part), worker);
  const auto start = std::chrono::steady_clock::now();
  CodeFromChild reply = DecodeCodeFromChild(state.SerializedBy(item, in_child));
  part.serialize_seconds = SecondsSince(start);
  absl::StatusOr<SerializedSession> serialized =
      reply.code.ok() ? DecodeSerializedSession(*reply.code) : reply.code.status();
  if (!serialized.ok()) {
    // Its configuration's modules are refused with why, and its kernels are
    // replayed from source.
    part.builder_error = fmt::format("serializing its modules: {}", serialized.status().message());
    return;
  }
  part.serialized = *std::move(serialized);
  part.encoded = *std::move(reply.code);
}

size_t ModuleStage::rebuild_count() const { return state_->rebuilds.size(); }

size_t ModuleStage::PartOfRebuild(size_t item) const { return state_->rebuilds[item].first; }

double ModuleStage::RecordedSecondsOfRebuild(size_t item) const {
  auto [index, p] = state_->rebuilds[item];
  return RecordedSeconds(state_->parts[index].records, p);
}

void ModuleStage::Rebuild(size_t item, size_t worker, const RunInChild& in_child) {
  State& state = *state_;
  auto [index, p] = state.rebuilds[item];
  PartWork& part = state.parts[index];
  if (part.builder_error.empty()) {
    std::optional<CompileTimeline::Scope> span;
    if (state.timeline) {
      span.emplace(*state.timeline, "rebuild",
                   part.records[p] ? KernelLabel(state.trace, *part.records[p])
                                   : fmt::format("module '{}'", part.programs[p].program->name),
                   worker);
    }
    absl::StatusOr<std::string> reply = in_child({});
    if (reply.ok() && *reply == State::kSendItsIr) reply = in_child(part.encoded);
    if (reply.ok()) {
      if (reply->starts_with(State::kRebuilt))
        reply->erase(0, State::kRebuilt.size());
      else
        reply = absl::InternalError("its worker process sent a reply of another kind");
    }
    CodeFromChild rebuilt = DecodeCodeFromChild(std::move(reply));
    part.codes[p] = std::move(rebuilt.code);
    if (!rebuilt.seconds.empty()) part.rebuild_seconds[p] = rebuilt.seconds[0];
  }
  if (--state.rebuilds_left[index] == 0) std::string().swap(part.encoded);
}

std::string ModuleStage::InChild(size_t task, size_t worker, std::string_view payload) {
  State& state = *state_;
  if (task < state.parts.size()) return state.SerializeInChild(task, worker);
  return state.RebuildInChild(task - state.parts.size(), worker, payload);
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
  state.servers.clear();
  state.sessions.clear();
  state.builders.clear();
  ModuleStageReport report;
  report.groups = state.groups.size();
  report.cached_groups = state.groups.size() - state.to_verify.size();
  for (size_t group : state.to_verify) report.warm_groups += state.served_warm[group] ? 1 : 0;
  for (const PartWork& part : state.parts) {
    report.seconds += part.serialize_seconds;
    for (double seconds : part.rebuild_seconds) report.seconds += seconds;
  }
  const absl::flat_hash_set<const KernelRecord*> verified(verified_kernels.begin(),
                                                          verified_kernels.end());
  for (size_t group : state.to_verify) {
    SessionGroup& session_group = state.groups[group];
    GroupWork& work = state.works[group];
    auto unbuilt = std::find_if(work.parts.begin(), work.parts.end(), [&](size_t index) {
      return !state.parts[index].builder_error.empty();
    });
    if (unbuilt != work.parts.end()) {
      state.outcomes[group].refused.push_back(
          {session_group.content, "*", state.parts[*unbuilt].builder_error});
      state.outcomes[group].refused_by_this_run = true;
      continue;
    }
    std::vector<PartitionOutcome> decided = std::move(work.remembered);
    for (size_t index : work.parts) {
      const PartWork& part = state.parts[index];
      const PartEvidence evidence =
          EvidenceOf(state.trace, session_group, part, work.request_directories, verified);
      PartitionOutcome outcome = Decide(evidence, work.kernel_modules, [&](size_t module) {
        return part.serialized.modules[module].ir;
      });
      state.RememberPart(group, part, evidence, outcome, progress);
      decided.push_back(std::move(outcome));
    }
    if (state.cache.enabled()) {
      if (absl::Status status =
              StoreModuleStageParts(state.cache, session_group, state.parts_of_group[group]);
          !status.ok() && progress)
        progress(fmt::format("warning: {}", status.message()));
    }
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
    // An outcome is remembered with its refusals when each is Slang's
    // verdict on the trace (a user attribute, a diagnostic over IR): an
    // unchanged trace would only be refused again.
    if (all_stored && !outcome.refused_by_this_run && state.cache.enabled()) {
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

#include "compiler/compile_pipeline.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "archive/archive_writer.h"
#include "common/fmt_absl.h"
#include "common/seconds_since.h"
#include "common/toolchain_name.h"
#include "compiler/code_from_child.h"
#include "compiler/compile_cache.h"
#include "compiler/compile_pool.h"
#include "compiler/compile_timeline.h"
#include "compiler/fatbin_packer.h"
#include "compiler/memory_budget.h"
#include "compiler/module_stage.h"
#include "compiler/parallel_for.h"
#include "compiler/parallel_for_in_children.h"
#include "compiler/ptx_comparison.h"
#include "compiler/sass_builder.h"
#include "compiler/tool_identity.h"
#include "compiler/trace_snapshot.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "interpose/key_hasher.h"
#include "interpose/session_settings.h"
#include "replayer/replayer.h"
#include "replayer/replayer_slang.h"

namespace spreplay {
namespace {

using Clock = std::chrono::steady_clock;

std::string_view WithoutNul(std::string_view code) {
  while (!code.empty() && code.back() == '\0') code.remove_suffix(1);
  return code;
}

// One kernel on its way through the pipeline.
struct KernelJob {
  const KernelRecord* record = nullptr;
  KernelOutcome outcome;
  KernelCallSite call_site;
  absl::StatusOr<ComponentPtr> program;  // an error when the trace lacks it
  std::string ptx;                       // without the trailing NUL
  Digest ptx_digest;
  uint32_t ptx_arch = 0;
  bool optix = false;  // a ray-tracing program: archived as its PTX, for OptiX
  Digest proof;        // that the trace rebuilds this PTX, see NeedsReplay
  std::map<uint32_t, std::string> cubins;
  Digest fatbin_name;  // in the cache, see FatbinName
  std::string fatbin;
  bool fatbin_cached = false;  // then no SASS is built or read for it
  bool reported = false;       // its progress line was printed
  bool failed() const { return outcome.status != KernelOutcome::Status::kCompiled; }
  void Fail(std::string message) {
    outcome.status = KernelOutcome::Status::kFailed;
    outcome.message = std::move(message);
  }
};

// Ray-tracing programs go to OptiX, which compiles their PTX itself when the
// pipeline is created; the driver never loads them as modules, so a fatbin
// could not stand in for them, but their PTX can, exactly as Slang made it.
// OptiX finds their entry points by the prefixes it requires of their names.
bool IsOptixProgram(std::string_view ptx) {
  static constexpr std::string_view kPrefixes[] = {"__raygen__",       "__miss__",
                                                   "__closesthit__",   "__anyhit__",
                                                   "__intersection__", "__direct_callable__",
                                                   "__exception__",    "__continuation_callable__"};
  for (size_t at = ptx.find(".entry "); at != std::string_view::npos;
       at = ptx.find(".entry ", at + 1)) {
    const std::string_view name = ptx.substr(at + 7);
    for (std::string_view prefix : kPrefixes) {
      if (name.starts_with(prefix)) return true;
    }
  }
  return false;
}

void DescribeCallSite(const Trace& trace, KernelJob& job) {
  std::vector<trace_schema::CallSite::Reader> call_sites = trace.CallSitesOf(*job.record);
  job.call_site.entry_point_name = job.record->entry_point_name;
  job.optix = job.outcome.optix = IsOptixProgram(job.record->code);
  job.outcome.label = KernelLabel(trace, *job.record);
  if (call_sites.empty()) return;
  auto call_site = call_sites.front();
  job.call_site.module_name = call_site.getModule();
  job.call_site.function_name = call_site.getFunction();
  job.call_site.call_kind = CallKindName(call_site.getKind());
  job.call_site.wrapper_module_name = call_site.getSlangpyHash();
}

// What a trace without kernels says about the app that wrote it.
std::string WhyNoKernels(const Trace& trace) {
  std::vector<std::string> types;
  for (auto device : trace.devices()) {
    std::string type = device.getType();
    if (std::find(types.begin(), types.end(), type) == types.end()) types.push_back(type);
  }
  if (std::find(types.begin(), types.end(), "cuda") != types.end()) {
    return fmt::format(
        "{} holds no kernels: its app created a CUDA device but compiled nothing while it was "
        "recorded (did it fail or stop before its first call? see its output)",
        trace.name());
  }
  if (types.empty()) {
    return fmt::format(
        "{} holds no kernels: its app created no slangpy device while it was recorded (did it "
        "fail before creating one, or run without SLANGPY_RECORD reaching it?)",
        trace.name());
  }
  return fmt::format(
      "{} holds no kernels: it was recorded on a {} device, and kernels are recorded on a CUDA "
      "device (SLANGPY_RECORD=... python app.py on a machine with an NVIDIA GPU)",
      trace.name(), fmt::join(types, "/"));
}

// A trace recorded with another Slang build than the one replaying it is
// refused whole, in one line; a trace that mixes builds fails only the
// kernels of the others.
absl::Status RecordedWithThisSlang(const Trace& trace, const std::string& build_tag) {
  for (const KernelRecord& record : trace.kernels())
    if (SlangBuildOf(record.toolchain) == build_tag) return absl::OkStatus();
  return absl::FailedPreconditionError(fmt::format(
      "{} was recorded with {}, but this spreplay compile replays with Slang {}: compile it "
      "where the slangpy it was recorded with is installed, or name that slangpy with "
      "--slangpy DIR",
      trace.name(), trace.kernels().front().toolchain, build_tag));
}

// What the cache remembers of a kernel whose replay renamed registers,
// followed by how many.
constexpr std::string_view kRenamedProof = "verified, registers renamed: ";

// Checks that this Slang build can reproduce the kernel and takes its PTX.
// Returns whether it still has to be replayed: a kernel proven before is
// remembered in the cache by its proof.
bool NeedsReplay(const CompileCache& cache, const std::string& build_tag, KernelJob& job) {
  const KernelRecord& record = *job.record;
  if (SlangBuildOf(record.toolchain) != build_tag) {
    job.Fail(
        fmt::format("recorded with {}, but this spreplay replays with Slang {}: install the "
                    "slangpy the trace was recorded with",
                    record.toolchain, build_tag));
    return false;
  }
  job.ptx = std::string(WithoutNul(record.code));
  job.ptx_digest = Sha256Of(job.ptx);
  job.outcome.ptx_bytes = job.ptx.size();
  job.proof = KeyHasher("spreplay.verified-ptx.v1")
                  .Hash(record.key)
                  .Hash(Sha256Of(record.code))
                  .Text(build_tag)
                  .Text(ToolIdentity())
                  .Finish();
  const std::optional<std::string> proven = cache.Get(job.proof);
  job.outcome.replay_cached = proven.has_value();
  if (proven && proven->starts_with(kRenamedProof))
    job.outcome.ptx_renamed_registers =
        std::strtoull(proven->c_str() + kRenamedProof.size(), nullptr, 10);
  return !job.outcome.replay_cached;
}

// The kernel's replay gave the recorded program: remembered in the cache by
// its proof.
void RememberProof(const CompileCache& cache, const PtxComparison& comparison, KernelJob& job) {
  job.outcome.ptx_renamed_registers = comparison.renamed_registers;
  const std::string proven = comparison.renamed_registers == 0
                                 ? std::string("verified")
                                 : fmt::format("{}{}", kRenamedProof, comparison.renamed_registers);
  if (absl::Status status = cache.Put(job.proof, proven); !status.ok())
    fmt::print(stderr, "spreplay: warning: {}\n", status);
}

// Proves the trace rebuilds the kernel: replays it through Slang from source
// and compares with the PTX the app got.
// The child's half of a replay from source (ParallelForInChildren): the
// kernel's code, or why there is none, with its front end's and its
// codegen's seconds. A worker's child makes its Slang replayer on its first
// kernel and keeps it.
std::string ReplayInChild(const Trace& trace, std::unique_ptr<Replayer>& replayer,
                          const KernelJob& job) {
  const KernelRecord& record = *job.record;
  if (!job.program.ok()) return EncodeCodeFromChild(job.program.status(), {});
  absl::StatusOr<SessionConfig> session = trace.FindSession(record.session_location);
  if (!session.ok()) return EncodeCodeFromChild(session.status(), {});
  absl::StatusOr<Snapshot> snapshot = SnapshotFor(trace, *job.program);
  if (!snapshot.ok()) return EncodeCodeFromChild(snapshot.status(), {});
  if (!replayer) {
    absl::StatusOr<std::unique_ptr<Replayer>> created = Replayer::Create();
    if (!created.ok()) return EncodeCodeFromChild(created.status(), {});
    replayer = *std::move(created);
  }
  absl::StatusOr<ReplayedKernel> replayed = replayer->Replay(
      *session, *job.program, record.entry_point_index, record.target_index, *snapshot);
  if (!replayed.ok()) {
    return EncodeCodeFromChild(
        absl::Status(replayed.status().code(),
                     fmt::format("Slang could not rebuild it: {}", replayed.status())),
        {});
  }
  return EncodeCodeFromChild(replayed->code,
                             {replayed->front_end_seconds, replayed->codegen_seconds});
}

// The parent's half: the replayed code against the recorded.
void TakeReplay(const CompileCache& cache, CodeFromChild replayed, KernelJob& job) {
  if (!replayed.code.ok()) return job.Fail(std::string(replayed.code.status().message()));
  if (replayed.seconds.size() == 2) {
    job.outcome.front_end_seconds = replayed.seconds[0];
    job.outcome.codegen_seconds = replayed.seconds[1];
  }
  PtxComparison comparison = ComparePtx(WithoutNul(job.record->code), WithoutNul(*replayed.code));
  if (!comparison.same_program()) return job.Fail(std::move(comparison.difference));
  RememberProof(cache, comparison, job);
}

// A kernel's chain in the modules stage: its part's serialization, then its
// program's rebuild over that IR.
void TakeRebuildSeconds(const RebuiltKernel& rebuilt, KernelOutcome& outcome) {
  outcome.front_end_seconds = rebuilt.serialize_seconds;
  outcome.codegen_seconds = rebuilt.rebuild_seconds;
}

// Whether the kernel's program, rebuilt over its session configuration's
// modules serialized by the modules stage, gave the recorded program: the
// same proof as a replay from source, and the kernel's only codegen. Where it
// did not, a replay from source has the final word on the kernel (the
// modules stage refuses the modules).
bool ProvenOverIr(const ModuleStage& modules, const CompileCache& cache, KernelJob& job) {
  const std::optional<RebuiltKernel> rebuilt = modules.RebuiltKernelOf(*job.record);
  if (!rebuilt || !rebuilt->code->ok()) return false;
  const PtxComparison comparison =
      ComparePtx(WithoutNul(job.record->code), WithoutNul(**rebuilt->code));
  if (!comparison.same_program()) return false;
  TakeRebuildSeconds(*rebuilt, job.outcome);
  job.outcome.replayed_over_ir = true;
  RememberProof(cache, comparison, job);
  return true;
}

// A kernel's fatbin is a function of its PTX, the arches, the tools that
// build and pack its SASS (each SASS build is cached by the same rule) and the
// build of spreplay that runs them; an unchanged kernel takes it from the cache
// without building, reading or packing SASS.
Digest FatbinName(const KernelJob& job, const std::vector<uint32_t>& arches,
                  const SassBuilder& builder, const FatbinPacker& packer) {
  KeyHasher hasher("spreplay.fatbin.v1");
  hasher.Hash(job.ptx_digest).Text(builder.identity()).Text(packer.identity());
  hasher.Text(ToolIdentity());
  hasher.Integer(static_cast<int64_t>(arches.size()));
  for (uint32_t arch : arches) hasher.Integer(arch);
  return hasher.Finish();
}

void BuildSass(const SassBuilder& builder, const CompileCache& cache, KernelJob& job, uint32_t arch,
               std::mutex& mutex) {
  const Digest name = KeyHasher("spreplay.sass.v1")
                          .Hash(job.ptx_digest)
                          .Integer(arch)
                          .Text(builder.identity())
                          .Finish();
  const Clock::time_point start = Clock::now();
  std::optional<std::string> cubin = cache.Get(name);
  double seconds = 0;
  if (!cubin) {
    absl::StatusOr<std::string> built = builder.Build(job.ptx, arch);
    if (!built.ok()) {
      std::lock_guard lock(mutex);
      return job.Fail(std::string(built.status().message()));
    }
    cubin = *std::move(built);
    seconds = SecondsSince(start);
    if (absl::Status status = cache.Put(name, *cubin); !status.ok())
      fmt::print(stderr, "spreplay: warning: {}\n", status);
  }
  std::lock_guard lock(mutex);
  job.outcome.sass_seconds[arch] = seconds;
  job.cubins[arch] = *std::move(cubin);
}

KernelMetadata MetadataOf(const KernelJob& job, const std::vector<uint32_t>& arches,
                          uint32_t ptx_arch) {
  KernelMetadata metadata;
  metadata.key = job.record->key;
  metadata.call_site = job.call_site;
  metadata.session_digest = job.record->session;
  metadata.program_digest = job.record->program;
  metadata.sass_arches = arches;
  metadata.ptx_arch = ptx_arch;
  // Two modules may depend on the same file: list it once.
  absl::flat_hash_set<std::pair<Digest, std::string>> listed;
  if (job.program.ok())
    ForEachDistinctNode(*job.program, [&](const Component& node) {
      for (const SourceFile& file : node.dependencies) {
        if (listed.insert({file.content, file.path}).second)
          metadata.manifest.push_back({file.content, file.path});
      }
    });
  return metadata;
}

std::string PtxVerdict(const KernelOutcome& outcome) {
  if (outcome.ptx_renamed_registers == 0) return "PTX identical";
  return fmt::format("PTX identical up to {} renamed register{} (the recorded PTX is archived)",
                     outcome.ptx_renamed_registers, outcome.ptx_renamed_registers == 1 ? "" : "s");
}

std::string ProgressLine(const KernelOutcome& outcome, size_t arch_count) {
  switch (outcome.status) {
    case KernelOutcome::Status::kCompiled:
      if (outcome.optix) {
        return fmt::format("compiled {}: {}{}, archived as PTX for OptiX", outcome.label,
                           PtxVerdict(outcome), outcome.replay_cached ? " (cached)" : "");
      }
      return fmt::format("compiled {}: {}{}, SASS for {} arch{}, fatbin {} bytes", outcome.label,
                         PtxVerdict(outcome), outcome.replay_cached ? " (cached)" : "", arch_count,
                         arch_count == 1 ? "" : "es", outcome.fatbin_bytes);
    case KernelOutcome::Status::kFailed:
      break;
  }
  return fmt::format("FAILED {}: {}", outcome.label, outcome.message);
}

void PackFatbin(const FatbinPacker& packer, const CompileCache& cache, KernelJob& job) {
  absl::StatusOr<uint32_t> ptx_arch = PtxTargetArch(job.ptx);
  if (!ptx_arch.ok()) return job.Fail(std::string(ptx_arch.status().message()));
  job.ptx_arch = *ptx_arch;
  if (job.optix) return;  // served as its PTX
  if (!job.fatbin_cached) {
    absl::StatusOr<std::string> fatbin = packer.Pack(job.cubins, job.ptx, job.ptx_arch);
    if (!fatbin.ok()) return job.Fail(std::string(fatbin.status().message()));
    job.fatbin = *std::move(fatbin);
    if (absl::Status status = cache.Put(job.fatbin_name, job.fatbin); !status.ok())
      fmt::print(stderr, "spreplay: warning: {}\n", status);
  }
  job.outcome.fatbin_bytes = job.fatbin.size();
}

// What this process and its waited-for children (worker processes, ptxas)
// used: user and system time, and the larger peak resident set of this
// process and of its largest child (Linux counts ru_maxrss in KiB).
struct ResourceUse {
  double cpu_seconds = 0;
  uint64_t peak_rss_bytes = 0;
};

ResourceUse ProcessResourceUse() {
  ResourceUse use;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage usage{};
    if (getrusage(who, &usage) != 0) continue;
    for (const timeval& time : {usage.ru_utime, usage.ru_stime})
      use.cpu_seconds += static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) / 1e6;
    use.peak_rss_bytes =
        std::max<uint64_t>(use.peak_rss_bytes, static_cast<uint64_t>(usage.ru_maxrss) * 1024);
  }
  return use;
}

std::vector<std::byte> Bytes(std::string_view text) {
  const auto* begin = reinterpret_cast<const std::byte*>(text.data());
  return std::vector<std::byte>(begin, begin + text.size());
}

// What the app's module loads took in the sessions that built `kernels`:
// Slang's front end, which a kernel's recorded getEntryPointCode time leaves
// out and a replay runs again.
double RecordedModuleLoadSeconds(const Trace& trace,
                                 const std::vector<const KernelRecord*>& kernels) {
  absl::flat_hash_set<Digest> sessions;
  for (const KernelRecord* kernel : kernels) sessions.insert(kernel->session_location);
  double seconds = 0;
  for (const ModuleLoadRecord& load : trace.module_loads())
    if (sessions.contains(load.session_location)) seconds += load.load_seconds;
  return seconds;
}

// Keeps the cache within its limit once this compile has stored all it will,
// and rids it of the temporaries of compiles killed while writing, with no
// limit too. The cache only saves time: one that cannot be trimmed is said,
// not fatal.
void TrimCache(const CompileCache& cache, const CompileOptions& options) {
  if (!cache.enabled()) return;
  absl::StatusOr<CompileCache::TrimOutcome> trimmed = cache.Trim(options.cache_max_bytes);
  if (!options.notice) return;
  if (!trimmed.ok()) {
    options.notice(fmt::format("warning: {}", trimmed.status().message()));
  } else if (trimmed->entries_removed > 0) {
    options.notice(fmt::format(
        "compile cache: {} entries used longest ago removed, {:.2f} GB to {:.2f} GB (the limit: "
        "{:.2f} GB; --cache-max-size or SPREPLAY_CACHE_MAX_SIZE sets it)",
        trimmed->entries_removed, trimmed->bytes_before / 1e9, trimmed->bytes_after / 1e9,
        options.cache_max_bytes / 1e9));
  }
}

}  // namespace

double KernelOutcome::critical_seconds() const {
  double slowest_sass = 0;
  for (const auto& [arch, seconds] : sass_seconds) slowest_sass = std::max(slowest_sass, seconds);
  return std::max(front_end_seconds + codegen_seconds, slowest_sass);
}

size_t CompileReport::failed() const {
  size_t count = 0;
  for (const KernelOutcome& kernel : kernels)
    count += kernel.status == KernelOutcome::Status::kFailed;
  return count;
}

std::vector<const KernelRecord*> KernelsOfShard(const Trace& trace, const CompileOptions& options) {
  std::vector<const KernelRecord*> records;
  for (const KernelRecord& record : trace.kernels()) {
    uint64_t prefix = 0;
    for (size_t i = 0; i < 8; ++i) prefix = (prefix << 8) | record.key.bytes[i];
    if (prefix % std::max(options.shard_count, 1u) == options.shard_index)
      records.push_back(&record);
  }
  return records;
}

absl::StatusOr<CompileReport> CompileTrace(const Trace& trace, const std::string& output,
                                           const CompileOptions& options) {
  const Clock::time_point start = Clock::now();
  const double cpu_at_start = ProcessResourceUse().cpu_seconds;
  // Every kernel needs Slang: without it, one message, not one per kernel.
  if (absl::StatusOr<const SlangLibrary*> slang = ReplayerSlang(); !slang.ok())
    return slang.status();
  const std::string cuda_root = options.cuda_root.empty() ? FindCudaRoot() : options.cuda_root;
  // ptxas first, nvJitLink where it does not run (CompileOptions::sass_backend says why).
  absl::StatusOr<std::unique_ptr<SassBuilder>> sass = options.sass_backend == "nvjitlink"
                                                          ? MakeNvJitLinkBuilder(cuda_root)
                                                          : MakePtxasBuilder(cuda_root);
  if (!sass.ok() && options.sass_backend == "auto") {
    absl::StatusOr<std::unique_ptr<SassBuilder>> linker = MakeNvJitLinkBuilder(cuda_root);
    sass = linker.ok() ? std::move(linker)
                       : absl::NotFoundError(fmt::format("{}; {}", sass.status().message(),
                                                         linker.status().message()));
  }
  if (!sass.ok()) {
    return absl::NotFoundError(fmt::format(
        "no CUDA compiler: {}. Install CUDA 13.0's compilers from PyPI with `pip install "
        "\"spreplay[compile]\"` (nvidia-cuda-nvcc, nvidia-cuda-nvrtc, nvidia-cuda-runtime and "
        "nvidia-nvjitlink 13.0.88), or the CUDA 13.0 toolkit with CUDA_HOME pointing at it",
        sass.status().message()));
  }
  absl::StatusOr<FatbinPacker> packer = FatbinPacker::Create(cuda_root);
  if (!packer.ok()) return packer.status();
  const CompileCache cache(options.cache_directory);
  const size_t workers =
      options.jobs > 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  const std::optional<uint64_t> available = AvailableMemoryBytes();
  const size_t sessions = SlangSessionsAtOnce(workers, available);
  if (sessions < workers && options.notice) {
    options.notice(fmt::format(
        "{} of {} jobs hold a Slang session at once: {:.1f} GB of memory available, {:.0f} GB "
        "budgeted a session",
        sessions, workers, static_cast<double>(*available) / 1e9,
        static_cast<double>(kBytesPerSlangSession) / (1 << 30)));
  }
  if (trace.kernels().empty()) return absl::FailedPreconditionError(WhyNoKernels(trace));
  if (absl::Status same = RecordedWithThisSlang(trace, SlangBuildTag()); !same.ok()) return same;

  const std::vector<const KernelRecord*> records = KernelsOfShard(trace, options);
  std::vector<KernelJob> jobs(records.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].record = records[i];
    jobs[i].outcome.key = jobs[i].record->key;
    jobs[i].outcome.status = KernelOutcome::Status::kCompiled;
    jobs[i].outcome.recorded_compile_seconds = jobs[i].record->compile_seconds;
    DescribeCallSite(trace, jobs[i]);
    jobs[i].program = trace.FindComponent(jobs[i].record->program);
  }

  // One line per kernel as soon as its fate is known.
  std::mutex mutex;
  auto report_progress = [&](KernelJob& job) {
    std::lock_guard lock(mutex);
    if (job.reported || !options.progress) return;
    job.reported = true;
    options.progress(ProgressLine(job.outcome, options.arches.size()));
  };
  CompileTimeline timeline(start);
  // The kernels the app took longest to compile start first, so that none
  // of them starts last and keeps the other workers waiting.
  const std::string build_tag = SlangBuildTag();
  std::vector<size_t> longest_first(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) longest_first[i] = i;
  std::stable_sort(longest_first.begin(), longest_first.end(), [&](size_t a, size_t b) {
    return jobs[a].record->compile_seconds > jobs[b].record->compile_seconds;
  });
  std::vector<bool> needs_replay(jobs.size(), false);
  std::vector<const KernelRecord*> candidates;
  for (size_t i = 0; i < jobs.size(); ++i) {
    KernelJob& job = jobs[i];
    if (!job.failed()) needs_replay[i] = NeedsReplay(cache, build_tag, job);
    if (job.failed())
      report_progress(job);
    else
      candidates.push_back(job.record);
  }
  // Each session configuration's modules are loaded from source once, and
  // every kernel's program is rebuilt over their IR: that rebuild proves the
  // kernel and its modules together (ModuleStage).
  std::optional<ModuleStage> modules;
  if (options.modules)
    modules.emplace(trace, candidates, cache, sessions, options.programs_per_session, &timeline);

  // SASS is built from the recorded PTX, which needs no replay: every
  // (kernel, arch) pair, the largest PTX first, on the workers the modules'
  // serializations leave free.
  std::vector<std::pair<size_t, uint32_t>> builds;
  for (size_t i : longest_first) {
    KernelJob& job = jobs[i];
    if (job.failed() || job.optix) continue;
    job.fatbin_name = FatbinName(job, options.arches, **sass, *packer);
    if (std::optional<std::string> fatbin = cache.Get(job.fatbin_name)) {
      job.fatbin = *std::move(fatbin);
      job.fatbin_cached = true;
      for (uint32_t arch : options.arches) job.outcome.sass_seconds[arch] = 0;
      continue;
    }
    for (uint32_t arch : options.arches) builds.emplace_back(i, arch);
  }
  std::stable_sort(builds.begin(), builds.end(), [&](const auto& a, const auto& b) {
    return jobs[a.first].ptx.size() > jobs[b.first].ptx.size();
  });
  // One pool: `sessions` workers serialize each part of the modules stage
  // in their children and rebuild its programs there as soon as it is
  // serialized; every worker builds SASS when no Slang work is ready for it.
  // Only `sessions` of them hold a Slang session, as many as memory holds
  // (memory_budget.h).
  CompilePoolWork pool;
  pool.workers = workers;
  pool.slang_workers = sessions;
  if (modules) {
    modules->WarmSlang(SessionsBeside(sessions, available));
    for (size_t s = 0; s < modules->serialize_count(); ++s)
      pool.serialization_parts.push_back(modules->PartOfSerialization(s));
    for (size_t r = 0; r < modules->rebuild_count(); ++r) {
      pool.rebuild_parts.push_back(modules->PartOfRebuild(r));
      pool.rebuild_seconds.push_back(modules->RecordedSecondsOfRebuild(r));
    }
    pool.child = [&](size_t task, size_t worker, std::string_view payload) {
      return modules->InChild(task, worker, payload);
    };
    pool.serialize = [&](size_t item, size_t worker, const RunInChild& in_child) {
      modules->Serialize(item, worker, in_child);
    };
    pool.rebuild = [&](size_t item, size_t worker, const RunInChild& in_child) {
      modules->Rebuild(item, worker, in_child);
    };
  }
  pool.thread_tasks = builds.size();
  pool.run_in_thread = [&](size_t item, size_t worker) {
    auto [index, arch] = builds[item];
    const CompileTimeline::Scope span(
        timeline, "sass", fmt::format("{} sm_{}", jobs[index].outcome.label, arch), worker);
    BuildSass(**sass, cache, jobs[index], arch, mutex);
  };
  RunCompilePool(pool);

  // Replay from source: the kernels no rebuild over IR proved, in child
  // processes as the rebuilds. One Slang replayer per worker's child, made on
  // first use: a compile whose kernels are all proven starts none.
  std::vector<size_t> replays;
  for (size_t i : longest_first) {
    KernelJob& job = jobs[i];
    if (job.failed()) continue;
    if (!needs_replay[i]) {
      // The cache proved it, but its configuration's modules were verified
      // all the same: that rebuild was this compile's work on the kernel.
      if (modules) {
        if (std::optional<RebuiltKernel> rebuilt = modules->RebuiltKernelOf(*job.record))
          TakeRebuildSeconds(*rebuilt, job.outcome);
      }
      continue;
    }
    if (modules && ProvenOverIr(*modules, cache, job)) continue;
    replays.push_back(i);
  }
  std::vector<std::unique_ptr<Replayer>> replayers(workers);
  ParallelForInChildren(
      replays.size(), sessions,
      [&](size_t item, size_t worker) {
        return ReplayInChild(trace, replayers[worker], jobs[replays[item]]);
      },
      [&](size_t item, size_t worker, const RunInChild& in_child) {
        KernelJob& job = jobs[replays[item]];
        {
          const CompileTimeline::Scope span(timeline, "replay", job.outcome.label, worker);
          TakeReplay(cache, DecodeCodeFromChild(in_child({})), job);
        }
        if (job.failed()) report_progress(job);
      });

  // Fatbins, then the archive. A kernel's line comes once the archive has
  // taken it, or as soon as it fails.
  ParallelFor(jobs.size(), workers, [&](size_t item, size_t worker) {
    KernelJob& job = jobs[item];
    if (!job.failed()) {
      std::optional<CompileTimeline::Scope> span;
      if (!job.fatbin_cached) span.emplace(timeline, "pack", job.outcome.label, worker);
      PackFatbin(*packer, cache, job);
    }
    if (job.failed()) report_progress(job);
  });

  ArchiveProvenance provenance;
  provenance.toolchain = trace.kernels().front().toolchain;
  provenance.spreplay_version = SPREPLAY_VERSION;
  provenance.command = "spreplay compile " + trace.name();
  ArchiveWriter writer(provenance);
  CompileReport report;
  report.sass_tool = (*sass)->identity();
  for (KernelJob& job : jobs) {
    if (!job.failed()) {
      std::vector<KernelBinary> binaries;
      KernelMetadata metadata = MetadataOf(job, options.arches, job.ptx_arch);
      if (job.optix) {
        // Byte for byte what Slang returned, trailing NUL included.
        binaries.push_back({schema::BlobKind::PTX, job.ptx_arch, Bytes(job.record->code)});
        metadata.optix = true;
        metadata.sass_arches.clear();
      } else {
        binaries.push_back({schema::BlobKind::FATBIN, 0, Bytes(job.fatbin)});
        binaries.push_back({schema::BlobKind::PTX, job.ptx_arch, Bytes(job.ptx)});
      }
      absl::Status added = writer.Add(std::move(metadata), std::move(binaries));
      if (!added.ok()) job.Fail(std::string(added.message()));
    }
    // The app's process learns why from the archive when it asks for this kernel.
    if (job.failed()) writer.AddUnbuilt({job.record->key, job.call_site, job.outcome.message});
    if (absl::StatusOr<SessionConfig> session = trace.FindSession(job.record->session_location);
        session.ok())
      writer.AddSessionSettings(job.record->session, KeyedSettings(*session));
    report_progress(job);
    report.kernels.push_back(std::move(job.outcome));
  }
  if (modules && writer.kernel_count() > 0) {
    std::vector<const KernelRecord*> verified;
    for (const KernelJob& job : jobs) {
      if (!job.failed()) verified.push_back(job.record);
    }
    const ModuleStageReport stage = modules->Finish(verified, writer, options.notice);
    report.modules_archived = stage.archived;
    report.modules_refused = stage.refused;
    report.module_ir_bytes = stage.ir_bytes;
    report.module_groups = stage.groups;
    report.module_groups_cached = stage.cached_groups;
    report.module_groups_warm = stage.warm_groups;
    report.module_seconds = stage.seconds;
  }
  modules.reset();
  // A shard may hold no kernel: its archive is written all the same, for the merge.
  if (writer.kernel_count() > 0 || options.shard_count > 1) {
    if (absl::Status status = writer.Write(output); !status.ok()) return status;
    std::error_code ignored;
    report.archive_bytes = std::filesystem::file_size(output, ignored);
  }
  TrimCache(cache, options);
  report.timeline = timeline.Spans();
  report.wall_seconds = SecondsSince(start);
  const ResourceUse used = ProcessResourceUse();
  report.cpu_seconds = used.cpu_seconds - cpu_at_start;
  report.peak_rss_bytes = used.peak_rss_bytes;
  report.app_module_load_seconds = RecordedModuleLoadSeconds(trace, records);
  for (const KernelOutcome& kernel : report.kernels) {
    report.app_compile_seconds += kernel.recorded_compile_seconds;
    if (kernel.critical_seconds() > report.critical_path_seconds) {
      report.critical_path_seconds = kernel.critical_seconds();
      report.critical_path_label = kernel.label;
    }
  }
  return report;
}

}  // namespace spreplay

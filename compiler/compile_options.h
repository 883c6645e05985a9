#pragma once
// What `spreplay compile` builds, and how.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace spreplay {

// SASS for the datacenter and workstation GPUs CUDA 13 supports: Turing (T4,
// RTX 6000), Ampere (A100; A40, A10, RTX A6000), Ada (L4, L40S, RTX 6000 Ada),
// Hopper (H100, H200), Blackwell (B200; RTX PRO 6000). The recorded PTX, which
// Slang emits for the oldest of them, rides along for anything newer.
inline const std::vector<uint32_t> kDefaultArches = {75, 80, 86, 89, 90, 100, 120};

// What a compile trims its cache to unless told otherwise: slangpy's own
// suite (612 kernels, 984 modules, the default arches) fills 0.26 GB of it.
inline constexpr uint64_t kDefaultCacheMaxBytes = uint64_t{5} << 30;

struct CompileOptions {
  std::vector<uint32_t> arches = kDefaultArches;
  int jobs = 0;                 // 0: one per core
  std::string cache_directory;  // empty: no compile cache
  // Trimmed to this at the end of the compile (CompileCache::Trim); 0: no limit.
  uint64_t cache_max_bytes = kDefaultCacheMaxBytes;
  std::string cuda_root;  // empty: FindCudaRoot()
  // "ptxas" builds each kernel as a whole program, as the driver's JIT does
  // from the same PTX; "nvjitlink" builds in-process but compiles PTX
  // as relocatable code and links it, other SASS, and neither is faster
  // (bench/results/2026-12-08-cpu-sass-tools.txt); "auto" takes ptxas, or
  // nvJitLink where no ptxas runs.
  std::string sass_backend = "auto";
  // Also archive the Slang modules as verified IR (module_stage.h), so that
  // the runtime skips Slang's front end.
  bool modules = true;
  // The most programs the modules stage serializes in one Slang session; 0:
  // ProgramsPerSession decides from the jobs (compiler/module_parts.h).
  // Several sessions let one configuration of hundreds of kernels load from
  // source on several workers instead of one while the others wait (88 s of
  // the 110 s slangpy's suite took on the H200). A session of part of the
  // programs loads their modules in another order than the app did; a module
  // the app loaded without building a kernel is then decided by the sessions
  // that hold its imports, and every archived module's imports are checked
  // across sessions (CombineParts), so what is archived is the same (slangpy's
  // suite: the same module keys, archived and refused, in one session or 16).
  // SIZE_MAX (`--programs-per-session all`): each configuration in one session.
  size_t programs_per_session = 0;
  // Build only shard `shard_index` (0-based) of `shard_count`: the kernels
  // whose key falls in it (KernelsOfShard), with their modules. `spreplay merge`
  // joins the shards' archives into what one compile would have written.
  uint32_t shard_index = 0;
  uint32_t shard_count = 1;
  // Called with one human-readable line per finished kernel.
  std::function<void(const std::string&)> progress;
  // Called with every other line worth a user's attention (a module not archived, say).
  std::function<void(const std::string&)> notice;
};

}  // namespace spreplay

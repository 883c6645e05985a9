#pragma once
// What happened to every kernel of a `spreplay compile` run.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "compiler/compile_timeline.h"

namespace spreplay {

struct KernelOutcome {
  enum class Status { kCompiled, kFailed };
  Digest key;
  std::string label;  // "module.function (kind)" for messages
  Status status = Status::kFailed;
  std::string message;  // why it failed, with Slang's or ptxas' diagnostics
  bool replay_cached = false;
  // Proven by its program rebuilt over its session configuration's module IR,
  // rather than replayed from source.
  bool replayed_over_ir = false;
  // The replay was the recorded program with its registers renamed
  // (ptx_comparison.h): accepted, and served from the recorded PTX.
  size_t ptx_renamed_registers = 0;
  bool optix = false;  // a ray-tracing program, archived as its PTX
  // Slang session, modules, composition, link; for a kernel replayed over
  // IR, or proven by the cache while its configuration's modules were
  // verified, what serializing its part's modules from source took (and
  // codegen_seconds its rebuild over them).
  double front_end_seconds = 0;
  double codegen_seconds = 0;               // Slang codegen + NVRTC
  std::map<uint32_t, double> sass_seconds;  // per arch; 0 for a cache hit
  uint64_t ptx_bytes = 0;
  uint64_t fatbin_bytes = 0;
  double recorded_compile_seconds = 0;  // what getEntryPointCode took in the app

  // Its replay (front end, then codegen), or its slowest SASS, which is
  // built from the recorded PTX at the same time: the longest this kernel
  // keeps a compile waiting, however many jobs it has.
  double critical_seconds() const;
};

struct CompileReport {
  std::vector<KernelOutcome> kernels;
  std::string sass_tool;
  uint64_t archive_bytes = 0;
  // The modules stage: modules archived as IR, refused, their IR's size.
  size_t modules_archived = 0;
  size_t modules_refused = 0;
  uint64_t module_ir_bytes = 0;
  size_t module_groups = 0;         // session configurations
  size_t module_groups_cached = 0;  // of them, taken unchanged from the cache
  // Of them, serialized in several parts that each started from one load of
  // the modules they share (ModuleStage's servers).
  size_t module_groups_warm = 0;
  double module_seconds = 0;
  double wall_seconds = 0;
  // Of this process, its worker processes and the compilers it ran (ptxas),
  // user and system.
  double cpu_seconds = 0;
  // The largest resident set of this process, its worker processes and the
  // compilers it ran: what one job may hold at its peak.
  uint64_t peak_rss_bytes = 0;
  // The slowest kernel's critical_seconds, and its label.
  double critical_path_seconds = 0;
  std::string critical_path_label;
  // The app's own JIT of the same kernels, as recorded. Its getEntryPointCode
  // calls (Slang's codegen and NVRTC):
  double app_compile_seconds = 0;
  // Its module loads in the sessions that built them (Slang's front end); 0
  // for traces recorded before load times were.
  double app_module_load_seconds = 0;
  // Every job of the compile: which ran when, on which worker.
  std::vector<TimelineSpan> timeline;

  size_t failed() const;
};

}  // namespace spreplay

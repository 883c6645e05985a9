#pragma once
// The modules stage of `spreplay compile`: serializes the Slang modules of
// every recorded session configuration, proves in a fresh session that the
// IR rebuilds every kernel that uses them with byte-identical PTX and an
// identical layout, and archives the modules that pass. A module the app
// loaded but built no recorded kernel with is proven by what it is alone:
// its layout, and its entry points' code, from IR as from source
// (schema::ModuleVerification::LAYOUT). The runtime then loads them instead
// of running Slang's front end.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "archive/archive_writer.h"
#include "compiler/compile_cache.h"
#include "compiler/compile_timeline.h"
#include "recorder/trace_reader.h"

namespace spreplay {

struct ModuleStageReport {
  size_t archived = 0;
  size_t refused = 0;
  uint64_t ir_bytes = 0;
  size_t groups = 0;         // session configurations
  size_t cached_groups = 0;  // of them, unchanged since a compile that used the cache
  double seconds = 0;
};

// `kernels`: the records whose kernels compile verified; their modules are
// the candidates, with the modules of the trace's module loads that no
// recorded kernel was built with, in any recorded configuration. Adds each verified module to
// `writer`, and each refused one with why. Slang's serializer is not byte-reproducible (a few bytes
// of slangpy's library differ from run to run), so `cache` keeps the first IR verified under each
// module key, and later compiles archive those bytes; it also keeps each configuration's outcome
// (compiler/module_stage_cache.h), which an unchanged configuration takes instead of verifying.
// `timeline`, if given, gets a span for every session serialized and every program rebuilt.
ModuleStageReport ArchiveVerifiedModules(const Trace& trace,
                                         const std::vector<const KernelRecord*>& kernels,
                                         size_t workers, const CompileCache& cache,
                                         ArchiveWriter& writer,
                                         const std::function<void(const std::string&)>& progress,
                                         CompileTimeline* timeline = nullptr);

}  // namespace spreplay

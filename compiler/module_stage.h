#pragma once
// The modules stage of `spreplay compile`: serializes the Slang modules of
// every recorded session configuration, proves in a fresh session that the
// IR rebuilds every kernel that uses them with byte-identical PTX and an
// identical layout, and archives the modules that pass. The runtime then
// loads them instead of running Slang's front end.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "archive/archive_writer.h"
#include "recorder/trace_reader.h"

namespace spreplay {

struct ModuleStageReport {
  size_t archived = 0;
  size_t refused = 0;
  uint64_t ir_bytes = 0;
  double seconds = 0;
};

// `kernels`: the records whose kernels compile verified; their modules are
// the candidates. Adds each verified module to `writer`, and each refused
// one with why.
ModuleStageReport ArchiveModules(const Trace& trace,
                                 const std::vector<const KernelRecord*>& kernels, size_t workers,
                                 ArchiveWriter& writer,
                                 const std::function<void(const std::string&)>& progress);

}  // namespace spreplay

#pragma once
// The unit of work of the modules stage: one recorded session configuration,
// its verified kernels and the modules the app asked it for, and what the
// stage concluded of their modules.

#include <string>
#include <utility>
#include <vector>

#include "archive/archive_writer.h"
#include "interpose/session_config.h"
#include "recorder/trace_reader.h"

namespace spreplay {

// The kernels of one recorded session configuration, which share modules,
// and the modules the app asked it for.
struct SessionGroup {
  Digest content;
  Digest location;  // SessionConfig::LocationDigest, what FindSession looks up
  SessionConfig config;
  std::string toolchain;
  std::vector<const KernelRecord*> kernels;  // verified
  std::vector<const ModuleLoadRecord*> loads;
  // Every recorded kernel of the configuration, verified or not: a module
  // one of them was built with is verified by kernels or not at all.
  std::vector<const KernelRecord*> recorded;
};

struct GroupOutcome {
  std::vector<std::pair<ModuleMetadata, std::string>> archived;  // with its IR
  std::vector<UnservedModule> refused;
  // Some refusal came from this run rather than from the trace: a worker
  // process that died, a Slang that could not be set up, or an error Slang
  // calls internal. Another compile of the same trace may decide otherwise,
  // so such an outcome is not remembered.
  bool refused_by_this_run = false;
};

}  // namespace spreplay

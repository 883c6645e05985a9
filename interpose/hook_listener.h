#pragma once
// What the Slang hooks report to the rest of spreplay, and ask of it.

#include <cstddef>
#include <memory>
#include <string>

#include "common/sha256.h"
#include "interpose/component.h"
#include "interpose/file_digests.h"
#include "interpose/session_config.h"

namespace spreplay {

struct SessionInfo {
  SessionConfig config;
  Digest digest;           // config.ContentDigest()
  Digest location_digest;  // config.LocationDigest()
  uint64_t ordinal = 0;    // order of creation in this process, for diagnostics
};

// One request for target code: an entry point of a linked program.
struct KernelRequest {
  std::shared_ptr<const SessionInfo> session;
  ComponentPtr program;  // Kind::kLinked, or opaque when it was not tracked
  int64_t entry_point_index = 0;
  int64_t target_index = 0;
  Digest key;  // valid only when program->keyable
  std::string toolchain;
};

// Bytes to hand Slang's caller in place of compiled code. The owner keeps them
// alive for as long as the process may use them (an mmapped archive).
struct ServedKernel {
  const void* data = nullptr;
  size_t size = 0;
};

// What a listener decides about a kernel request.
enum class KernelDecision {
  kPass,    // no opinion: ask the next listener, or compile
  kServe,   // answer with `served` instead of compiling
  kRefuse,  // fail the request with `refusal` (strict mode)
};

// Every kernel request of the process, by outcome.
struct KernelCounts {
  uint64_t served = 0;
  uint64_t compiled = 0;     // keyable, compiled by Slang
  uint64_t not_keyable = 0;  // compiled by Slang; content the hooks could not see
  uint64_t refused = 0;
};

class HookListener {
 public:
  virtual ~HookListener() = default;
  // Slang's global session exists; `toolchain` is what kernel keys carry.
  virtual void OnToolchainKnown(const std::string& toolchain, const std::string& slang_build_tag) {}
  virtual void OnSessionCreated(const SessionInfo& session) {}
  // A module Slang loaded, with the bytes of every file it read.
  virtual void OnModuleLoaded(const ComponentPtr& module, const std::vector<FileContent>& files) {}
  virtual KernelDecision DecideKernel(const KernelRequest& request, ServedKernel* served,
                                      std::string* refusal) {
    return KernelDecision::kPass;
  }
  virtual void OnKernelCompiled(const KernelRequest& request, const void* code, size_t size,
                                double seconds) {}
};

}  // namespace spreplay

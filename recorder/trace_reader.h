#pragma once
// Reads a trace back: the records of every process that appended to it,
// de-duplicated, with component trees and sessions rebuilt and checked
// against their digests on demand.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "interpose/component.h"
#include "interpose/session_config.h"
#include "recorder/trace_log.h"
#include "schema/trace.capnp.h"

namespace spreplay {

struct KernelRecord {
  Digest key;
  Digest session;           // content digest, part of the key
  Digest session_location;  // the session to replay: FindSession(session_location)
  Digest program;
  int64_t entry_point_index = 0;
  int64_t target_index = 0;
  std::string_view code;  // points into the trace's bytes
  double compile_seconds = 0;
  std::vector<std::string> module_names;
  std::string entry_point_name;
  std::string toolchain;
};

// A module the app asked a session for (a moduleLoad record).
struct ModuleLoadRecord {
  Digest session;           // content digest
  Digest session_location;  // FindSession(session_location)
  Digest module;            // FindComponent(module), or FindStringModule(module, name)
  std::string name;
  std::string toolchain;
  double load_seconds = 0;  // the app's load call, imports included
};

// "call", "bwds", "dispatch" or "raytracing": how tools name a call site's kind.
std::string CallKindName(trace_schema::CallSite::Kind kind);

class Trace;

// "module.function (kind)" of `kernel`'s first call site, for messages, or
// "kernel <key> (<entry point>)" when the trace names none.
std::string KernelLabel(const Trace& trace, const KernelRecord& kernel);

class Trace {
 public:
  static absl::StatusOr<Trace> Read(const std::string& path);
  // Reads several traces as one (`spreplay compile a.capnp b.capnp`).
  static absl::StatusOr<Trace> ReadAll(const std::vector<std::string>& paths);

  Trace(Trace&&) noexcept;
  Trace& operator=(Trace&&) noexcept;
  ~Trace();

  const std::string& name() const;
  const std::vector<trace_schema::Process::Reader>& processes() const;
  const std::vector<trace_schema::Device::Reader>& devices() const;
  // One per distinct (slangpy hash, kind), in first-seen order.
  const std::vector<trace_schema::CallSite::Reader>& call_sites() const;
  // One per distinct key, in first-seen order.
  const std::vector<KernelRecord>& kernels() const;
  // One per distinct (session location, module, name), in first-seen order.
  const std::vector<ModuleLoadRecord>& module_loads() const;
  // Call sites whose wrapper module is part of `kernel`'s program.
  std::vector<trace_schema::CallSite::Reader> CallSitesOf(const KernelRecord& kernel) const;

  absl::StatusOr<ComponentPtr> FindComponent(const Digest& digest) const;
  // The module loaded from a string of `digest` under `name`. FindComponent
  // gives the first name a digest was recorded under; slangpy derives a
  // wrapper's name from more than the text its digest keys.
  absl::StatusOr<ComponentPtr> FindStringModule(const Digest& digest,
                                                const std::string& name) const;
  // `kernel`'s program as the app built it: FindComponent(kernel.program),
  // with every module from a string under the name it had in that program.
  absl::StatusOr<ComponentPtr> ProgramOf(const KernelRecord& kernel) const;
  // `load`'s module under the name the app loaded it with.
  absl::StatusOr<ComponentPtr> ModuleOf(const ModuleLoadRecord& load) const;
  absl::StatusOr<SessionConfig> FindSession(const Digest& digest) const;
  // The recorded bytes of a file, or nullptr.
  const std::string_view* FindSource(const Digest& digest) const;

  // Damaged regions of the underlying logs, and records this build does not
  // understand (written by a newer spreplay) or could not decode.
  const std::vector<Damage>& damage() const;
  uint64_t unknown_records() const;
  uint64_t undecodable_records() const;
  uint64_t record_count() const;
  uint64_t byte_size() const;

 private:
  struct Contents;
  explicit Trace(std::unique_ptr<Contents> contents);
  std::unique_ptr<Contents> contents_;
};

}  // namespace spreplay

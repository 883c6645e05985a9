#pragma once
// Serializes the Slang modules a trace's programs load (SerializeModule),
// and proves that the serialized IR stands in for the source: in a fresh
// session, each program rebuilt over modules loaded from IR
// (loadModuleFromIRBlob) must have the layout the source gave it, and its
// code is handed back for comparison with what the app compiled.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "interpose/component.h"
#include "interpose/session_config.h"
#include "replayer/com_ptr.h"
#include "replayer/replay_session.h"
#include "replayer/replayer.h"
#include "replayer/snapshot.h"
#include "slang.h"

namespace spreplay {

// A recorded kernel of one session configuration, or a module the app
// loaded that no recorded kernel was built from (Kind::kModule): that one is
// proven by its layout, and by the code of each entry point it defines,
// linked alone with it, from IR against from source.
struct RecordedProgram {
  ComponentPtr program;  // Kind::kLinked or Kind::kModule
  const Snapshot* snapshot = nullptr;
  int64_t entry_point_index = 0;
  int64_t target_index = 0;
};

// Which of a session's modules a recorded module node is: its content and its
// name. slangpy derives each wrapper's name from its call, so two wrappers may
// differ only in their names, which module digests leave out.
using ModuleNodeKey = std::pair<Digest, std::string>;
ModuleNodeKey NodeKeyOf(const Component& module);

struct SerializedModule {
  ComponentPtr description;  // as the hooks describe it when Slang loads it from source
  std::string ir;
  std::vector<size_t> imports;  // the modules it imports, directly or not, in load order
  // Why it can only be loaded from source, or empty. Slang loads modules
  // that import each other in a cycle from source, but one of them loaded
  // from IR imports the others as it reads its declarations, from source,
  // which then import it while it is half loaded: Slang aborts, from a
  // destructor, which ends the process. So such a cycle, and every module
  // that imports it, is rebuilt from source, and never archived as IR.
  std::string source_only;
};

struct SerializedSession {
  std::vector<SerializedModule> modules;  // in the order Slang loaded them
  // Per program: the modules it is built from, imports included, in load
  // order; or why its modules cannot be served.
  std::vector<absl::StatusOr<std::vector<size_t>>> uses;
  std::vector<std::string> layouts;  // per program: its layout as JSON, from source
  // Per program: of a module, the code of each entry point it defines, from
  // source (EntryPointCodes); empty for a kernel.
  std::vector<std::vector<std::string>> entry_point_codes;
};

// A session of one configuration holding the modules every program of it
// loads first (slangpy's library), loaded from source and serialized once:
// each part of the configuration's programs can then be serialized in a copy
// of it (a process forked from the one that made it) instead of loading
// them again. Serialize spends it.
struct WarmSession {
  std::unique_ptr<ReplaySession> session;
  // The IR of each module it holds, or why it has none.
  absl::flat_hash_map<slang::IModule*, absl::StatusOr<std::string>> modules;
};

// The modules a WarmSession loads, in order, and the files they read.
struct SharedModules {
  std::vector<ComponentPtr> modules;
  Snapshot files;
};

// The session one thread rebuilds programs of one SerializedSession in, kept
// from one program to the next so that their shared modules load from IR
// once (IrModuleBuilder::RebuildOneFromIr).
struct IrRebuildSession {
  const SerializedSession* of = nullptr;
  std::unique_ptr<ReplaySession> session;
  absl::flat_hash_set<size_t> loaded;  // the modules `session` holds from IR
  bool spent = false;                  // see HasTypeConformance
};

class IrModuleBuilder {
 public:
  static absl::StatusOr<std::unique_ptr<IrModuleBuilder>> Create(ReplayerOptions options = {});

  // Loads every program's modules from source into one session, builds each
  // program, then serializes every module the session holds. In `warm`, if
  // given, whose session it uses up and whose modules' IR it takes.
  SerializedSession Serialize(const SessionConfig& config,
                              const std::vector<RecordedProgram>& programs,
                              WarmSession* warm = nullptr);

  // A session of `config` holding the file modules that every kernel of
  // `programs` loads and that import no other module of theirs, in the first
  // kernel's order (ModuleLoadOrder), each under the name that kernel's
  // program loads it by; NotFound if they share none.
  absl::StatusOr<std::unique_ptr<WarmSession>> Warm(const SessionConfig& config,
                                                    const std::vector<RecordedProgram>& programs);

  // Rebuilds each program whose modules serialized over its modules loaded
  // from `serialized`, in a fresh session, and returns its code (of a module:
  // "", once every entry point's code is the source's); an error says why it
  // could not, or how its layout or code differs from the source's.
  std::vector<absl::StatusOr<std::string>> RebuildFromIr(
      const SessionConfig& config, const std::vector<RecordedProgram>& programs,
      const SerializedSession& serialized);

  // Program `p` of RebuildFromIr, in `reuse`'s session when that holds
  // `serialized`'s modules already and may be reused. The programs of one
  // SerializedSession may be rebuilt on several threads at once, each with
  // a builder and an IrRebuildSession of its own: every program is proven
  // by its own code, whichever of them a session rebuilt before it.
  absl::StatusOr<std::string> RebuildOneFromIr(const SessionConfig& config,
                                               const std::vector<RecordedProgram>& programs,
                                               const SerializedSession& serialized, size_t p,
                                               IrRebuildSession& reuse);

 private:
  SerializedSession SerializeUncontained(const SessionConfig& config,
                                         const std::vector<RecordedProgram>& programs,
                                         WarmSession* warm);
  absl::StatusOr<std::unique_ptr<WarmSession>> WarmUncontained(
      ReplaySession& session, const RecordedProgram& first,
      const std::vector<absl::flat_hash_set<ModuleNodeKey>>& modules_of_programs,
      const absl::flat_hash_set<std::string>& disputed_files, bool with_source_locations);
  // One program of RebuildFromIr in `session`; `loaded`: the modules
  // `session` holds from IR already.
  absl::StatusOr<std::string> RebuildOne(ReplaySession& session, const RecordedProgram& program,
                                         const SerializedSession& serialized,
                                         const std::vector<size_t>& uses,
                                         const std::string& source_layout,
                                         const std::vector<std::string>& source_codes,
                                         absl::flat_hash_set<size_t>& loaded);

  explicit IrModuleBuilder(ComPtr<slang::IGlobalSession> global_session)
      : global_session_(std::move(global_session)) {}
  ComPtr<slang::IGlobalSession> global_session_;
};

}  // namespace spreplay

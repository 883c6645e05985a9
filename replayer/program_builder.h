#pragma once
// Rebuilds a recorded component tree in a replay session with the same Slang
// calls the application made (loadModule, loadModuleFromSourceString,
// findEntryPointByName / findAndCheckEntryPoint,
// createTypeConformanceComponentType, createCompositeComponentType,
// renameEntryPoint, specialize, linkWithOptions), and describes what it built with the
// same factories the hooks use, for comparison with the recording.

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "interpose/component.h"
#include "replayer/com_ptr.h"
#include "replayer/replay_session.h"
#include "slang.h"

namespace spreplay {

struct BuiltComponent {
  ComPtr<slang::IComponentType> object;
  ComponentPtr description;  // what was built, as the hooks would describe it
};

class ProgramBuilder {
 public:
  explicit ProgramBuilder(ReplaySession& session) : session_(session) {}

  // Loads the program's modules; `order` comes from ModuleLoadOrder.
  absl::Status LoadModules(const std::vector<ComponentPtr>& order);

  // Builds the recorded tree bottom-up; its modules must have been loaded.
  absl::StatusOr<BuiltComponent> Build(const ComponentPtr& recorded);

 private:
  absl::StatusOr<BuiltComponent> BuildNode(const Component& recorded);
  absl::StatusOr<BuiltComponent> BuildEntryPoint(const Component& recorded);
  absl::StatusOr<BuiltComponent> BuildTypeConformance(const Component& recorded);
  absl::StatusOr<BuiltComponent> BuildComposite(const Component& recorded);
  absl::StatusOr<BuiltComponent> BuildRenamed(const Component& recorded);
  absl::StatusOr<BuiltComponent> BuildLinked(const Component& recorded);
  absl::StatusOr<BuiltComponent> BuildSpecialized(const Component& recorded);
  // A type by full name, as sgl finds one: in a program layout, searching
  // the loaded modules last-loaded first (later modules see the
  // declarations of the modules they import). Null if none declares it.
  slang::TypeReflection* FindType(const std::string& name);

  ReplaySession& session_;
  // Recorded nodes may be shared (a module is a composite's child and its
  // entry point's); each is built once.
  absl::flat_hash_map<const Component*, BuiltComponent> built_;
  std::vector<slang::IModule*> modules_;  // in load order, for type lookups
};

// Loads `program`'s modules the way the application did, over `snapshot`'s
// files (or finds them loaded, from source or from IR), builds it and checks
// that what it built has the recorded content.
absl::StatusOr<BuiltComponent> BuildRecordedProgram(ReplaySession& session,
                                                    const ComponentPtr& program,
                                                    const Snapshot& snapshot);

}  // namespace spreplay

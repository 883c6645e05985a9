#include "replayer/load_order.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

void CollectModules(const ComponentPtr& node, absl::flat_hash_set<const Component*>& seen,
                    std::vector<ComponentPtr>& modules) {
  if (!node || !seen.insert(node.get()).second) return;
  for (const ComponentPtr& child : node->children) CollectModules(child, seen, modules);
  if (node->kind == Component::Kind::kModule) modules.push_back(node);
}

// Adds the string modules that the collected modules import but the tree
// does not hold.
void AddImportedStringModules(const std::vector<ComponentPtr>& string_modules,
                              absl::flat_hash_set<const Component*>& seen,
                              std::vector<ComponentPtr>& modules) {
  absl::flat_hash_map<std::string, ComponentPtr> by_path;
  for (const ComponentPtr& module : string_modules) {
    if (module && module->source) by_path.emplace(module->path, module);
  }
  for (size_t i = 0; i < modules.size(); ++i) {
    for (const SourceFile& dependency : modules[i]->dependencies) {
      auto it = by_path.find(dependency.path);
      if (it != by_path.end() && seen.insert(it->second.get()).second)
        modules.push_back(it->second);
    }
  }
}

bool KeepsRequestedName(const Component& module) {
  return module.source.has_value() || module.name == module.requested_name;
}

}  // namespace

absl::StatusOr<std::vector<ComponentPtr>> ModuleLoadOrder(
    const ComponentPtr& program, const std::vector<ComponentPtr>& string_modules,
    const ModuleIdentity& identity_of) {
  absl::flat_hash_set<const Component*> seen;
  std::vector<ComponentPtr> modules;
  CollectModules(program, seen, modules);
  AddImportedStringModules(string_modules, seen, modules);

  // before[i] lists the modules that must be loaded before module i.
  const size_t count = modules.size();
  std::vector<std::vector<size_t>> before(count);
  for (size_t imported = 0; imported < count; ++imported) {
    const std::string identity = identity_of(*modules[imported]);
    for (size_t importer = 0; importer < count; ++importer) {
      if (importer == imported) continue;
      bool imports = false;
      for (const SourceFile& dependency : modules[importer]->dependencies)
        imports = imports || dependency.path == identity;
      if (!imports) continue;
      if (KeepsRequestedName(*modules[imported])) {
        before[importer].push_back(imported);
      } else {
        before[imported].push_back(importer);
      }
    }
  }

  // Kahn's algorithm, always taking the earliest ready module, which keeps
  // the tree order wherever the constraints allow.
  std::vector<ComponentPtr> order;
  std::vector<bool> loaded(count, false);
  while (order.size() < count) {
    size_t next = count;
    for (size_t i = 0; i < count && next == count; ++i) {
      if (loaded[i]) continue;
      bool ready = true;
      for (size_t required : before[i]) ready = ready && loaded[required];
      if (ready) next = i;
    }
    if (next == count) {
      size_t stuck = 0;
      while (loaded[stuck]) ++stuck;
      return absl::FailedPreconditionError(
          fmt::format("the recorded modules import each other in a cycle (at module '{}')",
                      modules[stuck]->name));
    }
    loaded[next] = true;
    order.push_back(modules[next]);
  }
  return order;
}

}  // namespace spreplay

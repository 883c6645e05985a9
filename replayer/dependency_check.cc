#include "replayer/dependency_check.h"

#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"

namespace spreplay {

absl::Status CheckDependencies(const std::vector<ComponentPtr>& modules, ReplaySession& session) {
  absl::flat_hash_set<std::string> string_modules;
  for (const ComponentPtr& module : modules) {
    if (module->source) string_modules.insert(module->path);
  }
  for (const ComponentPtr& module : modules) {
    for (const SourceFile& file : module->dependencies) {
      if (string_modules.contains(file.path)) continue;
      std::optional<Digest> digest = session.DependencyDigest(file.path);
      if (!digest) {
        return absl::NotFoundError(
            fmt::format("the snapshot lacks {}, which module '{}' read", file.path, module->name));
      }
      if (*digest != file.content) {
        return absl::FailedPreconditionError(fmt::format(
            "the snapshot's {} (content {}) is not the file module '{}' read (content {})",
            file.path, digest->ToHex().substr(0, 12), module->name,
            file.content.ToHex().substr(0, 12)));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace spreplay

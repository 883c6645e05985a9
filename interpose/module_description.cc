#include "interpose/module_description.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "common/fmt_absl.h"
#include "fmt/format.h"
#include "interpose/imported_modules.h"

namespace spreplay {

absl::StatusOr<ComponentPtr> DescribeLoadedModule(slang::IModule* module,
                                                  const ModuleRequest& request,
                                                  const DependencyDigest& digest_of,
                                                  const ServedImportNamed& served_import) {
  const std::string name = module->getName() ? module->getName() : "";
  const std::string own_path = module->getFilePath() ? module->getFilePath() : request.path;
  std::vector<SourceFile> dependencies;
  for (SlangInt32 i = 0; i < module->getDependencyFileCount(); ++i) {
    const char* dependency = module->getDependencyFilePath(i);
    if (!dependency) continue;
    // A string module's own pseudo path stands for its text, which is keyed
    // as the source instead (as the hooks do).
    if (request.source && own_path == dependency) continue;
    absl::StatusOr<Digest> digest = digest_of(dependency);
    if (!digest.ok()) {
      return absl::InternalError(fmt::format("module '{}' depends on {}: {}", name, dependency,
                                             digest.status().message()));
    }
    dependencies.push_back({dependency, *digest});
  }
  if (request.source && served_import) {
    for (const std::string& imported : ImportedModuleNames(*request.source)) {
      std::optional<ServedImport> served = served_import(imported);
      if (!served) continue;
      for (const SourceFile& file : served->files) {
        // Listed already, maybe under another spelling of its path.
        const std::filesystem::path file_name = std::filesystem::path(file.path).filename();
        const bool listed = std::any_of(
            dependencies.begin(), dependencies.end(), [&](const SourceFile& dependency) {
              return dependency.path == file.path ||
                     (dependency.content == file.content &&
                      std::filesystem::path(dependency.path).filename() == file_name);
            });
        if (!listed) dependencies.push_back(file);
      }
    }
  }
  return Component::Module(name, own_path, request.requested_name, request.source,
                           std::move(dependencies));
}

}  // namespace spreplay

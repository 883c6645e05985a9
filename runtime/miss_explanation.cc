#include "runtime/miss_explanation.h"

#include <filesystem>

#include "absl/container/flat_hash_set.h"
#include "common/capnp_digest.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

bool SameCallSite(const ArchivedKernel& kernel, const std::vector<std::string>& wrappers,
                  const CallSiteName* name) {
  auto call_site = kernel.entry.getCallSite();
  const std::string wrapper = call_site.getWrapperModuleName();
  if (std::find(wrappers.begin(), wrappers.end(), wrapper) != wrappers.end()) return true;
  if (!name) return false;
  const auto file_name = [](const std::string& module) {
    return std::filesystem::path(module).filename();
  };
  return call_site.getFunctionName() == name->function && call_site.getCallKind() == name->kind &&
         file_name(call_site.getModuleName()) == file_name(name->module);
}

}  // namespace

std::vector<std::string> WrapperModuleNames(const ComponentPtr& program) {
  std::vector<std::string> names;
  ForEachDistinctNode(program, [&](const Component& node) {
    if (node.kind == Component::Kind::kModule && node.source) names.push_back(node.name);
  });
  return names;
}

std::string ExplainMiss(const Archive& archive, const KernelRequest& request,
                        const CallSiteName* name) {
  if (!request.session) return "its Slang session was created before spreplay was active";
  if (!request.program->keyable) return "not keyable: " + NotKeyableReason(request.program);
  for (auto unbuilt : archive.index().getUnbuilt()) {
    if (DigestFromData(unbuilt.getKey()).value_or(Digest{}) != request.key) continue;
    std::string reason = unbuilt.getReason();
    // The first line says what failed; the rest (a compiler log) is in the compile report.
    if (const size_t end = reason.find('\n'); end != std::string::npos)
      reason = reason.substr(0, end) + " (more in `spreplay compile`'s report)";
    return fmt::format("recorded, but `spreplay compile` could not build it: {}", reason);
  }
  const std::vector<std::string> wrappers = WrapperModuleNames(request.program);
  for (size_t i = 0; i < archive.kernel_count(); ++i) {
    ArchivedKernel kernel = archive.kernel(i);
    if (!SameCallSite(kernel, wrappers, name)) continue;
    // The same call site was archived: find what differs.
    absl::flat_hash_set<Digest> current;
    ForEachDistinctNode(request.program, [&](const Component& node) {
      for (const SourceFile& file : node.dependencies) current.insert(file.content);
    });
    std::vector<std::string> changed;
    for (auto dependency : kernel.entry.getManifest()) {
      if (current.contains(DigestFromData(dependency.getDigest()).value_or(Digest{}))) continue;
      std::string file =
          std::filesystem::path(std::string(dependency.getPath().cStr())).filename().string();
      if (std::find(changed.begin(), changed.end(), file) == changed.end())
        changed.push_back(std::move(file));
    }
    if (!changed.empty()) {
      std::string list;
      for (size_t j = 0; j < changed.size() && j < 3; ++j) list += (j ? ", " : "") + changed[j];
      if (changed.size() > 3) list += fmt::format(" and {} more", changed.size() - 3);
      return fmt::format("source changed since the archive was built: {}", list);
    }
    if (DigestFromData(kernel.entry.getSessionDigest()).value_or(Digest{}) !=
        request.session->digest)
      return "the device's compiler options or defines differ from when the archive was built";
    return "its link options or module composition differ from when the archive was built";
  }
  return "this call site was not recorded";
}

}  // namespace spreplay

#include "runtime/miss_explanation.h"

#include <algorithm>
#include <filesystem>

#include "absl/container/flat_hash_set.h"
#include "common/capnp_digest.h"
#include "fmt/format.h"
#include "interpose/session_settings.h"

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

std::string DescribeSessionChange(const Archive& archive, const Digest& archived,
                                  const SessionInfo& session) {
  constexpr std::string_view kSummary = "the device's compiler settings differ from the archive's";
  for (auto entry : archive.index().getSessions()) {
    if (DigestFromData(entry.getDigest()).value_or(Digest{}) != archived) continue;
    std::vector<std::string> settings;
    for (auto line : entry.getSettings()) settings.emplace_back(line.cStr());
    std::sort(settings.begin(), settings.end());  // the writer sorts; another archive may not
    const std::string change = DescribeSettingsChange(settings, KeyedSettings(session.config));
    if (!change.empty()) return fmt::format("{}: {}", kSummary, change);
  }
  return std::string(kSummary);
}

}  // namespace

std::vector<std::string> WrapperModuleNames(const ComponentPtr& program) {
  std::vector<std::string> names;
  ForEachDistinctNode(program, [&](const Component& node) {
    if (node.kind == Component::Kind::kModule && node.source) names.push_back(node.name);
  });
  return names;
}

std::optional<std::string> UnbuiltReason(const Archive& archive, const Digest& key) {
  for (auto unbuilt : archive.index().getUnbuilt()) {
    if (DigestFromData(unbuilt.getKey()).value_or(Digest{}) != key) continue;
    std::string reason = unbuilt.getReason();
    // The first line says what failed; the rest (a compiler log) is in the compile report.
    if (const size_t end = reason.find('\n'); end != std::string::npos)
      reason = reason.substr(0, end) + " (more in `spreplay compile`'s report)";
    return fmt::format("recorded, but `spreplay compile` could not build it: {}", reason);
  }
  return std::nullopt;
}

std::string ExplainMiss(const Archive& archive, const KernelRequest& request,
                        const CallSiteName* name) {
  if (!request.session) return "its Slang session was created before spreplay was active";
  if (!request.program->keyable) return "not keyable: " + NotKeyableReason(request.program);
  if (std::optional<std::string> unbuilt = UnbuiltReason(archive, request.key)) return *unbuilt;
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
    const Digest archived_session =
        DigestFromData(kernel.entry.getSessionDigest()).value_or(Digest{});
    if (archived_session != request.session->digest)
      return DescribeSessionChange(archive, archived_session, *request.session);
    return "its program differs from the archived build of the same call site and files (link "
           "options, type conformances or how its modules were composed)";
  }
  return "not recorded: no trace the archive was built from holds this call site (record it with "
         "SLANGPY_KERNELS_MISSES=misses.capnp and add that trace to `spreplay compile`)";
}

}  // namespace spreplay

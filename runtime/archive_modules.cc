#include "runtime/archive_modules.h"

#include <sys/stat.h>

#include "common/capnp_digest.h"
#include "common/fmt_absl.h"
#include "fmt/format.h"
#include "interpose/imported_modules.h"
#include "interpose/module_keys.h"
#include "interpose/path_roots.h"

namespace spreplay {
namespace {

// Digest fields of module entries were checked to be 32 bytes at open.
Digest DigestOf(capnp::Data::Reader data) { return DigestFromData(data).value_or(Digest{}); }

PathRoot RootOf(schema::PathRoot root) {
  switch (root) {
    case schema::PathRoot::ABSOLUTE:
      return PathRoot::kAbsolute;
    case schema::PathRoot::SLANGPY:
      return PathRoot::kSlangpy;
    case schema::PathRoot::SEARCH_PATH:
      return PathRoot::kSearchPath;
    case schema::PathRoot::WORKING_DIRECTORY:
      return PathRoot::kWorkingDirectory;
    case schema::PathRoot::REQUEST_DIRECTORY:
      return PathRoot::kRequestDirectory;
  }
  return PathRoot::kAbsolute;
}

RootedPath RootedOf(schema::ModuleFile::Reader file) {
  return {RootOf(file.getRoot()), file.getRootIndex(), file.getRelativePath().cStr()};
}

bool IsFile(const std::string& path) {
  struct stat status;
  return ::stat(path.c_str(), &status) == 0 && S_ISREG(status.st_mode);
}

// A module's name fit to find it by when it was asked for by that name: not
// a path, whose meaning depends on where the app runs.
bool IsBareName(std::string_view name) { return name.find('/') == std::string_view::npos; }

// How a request by absolute path is indexed: by the path below its root, the
// same wherever the app and its virtualenv are installed. Below a request
// directory, by the path alone: which of the recording's request directories
// it was is known once the module is found.
std::string RequestKey(const RootedPath& rooted) {
  const uint32_t index = rooted.root == PathRoot::kRequestDirectory ? 0 : rooted.index;
  return fmt::format("\x01{}:{}:{}", static_cast<int>(rooted.root), index, rooted.relative);
}

}  // namespace

struct ArchiveModules::Planning {
  const ModuleLoadRequest& request;
  const ModuleFileReader& reader;
  absl::flat_hash_set<size_t> planned;
  // Modules found unservable, with why: each is checked once per request,
  // however many of the others import it.
  absl::flat_hash_map<size_t, std::string> failed;
  // Modules whose imports are being planned: a cycle, which only a damaged
  // archive holds, must end in an error, not in endless recursion.
  absl::flat_hash_set<size_t> visiting;
  std::vector<ModuleFromIr> plan;
  // Where the request directory of the requested module lies now.
  uint32_t request_index = 0;
  std::string request_directory;
  // Where the session's earlier requests by path put the others.
  absl::flat_hash_map<uint32_t, std::string> earlier_request_directories;

  std::string Local(const RootedPath& rooted) const {
    if (rooted.root == PathRoot::kRequestDirectory &&
        (request_directory.empty() || rooted.index != request_index)) {
      auto it = earlier_request_directories.find(rooted.index);
      if (it == earlier_request_directories.end()) return "";
      return PathUnderRoot(request.session->config, rooted, rooted.index, it->second);
    }
    return PathUnderRoot(request.session->config, rooted, request_index, request_directory);
  }
};

ArchiveModules::ArchiveModules(const Archive& archive, bool strict)
    : archive_(archive), strict_(strict), toolchain_(archive.index().getToolchain().cStr()) {
  const auto modules = archive_.index().getModules();
  for (unsigned i = 0; i < modules.size(); ++i) {
    const auto module = modules[i];
    const Digest session = DigestOf(module.getSessionDigest());
    sessions_.insert(session);
    by_key_.try_emplace(DigestOf(module.getKey()), i);
    if (module.hasSourceLookup() && module.getSourceLookup().size() > 0) {
      by_source_[DigestOf(module.getSourceLookup())].push_back(i);
      continue;
    }
    const std::string requested = module.getRequestedName().cStr();
    const std::string name = module.getName().cStr();
    if (module.hasRequestedFile() && module.getRequestedFile().getRelativePath().size() > 0) {
      by_request_[{session, RequestKey(RootedOf(module.getRequestedFile()))}].push_back(i);
    } else if (!requested.empty()) {
      by_request_[{session, requested}].push_back(i);
    }
    if (name != requested && IsBareName(name)) by_request_[{session, name}].push_back(i);
  }
}

void ArchiveModules::OnToolchainKnown(const std::string& toolchain, const std::string&) {
  std::lock_guard lock(mutex_);
  other_toolchain_ = toolchain != toolchain_;
}

bool ArchiveModules::ServesModulesOf(const Digest& session_digest) {
  std::lock_guard lock(mutex_);
  return !other_toolchain_ && sessions_.contains(session_digest);
}

std::optional<std::string> ArchiveModules::RefuseUnservedModule(const ModuleLoadRequest& request,
                                                                const std::string& why) {
  if (!strict_) return std::nullopt;
  std::lock_guard lock(mutex_);
  misses_.push_back({fmt::format("module {}", request.Label()), why, true});
  return fmt::format(
      "spreplay: module {} is not served from {} ({}); SLANGPY_KERNELS_STRICT_MODULES forbids "
      "loading it from source",
      request.Label(), archive_.source_name(), why);
}

std::vector<MissRecord> ArchiveModules::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}

void ArchiveModules::OnModuleNotServed(const ModuleLoadRequest& request, const std::string& why) {
  std::lock_guard lock(mutex_);
  misses_.push_back({fmt::format("module {}", request.Label()), why, false});
}

std::string ArchiveModules::NoCandidate(const ModuleLoadRequest& request) const {
  const Digest& session = request.session->digest;
  if (!sessions_.contains(session)) {
    return sessions_.empty() ? "the archive holds no modules (built with --no-modules?)"
                             : "the archive holds no modules of this session configuration";
  }
  const std::string label = request.Label();
  const std::string_view stem = std::string_view(label).substr(
      0, label.ends_with(".slang") ? label.size() - 6 : label.size());
  for (const auto unserved : archive_.index().getUnservedModules()) {
    const std::string_view name = unserved.getName().cStr();
    if (DigestOf(unserved.getSessionDigest()) == session && (name == label || name == stem)) {
      return fmt::format("`spreplay compile` did not archive it: {}", unserved.getReason().cStr());
    }
  }
  return request.text ? "no module of the archive has this text (was this call site recorded?)"
                      : "the archive has no module requested by this name in this session "
                        "configuration";
}

std::string ArchiveModules::Plan(size_t position, bool requested, Planning& planning) const {
  if (planning.planned.contains(position)) return "";
  if (auto it = planning.failed.find(position); it != planning.failed.end()) return it->second;
  if (!planning.visiting.insert(position).second)
    return fmt::format("{} is damaged: its modules import each other in a cycle",
                       archive_.source_name());
  std::string why = PlanOnce(position, requested, planning);
  planning.visiting.erase(position);
  if (!why.empty()) planning.failed.emplace(position, why);
  return why;
}

std::string ArchiveModules::ImportFoundBesideItsImporter(schema::ModuleEntry::Reader module,
                                                         const Planning& planning) const {
  // Slang looks for an imported module next to the importing file before it
  // searches the search paths. Which of this module's files imports which is
  // not recorded, so a file now beside any of them, named as an imported
  // module was found below its search path, might be the one Slang imports.
  absl::flat_hash_set<std::string> directories;
  for (const auto file : module.getFiles()) {
    const std::string local = planning.Local(RootedOf(file));
    if (const size_t slash = local.rfind('/'); slash != std::string::npos && slash > 0)
      directories.insert(local.substr(0, slash));
  }
  const auto modules = archive_.index().getModules();
  for (const auto key : module.getImports()) {
    auto it = by_key_.find(DigestOf(key));
    if (it == by_key_.end()) continue;
    const RootedPath imported = RootedOf(modules[static_cast<unsigned>(it->second)].getFilePath());
    if (imported.root != PathRoot::kSearchPath) continue;
    const std::string local = planning.Local(imported);
    for (const std::string& directory : directories) {
      const std::string beside = directory + "/" + imported.relative;
      if (beside != local && IsFile(beside))
        return fmt::format("{} would now be imported from {}, ahead of {}", imported.relative,
                           beside, local);
    }
  }
  return "";
}

std::string ArchiveModules::PlanOnce(size_t position, bool requested, Planning& planning) const {
  const auto module = archive_.index().getModules()[static_cast<unsigned>(position)];
  const SessionConfig& config = planning.request.session->config;
  const std::string name = module.getName().cStr();
  const Digest content = DigestOf(module.getContentDigest());
  const bool from_string = module.getSourceLookup().size() > 0;
  if (from_string && !requested) {
    // Its text is not in the archive: the app must have loaded it already.
    if (planning.reader.string_module(module.getPath().cStr()) != content)
      return fmt::format("it imports module '{}', which this session does not hold", name);
    planning.planned.insert(position);
    return "";
  }
  // Every import is planned even after one fails: those that pass can
  // still be served while this module loads from source.
  std::string failed_import;
  for (const auto imported : module.getImports()) {
    auto it = by_key_.find(DigestOf(imported));
    std::string why = it == by_key_.end()
                          ? fmt::format("module '{}' imports a module the archive lacks", name)
                          : Plan(it->second, false, planning);
    if (failed_import.empty()) failed_import = std::move(why);
  }
  if (!failed_import.empty()) return failed_import;
  ModuleFromIr step;
  std::vector<SourceFile> dependencies;
  if (std::string why = ImportFoundBesideItsImporter(module, planning); !why.empty()) return why;
  for (const auto file : module.getFiles()) {
    const RootedPath rooted = RootedOf(file);
    const Digest recorded = DigestOf(file.getDigest());
    const std::string local = planning.Local(rooted);
    if (local.empty() && rooted.root == PathRoot::kRequestDirectory)
      return fmt::format("{} lies below the directory of another module requested by path",
                         rooted.relative);
    if (local.empty())
      return fmt::format("{} lies below a search path this session lacks", rooted.relative);
    if (rooted.root == PathRoot::kAbsolute && IsPseudoPath(local)) {
      if (planning.reader.string_module(local) != recorded)
        return fmt::format(
            "module '{}' imports a module loaded from a string that this session "
            "does not hold",
            name);
    } else {
      absl::StatusOr<FileContent> content = planning.reader.file(local);
      if (!content.ok()) return fmt::format("{}: {}", local, content.status().message());
      if (content->digest != recorded) return fmt::format("{} changed", local);
      for (const std::string& path : PathsSearchedBefore(config, rooted)) {
        if (IsFile(path))
          return fmt::format("{} would now be found at {}, ahead of {}", rooted.relative, path,
                             local);
      }
      step.files.push_back(*std::move(content));
    }
    dependencies.push_back({file.getRecordedPath().cStr(), recorded});
    step.local_dependencies.push_back({local, recorded});
  }
  // Described as recorded: its name, paths and the text slangpy generates
  // from them are the recording's, and so are the keys made from them.
  step.name = name;
  if (from_string) {
    step.path = module.getPath().cStr();
    step.description = Component::Module(name, step.path, "", std::string(*planning.request.text),
                                         std::move(dependencies));
  } else {
    step.path = planning.Local(RootedOf(module.getFilePath()));
    step.description =
        Component::Module(name, module.getFilePath().getRecordedPath().cStr(),
                          module.getRequestedName().cStr(), std::nullopt, std::move(dependencies));
  }
  if (step.description->digest != content)
    return fmt::format("module '{}' would differ from the archived one", name);
  absl::StatusOr<std::span<const std::byte>> ir = archive_.ModuleIr(position);
  if (!ir.ok()) return std::string(ir.status().message());
  step.ir = ir->data();
  step.ir_size = ir->size();
  planning.planned.insert(position);
  planning.plan.push_back(std::move(step));
  return "";
}

std::vector<ArchiveModules::Candidate> ArchiveModules::RequestedAs(
    const SessionInfo& session, const std::string& requested) const {
  std::vector<Candidate> found;
  auto add = [&](const std::string& key, const std::string& directory) {
    auto it = by_request_.find({session.digest, key});
    if (it == by_request_.end()) return;
    for (size_t position : it->second) {
      const auto module = archive_.index().getModules()[static_cast<unsigned>(position)];
      found.push_back({position, module.getRequestedFile().getRootIndex(), directory});
    }
  };
  if (!requested.starts_with('/')) {
    add(requested, "");
    return found;
  }
  add(RequestKey(RootPath(session.config, requested)), "");
  // A module the recording asked for by a path below no other root: any
  // directory of this path may be the one that request named.
  for (size_t slash = requested.rfind('/'); slash != std::string::npos && slash > 0;
       slash = requested.rfind('/', slash - 1)) {
    add(RequestKey({PathRoot::kRequestDirectory, 0, requested.substr(slash + 1)}),
        requested.substr(0, slash));
  }
  return found;
}

absl::flat_hash_map<uint32_t, std::string> ArchiveModules::RequestDirectoriesOf(
    const ModuleLoadRequest& request) const {
  std::lock_guard lock(mutex_);
  auto it = request_directories_.find(request.session.get());
  if (it == request_directories_.end() || it->second.session.lock() != request.session) return {};
  return it->second.by_index;
}

void ArchiveModules::RememberRequestDirectory(const ModuleLoadRequest& request, uint32_t index,
                                              const std::string& directory) {
  std::lock_guard lock(mutex_);
  // Sessions the app let go leave their entries behind until the next one.
  absl::erase_if(request_directories_,
                 [](const auto& entry) { return entry.second.session.expired(); });
  RequestDirectories& known = request_directories_[request.session.get()];
  if (known.session.lock() != request.session) known = {request.session, {}};
  known.by_index[index] = directory;
}

std::vector<ModuleFromIr> ArchiveModules::ServableImports(const ModuleLoadRequest& request,
                                                          const ModuleFileReader& reader) const {
  Planning planning{request, reader, {}, {}, {}, {}, 0, {}, RequestDirectoriesOf(request)};
  for (const std::string& imported : ImportedModuleNames(*request.text)) {
    for (const Candidate& candidate : RequestedAs(*request.session, imported)) {
      if (Plan(candidate.position, false, planning).empty()) break;
    }
  }
  return std::move(planning.plan);
}

ModuleDecision ArchiveModules::DecideModule(const ModuleLoadRequest& request,
                                            const ModuleFileReader& reader,
                                            std::vector<ModuleFromIr>* plan, std::string* why) {
  if (!request.session) return ModuleDecision::kPass;
  auto miss = [&](std::string reason) {
    if (std::optional<std::string> refusal = RefuseUnservedModule(request, reason)) {
      *why = *std::move(refusal);
      return ModuleDecision::kRefuse;
    }
    *why = std::move(reason);
    return ModuleDecision::kPass;
  };
  // An archive without modules (compiled with --no-modules) has nothing to
  // say about them, unless strict mode asks for every one.
  if (sessions_.empty() && !strict_) return ModuleDecision::kPass;
  if (request.toolchain != toolchain_)
    return miss(fmt::format("the archive was built for {}", toolchain_));
  std::vector<Candidate> candidates;
  if (request.text) {
    const Digest lookup = SourceModuleLookup(request.toolchain, request.session->digest,
                                             request.name, request.path, *request.text);
    if (auto it = by_source_.find(lookup); it != by_source_.end()) {
      for (size_t position : it->second) candidates.push_back({position, 0, ""});
    }
  } else {
    candidates = RequestedAs(*request.session, request.requested_name);
  }
  if (candidates.empty()) {
    // A call site the recording never saw: its wrapper compiles, but the
    // modules it imports (slangpy's library above all) need not.
    if (request.text && !strict_) *plan = ServableImports(request, reader);
    return miss(NoCandidate(request));
  }
  std::string first_reason;
  std::vector<ModuleFromIr> imports_that_pass;
  const absl::flat_hash_map<uint32_t, std::string> earlier = RequestDirectoriesOf(request);
  for (const Candidate& candidate : candidates) {
    Planning planning{request, reader, {}, {}, {}, {}, 0, {}, earlier};
    planning.request_index = candidate.request_index;
    planning.request_directory = candidate.request_directory;
    std::string reason = Plan(candidate.position, true, planning);
    if (reason.empty()) {
      if (!candidate.request_directory.empty())
        RememberRequestDirectory(request, candidate.request_index, candidate.request_directory);
      *plan = std::move(planning.plan);
      return ModuleDecision::kServe;
    }
    if (first_reason.empty()) {
      first_reason = std::move(reason);
      imports_that_pass = std::move(planning.plan);
    }
  }
  // Each module planned before the failure passed with all its imports:
  // those still spare the front end (slangpy's library, when an app module
  // was edited).
  if (!strict_) *plan = std::move(imports_that_pass);
  return miss(std::move(first_reason));
}

}  // namespace spreplay

#include "recorder/trace_reader.h"

#include <capnp/serialize.h>

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/fmt_absl.h"
#include "fmt/format.h"
#include "recorder/record_encoding.h"

namespace spreplay {

struct Trace::Contents {
  std::string name;
  std::vector<TraceLog> logs;  // own the bytes every reader below points into
  std::vector<std::unique_ptr<capnp::FlatArrayMessageReader>> messages;
  std::vector<trace_schema::Process::Reader> processes;
  std::vector<trace_schema::Device::Reader> devices;
  std::vector<trace_schema::CallSite::Reader> call_sites;
  std::vector<KernelRecord> kernels;
  std::vector<ModuleLoadRecord> module_loads;
  absl::flat_hash_map<Digest, trace_schema::Component::Reader> component_records;
  // Every module from a string, by digest and name: the component record of a
  // digest holds one name, its moduleVariant records (and component records
  // other processes wrote) the others.
  absl::flat_hash_map<std::pair<Digest, std::string>, trace_schema::Component::Reader>
      string_module_records;
  absl::flat_hash_map<Digest, trace_schema::Session::Reader> session_records;
  absl::flat_hash_map<Digest, std::string_view> sources;
  std::vector<Damage> damage;
  uint64_t unknown_records = 0;
  uint64_t undecodable_records = 0;
  uint64_t record_count = 0;
  uint64_t byte_size = 0;
  mutable std::mutex memo_mutex;
  mutable absl::flat_hash_map<Digest, ComponentPtr> components;

  absl::flat_hash_set<std::string> call_site_ids;
  absl::flat_hash_map<std::string, std::vector<size_t>> call_sites_by_wrapper;
  absl::flat_hash_set<Digest> kernel_keys;
  absl::flat_hash_set<std::tuple<Digest, Digest, std::string>> module_load_ids;
  absl::flat_hash_set<std::string> process_ids;

  void Index(trace_schema::TraceRecord::Reader record);
  void AddLog(TraceLog log);
};

namespace {

std::string_view ViewOf(capnp::Data::Reader data) {
  return std::string_view(reinterpret_cast<const char*>(data.begin()), data.size());
}

}  // namespace

void Trace::Contents::Index(trace_schema::TraceRecord::Reader record) {
  switch (record.which()) {
    case trace_schema::TraceRecord::PROCESS: {
      // A process announces itself once per Slang global session it creates (older
      // recorders), and merged traces repeat records: one entry per process.
      auto process = record.getProcess();
      if (process_ids
              .insert(fmt::format("{}/{}/{}", process.getProcessId(), process.getStartedAtUnixMs(),
                                  process.getToolchain().cStr()))
              .second)
        processes.push_back(process);
      return;
    }
    case trace_schema::TraceRecord::DEVICE:
      devices.push_back(record.getDevice());
      return;
    case trace_schema::TraceRecord::SESSION: {
      // Traces from before locationDigest existed name sessions by content.
      auto session = record.getSession();
      absl::StatusOr<Digest> digest = DigestFromData(
          session.hasLocationDigest() ? session.getLocationDigest() : session.getDigest());
      if (!digest.ok()) break;
      session_records.try_emplace(*digest, record.getSession());
      return;
    }
    case trace_schema::TraceRecord::SOURCE_FILE: {
      auto file = record.getSourceFile();
      absl::StatusOr<Digest> digest = DigestFromData(file.getDigest());
      if (!digest.ok()) break;
      // Checked here, once: every later use trusts the bytes by digest.
      if (Sha256Of(ViewOf(file.getBytes())) != *digest) break;
      sources.try_emplace(*digest, ViewOf(file.getBytes()));
      return;
    }
    case trace_schema::TraceRecord::COMPONENT: {
      auto component = record.getComponent();
      absl::StatusOr<Digest> digest = DigestFromData(component.getDigest());
      if (!digest.ok()) break;
      component_records.try_emplace(*digest, component);
      if (component.getKind() == trace_schema::Component::Kind::MODULE && component.getHasSource())
        string_module_records.try_emplace({*digest, component.getName().cStr()}, component);
      return;
    }
    case trace_schema::TraceRecord::MODULE_VARIANT: {
      auto component = record.getModuleVariant();
      absl::StatusOr<Digest> digest = DigestFromData(component.getDigest());
      if (!digest.ok() || component.getKind() != trace_schema::Component::Kind::MODULE ||
          !component.getHasSource())
        break;
      string_module_records.try_emplace({*digest, component.getName().cStr()}, component);
      return;
    }
    case trace_schema::TraceRecord::KERNEL: {
      auto kernel = record.getKernel();
      absl::StatusOr<Digest> key = DigestFromData(kernel.getKey());
      absl::StatusOr<Digest> session = DigestFromData(kernel.getSessionDigest());
      absl::StatusOr<Digest> session_location =
          DigestFromData(kernel.hasSessionLocationDigest() ? kernel.getSessionLocationDigest()
                                                           : kernel.getSessionDigest());
      absl::StatusOr<Digest> program = DigestFromData(kernel.getProgramDigest());
      if (!key.ok() || !session.ok() || !session_location.ok() || !program.ok()) break;
      if (!kernel_keys.insert(*key).second) return;
      KernelRecord entry{*key,
                         *session,
                         *session_location,
                         *program,
                         kernel.getEntryPointIndex(),
                         kernel.getTargetIndex(),
                         ViewOf(kernel.getCode()),
                         kernel.getCompileSeconds(),
                         {},
                         kernel.getEntryPointName(),
                         kernel.getToolchain()};
      for (auto name : kernel.getModuleNames()) entry.module_names.emplace_back(name);
      kernels.push_back(std::move(entry));
      return;
    }
    case trace_schema::TraceRecord::MODULE_LOAD: {
      auto load = record.getModuleLoad();
      absl::StatusOr<Digest> session = DigestFromData(load.getSessionDigest());
      absl::StatusOr<Digest> session_location = DigestFromData(load.getSessionLocationDigest());
      absl::StatusOr<Digest> module = DigestFromData(load.getModuleDigest());
      if (!session.ok() || !session_location.ok() || !module.ok()) break;
      if (!module_load_ids.emplace(*session_location, *module, load.getName().cStr()).second)
        return;
      module_loads.push_back({*session, *session_location, *module, load.getName(),
                              load.getToolchain(), load.getLoadSeconds()});
      return;
    }
    case trace_schema::TraceRecord::CALL_SITE: {
      auto call_site = record.getCallSite();
      std::string id =
          fmt::format("{}/{}", call_site.getSlangpyHash().cStr(), int(call_site.getKind()));
      if (call_site_ids.insert(std::move(id)).second) {
        call_sites_by_wrapper[std::string(call_site.getSlangpyHash().cStr())].push_back(
            call_sites.size());
        call_sites.push_back(call_site);
      }
      return;
    }
    default:
      ++unknown_records;
      return;
  }
  ++undecodable_records;
}

void Trace::Contents::AddLog(TraceLog log) {
  byte_size += log.bytes.size();
  for (const Damage& region : log.damage) damage.push_back(region);
  for (std::span<const std::byte> frame : log.frames) {
    ++record_count;
    try {
      auto words = kj::arrayPtr(reinterpret_cast<const capnp::word*>(frame.data()),
                                frame.size() / sizeof(capnp::word));
      // The limit guards against amplification (many pointers to one
      // object); records are read a bounded number of times each.
      capnp::ReaderOptions options;
      options.traversalLimitInWords = std::max<uint64_t>(words.size() * 64, uint64_t{1} << 20);
      auto message = std::make_unique<capnp::FlatArrayMessageReader>(words, options);
      Index(message->getRoot<trace_schema::TraceRecord>());
      messages.push_back(std::move(message));
    } catch (const kj::Exception&) {
      ++undecodable_records;
    }
  }
  logs.push_back(std::move(log));
}

std::string KernelLabel(const Trace& trace, const KernelRecord& kernel) {
  const std::vector<trace_schema::CallSite::Reader> call_sites = trace.CallSitesOf(kernel);
  if (call_sites.empty())
    return fmt::format("kernel {} ({})", kernel.key.ToHex().substr(0, 16), kernel.entry_point_name);
  return fmt::format("{}.{} ({})", call_sites.front().getModule().cStr(),
                     call_sites.front().getFunction().cStr(),
                     CallKindName(call_sites.front().getKind()));
}

std::string CallKindName(trace_schema::CallSite::Kind kind) {
  switch (kind) {
    case trace_schema::CallSite::Kind::CALL:
      return "call";
    case trace_schema::CallSite::Kind::BACKWARD_CALL:
      return "bwds";
    case trace_schema::CallSite::Kind::RAW_DISPATCH:
      return "dispatch";
    case trace_schema::CallSite::Kind::RAY_TRACING:
      return "raytracing";
  }
  return "?";
}

Trace::Trace(std::unique_ptr<Contents> contents) : contents_(std::move(contents)) {}
Trace::Trace(Trace&&) noexcept = default;
Trace& Trace::operator=(Trace&&) noexcept = default;
Trace::~Trace() = default;

absl::StatusOr<Trace> Trace::Read(const std::string& path) { return ReadAll({path}); }

absl::StatusOr<Trace> Trace::ReadAll(const std::vector<std::string>& paths) {
  auto contents = std::make_unique<Contents>();
  for (const std::string& path : paths) {
    absl::StatusOr<TraceLog> log = ReadTraceLog(path);
    if (!log.ok()) return log.status();
    contents->AddLog(*std::move(log));
    contents->name += (contents->name.empty() ? "" : ", ") + path;
  }
  return Trace(std::move(contents));
}

const std::string& Trace::name() const { return contents_->name; }
const std::vector<trace_schema::Process::Reader>& Trace::processes() const {
  return contents_->processes;
}
const std::vector<trace_schema::Device::Reader>& Trace::devices() const {
  return contents_->devices;
}
const std::vector<trace_schema::CallSite::Reader>& Trace::call_sites() const {
  return contents_->call_sites;
}
const std::vector<KernelRecord>& Trace::kernels() const { return contents_->kernels; }
const std::vector<ModuleLoadRecord>& Trace::module_loads() const { return contents_->module_loads; }
const std::vector<Damage>& Trace::damage() const { return contents_->damage; }
uint64_t Trace::unknown_records() const { return contents_->unknown_records; }
uint64_t Trace::undecodable_records() const { return contents_->undecodable_records; }
uint64_t Trace::record_count() const { return contents_->record_count; }
uint64_t Trace::byte_size() const { return contents_->byte_size; }

std::vector<trace_schema::CallSite::Reader> Trace::CallSitesOf(const KernelRecord& kernel) const {
  std::vector<trace_schema::CallSite::Reader> matches;
  for (const std::string& module : kernel.module_names) {
    auto it = contents_->call_sites_by_wrapper.find(module);
    if (it == contents_->call_sites_by_wrapper.end()) continue;
    for (size_t index : it->second) matches.push_back(contents_->call_sites[index]);
  }
  return matches;
}

absl::StatusOr<ComponentPtr> Trace::FindComponent(const Digest& digest) const {
  {
    std::lock_guard lock(contents_->memo_mutex);
    if (auto it = contents_->components.find(digest); it != contents_->components.end())
      return it->second;
  }
  auto record = contents_->component_records.find(digest);
  if (record == contents_->component_records.end()) {
    return absl::NotFoundError(fmt::format(
        "component {} is not in the trace (the recording process may have been killed first)",
        digest.ToHex().substr(0, 16)));
  }
  absl::StatusOr<ComponentPtr> component =
      DecodeComponent(record->second, [this](const Digest& child) { return FindComponent(child); });
  if (!component.ok()) return component.status();
  std::lock_guard lock(contents_->memo_mutex);
  contents_->components.try_emplace(digest, *component);
  return *component;
}

absl::StatusOr<ComponentPtr> Trace::FindStringModule(const Digest& digest,
                                                     const std::string& name) const {
  auto record = contents_->string_module_records.find({digest, name});
  if (record == contents_->string_module_records.end())
    return absl::NotFoundError(fmt::format("the trace has no module '{}' of digest {}", name,
                                           digest.ToHex().substr(0, 16)));
  // Checked against its digest, like every component.
  return DecodeComponent(record->second,
                         [this](const Digest& child) { return FindComponent(child); });
}

namespace {

// `node` with each module from a string under the name `names` gives it, in
// the order the recorder listed them (CollectModuleNames: pre-order).
ComponentPtr WithRecordedNames(const Trace& trace, const ComponentPtr& node,
                               const std::vector<std::string>& names, size_t& next) {
  if (node->kind == Component::Kind::kModule) {
    const size_t at = next++;
    if (!node->source || at >= names.size() || names[at] == node->name) return node;
    absl::StatusOr<ComponentPtr> named = trace.FindStringModule(node->digest, names[at]);
    return named.ok() ? *named : node;
  }
  std::vector<ComponentPtr> children;
  bool renamed = false;
  for (const ComponentPtr& child : node->children) {
    children.push_back(WithRecordedNames(trace, child, names, next));
    renamed = renamed || children.back() != child;
  }
  if (!renamed) return node;
  ComponentPtr rebuilt = WithChildren(*node, std::move(children));
  // The digests leave derived names out: the program is the same one.
  return rebuilt->digest == node->digest ? rebuilt : node;
}

size_t ModuleCount(const ComponentPtr& node) {
  size_t count = node->kind == Component::Kind::kModule ? 1 : 0;
  for (const ComponentPtr& child : node->children) count += ModuleCount(child);
  return count;
}

}  // namespace

absl::StatusOr<ComponentPtr> Trace::ProgramOf(const KernelRecord& kernel) const {
  absl::StatusOr<ComponentPtr> program = FindComponent(kernel.program);
  if (!program.ok() || ModuleCount(*program) != kernel.module_names.size()) return program;
  size_t next = 0;
  return WithRecordedNames(*this, *program, kernel.module_names, next);
}

absl::StatusOr<ComponentPtr> Trace::ModuleOf(const ModuleLoadRecord& load) const {
  absl::StatusOr<ComponentPtr> module = FindComponent(load.module);
  if (!module.ok() || (*module)->kind != Component::Kind::kModule)
    return module.ok() ? absl::InvalidArgumentError(fmt::format("component {} is not a module",
                                                                load.module.ToHex().substr(0, 16)))
                       : module.status();
  if (!(*module)->source || (*module)->name == load.name) return module;
  return FindStringModule(load.module, load.name);
}

absl::StatusOr<SessionConfig> Trace::FindSession(const Digest& digest) const {
  auto record = contents_->session_records.find(digest);
  if (record == contents_->session_records.end())
    return absl::NotFoundError(
        fmt::format("session {} is not in the trace", digest.ToHex().substr(0, 16)));
  return DecodeSession(record->second);
}

const std::string_view* Trace::FindSource(const Digest& digest) const {
  auto it = contents_->sources.find(digest);
  return it == contents_->sources.end() ? nullptr : &it->second;
}

}  // namespace spreplay

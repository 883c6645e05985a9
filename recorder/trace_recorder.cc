#include "recorder/trace_recorder.h"

#include <capnp/compat/json.h>
#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstdio>

#include "common/fmt_absl.h"
#include "common/stderr_line.h"
#include "fmt/format.h"
#include "recorder/record_encoding.h"
#include "schema/trace.capnp.h"

namespace spreplay {
namespace {

// Kernel records name the modules of their program, so that readers can join
// them to slangpy's call sites, which know the wrapper module's name.
void CollectModuleNames(const ComponentPtr& component, std::vector<std::string>& names) {
  if (component->kind == Component::Kind::kModule) names.push_back(component->name);
  for (const ComponentPtr& child : component->children) CollectModuleNames(child, names);
}

std::string EntryPointName(const ComponentPtr& component) {
  if (component->kind == Component::Kind::kEntryPoint ||
      component->kind == Component::Kind::kRenamed)
    return component->name;
  for (const ComponentPtr& child : component->children) {
    if (std::string name = EntryPointName(child); !name.empty()) return name;
  }
  return "";
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceRecorder>> TraceRecorder::Open(const std::string& path,
                                                                   std::string process_json) {
  absl::StatusOr<TraceLogWriter> writer = TraceLogWriter::Open(path);
  if (!writer.ok()) return writer.status();
  return std::unique_ptr<TraceRecorder>(
      new TraceRecorder(*std::move(writer), std::move(process_json)));
}

TraceRecorder::TraceRecorder(TraceLogWriter writer, std::string process_json)
    : writer_(std::move(writer)), process_json_(std::move(process_json)) {}

void TraceRecorder::Report(const absl::Status& status) {
  if (failed_) return;
  failed_ = true;
  PrintLineToStderr(
      fmt::format("spreplay: recording to {} failed: {}; the app continues, unrecorded from here",
                  writer_.path(), status));
}

void TraceRecorder::Append(capnp::MessageBuilder& message) {
  if (failed_) return;
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
  absl::Status status =
      writer_.Append(std::span(reinterpret_cast<const std::byte*>(bytes.begin()), bytes.size()));
  if (!status.ok()) Report(status);
}

void TraceRecorder::OnToolchainKnown(const std::string& toolchain,
                                     const std::string& slang_build_tag) {
  std::lock_guard lock(mutex_);
  if (!announced_.insert(toolchain).second) return;
  capnp::MallocMessageBuilder message;
  auto process = message.initRoot<trace_schema::TraceRecord>().initProcess();
  if (!process_json_.empty()) {
    try {
      capnp::JsonCodec codec;
      codec.decode(kj::StringPtr(process_json_.c_str()), process);
    } catch (const kj::Exception& error) {
      return Report(absl::InvalidArgumentError(
          fmt::format("bad process description: {}", error.getDescription().cStr())));
    }
  }
  process.setSlangBuildTag(slang_build_tag);
  process.setToolchain(toolchain);
  Append(message);
}

void TraceRecorder::OnSessionCreated(const SessionInfo& session) {
  std::lock_guard lock(mutex_);
  if (!written_.insert(session.location_digest).second) return;
  capnp::MallocMessageBuilder message;
  EncodeSession(session.config, message.initRoot<trace_schema::TraceRecord>().initSession());
  Append(message);
}

void TraceRecorder::OnModuleLoaded(const ComponentPtr& module,
                                   const std::vector<FileContent>& files) {
  std::lock_guard lock(mutex_);
  for (const FileContent& file : files) {
    if (!written_.insert(file.digest).second) continue;
    capnp::MallocMessageBuilder message;
    auto record = message.initRoot<trace_schema::TraceRecord>().initSourceFile();
    record.setDigest(DataOf(file.digest));
    record.setBytes(capnp::Data::Reader(reinterpret_cast<const kj::byte*>(file.bytes->data()),
                                        file.bytes->size()));
    Append(message);
  }
  WriteComponentTree(module);
}

void TraceRecorder::OnModuleRequested(const SessionInfo& session, const std::string& toolchain,
                                      const ComponentPtr& module, double load_seconds) {
  if (!module->keyable) return;
  std::lock_guard lock(mutex_);
  if (!written_loads_.emplace(session.location_digest, module->digest, module->name).second) return;
  // Written after the module's own records, which a reader needs to use it.
  WriteComponentTree(module);
  capnp::MallocMessageBuilder message;
  auto load = message.initRoot<trace_schema::TraceRecord>().initModuleLoad();
  load.setSessionDigest(DataOf(session.digest));
  load.setSessionLocationDigest(DataOf(session.location_digest));
  load.setModuleDigest(DataOf(module->digest));
  load.setName(module->name);
  load.setToolchain(toolchain);
  load.setLoadSeconds(load_seconds);
  Append(message);
}

void TraceRecorder::WriteComponentTree(const ComponentPtr& component) {
  if (!component->keyable) return;
  const bool string_module = component->kind == Component::Kind::kModule && component->source;
  if (written_.contains(component->digest)) {
    // The same content under another name: a wrapper whose name slangpy
    // derived from more than its text. The compile must load it under this
    // name, the one the app will ask for.
    if (string_module && written_modules_.emplace(component->digest, component->name).second) {
      capnp::MallocMessageBuilder message;
      EncodeComponent(*component,
                      message.initRoot<trace_schema::TraceRecord>().initModuleVariant());
      Append(message);
    }
    return;
  }
  for (const ComponentPtr& child : component->children) WriteComponentTree(child);
  written_.insert(component->digest);
  if (string_module) written_modules_.emplace(component->digest, component->name);
  capnp::MallocMessageBuilder message;
  EncodeComponent(*component, message.initRoot<trace_schema::TraceRecord>().initComponent());
  Append(message);
}

void TraceRecorder::OnKernelCompiled(const KernelRequest& request, const void* code, size_t size,
                                     double seconds) {
  if (!request.session || !request.program->keyable) return;
  std::lock_guard lock(mutex_);
  WriteComponentTree(request.program);
  capnp::MallocMessageBuilder message;
  auto kernel = message.initRoot<trace_schema::TraceRecord>().initKernel();
  kernel.setKey(DataOf(request.key));
  kernel.setSessionDigest(DataOf(request.session->digest));
  kernel.setSessionLocationDigest(DataOf(request.session->location_digest));
  kernel.setProgramDigest(DataOf(request.program->digest));
  kernel.setEntryPointIndex(request.entry_point_index);
  kernel.setTargetIndex(request.target_index);
  kernel.setCode(capnp::Data::Reader(static_cast<const kj::byte*>(code), size));
  kernel.setCompileSeconds(seconds);
  std::vector<std::string> names;
  CollectModuleNames(request.program, names);
  auto list = kernel.initModuleNames(names.size());
  for (size_t i = 0; i < names.size(); ++i) list.set(i, names[i]);
  kernel.setEntryPointName(EntryPointName(request.program));
  kernel.setToolchain(request.toolchain);
  Append(message);
}

absl::Status TraceRecorder::RecordJson(std::string_view record_kind, std::string_view json) {
  std::lock_guard lock(mutex_);
  capnp::MallocMessageBuilder message;
  auto record = message.initRoot<trace_schema::TraceRecord>();
  try {
    capnp::JsonCodec codec;
    std::string text(json);
    if (record_kind == "callSite") {
      codec.decode(kj::StringPtr(text.c_str()), record.initCallSite());
    } else if (record_kind == "device") {
      codec.decode(kj::StringPtr(text.c_str()), record.initDevice());
    } else {
      return absl::InvalidArgumentError(fmt::format("unknown record kind '{}'", record_kind));
    }
  } catch (const kj::Exception& error) {
    return absl::InvalidArgumentError(
        fmt::format("cannot encode {} record: {}", record_kind, error.getDescription().cStr()));
  }
  Append(message);
  return failed_ ? absl::UnavailableError("the trace is not being written") : absl::OkStatus();
}

}  // namespace spreplay

#include "recorder/trace_merge.h"

#include <capnp/serialize.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "absl/container/flat_hash_set.h"
#include "common/capnp_digest.h"
#include "common/fmt_absl.h"
#include "common/sha256.h"
#include "fmt/format.h"
#include "recorder/trace_log.h"
#include "schema/trace.capnp.h"

namespace spreplay {
namespace {

// What makes two records the same: content-addressed records by their bytes,
// kernels by key and module loads by what was loaded where (their times
// differ), call sites by identity.
std::string IdentityOf(std::span<const std::byte> frame) {
  try {
    auto words = kj::arrayPtr(reinterpret_cast<const capnp::word*>(frame.data()),
                              frame.size() / sizeof(capnp::word));
    capnp::FlatArrayMessageReader message(words);
    auto record = message.getRoot<trace_schema::TraceRecord>();
    if (record.isKernel()) {
      auto key = record.getKernel().getKey();
      return "kernel:" + std::string(reinterpret_cast<const char*>(key.begin()), key.size());
    }
    if (record.isModuleLoad()) {
      auto load = record.getModuleLoad();
      return fmt::format("module-load:{}:{}:{}", HexOf(load.getSessionLocationDigest()),
                         HexOf(load.getModuleDigest()), load.getName().cStr());
    }
    if (record.isCallSite()) {
      auto call_site = record.getCallSite();
      return fmt::format("call-site:{}:{}", call_site.getSlangpyHash().cStr(),
                         int(call_site.getKind()));
    }
  } catch (const kj::Exception&) {
    // Undecodable here: kept as bytes; readers will report it.
  }
  const Digest digest = Sha256Of(frame);
  return "bytes:" +
         std::string(reinterpret_cast<const char*>(digest.bytes.data()), digest.bytes.size());
}

}  // namespace

absl::StatusOr<MergeSummary> MergeTraces(const std::vector<std::string>& inputs,
                                         const std::string& output) {
  // One input in memory at a time: inputs carry every PTX and source file,
  // and only the identities seen so far must outlive an input.
  const std::string temporary =
      fmt::format("{}.merge-{}-{}", output, getpid(), std::random_device{}());
  MergeSummary summary;
  absl::Status status = [&]() -> absl::Status {
    absl::StatusOr<TraceLogWriter> writer = TraceLogWriter::Open(temporary);
    if (!writer.ok()) return writer.status();
    absl::flat_hash_set<std::string> seen;
    for (const std::string& input : inputs) {
      absl::StatusOr<TraceLog> log = ReadTraceLog(input);
      if (!log.ok()) return log.status();
      summary.damaged_regions += log->damage.size();
      for (std::span<const std::byte> frame : log->frames) {
        ++summary.records_read;
        if (!seen.insert(IdentityOf(frame)).second) continue;
        if (absl::Status appended = writer->Append(frame); !appended.ok()) return appended;
        ++summary.records_written;
      }
    }
    return writer->Sync();
  }();
  if (status.ok()) {
    std::error_code error;
    std::filesystem::rename(temporary, output, error);
    if (error)
      status = absl::InternalError(fmt::format("cannot write {}: {}", output, error.message()));
  }
  if (!status.ok()) {
    std::remove(temporary.c_str());
    return status;
  }
  return summary;
}

}  // namespace spreplay

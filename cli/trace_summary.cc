#include "cli/trace_summary.h"

#include <capnp/compat/json.h>

#include <algorithm>

#include "archive/json_writer.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

std::string Bytes(uint64_t size) {
  if (size < 1024) return fmt::format("{} B", size);
  if (size < 1024 * 1024) return fmt::format("{:.1f} KB", size / 1024.0);
  return fmt::format("{:.1f} MB", size / (1024.0 * 1024.0));
}

std::string Signature(trace_schema::CallSite::Reader call_site) {
  std::string text;
  for (auto argument : call_site.getArguments()) {
    if (!text.empty()) text += ", ";
    // The Slang type when slangpy resolved one, else the vectorized type,
    // else what Python passed (raw dispatch arguments have no Slang side).
    std::string type = argument.getSlangType();
    if (type.empty()) type = argument.getVectorType();
    if (type.empty()) type = argument.getPythonType();
    text += fmt::format("{}: {}", argument.getName().cStr(), type);
    if (argument.getDimensionality() > 0)
      text += fmt::format("[{}d]", argument.getDimensionality());
  }
  return text;
}

std::string Clip(std::string text, size_t width) {
  if (text.size() <= width) return text;
  return text.substr(0, width - 1) + "~";
}

}  // namespace

std::string DescribeTrace(const Trace& trace) {
  std::string out = fmt::format(
      "trace {}: {} records, {}, {} process(es), {} device(s), {} call site(s), {} kernel(s)\n",
      trace.name(), trace.record_count(), Bytes(trace.byte_size()), trace.processes().size(),
      trace.devices().size(), trace.call_sites().size(), trace.kernels().size());
  for (auto process : trace.processes()) {
    out += fmt::format("  process {}: {} (slangpy {}, {}, python {})\n", process.getProcessId(),
                       process.getToolchain().cStr(), process.getSlangpyVersion().cStr(),
                       process.getPlatform().cStr(), process.getPythonVersion().cStr());
  }
  for (auto device : trace.devices()) {
    out += fmt::format("  device: {} {}\n", device.getType().cStr(), device.getName().cStr());
  }
  if (!trace.damage().empty()) {
    out += fmt::format("  damage: {} region(s); first at offset {}: {}\n", trace.damage().size(),
                       trace.damage()[0].offset, trace.damage()[0].reason);
  }
  if (trace.unknown_records() || trace.undecodable_records()) {
    out += fmt::format(
        "  skipped: {} record(s) of kinds this spreplay does not know, {} undecodable\n",
        trace.unknown_records(), trace.undecodable_records());
  }

  out += fmt::format("\n{:<16}  {:<10}  {:<12}  {:<24}  {:<9}  {:>9}  {:>9}  {}\n", "KERNEL",
                     "KIND", "MODULE", "FUNCTION", "COMPILE", "WRAPPER", "PTX", "SIGNATURE");
  for (const KernelRecord& kernel : trace.kernels()) {
    std::vector<trace_schema::CallSite::Reader> call_sites = trace.CallSitesOf(kernel);
    uint64_t wrapper_size = 0;
    if (absl::StatusOr<ComponentPtr> program = trace.FindComponent(kernel.program); program.ok()) {
      ForEachDistinctNode(*program, [&](const Component& node) {
        if (node.kind == Component::Kind::kModule && node.source)
          wrapper_size += node.source->size();
      });
    }
    const std::string kind = call_sites.empty() ? "-" : CallKindName(call_sites[0].getKind());
    const std::string module = call_sites.empty() ? "-" : call_sites[0].getModule().cStr();
    const std::string function =
        call_sites.empty() ? kernel.entry_point_name : call_sites[0].getFunction().cStr();
    out += fmt::format("{:<16}  {:<10}  {:<12}  {:<24}  {:>7.2f} s  {:>9}  {:>9}  {}\n",
                       kernel.key.ToHex().substr(0, 16), kind, Clip(module, 12), Clip(function, 24),
                       kernel.compile_seconds, Bytes(wrapper_size), Bytes(kernel.code.size()),
                       call_sites.empty() ? "" : Signature(call_sites[0]));
  }
  size_t without_kernel = 0;
  for (auto call_site : trace.call_sites()) {
    bool found = std::any_of(
        trace.kernels().begin(), trace.kernels().end(), [&](const KernelRecord& kernel) {
          return std::find(kernel.module_names.begin(), kernel.module_names.end(),
                           std::string(call_site.getSlangpyHash().cStr())) !=
                 kernel.module_names.end();
        });
    if (found) continue;
    if (without_kernel++ == 0)
      out += "\ncall sites without a recorded kernel (not compiled by Slang on this device):\n";
    out += fmt::format("  {:<16}  {:<10}  {:<12}  {:<24}  {}\n",
                       std::string(call_site.getSlangpyHash().cStr()).substr(0, 16),
                       CallKindName(call_site.getKind()), Clip(call_site.getModule().cStr(), 12),
                       Clip(call_site.getFunction().cStr(), 24), Signature(call_site));
  }
  return out;
}

std::string DescribeTraceJson(const Trace& trace) {
  capnp::JsonCodec codec;
  auto encode = [&codec](auto reader) { return std::string(codec.encode(reader).cStr()); };
  JsonWriter json(2);
  json.BeginObject();
  json.Key("trace").String(trace.name());
  json.Key("records").Uint(trace.record_count());
  json.Key("bytes").Uint(trace.byte_size());
  json.Key("unknownRecords").Uint(trace.unknown_records());
  json.Key("undecodableRecords").Uint(trace.undecodable_records());
  json.Key("damage").BeginArray();
  for (const Damage& region : trace.damage()) {
    json.BeginObject().Key("offset").Uint(region.offset).Key("length").Uint(region.length);
    json.Key("reason").String(region.reason).EndObject();
  }
  json.EndArray();
  json.Key("processes").BeginArray();
  for (auto process : trace.processes()) json.Raw(encode(process));
  json.EndArray();
  json.Key("devices").BeginArray();
  for (auto device : trace.devices()) json.Raw(encode(device));
  json.EndArray();
  json.Key("callSites").BeginArray();
  for (auto call_site : trace.call_sites()) json.Raw(encode(call_site));
  json.EndArray();
  json.Key("kernels").BeginArray();
  for (const KernelRecord& kernel : trace.kernels()) {
    json.BeginObject();
    json.Key("key").String(kernel.key.ToHex());
    json.Key("session").String(kernel.session.ToHex());
    json.Key("program").String(kernel.program.ToHex());
    json.Key("entryPoint").String(kernel.entry_point_name);
    json.Key("entryPointIndex").Int(kernel.entry_point_index);
    json.Key("targetIndex").Int(kernel.target_index);
    json.Key("toolchain").String(kernel.toolchain);
    json.Key("codeBytes").Uint(kernel.code.size());
    json.Key("compileSeconds").Double(kernel.compile_seconds);
    json.Key("moduleNames").BeginArray();
    for (const std::string& name : kernel.module_names) json.String(name);
    json.EndArray();
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  return json.text() + "\n";
}

}  // namespace spreplay

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
  if (!trace.module_loads().empty()) {
    double seconds = 0;
    for (const ModuleLoadRecord& load : trace.module_loads()) seconds += load.load_seconds;
    out += fmt::format("  module loads: {}, {}\n", trace.module_loads().size(),
                       seconds > 0 ? fmt::format("{:.2f} s in the app", seconds)
                                   : std::string("not timed (recorded before load times were)"));
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

  struct KernelRow {
    std::string key, kind, module, function, signature;
    double compile_seconds = 0;
    uint64_t wrapper_size = 0, code_size = 0;
  };
  std::vector<KernelRow> rows;
  for (const KernelRecord& kernel : trace.kernels()) {
    std::vector<trace_schema::CallSite::Reader> call_sites = trace.CallSitesOf(kernel);
    KernelRow row;
    if (absl::StatusOr<ComponentPtr> program = trace.FindComponent(kernel.program); program.ok()) {
      ForEachDistinctNode(*program, [&](const Component& node) {
        if (node.kind == Component::Kind::kModule && node.source)
          row.wrapper_size += node.source->size();
      });
    }
    row.key = kernel.key.ToHex().substr(0, 16);
    row.kind = call_sites.empty() ? "-" : CallKindName(call_sites[0].getKind());
    row.module = call_sites.empty() ? "-" : call_sites[0].getModule().cStr();
    row.function =
        call_sites.empty() ? kernel.entry_point_name : call_sites[0].getFunction().cStr();
    row.signature = call_sites.empty() ? "" : Signature(call_sites[0]);
    row.compile_seconds = kernel.compile_seconds;
    row.code_size = kernel.code.size();
    rows.push_back(std::move(row));
  }
  std::vector<trace_schema::CallSite::Reader> without_kernel;
  for (auto call_site : trace.call_sites()) {
    bool found = std::any_of(
        trace.kernels().begin(), trace.kernels().end(), [&](const KernelRecord& kernel) {
          return std::find(kernel.module_names.begin(), kernel.module_names.end(),
                           std::string(call_site.getSlangpyHash().cStr())) !=
                 kernel.module_names.end();
        });
    if (!found) without_kernel.push_back(call_site);
  }
  // Columns as wide as their longest value: a module is named by its full path.
  size_t module_width = std::string_view("MODULE").size();
  size_t function_width = std::string_view("FUNCTION").size();
  for (const KernelRow& row : rows) {
    module_width = std::max(module_width, row.module.size());
    function_width = std::max(function_width, row.function.size());
  }
  for (auto call_site : without_kernel) {
    module_width = std::max<size_t>(module_width, call_site.getModule().size());
    function_width = std::max<size_t>(function_width, call_site.getFunction().size());
  }

  out += fmt::format("\n{:<16}  {:<10}  {:<{}}  {:<{}}  {:<9}  {:>9}  {:>9}  {}\n", "KERNEL",
                     "KIND", "MODULE", module_width, "FUNCTION", function_width, "COMPILE",
                     "WRAPPER", "PTX", "SIGNATURE");
  for (const KernelRow& row : rows) {
    out += fmt::format("{:<16}  {:<10}  {:<{}}  {:<{}}  {:>7.2f} s  {:>9}  {:>9}  {}\n", row.key,
                       row.kind, row.module, module_width, row.function, function_width,
                       row.compile_seconds, Bytes(row.wrapper_size), Bytes(row.code_size),
                       row.signature);
  }
  if (!without_kernel.empty())
    out += "\ncall sites without a recorded kernel (not compiled by Slang on this device):\n";
  for (auto call_site : without_kernel) {
    out +=
        fmt::format("  {:<16}  {:<10}  {:<{}}  {:<{}}  {}\n",
                    std::string(call_site.getSlangpyHash().cStr()).substr(0, 16),
                    CallKindName(call_site.getKind()), call_site.getModule().cStr(), module_width,
                    call_site.getFunction().cStr(), function_width, Signature(call_site));
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
  json.Key("moduleLoads").BeginArray();
  for (const ModuleLoadRecord& load : trace.module_loads()) {
    json.BeginObject();
    json.Key("name").String(load.name);
    json.Key("session").String(load.session.ToHex());
    json.Key("module").String(load.module.ToHex());
    json.Key("loadSeconds").Double(load.load_seconds);
    json.EndObject();
  }
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

#include "archive/describe_archive.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "archive/blob_kind.h"
#include "archive/json_writer.h"
#include "common/capnp_digest.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

constexpr size_t kKeyPrefixLength = 12;

std::string_view AsView(capnp::Text::Reader text) { return {text.begin(), text.size()}; }

// Texts come from the file; control characters would corrupt the terminal or the table layout.
std::string Printable(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = '?';
  }
  return out;
}

std::string HumanSize(uint64_t bytes) {
  constexpr std::array<std::string_view, 4> kUnits = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < kUnits.size()) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string JoinArches(capnp::List<uint32_t>::Reader arches) {
  std::string joined;
  for (const uint32_t arch : arches) joined += fmt::format("{}{}", joined.empty() ? "" : ",", arch);
  return joined.empty() ? "-" : joined;
}

std::string DescribeAsTable(const Archive& archive) {
  const auto index = archive.index();
  using Row = std::array<std::string, 8>;
  std::vector<Row> rows;
  rows.push_back({"KEY", "MODULE", "FUNCTION", "KIND", "SASS", "PTX", "FATBIN", "BLOBS"});
  for (const auto entry : index.getEntries()) {
    const auto call_site = entry.getCallSite();
    uint64_t fatbin_size = 0;
    uint64_t blob_total = 0;
    for (const auto blob : entry.getBlobs()) {
      blob_total += blob.getSize();
      if (blob.getKind() == schema::BlobKind::FATBIN) fatbin_size = blob.getSize();
    }
    rows.push_back({HexOf(entry.getKey()).substr(0, kKeyPrefixLength),
                    Printable(AsView(call_site.getModuleName())),
                    Printable(AsView(call_site.getFunctionName())),
                    Printable(AsView(call_site.getCallKind())),
                    entry.getOptix() ? "OptiX" : JoinArches(entry.getSassArches()),
                    entry.getPtxArch() == 0 ? "-" : fmt::format("{}", entry.getPtxArch()),
                    HumanSize(fatbin_size), HumanSize(blob_total)});
  }
  std::array<size_t, 8> widths{};
  for (const Row& row : rows) {
    for (size_t column = 0; column < row.size(); ++column) {
      widths[column] = std::max(widths[column], row[column].size());
    }
  }
  std::string out;
  for (const Row& row : rows) {
    std::string line;
    for (size_t column = 0; column < row.size(); ++column) {
      // Sizes read best right-aligned, so their units line up.
      const bool right_aligned = column >= 6;
      line += right_aligned ? fmt::format("{:>{}}  ", row[column], widths[column])
                            : fmt::format("{:<{}}  ", row[column], widths[column]);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + '\n';
  }
  const auto modules = index.getModules();
  if (modules.size() > 0 || index.getUnservedModules().size() > 0) {
    uint64_t ir_bytes = 0;
    for (const auto module : modules) ir_bytes += module.getBlob().getSize();
    out += fmt::format("{} Slang module{} as verified IR ({})\n", modules.size(),
                       modules.size() == 1 ? "" : "s", HumanSize(ir_bytes));
    for (const auto unserved : index.getUnservedModules()) {
      out += fmt::format("  not as IR: {}: {}\n", Printable(AsView(unserved.getName())),
                         Printable(AsView(unserved.getReason())));
    }
  }
  const size_t kernels = archive.kernel_count();
  out += fmt::format(
      "{}: {} kernel{}, {} ({} bytes), toolchain \"{}\", archive format {}, written by spreplay "
      "{}\n",
      Printable(archive.source_name()), kernels, kernels == 1 ? "" : "s",
      HumanSize(archive.header().file_size), archive.header().file_size,
      Printable(AsView(index.getToolchain())), archive.header().format_version,
      Printable(AsView(index.getSpreplayVersion())));
  return out;
}

void WriteEntry(schema::KernelEntry::Reader entry, JsonWriter& json) {
  const auto call_site = entry.getCallSite();
  json.BeginObject();
  json.Key("key").String(HexOf(entry.getKey()));
  json.Key("module").String(AsView(call_site.getModuleName()));
  json.Key("function").String(AsView(call_site.getFunctionName()));
  json.Key("callKind").String(AsView(call_site.getCallKind()));
  json.Key("wrapperModule").String(AsView(call_site.getWrapperModuleName()));
  json.Key("entryPoint").String(AsView(call_site.getEntryPointName()));
  json.Key("sessionDigest").String(HexOf(entry.getSessionDigest()));
  json.Key("programDigest").String(HexOf(entry.getProgramDigest()));
  json.Key("sassArches").BeginArray();
  for (const uint32_t arch : entry.getSassArches()) json.Uint(arch);
  json.EndArray();
  json.Key("ptxArch").Uint(entry.getPtxArch());
  json.Key("optix").Bool(entry.getOptix());
  json.Key("manifest").BeginArray();
  for (const auto dependency : entry.getManifest()) {
    json.BeginObject();
    json.Key("digest").String(HexOf(dependency.getDigest()));
    json.Key("path").String(AsView(dependency.getPath()));
    json.EndObject();
  }
  json.EndArray();
  json.Key("blobs").BeginArray();
  for (const auto blob : entry.getBlobs()) {
    json.BeginObject();
    json.Key("kind").String(BlobKindName(blob.getKind()));
    json.Key("arch").Uint(blob.getArch());
    json.Key("offset").Uint(blob.getOffset());
    json.Key("size").Uint(blob.getSize());
    json.Key("crc32c").Uint(blob.getCrc32c());
    json.Key("sha256").String(HexOf(blob.getSha256()));
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
}

std::string DescribeAsJson(const Archive& archive) {
  const auto index = archive.index();
  const auto creation = index.getCreation();
  JsonWriter json(/*indent=*/2);
  json.BeginObject();
  json.Key("path").String(archive.source_name());
  json.Key("formatVersion").Uint(archive.header().format_version);
  json.Key("fileSize").Uint(archive.header().file_size);
  json.Key("toolchain").String(AsView(index.getToolchain()));
  json.Key("spreplayVersion").String(AsView(index.getSpreplayVersion()));
  json.Key("creation").BeginObject();
  json.Key("createdUnixSeconds").Int(creation.getCreatedUnixSeconds());
  json.Key("host").String(AsView(creation.getHost()));
  json.Key("command").String(AsView(creation.getCommand()));
  json.EndObject();
  json.Key("kernelCount").Uint(archive.kernel_count());
  json.Key("kernels").BeginArray();
  for (const auto entry : index.getEntries()) WriteEntry(entry, json);
  json.EndArray();
  json.Key("modules").BeginArray();
  for (const auto module : index.getModules()) {
    json.BeginObject();
    json.Key("key").String(HexOf(module.getKey()));
    json.Key("name").String(AsView(module.getName()));
    json.Key("requestedName").String(AsView(module.getRequestedName()));
    json.Key("sessionDigest").String(HexOf(module.getSessionDigest()));
    json.Key("fromString").Bool(module.getSourceLookup().size() > 0);
    json.Key("verifiedBy")
        .String(module.getVerifiedBy() == schema::ModuleVerification::LAYOUT ? "layout"
                                                                             : "kernels");
    json.Key("files").Uint(module.getFiles().size());
    json.Key("imports").Uint(module.getImports().size());
    json.Key("irOffset").Uint(module.getBlob().getOffset());
    json.Key("irBytes").Uint(module.getBlob().getSize());
    json.EndObject();
  }
  json.EndArray();
  json.Key("unservedModules").BeginArray();
  for (const auto unserved : index.getUnservedModules()) {
    json.BeginObject();
    json.Key("name").String(AsView(unserved.getName()));
    json.Key("reason").String(AsView(unserved.getReason()));
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  return json.text() + '\n';
}

}  // namespace

std::string DescribeArchive(const Archive& archive, bool json) {
  return json ? DescribeAsJson(archive) : DescribeAsTable(archive);
}

}  // namespace spreplay

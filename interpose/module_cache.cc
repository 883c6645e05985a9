#include "interpose/module_cache.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string_view>

namespace spreplay {
namespace {

bool IsUseUpToDateBinaryModule(const CompilerOption& option) {
  return option.name == static_cast<int32_t>(slang::CompilerOptionName::UseUpToDateBinaryModule);
}

bool IsInclude(const CompilerOption& option) {
  return option.name == static_cast<int32_t>(slang::CompilerOptionName::Include);
}

// "<module_cache_path>/<40 hex digits>/<number>": sgl's directory for the
// include path of that number, named by the session's SHA-1. The number, if so.
std::optional<size_t> ModuleCacheDirectoryNumber(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t last = path.rfind('/');
  if (last == std::string_view::npos || last < 41) return std::nullopt;
  const std::string_view number = path.substr(last + 1);
  const std::string_view uid = path.substr(last - 40, 40);
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  auto is_hex = [&](char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); };
  if (number.empty() || number.size() > 9 || !std::all_of(number.begin(), number.end(), is_digit) ||
      path[last - 41] != '/' || !std::all_of(uid.begin(), uid.end(), is_hex))
    return std::nullopt;
  return std::stoul(std::string(number));
}

// ---- Slang's RIFF (source/core/slang-riff.h) ----
// A chunk: tag (4 bytes), payload size (uint32); a list ("LIST", or "RIFF" at
// the root) then has its type (4 bytes) and its children, each starting at
// an offset from its parent rounded up to 8.
constexpr size_t kHeader = 8;
constexpr size_t kListHeader = 12;

size_t RoundUp(size_t size) { return (size + 7) & ~size_t{7}; }

uint32_t ReadU32(std::string_view bytes, size_t at) {
  uint32_t value;
  std::memcpy(&value, bytes.data() + at, 4);
  return value;
}

bool IsList(std::string_view tag) { return tag == "LIST" || tag == "RIFF"; }

// Zeroes the digest of every module chunk ("smod") in the chunks of
// [begin, end); false if they do not parse.
bool ZeroModuleDigests(std::string& bytes, size_t begin, size_t end, bool in_module, int depth,
                       bool* any) {
  if (depth > 16) return false;
  size_t at = begin;
  while (at < end) {
    if (end - at < kHeader) return false;
    const std::string_view tag(bytes.data() + at, 4);
    const size_t size = ReadU32(bytes, at + 4);
    if (size > end - at - kHeader) return false;
    if (IsList(tag)) {
      if (size < 4) return false;
      const std::string_view type(bytes.data() + at + kHeader, 4);
      if (!ZeroModuleDigests(bytes, at + RoundUp(kListHeader), at + kHeader + size, type == "smod",
                             depth + 1, any))
        return false;
    } else if (in_module && tag == "SHA1" && size == 20) {
      std::memset(bytes.data() + at + kHeader, 0, 20);
      *any = true;
    }
    at += RoundUp(kHeader + size);
  }
  return true;
}

std::string List(const char* tag, const char* type, std::string_view child) {
  std::string list(RoundUp(kListHeader), '\0');
  const uint32_t size = static_cast<uint32_t>(list.size() - kHeader + child.size());
  std::memcpy(list.data(), tag, 4);
  std::memcpy(list.data() + 4, &size, 4);
  std::memcpy(list.data() + kHeader, type, 4);
  list.append(child);
  return list;
}

}  // namespace

bool UsesModuleCache(const std::vector<CompilerOption>& options) {
  return std::any_of(options.begin(), options.end(), [](const CompilerOption& option) {
    return IsUseUpToDateBinaryModule(option) && option.int0 != 0;
  });
}

std::vector<CompilerOption> WithoutModuleCache(const std::vector<CompilerOption>& options) {
  std::vector<CompilerOption> kept;
  for (const CompilerOption& option : options) {
    if (IsUseUpToDateBinaryModule(option)) continue;
    if (IsInclude(option) && ModuleCacheDirectoryNumber(option.string0)) continue;
    kept.push_back(option);
  }
  return kept;
}

ModuleCacheLayout ModuleCacheLayoutOf(const std::vector<CompilerOption>& options) {
  std::vector<std::string> includes;
  std::vector<std::pair<size_t, std::string>> caches;
  for (const CompilerOption& option : options) {
    if (!IsInclude(option)) continue;
    if (std::optional<size_t> number = ModuleCacheDirectoryNumber(option.string0))
      caches.emplace_back(*number, option.string0);
    else
      includes.push_back(option.string0);
  }
  ModuleCacheLayout layout;
  for (size_t i = 0; i < includes.size(); ++i) {
    auto cache = std::find_if(caches.begin(), caches.end(),
                              [i](const auto& entry) { return entry.first == i; });
    if (cache == caches.end()) return {};  // not sgl's layout
    layout.emplace_back(includes[i], cache->second);
  }
  return layout;
}

std::optional<std::string> ModuleCacheEntry(const ModuleCacheLayout& layout,
                                            const std::string& source_path) {
  namespace fs = std::filesystem;
  if (source_path.empty()) return std::nullopt;
  const fs::path path(source_path);
  if (path.extension() == ".slang-module") return std::nullopt;
  for (const auto& [include, cache] : layout) {
    std::error_code error;
    // sgl's is_sub_path: relative() that climbs out of `include` is not below it.
    const fs::path relative = fs::relative(path, include, error);
    if (error) continue;
    const std::string text = relative.string();
    if (text.size() == 1 || (text.size() > 1 && text[0] != '.' && text[1] != '.')) {
      fs::path entry = fs::path(cache) / relative;
      entry.replace_extension(".slang-module");
      return entry.string();
    }
  }
  return std::nullopt;
}

std::optional<std::string> AsModuleLibraryWithoutDigest(std::string_view serialized) {
  if (serialized.size() < kListHeader || serialized.substr(0, 4) != "RIFF") return std::nullopt;
  const size_t size = ReadU32(serialized, 4);
  if (size > serialized.size() - kHeader) return std::nullopt;
  std::string bytes(serialized.substr(0, kHeader + size));
  const std::string_view type(bytes.data() + kHeader, 4);
  bool any = false;
  if (!ZeroModuleDigests(bytes, 0, bytes.size(), false, 0, &any) || !any) return std::nullopt;
  // A compile request's container ("SLmc") is a module library already.
  if (type == "SLmc") return bytes;
  if (type != "smod") return std::nullopt;
  std::memcpy(bytes.data(), "LIST", 4);
  return List("RIFF", "SLmc", List("LIST", "SLml", bytes));
}

}  // namespace spreplay

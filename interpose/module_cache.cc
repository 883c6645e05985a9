#include "interpose/module_cache.h"

#include <algorithm>
#include <string_view>

namespace spreplay {
namespace {

bool IsUseUpToDateBinaryModule(const CompilerOption& option) {
  return option.name == static_cast<int32_t>(slang::CompilerOptionName::UseUpToDateBinaryModule);
}

// "<module_cache_path>/<40 hex digits>/<number>": sgl's directory for the
// include path of that number, named by the session's SHA-1.
bool IsModuleCacheDirectory(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t last = path.rfind('/');
  if (last == std::string_view::npos || last < 41) return false;
  const std::string_view number = path.substr(last + 1);
  const std::string_view uid = path.substr(last - 40, 40);
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  auto is_hex = [&](char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); };
  return !number.empty() && std::all_of(number.begin(), number.end(), is_digit) &&
         path[last - 41] == '/' && std::all_of(uid.begin(), uid.end(), is_hex);
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
    if (option.name == static_cast<int32_t>(slang::CompilerOptionName::Include) &&
        IsModuleCacheDirectory(option.string0))
      continue;
    kept.push_back(option);
  }
  return kept;
}

std::string ModuleCacheFileName(const std::string& source_path) {
  if (source_path.empty()) return source_path;
  constexpr std::string_view kSlang = ".slang";
  return source_path.ends_with(kSlang) ? source_path + "-module" : source_path + ".slang-module";
}

}  // namespace spreplay

#pragma once
// The toolchain string every key, trace and archive carries:
// "slangpy <version> slang <build tag>".

#include <string>
#include <string_view>

namespace spreplay {

inline constexpr std::string_view kSlangBuildMarker = " slang ";

// `generator` is what makes code besides Slang ("slangpy <version>").
inline std::string ToolchainName(std::string_view generator, std::string_view slang_build) {
  return std::string(generator).append(kSlangBuildMarker).append(slang_build);
}

// The Slang build tag of `toolchain`, or "" when it names none.
inline std::string_view SlangBuildOf(std::string_view toolchain) {
  constexpr std::string_view kMarker = kSlangBuildMarker;
  const size_t at = toolchain.rfind(kMarker);
  return at == std::string_view::npos ? std::string_view() : toolchain.substr(at + kMarker.size());
}

}  // namespace spreplay

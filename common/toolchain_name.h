#pragma once
// The toolchain string every key, trace and archive carries:
// "slangpy <version> slang <build tag>" (interpose/slang_hooks.cc writes it).

#include <string_view>

namespace spreplay {

// The Slang build tag of `toolchain`, or "" when it names none.
inline std::string_view SlangBuildOf(std::string_view toolchain) {
  constexpr std::string_view kMarker = " slang ";
  const size_t at = toolchain.rfind(kMarker);
  return at == std::string_view::npos ? std::string_view() : toolchain.substr(at + kMarker.size());
}

}  // namespace spreplay

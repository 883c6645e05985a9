#pragma once
// Lets fmt print Abseil's string_view and Status. Debian's Abseil has its own
// string_view type rather than an alias of std::string_view.

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "fmt/format.h"

#if !defined(ABSL_USES_STD_STRING_VIEW)
template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<std::string_view> {
  auto format(absl::string_view value, fmt::format_context& context) const {
    return fmt::formatter<std::string_view>::format(std::string_view(value.data(), value.size()),
                                                    context);
  }
};
#endif

template <>
struct fmt::formatter<absl::Status> : fmt::formatter<std::string_view> {
  auto format(const absl::Status& status, fmt::format_context& context) const {
    const absl::string_view message = status.message();
    return fmt::formatter<std::string_view>::format(
        std::string_view(message.data(), message.size()), context);
  }
};

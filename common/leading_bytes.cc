#include "common/leading_bytes.h"

#include <algorithm>
#include <cctype>

#include "fmt/format.h"

namespace spreplay {

std::string DescribeLeadingBytes(std::span<const std::byte> bytes, size_t count) {
  bytes = bytes.first(std::min(bytes.size(), count));
  std::string printable;
  std::string hex;
  for (std::byte b : bytes) {
    const auto c = std::to_integer<unsigned char>(b);
    printable += (c < 0x80 && std::isprint(c)) ? static_cast<char>(c) : '.';
    hex += fmt::format("{}{:02x}", hex.empty() ? "" : " ", c);
  }
  return fmt::format("\"{}\", bytes {}", printable, hex);
}

}  // namespace spreplay

#pragma once
// Shows what a foreign file starts with, so that a user can recognise what
// they passed by mistake: `"GIF89a..", bytes 47 49 46 38 39 61 00 00`.

#include <cstddef>
#include <span>
#include <string>

namespace spreplay {

std::string DescribeLeadingBytes(std::span<const std::byte> bytes, size_t count);

}  // namespace spreplay

#pragma once
// write(2) until every byte is out, through EINTR and short writes.

#include <cstddef>
#include <span>
#include <string_view>

#include "absl/status/status.h"

namespace spreplay {

// `what` names the destination in errors, e.g. "trace file /tmp/t.capnp".
absl::Status WriteAll(int fd, std::span<const std::byte> bytes, std::string_view what);

}  // namespace spreplay

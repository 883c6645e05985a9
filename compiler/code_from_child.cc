#include "compiler/code_from_child.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/status/status.h"

namespace spreplay {

// The status code, a byte; how many seconds, a byte, and each as a double;
// then the code, or the error's message.
std::string EncodeCodeFromChild(const absl::StatusOr<std::string>& code,
                                const std::vector<double>& seconds) {
  std::string bytes;
  bytes.push_back(static_cast<char>(code.ok() ? absl::StatusCode::kOk : code.status().code()));
  bytes.push_back(static_cast<char>(seconds.size()));
  for (double value : seconds) bytes.append(reinterpret_cast<const char*>(&value), sizeof value);
  if (code.ok())
    bytes += *code;
  else
    bytes += std::string(code.status().message());
  return bytes;
}

CodeFromChild DecodeCodeFromChild(absl::StatusOr<std::string> bytes) {
  if (!bytes.ok()) return {bytes.status(), {}};
  const auto truncated = [] {
    return CodeFromChild{absl::InternalError("its worker process sent a truncated reply"), {}};
  };
  if (bytes->size() < 2) return truncated();
  const auto status = static_cast<absl::StatusCode>(static_cast<uint8_t>((*bytes)[0]));
  const size_t count = static_cast<uint8_t>((*bytes)[1]);
  size_t at = 2;
  if (bytes->size() < at + count * sizeof(double)) return truncated();
  CodeFromChild outcome;
  outcome.seconds.resize(count);
  for (double& value : outcome.seconds) {
    std::memcpy(&value, bytes->data() + at, sizeof value);
    at += sizeof value;
  }
  bytes->erase(0, at);
  if (status == absl::StatusCode::kOk)
    outcome.code = *std::move(bytes);
  else
    outcome.code = absl::Status(status, *bytes);
  return outcome;
}

}  // namespace spreplay

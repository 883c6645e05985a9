// Feeds arbitrary bytes to the trace parser. Traces are written by processes that may die at any
// instant, so the parser sees torn and corrupt frames routinely and must never crash on them;
// every frame and damaged region it reports must also lie inside the input.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/crc32c.h"
#include "recorder/trace_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<spreplay::TraceLog> log =
      spreplay::ParseTraceLog(std::string(reinterpret_cast<const char*>(data), size), "fuzz input");
  if (!log.ok()) return 0;
  const auto file = std::as_bytes(std::span(log->bytes.data(), log->bytes.size()));
  uint64_t previous_end = 0;
  for (const std::span<const std::byte> frame : log->frames) {
    if (frame.data() < file.data() || frame.data() + frame.size() > file.data() + file.size()) {
      __builtin_trap();
    }
    // Reads every byte, so AddressSanitizer checks the whole view.
    (void)spreplay::Crc32c(frame);
  }
  for (const spreplay::Damage& damage : log->damage) {
    // Damaged regions are reported in file order, without overlap, inside the file.
    if (damage.offset < previous_end || damage.length > file.size() ||
        damage.offset > file.size() - damage.length) {
      __builtin_trap();
    }
    previous_end = damage.offset + damage.length;
  }
  (void)spreplay::DescribeDamage(*log);
  return 0;
}

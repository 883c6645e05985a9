#pragma once
// How many Slang sessions a compile holds at once. Each job that loads a
// configuration's modules from source, and each worker process that rebuilds
// programs over their IR, holds a Slang session of its own: 0.7 GB for the
// 704 programs of slangpy's suite's largest configuration. A machine with
// many cores and little memory (a container's limit, say) runs fewer of them
// at once than it has jobs, rather than running out of memory, and loads a
// configuration's shared modules once in a process of their own only where
// memory holds that process's session too.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace spreplay {

// What one Slang session is budgeted: the suite's largest, with room to spare.
inline constexpr uint64_t kBytesPerSlangSession = uint64_t{1} << 30;

// The memory this process may still take: the kernel's MemAvailable, or
// what its cgroup's limit leaves, whichever is less; nullopt if neither
// can be read.
std::optional<uint64_t> AvailableMemoryBytes();

// `workers`, or as many sessions of kBytesPerSlangSession as `available`
// holds where that is fewer; 1 at least. Unknown memory limits nothing.
size_t SlangSessionsAtOnce(size_t workers, std::optional<uint64_t> available);

// How many more sessions `available` holds beside `sessions` (those of the
// workers' children), as many as them at most: a configuration's process
// of shared modules (module_stage.h) holds one. Unknown memory limits
// nothing.
size_t SessionsBeside(size_t sessions, std::optional<uint64_t> available);

// Parsers of the files AvailableMemoryBytes reads, for its tests.
std::optional<uint64_t> MemAvailableOf(std::string_view meminfo);
// A cgroup's limit and usage (v2: memory.max, memory.current; v1:
// memory.limit_in_bytes, memory.usage_in_bytes): what is left, or nullopt
// where it sets no limit ("max", or v1's page-rounded maximum).
std::optional<uint64_t> CgroupHeadroom(std::string_view limit, std::string_view usage);

}  // namespace spreplay

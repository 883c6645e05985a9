#include "interpose/vtable_patch.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/fmt_absl.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

// The protection of the mapping that holds `address`, from /proc/self/maps.
int ProtectionOf(uintptr_t address) {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps) return PROT_READ;
  const int protection = ProtectionInMaps(maps, address);
  std::fclose(maps);
  return protection;
}

// Vtables live in RELRO pages, which the loader made read-only after
// relocation; they must be made writable for the duration of the store and
// then get back exactly the protection they had.
absl::Status WriteProtected(void** address, void* value) {
  const uintptr_t page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(address) & ~(page_size - 1);
  const uintptr_t end =
      (reinterpret_cast<uintptr_t>(address + 1) + page_size - 1) & ~(page_size - 1);
  void* page = reinterpret_cast<void*>(begin);
  const int original_protection = ProtectionOf(begin);
  if (mprotect(page, end - begin, PROT_READ | PROT_WRITE) != 0) {
    return absl::InternalError(
        fmt::format("cannot make vtable page {} writable: {}", page, std::strerror(errno)));
  }
  __atomic_store_n(address, value, __ATOMIC_RELEASE);
  if (mprotect(page, end - begin, original_protection) != 0) {
    return absl::InternalError(
        fmt::format("cannot restore vtable page {}: {}", page, std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

int ProtectionInMaps(std::FILE* maps, uintptr_t address) {
  int protection = PROT_READ;
  // Whole lines, however long their paths: a fixed buffer would split one,
  // and the rest of a path could then read as an address range.
  char* line = nullptr;
  size_t capacity = 0;
  while (getline(&line, &capacity, maps) != -1) {
    uintptr_t begin = 0, end = 0;
    char perms[5] = {};
    if (std::sscanf(line, "%lx-%lx %4s", &begin, &end, perms) != 3) continue;
    if (address < begin || address >= end) continue;
    protection = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                 (perms[2] == 'x' ? PROT_EXEC : 0);
    break;
  }
  std::free(line);
  return protection;
}

absl::Status VtablePatcher::Patch(void** vtable, size_t slot, void* replacement) {
  std::lock_guard lock(mutex_);
  auto [it, inserted] = originals_.try_emplace(SlotId{vtable, slot}, vtable[slot]);
  if (!inserted || vtable[slot] == replacement) {
    if (inserted) originals_.erase(it);
    return absl::OkStatus();
  }
  absl::Status status = WriteProtected(&vtable[slot], replacement);
  if (!status.ok()) originals_.erase(it);
  return status;
}

void* VtablePatcher::Original(void** vtable, size_t slot) const {
  std::lock_guard lock(mutex_);
  auto it = originals_.find(SlotId{vtable, slot});
  return it == originals_.end() ? nullptr : it->second;
}

}  // namespace spreplay

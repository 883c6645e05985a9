#pragma once
// Replaces entries of C++ vtables in place, process-wide.
//
// Slang's COM-style interfaces are plain C++ classes, so every object of a
// class shares one vtable: patching a slot once intercepts that method for all
// existing and future objects of the class, in whatever library created them.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"

namespace spreplay {

// The vtable slot a pure virtual member function occupies, derived from the
// header we compile against rather than hard-coded, so a Slang header that
// reorders an interface moves our hooks with it. Itanium C++ ABI: a pointer to
// a virtual member function stores 1 + the slot's byte offset.
template <typename MemberFunction>
size_t VtableSlotOf(MemberFunction function) {
  static_assert(sizeof(MemberFunction) == 2 * sizeof(void*), "Itanium ABI member pointer");
  struct Raw {
    size_t pointer_or_offset;
    ptrdiff_t this_adjustment;
  } raw;
  __builtin_memcpy(&raw, &function, sizeof raw);
  return (raw.pointer_or_offset - 1) / sizeof(void*);
}

inline void** VtableOf(const void* object) { return *static_cast<void** const*>(object); }

// The protection (PROT_*) that `maps`, a /proc/<pid>/maps listing, gives the
// mapping holding `address`; PROT_READ if none does.
int ProtectionInMaps(std::FILE* maps, uintptr_t address);

class VtablePatcher {
 public:
  // Points `slot` of `vtable` at `replacement` unless it already does, and
  // remembers the function it replaced. Idempotent per (vtable, slot).
  absl::Status Patch(void** vtable, size_t slot, void* replacement);

  // The function that `slot` held before it was patched, or nullptr.
  void* Original(void** vtable, size_t slot) const;

 private:
  struct SlotId {
    void** vtable;
    size_t slot;
    template <typename H>
    friend H AbslHashValue(H h, const SlotId& id) {
      return H::combine(std::move(h), id.vtable, id.slot);
    }
    bool operator==(const SlotId&) const = default;
  };
  mutable std::mutex mutex_;
  absl::flat_hash_map<SlotId, void*> originals_;
};

}  // namespace spreplay

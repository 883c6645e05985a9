#pragma once
// Reference counting and queryInterface for the COM objects spreplay hands
// Slang (blobs, a file system, a library loader): each names the interfaces
// it implements, and deletes itself when Slang releases its last reference.

#include <atomic>
#include <cstdint>
#include <cstring>

#include "slang.h"

namespace spreplay {

inline bool SameUuid(const SlangUUID& a, const SlangUUID& b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// `Interface` is the one COM interface the class implements, with its bases.
// A new object has no reference: wrap it in a ComPtr, or addRef it before
// handing it out.
template <typename Interface>
class ComObject : public Interface {
 public:
  SLANG_NO_THROW SlangResult SLANG_MCALL queryInterface(const SlangUUID& uuid,
                                                        void** out) override {
    *out = Implements(uuid) ? static_cast<Interface*>(this) : nullptr;
    if (!*out) return SLANG_E_NO_INTERFACE;
    addRef();
    return SLANG_OK;
  }
  SLANG_NO_THROW uint32_t SLANG_MCALL addRef() override { return ++references_; }
  SLANG_NO_THROW uint32_t SLANG_MCALL release() override {
    const uint32_t remaining = --references_;
    if (remaining == 0) delete this;
    return remaining;
  }

 protected:
  virtual ~ComObject() = default;
  // Whether `uuid` names `Interface` or one of its bases.
  virtual bool Implements(const SlangUUID& uuid) const = 0;

 private:
  std::atomic<uint32_t> references_{0};
};

}  // namespace spreplay

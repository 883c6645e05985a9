#include "interpose/borrowed_blob.h"

#include <atomic>
#include <cstring>

namespace spreplay {
namespace {

class BorrowedBlob : public ISlangBlob {
 public:
  BorrowedBlob(const void* data, size_t size) : data_(data), size_(size) {}
  virtual ~BorrowedBlob() = default;

  SLANG_NO_THROW SlangResult SLANG_MCALL queryInterface(const SlangUUID& uuid,
                                                        void** out) override {
    const SlangUUID blob = ISlangBlob::getTypeGuid();
    const SlangUUID unknown = ISlangUnknown::getTypeGuid();
    if (std::memcmp(&uuid, &blob, sizeof uuid) == 0 ||
        std::memcmp(&uuid, &unknown, sizeof uuid) == 0) {
      addRef();
      *out = static_cast<ISlangBlob*>(this);
      return SLANG_OK;
    }
    *out = nullptr;
    return SLANG_E_NO_INTERFACE;
  }
  SLANG_NO_THROW uint32_t SLANG_MCALL addRef() override { return ++references_; }
  SLANG_NO_THROW uint32_t SLANG_MCALL release() override {
    const uint32_t remaining = --references_;
    if (remaining == 0) delete this;
    return remaining;
  }
  SLANG_NO_THROW const void* SLANG_MCALL getBufferPointer() override { return data_; }
  SLANG_NO_THROW size_t SLANG_MCALL getBufferSize() override { return size_; }

 private:
  const void* data_;
  size_t size_;
  std::atomic<uint32_t> references_{1};
};

}  // namespace

ISlangBlob* NewBorrowedBlob(const void* data, size_t size) { return new BorrowedBlob(data, size); }

ISlangBlob* NewOwnedBlob(std::string text) {
  // Owned by the blob itself: freed with it.
  struct OwnedBlob final : BorrowedBlob {
    explicit OwnedBlob(std::string owned) : BorrowedBlob(nullptr, 0), text(std::move(owned)) {}
    SLANG_NO_THROW const void* SLANG_MCALL getBufferPointer() override { return text.c_str(); }
    SLANG_NO_THROW size_t SLANG_MCALL getBufferSize() override { return text.size() + 1; }
    std::string text;
  };
  return new OwnedBlob(std::move(text));
}

}  // namespace spreplay

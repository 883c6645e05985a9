#include "interpose/blobs.h"

#include <atomic>
#include <cstring>

namespace spreplay {
namespace {

class ViewBlob final : public ISlangBlob {
 public:
  // `owner` keeps the bytes alive, or is null when someone else does.
  ViewBlob(const void* data, size_t size, std::shared_ptr<const void> owner)
      : data_(data), size_(size), owner_(std::move(owner)) {}

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
  std::shared_ptr<const void> owner_;
  std::atomic<uint32_t> references_{1};
};

}  // namespace

ISlangBlob* NewBorrowedBlob(const void* data, size_t size) {
  return new ViewBlob(data, size, nullptr);
}

ISlangBlob* NewSharedBlob(std::shared_ptr<const std::string> bytes) {
  const std::string& text = *bytes;
  return new ViewBlob(text.data(), text.size(), std::move(bytes));
}

ISlangBlob* NewOwnedBlob(std::string text) {
  return NewSharedBlob(std::make_shared<const std::string>(std::move(text)));
}

std::string BlobToString(ISlangBlob* blob) {
  if (!blob) return "";
  return std::string(static_cast<const char*>(blob->getBufferPointer()), blob->getBufferSize());
}

}  // namespace spreplay

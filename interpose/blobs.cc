#include "interpose/blobs.h"

#include "interpose/com_object.h"

namespace spreplay {
namespace {

class ViewBlob final : public ComObject<ISlangBlob> {
 public:
  // `owner` keeps the bytes alive, or is null when someone else does.
  ViewBlob(const void* data, size_t size, std::shared_ptr<const void> owner)
      : data_(data), size_(size), owner_(std::move(owner)) {}

  SLANG_NO_THROW const void* SLANG_MCALL getBufferPointer() override { return data_; }
  SLANG_NO_THROW size_t SLANG_MCALL getBufferSize() override { return size_; }

 private:
  bool Implements(const SlangUUID& uuid) const override {
    return SameUuid(uuid, ISlangUnknown::getTypeGuid()) ||
           SameUuid(uuid, ISlangBlob::getTypeGuid());
  }

  const void* data_;
  size_t size_;
  std::shared_ptr<const void> owner_;
};

// The caller owns the one reference.
ISlangBlob* Owned(ViewBlob* blob) {
  blob->addRef();
  return blob;
}

}  // namespace

ISlangBlob* NewBorrowedBlob(const void* data, size_t size) {
  return Owned(new ViewBlob(data, size, nullptr));
}

ISlangBlob* NewSharedBlob(std::shared_ptr<const std::string> bytes) {
  const std::string& text = *bytes;
  return Owned(new ViewBlob(text.data(), text.size(), std::move(bytes)));
}

ISlangBlob* NewOwnedBlob(std::string text) {
  return NewSharedBlob(std::make_shared<const std::string>(std::move(text)));
}

std::string BlobToString(ISlangBlob* blob) {
  if (!blob) return "";
  return std::string(static_cast<const char*>(blob->getBufferPointer()), blob->getBufferSize());
}

}  // namespace spreplay

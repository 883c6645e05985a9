#include "replayer/blobs.h"

#include <atomic>
#include <cstring>

namespace spreplay {
namespace {

bool SameUuid(const SlangUUID& a, const SlangUUID& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

class SharedBytesBlob final : public ISlangBlob {
 public:
  explicit SharedBytesBlob(std::shared_ptr<const std::string> bytes) : bytes_(std::move(bytes)) {}

  SLANG_NO_THROW SlangResult SLANG_MCALL queryInterface(const SlangUUID& uuid,
                                                        void** out) override {
    if (SameUuid(uuid, ISlangBlob::getTypeGuid()) || SameUuid(uuid, ISlangUnknown::getTypeGuid())) {
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
  SLANG_NO_THROW const void* SLANG_MCALL getBufferPointer() override { return bytes_->data(); }
  SLANG_NO_THROW size_t SLANG_MCALL getBufferSize() override { return bytes_->size(); }

 private:
  std::shared_ptr<const std::string> bytes_;
  std::atomic<uint32_t> references_{0};
};

}  // namespace

ComPtr<ISlangBlob> NewSharedBytesBlob(std::shared_ptr<const std::string> bytes) {
  return ComPtr<ISlangBlob>(new SharedBytesBlob(std::move(bytes)));
}

ComPtr<ISlangBlob> NewStringBlob(std::string text) {
  // std::string keeps a terminating zero after size(), which is what Slang's
  // StringUtil::getString relies on for path blobs.
  return NewSharedBytesBlob(std::make_shared<const std::string>(std::move(text)));
}

std::string BlobToString(ISlangBlob* blob) {
  if (!blob) return "";
  return std::string(static_cast<const char*>(blob->getBufferPointer()), blob->getBufferSize());
}

}  // namespace spreplay

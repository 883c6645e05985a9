#include "replayer/blobs.h"

#include "interpose/blobs.h"

namespace spreplay {

ComPtr<ISlangBlob> NewSharedBytesBlob(std::shared_ptr<const std::string> bytes) {
  return ComPtr<ISlangBlob>::Adopt(NewSharedBlob(std::move(bytes)));
}

ComPtr<ISlangBlob> NewStringBlob(std::string text) {
  return ComPtr<ISlangBlob>::Adopt(NewOwnedBlob(std::move(text)));
}

std::string BlobToString(ISlangBlob* blob) {
  if (!blob) return "";
  return std::string(static_cast<const char*>(blob->getBufferPointer()), blob->getBufferSize());
}

}  // namespace spreplay

#include "archive/blob_kind.h"

#include "fmt/format.h"

namespace spreplay {

std::string BlobKindName(schema::BlobKind kind) {
  switch (kind) {
    case schema::BlobKind::FATBIN:
      return "fatbin";
    case schema::BlobKind::PTX:
      return "ptx";
    case schema::BlobKind::CUBIN:
      return "cubin";
    case schema::BlobKind::SLANG_MODULE:
      return "slang-module";
    case schema::BlobKind::UNSPECIFIED:
      return "unspecified";
  }
  // A kind added by a newer writer: name it by number rather than guess.
  return fmt::format("kind-{}", static_cast<uint16_t>(kind));
}

}  // namespace spreplay

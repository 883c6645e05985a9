#include "archive/blob_kind.h"

namespace spreplay {

std::string_view BlobKindName(schema::BlobKind kind) {
  switch (kind) {
    case schema::BlobKind::FATBIN:
      return "fatbin";
    case schema::BlobKind::PTX:
      return "ptx";
    case schema::BlobKind::CUBIN:
      return "cubin";
    case schema::BlobKind::UNSPECIFIED:
      break;
  }
  return "unspecified";
}

}  // namespace spreplay

#pragma once
// Feeds typed, length-prefixed fields into SHA-256, so that no two different
// field sequences can produce the same byte stream ("ab","c" vs "a","bc").
// Every content key spreplay computes goes through this one encoding.

#include <cstdint>
#include <string_view>

#include "common/sha256.h"

namespace spreplay {

class KeyHasher {
 public:
  explicit KeyHasher(std::string_view domain) { Text(domain); }

  KeyHasher& Text(std::string_view value) {
    Tag('s');
    Integer(value.size());
    sha_.Update(value);
    return *this;
  }
  KeyHasher& Integer(int64_t value) {
    Tag('i');
    unsigned char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(uint64_t(value) >> (8 * i));
    sha_.Update(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
    return *this;
  }
  KeyHasher& Hash(const Digest& digest) {
    Tag('h');
    sha_.Update(
        std::string_view(reinterpret_cast<const char*>(digest.bytes.data()), digest.bytes.size()));
    return *this;
  }
  Digest Finish() { return sha_.Finish(); }

 private:
  void Tag(char tag) { sha_.Update(std::string_view(&tag, 1)); }
  Sha256 sha_;
};

}  // namespace spreplay

#include "common/sha256.h"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "absl/status/status.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

// FIPS 180-4 section 4.2.2: first 32 bits of the fractional parts of the cube roots of the
// first 64 primes.
constexpr std::array<uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

constexpr size_t kBlockBytes = 64;

// FIPS 180-4 section 5.3.3: fractional parts of the square roots of the first 8 primes.
constexpr std::array<uint32_t, 8> kInitialState = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

// The standard defines the message as a sequence of big-endian words regardless of the host.
uint32_t LoadBigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

void StoreBigEndian32(uint32_t value, uint8_t* p) {
  p[0] = static_cast<uint8_t>(value >> 24);
  p[1] = static_cast<uint8_t>(value >> 16);
  p[2] = static_cast<uint8_t>(value >> 8);
  p[3] = static_cast<uint8_t>(value);
}

void Compress(std::array<uint32_t, 8>& state, const uint8_t* blocks, size_t block_count);

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string Digest::ToHex() const {
  static constexpr char kHexDigits[] = "0123456789abcdef";
  std::string hex(bytes.size() * 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    hex[2 * i] = kHexDigits[bytes[i] >> 4];
    hex[2 * i + 1] = kHexDigits[bytes[i] & 0xf];
  }
  return hex;
}

absl::StatusOr<Digest> Digest::FromHex(std::string_view hex) {
  Digest digest;
  if (hex.size() != digest.bytes.size() * 2) {
    return absl::InvalidArgumentError(fmt::format(
        "a SHA-256 digest is 64 hex characters, got {} characters: \"{}\"", hex.size(), hex));
  }
  for (size_t i = 0; i < hex.size(); ++i) {
    if (HexValue(hex[i]) < 0) {
      return absl::InvalidArgumentError(fmt::format(
          "invalid character '{}' at position {} of SHA-256 digest \"{}\"", hex[i], i, hex));
    }
  }
  for (size_t i = 0; i < digest.bytes.size(); ++i) {
    digest.bytes[i] = static_cast<uint8_t>(HexValue(hex[2 * i]) << 4 | HexValue(hex[2 * i + 1]));
  }
  return digest;
}

Sha256::Sha256() { Reset(); }

void Sha256::Reset() {
  state_ = kInitialState;
  pending_size_ = 0;
  total_size_ = 0;
}

void Sha256::Update(std::string_view data) {
  UpdateBytes(reinterpret_cast<const uint8_t*>(data.data()), data.size());
}

void Sha256::Update(std::span<const std::byte> data) {
  UpdateBytes(reinterpret_cast<const uint8_t*>(data.data()), data.size());
}

void Sha256::UpdateBytes(const uint8_t* data, size_t size) {
  total_size_ += size;
  if (pending_size_ > 0) {
    const size_t taken = std::min(size, kBlockSize - pending_size_);
    std::memcpy(pending_.data() + pending_size_, data, taken);
    pending_size_ += taken;
    data += taken;
    size -= taken;
    if (pending_size_ < kBlockSize) return;
    Compress(state_, pending_.data(), 1);
    pending_size_ = 0;
  }
  // Whole blocks are hashed straight from the caller's memory; only the tail is copied.
  const size_t whole_blocks = size / kBlockSize;
  if (whole_blocks > 0) {
    Compress(state_, data, whole_blocks);
    data += whole_blocks * kBlockSize;
    size -= whole_blocks * kBlockSize;
  }
  if (size > 0) {
    std::memcpy(pending_.data(), data, size);
    pending_size_ = size;
  }
}

Digest Sha256::Finish() {
  // Section 5.1.1: append a single 1 bit, zeros, then the message length in bits as a 64-bit
  // big-endian integer, so that the padded message is a whole number of blocks.
  const uint64_t bit_length = total_size_ * 8;
  pending_[pending_size_++] = 0x80;
  if (pending_size_ > kBlockSize - 8) {
    std::fill(pending_.begin() + pending_size_, pending_.end(), 0);
    Compress(state_, pending_.data(), 1);
    pending_size_ = 0;
  }
  std::fill(pending_.begin() + pending_size_, pending_.end() - 8, 0);
  StoreBigEndian32(static_cast<uint32_t>(bit_length >> 32), pending_.data() + kBlockSize - 8);
  StoreBigEndian32(static_cast<uint32_t>(bit_length), pending_.data() + kBlockSize - 4);
  Compress(state_, pending_.data(), 1);

  Digest digest;
  for (size_t i = 0; i < state_.size(); ++i) {
    StoreBigEndian32(state_[i], digest.bytes.data() + 4 * i);
  }
  Reset();
  return digest;
}

namespace sha256_internal {

void CompressPortable(std::array<uint32_t, 8>& state, const uint8_t* blocks, size_t block_count) {
  // Working variables live in locals so the compiler can keep them in registers across all
  // blocks instead of reloading the member array every round.
  uint32_t h0 = state[0], h1 = state[1], h2 = state[2], h3 = state[3];
  uint32_t h4 = state[4], h5 = state[5], h6 = state[6], h7 = state[7];

  for (size_t block = 0; block < block_count; ++block, blocks += kBlockBytes) {
    // Section 6.2.2 step 1: the message schedule.
    uint32_t w[64];
    for (int t = 0; t < 16; ++t) w[t] = LoadBigEndian32(blocks + 4 * t);
    for (int t = 16; t < 64; ++t) {
      const uint32_t s0 = std::rotr(w[t - 15], 7) ^ std::rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
      const uint32_t s1 = std::rotr(w[t - 2], 17) ^ std::rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }

    // Steps 2-3: 64 rounds over the working variables.
    uint32_t a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7;
    for (int t = 0; t < 64; ++t) {
      const uint32_t big_sigma1 = std::rotr(e, 6) ^ std::rotr(e, 11) ^ std::rotr(e, 25);
      const uint32_t choose = (e & f) ^ (~e & g);
      const uint32_t t1 = h + big_sigma1 + choose + kRoundConstants[t] + w[t];
      const uint32_t big_sigma0 = std::rotr(a, 2) ^ std::rotr(a, 13) ^ std::rotr(a, 22);
      const uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
      const uint32_t t2 = big_sigma0 + majority;
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }

    // Step 4: the intermediate hash value.
    h0 += a;
    h1 += b;
    h2 += c;
    h3 += d;
    h4 += e;
    h5 += f;
    h6 += g;
    h7 += h;
  }

  state = {h0, h1, h2, h3, h4, h5, h6, h7};
}

#if defined(__x86_64__)

bool HardwareSha256Available() {
  // Probed once; the answer cannot change while the process runs. GCC 12's
  // __builtin_cpu_supports does not know the SHA extensions: CPUID leaf 7
  // says (EBX bit 29), leaf 1 for the SSSE3 and SSE4.1 the rounds need.
  static const bool available = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    const bool ssse3_and_sse41 = (ecx & bit_SSSE3) && (ecx & bit_SSE4_1);
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    return ssse3_and_sse41 && (ebx & (1u << 29)) != 0;
  }();
  return available;
}

// The SHA extensions keep the eight working variables in two registers,
// as (A, B, E, F) and (C, D, G, H), and take the message four words at a time.
__attribute__((target("sha,sse4.1,ssse3"))) void CompressHardware(std::array<uint32_t, 8>& state,
                                                                  const uint8_t* blocks,
                                                                  size_t block_count) {
  const __m128i big_endian_words = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  const __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&state[0]));
  const __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&state[4]));
  const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
  const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
  __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
  __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);

  for (size_t block = 0; block < block_count; ++block, blocks += kBlockBytes) {
    const __m128i abef_before = abef;
    const __m128i cdgh_before = cdgh;
    // The last four groups of four schedule words, group g in words[g % 4].
    __m128i words[4];
    for (int group = 0; group < 16; ++group) {
      __m128i& current = words[group % 4];
      if (group < 4) {
        current =
            _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks + 16 * group)),
                             big_endian_words);
      } else {
        // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16]: msg1 gives the
        // last two terms, the shifted pair W[t-7], msg2 the s1 term.
        const __m128i& last = words[(group - 1) % 4];
        const __m128i& second_last = words[(group - 2) % 4];
        __m128i next = _mm_sha256msg1_epu32(current, words[(group - 3) % 4]);
        next = _mm_add_epi32(next, _mm_alignr_epi8(last, second_last, 4));
        current = _mm_sha256msg2_epu32(next, last);
      }
      __m128i scheduled = _mm_add_epi32(
          current, _mm_loadu_si128(reinterpret_cast<const __m128i*>(&kRoundConstants[4 * group])));
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, scheduled);
      scheduled = _mm_shuffle_epi32(scheduled, 0x0E);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, scheduled);
    }
    abef = _mm_add_epi32(abef, abef_before);
    cdgh = _mm_add_epi32(cdgh, cdgh_before);
  }

  const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&state[0]), _mm_blend_epi16(feba, dchg, 0xF0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&state[4]), _mm_alignr_epi8(dchg, feba, 8));
}

#else

bool HardwareSha256Available() { return false; }

void CompressHardware(std::array<uint32_t, 8>& state, const uint8_t* blocks, size_t block_count) {
  CompressPortable(state, blocks, block_count);
}

#endif

}  // namespace sha256_internal

Digest Sha256Of(std::string_view data) {
  Sha256 hasher;
  hasher.Update(data);
  return hasher.Finish();
}

Digest Sha256Of(std::span<const std::byte> data) {
  Sha256 hasher;
  hasher.Update(data);
  return hasher.Finish();
}

namespace {

void Compress(std::array<uint32_t, 8>& state, const uint8_t* blocks, size_t block_count) {
  if (sha256_internal::HardwareSha256Available())
    sha256_internal::CompressHardware(state, blocks, block_count);
  else
    sha256_internal::CompressPortable(state, blocks, block_count);
}

}  // namespace
}  // namespace spreplay

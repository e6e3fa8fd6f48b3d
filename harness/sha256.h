// SHA-256 for source hashes and compile-cache keys (FIPS 180-4).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fp4arena {

/// Incremental SHA-256. Feed bytes with update(), then hex_digest() once.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t len);
  void update(const std::string& s) { update(s.data(), s.size()); }
  /// Lowercase 64-hex-digit digest; finalizes the hash (call once).
  std::string hex_digest();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

/// SHA-256 of a whole string, as 64 lowercase hex digits.
std::string sha256_hex(const std::string& data);

}  // namespace fp4arena

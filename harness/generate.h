// Helpers the challenges' input generators share: deterministic per-row random data, the
// same on any machine and with any thread count.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/rng.h"
#include "reference/parallel.h"

namespace fp4arena {

/// rows x K packed 4-bit codes, code(r, k) = fn(rng, r, k) & 0xF with one Rng(seed, stream, r)
/// per row; element 2j is the LOW nibble of byte j of its row (the challenges' e2m1x2 layout).
template <typename CodeFn>
std::vector<uint8_t> make_codes(int64_t rows, int64_t K, uint64_t seed, uint64_t stream,
                                CodeFn fn) {
  std::vector<uint8_t> out(rows * K / 2);
  parallel_for(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      Rng rng(seed, stream, r);
      uint8_t* row = out.data() + r * K / 2;
      for (int64_t j = 0; j < K / 2; ++j) {
        uint8_t lo = fn(rng, r, 2 * j) & 0xF;
        uint8_t hi = fn(rng, r, 2 * j + 1) & 0xF;
        row[j] = static_cast<uint8_t>(lo | hi << 4);
      }
    }
  });
  return out;
}

}  // namespace fp4arena

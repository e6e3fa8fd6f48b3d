// Deterministic, counter-based random numbers for input generators: the same (seed,
// stream, index) gives the same values on any machine and with any thread count.
#pragma once

#include <cstdint>
#include <cstring>

namespace fp4arena {

/// SplitMix64 finalizer: a bijective 64-bit mix.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

namespace rng_detail {
/// The right edges of the ziggurat's 257 layers (harness/rng.cc), built on first use.
const double* ziggurat_edges();
}  // namespace rng_detail

/// A small generator seeded by (seed, stream, index), e.g. (case seed, tensor id, row).
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream, uint64_t index)
      : state_(mix64(mix64(seed ^ mix64(stream + 0x51ED270B)) + index)) {}
  uint64_t next() { return mix64(state_++); }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  /// Uniform integer in [0, n).
  uint32_t below(uint32_t n) { return static_cast<uint32_t>((next() >> 32) * n >> 32); }
  /// Standard normal, by the ziggurat method (harness/rng.cc): about one draw of next() a
  /// value; exp and log only for a draw off the ziggurat's core (1.5% of draws). The core
  /// is inline and has no branch on the sign, which a random sign would mispredict half the
  /// time (9 ns a value out of line with the branch, 2.5-3.9 ns this way, on the 2-core
  /// machine); the rest is normal_off_core's.
  double normal() {
    static const double* const edges = rng_detail::ziggurat_edges();
    const uint64_t u = next();
    const unsigned layer = static_cast<unsigned>(u & 0xFF);
    const double x = static_cast<double>(u >> 11) * (1.0 / 9007199254740992.0) * edges[layer];
    if (x < edges[layer + 1]) return with_sign(x, u);
    return normal_off_core(u);
  }

 private:
  /// x with its sign bit set from bit 8 of u: exactly (bit ? -1.0 : 1.0) * x.
  static double with_sign(double x, uint64_t u) {
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    bits ^= ((u >> 8) & 1) << 63;
    std::memcpy(&x, &bits, sizeof x);
    return x;
  }
  /// The draw u that fell off the ziggurat's core: its wedge or the tail, and on rejection
  /// the next draws, as the method goes on.
  double normal_off_core(uint64_t u);

  uint64_t state_;
};

}  // namespace fp4arena

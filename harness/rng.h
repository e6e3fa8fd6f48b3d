// Deterministic, counter-based random numbers for input generators: the same (seed,
// stream, index) gives the same values on any machine and with any thread count.
#pragma once

#include <cstdint>

namespace fp4arena {

/// SplitMix64 finalizer: a bijective 64-bit mix.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

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
  /// value; exp and log only for a draw off the ziggurat's core (1.5% of draws).
  double normal();

 private:
  uint64_t state_;
};

}  // namespace fp4arena

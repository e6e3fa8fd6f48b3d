// Test helpers for the W4A16 matmul and W4A8 grouped GEMM oracles: problems that own their
// buffers, random problems, and an independent double-precision reference with the FP32
// error bound. The reference decodes FP16 itself (ldexp on the bit fields), so it does not
// share CUDA's conversion with the oracles.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <cuda_fp16.h>

#include "reference/fp4_codecs.h"
#include "reference/oracle_w4a16_matmul.h"
#include "reference/oracle_w4a8_grouped_gemm.h"

namespace fp4arena {
namespace testing {

/// The unit roundoff of FP32.
inline constexpr double kFp32Unit = 0x1p-24;
/// Slack for results in FP32's subnormal range.
inline constexpr double kTinyAbs = std::numeric_limits<float>::min();

inline __half HalfFromBits(uint16_t bits) {
  __half_raw raw;
  raw.x = bits;
  return __half(raw);
}

inline uint16_t HalfBits(__half h) {
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

/// IEEE binary16 bits as a double, written out from the bit fields (finite values only).
inline double HalfBitsToDouble(uint16_t bits) {
  const int exp = (bits >> 10) & 0x1F, man = bits & 0x3FF;
  const double mag = exp == 0 ? std::ldexp(man, -24) : std::ldexp(1024 + man, exp - 25);
  return (bits & 0x8000) ? -mag : mag;
}

/// Exact per-element reference (double) and the bound on an FP32 oracle's error there.
struct ExactOutputs {
  std::vector<double> y;
  std::vector<double> bound;
};

// ---------------------------------------------------------------------------------------
// W4A16 matmul

struct OwnedW4a16Problem {
  int M = 0, N = 0, K = 0, group_size = 32;
  std::vector<__half> x, w_scales;
  std::vector<uint8_t> w;

  W4a16MatmulProblem Problem() const {
    W4a16MatmulProblem p;
    p.M = M;
    p.N = N;
    p.K = K;
    p.group_size = group_size;
    p.x = x.data();
    p.w = w.data();
    p.w_scales = w_scales.data();
    return p;
  }
};

/// Random finite FP16 bits of either sign with exponent field in [exp_lo, exp_hi] (0 gives
/// subnormals, 30 the top binade up to 65504).
inline uint16_t RandomHalfBits(std::mt19937* rng, int exp_lo, int exp_hi) {
  std::uniform_int_distribution<int> exp(exp_lo, exp_hi), man(0, 1023), sign(0, 1);
  return static_cast<uint16_t>(sign(*rng) << 15 | exp(*rng) << 10 | man(*rng));
}

/// Random x (exponent fields in [x_exp_lo, x_exp_hi]), random nibbles, random scales
/// (exponent fields in [s_exp_lo, s_exp_hi]).
inline OwnedW4a16Problem MakeRandomW4a16(int M, int N, int K, int group_size, uint32_t seed,
                                         int x_exp_lo = 10, int x_exp_hi = 20, int s_exp_lo = 5,
                                         int s_exp_hi = 16) {
  OwnedW4a16Problem r;
  r.M = M;
  r.N = N;
  r.K = K;
  r.group_size = group_size;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  r.x.resize(static_cast<size_t>(M) * K);
  for (__half& v : r.x) v = HalfFromBits(RandomHalfBits(&rng, x_exp_lo, x_exp_hi));
  r.w.resize(static_cast<size_t>(N) * K / 2);
  for (uint8_t& v : r.w) v = static_cast<uint8_t>(byte(rng));
  r.w_scales.resize(static_cast<size_t>(N) * (K / group_size));
  for (__half& v : r.w_scales) v = HalfFromBits(RandomHalfBits(&rng, s_exp_lo, s_exp_hi));
  return r;
}

/// y in double (every product is exact in double; the sum's own rounding is far below the
/// bound) and the bound K * 2^-24 * sum_k |product| on an FP32 dot product's error.
inline ExactOutputs ExactW4a16(const W4a16MatmulProblem& p) {
  const size_t M = p.M, N = p.N, K = p.K, group = p.group_size;
  std::vector<double> x(M * K), w(N * K);
  for (size_t i = 0; i < M * K; ++i) x[i] = HalfBitsToDouble(HalfBits(p.x[i]));
  for (size_t n = 0; n < N; ++n) {
    for (size_t k = 0; k < K; ++k) {
      const uint8_t byte = p.w[n * K / 2 + k / 2];
      w[n * K + k] = static_cast<double>(e2m1_decode((k & 1) ? byte >> 4 : byte & 0xF)) *
                     HalfBitsToDouble(HalfBits(p.w_scales[n * (K / group) + k / group]));
    }
  }
  ExactOutputs r;
  r.y.resize(M * N);
  r.bound.resize(M * N);
  for (size_t m = 0; m < M; ++m) {
    for (size_t n = 0; n < N; ++n) {
      double s = 0, s_abs = 0;
      for (size_t k = 0; k < K; ++k) {
        const double prod = x[m * K + k] * w[n * K + k];
        s += prod;
        s_abs += std::fabs(prod);
      }
      r.y[m * N + n] = s;
      r.bound[m * N + n] = static_cast<double>(K) * kFp32Unit * s_abs + kTinyAbs;
    }
  }
  return r;
}

// ---------------------------------------------------------------------------------------
// W4A8 grouped GEMM

struct OwnedW4a8GroupedProblem {
  int T = 0, N = 0, K = 0, G = 0;
  std::vector<uint8_t> x, w, w_scales;
  std::vector<float> x_scales, w_global;
  std::vector<int> group_offsets;

  W4a8GroupedGemmProblem Problem() const {
    W4a8GroupedGemmProblem p;
    p.T = T;
    p.N = N;
    p.K = K;
    p.G = G;
    p.x = x.data();
    p.x_scales = x_scales.data();
    p.w = w.data();
    p.w_scales = w_scales.data();
    p.w_global = w_global.data();
    p.group_offsets = group_offsets.data();
    return p;
  }
};

/// Random non-NaN E4M3 bits of either sign with exponent field in [exp_lo, exp_hi].
inline uint8_t RandomE4m3Bits(std::mt19937* rng, int exp_lo, int exp_hi) {
  std::uniform_int_distribution<int> exp(exp_lo, exp_hi), man(0, 7), sign(0, 1);
  uint8_t code;
  do {
    code = static_cast<uint8_t>(sign(*rng) << 7 | exp(*rng) << 3 | man(*rng));
  } while (e4m3_is_nan(code));
  return code;
}

/// A random problem whose expert g holds rows_per_expert[g] rows (G = its size). x codes
/// span the whole E4M3 range (NaN excluded), weight scales exponent fields [2, 12],
/// x_scales and w_global positive and negative within [2^-8, 2^8).
inline OwnedW4a8GroupedProblem MakeRandomW4a8Grouped(const std::vector<int>& rows_per_expert, int N,
                                                     int K, uint32_t seed) {
  OwnedW4a8GroupedProblem r;
  r.G = static_cast<int>(rows_per_expert.size());
  r.N = N;
  r.K = K;
  r.group_offsets.push_back(0);
  for (int rows : rows_per_expert) r.group_offsets.push_back(r.group_offsets.back() + rows);
  r.T = r.group_offsets.back();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> unit(-8.0f, 8.0f);
  const size_t T = r.T, G = r.G;
  r.x.resize(T * K);
  for (uint8_t& v : r.x) v = RandomE4m3Bits(&rng, 0, 15);
  r.x_scales.resize(T);
  for (float& v : r.x_scales) v = std::exp2(unit(rng)) * (byte(rng) & 1 ? -1.0f : 1.0f);
  r.w.resize(G * N * K / 2);
  for (uint8_t& v : r.w) v = static_cast<uint8_t>(byte(rng));
  r.w_scales.resize(G * N * K / 16);
  for (uint8_t& v : r.w_scales) v = RandomE4m3Bits(&rng, 2, 12);
  r.w_global.resize(G);
  for (float& v : r.w_global) v = std::exp2(unit(rng)) * (byte(rng) & 1 ? -1.0f : 1.0f);
  return r;
}

/// y in double and the bound (K + 3) * 2^-24 * |x_scale * w_global| * sum_k |product| on the
/// error of an FP32 dot product followed by the two FP32 scalings.
inline ExactOutputs ExactW4a8Grouped(const W4a8GroupedGemmProblem& p) {
  const size_t T = p.T, N = p.N, K = p.K, G = p.G;
  std::vector<double> x(T * K), w(G * N * K);  // w as [G * N][K]
  for (size_t i = 0; i < T * K; ++i) x[i] = e4m3_decode(p.x[i]);
  for (size_t i = 0; i < G * N * K; ++i) {
    const uint8_t byte = p.w[i / 2];
    w[i] = static_cast<double>(e2m1_decode((i & 1) ? byte >> 4 : byte & 0xF)) *
           e4m3_decode(p.w_scales[i / 16]);
  }
  ExactOutputs r;
  r.y.resize(T * N);
  r.bound.resize(T * N);
  for (size_t g = 0; g < G; ++g) {
    for (size_t t = p.group_offsets[g]; t < static_cast<size_t>(p.group_offsets[g + 1]); ++t) {
      const double scale = static_cast<double>(p.x_scales[t]) * p.w_global[g];
      for (size_t n = 0; n < N; ++n) {
        const double* wr = w.data() + (g * N + n) * K;
        const double* xr = x.data() + t * K;
        double s = 0, s_abs = 0;
        for (size_t k = 0; k < K; ++k) {
          const double prod = xr[k] * wr[k];
          s += prod;
          s_abs += std::fabs(prod);
        }
        r.y[t * N + n] = scale * s;
        r.bound[t * N + n] =
            static_cast<double>(K + 3) * kFp32Unit * std::fabs(scale) * s_abs + kTinyAbs;
      }
    }
  }
  return r;
}

}  // namespace testing
}  // namespace fp4arena

#include "challenges/nvfp4_quantize/quantize_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "harness/rng.h"
#include "harness/validate.h"
#include "reference/parallel.h"

namespace fp4arena {
namespace {

// Midpoints between neighbouring E2M1 magnitudes and the magnitudes themselves.
constexpr float kMidpoints[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
constexpr float kMagnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

// The designs aim at power-of-two global scales: rule 0's 2688 / 5.25 = 512, rule 1's
// 1536 / 6 = 256. The tensor's amax sits at element (0, 0).
float design_amax(QuantFormat f) {
  return f == QuantFormat::kNvfp4Rule0 ? 5.25f : 6.0f;
}
float design_gs(QuantFormat f) {
  return f == QuantFormat::kNvfp4Rule0 ? 512.0f : 256.0f;
}

float sign_of(Rng& rng) {
  return (rng.next() >> 63) ? -1.0f : 1.0f;
}

// Shuffles v[0..n) with rng (Fisher-Yates).
void shuffle(float* v, int n, Rng& rng) {
  for (int i = n - 1; i > 0; --i) std::swap(v[i], v[rng.below(uint32_t(i + 1))]);
}

// One block of a "midpoints" tensor: its amax is 6 * unit and every other element an exact
// E2M1 midpoint or magnitude times unit, so that with power-of-two scales every evaluation
// order sees the midpoints exactly. Rule 1 uses a fixed mix for which the 6 candidate's
// squared error (8 midpoints, 0.0625 unit^2 each) is below the 4 candidate's (0.75 unit^2).
void midpoint_block(QuantFormat f, float unit, Rng& rng, float* b) {
  const int n = quant_block(f);
  if (f == QuantFormat::kNvfp4Rule1) {
    const float mix[16] = {6.0f,  0.5f,  -0.5f, 1.0f,  -1.0f, 2.0f,  -2.0f, 3.0f,
                           0.25f, 0.25f, 0.75f, 0.75f, 1.25f, 1.25f, 1.75f, 1.75f};
    for (int i = 0; i < 16; ++i) b[i] = mix[i] * (i ? sign_of(rng) : 1.0f) * unit;
  } else {
    b[0] = 6.0f * sign_of(rng) * unit;
    for (int i = 1; i < n; ++i) {
      const bool mid = rng.below(4) != 0;  // three in four are midpoints
      const float m = mid ? kMidpoints[rng.below(7)] : kMagnitudes[rng.below(7)];
      b[i] = m * sign_of(rng) * unit;
    }
  }
  shuffle(b, n, rng);
}

// One block of a "saturate" tensor (NVFP4, global scale design_gs): a block scale s chosen
// so that its E4M3 rounding S lies below it and the block's largest elements reach
// 6 * s / S > 6 before the E2M1 rounding saturates them, or so that S is 0.
void saturate_block(QuantFormat f, Rng& rng, float* b) {
  float s;
  switch (rng.below(3)) {
    case 0:  // normal E4M3 scale, rounded down by 2-5%: elements up to 6.3
      s = std::ldexp(1.0f + 0.02f + 0.03f * float(rng.uniform()), int(rng.below(13)) - 6);
      break;
    case 1:  // subnormal E4M3 scale 2^-9 for s up to 1.45 * 2^-9: elements up to 8.7
      s = std::ldexp(1.26f + 0.19f * float(rng.uniform()), -9);
      break;
    default:  // s below half the smallest subnormal: scale 0, every code 0 (for rule 1 also
              // the 4 candidate's 1.5 s)
      s = std::ldexp(0.3f + 0.19f * float(rng.uniform()), -9);
      if (f == QuantFormat::kNvfp4Rule1) s /= 1.5f;
      break;
  }
  const float bmax = bf16_round(s * 6.0f / design_gs(f));
  for (int i = 0; i < 16; ++i) {
    // Half the elements near the block's amax, so that several saturate.
    const float mag =
        i == 0 ? 1.0f : (i < 8 ? 0.9f + 0.1f * float(rng.uniform()) : float(rng.uniform()));
    b[i] = bf16_round(std::min(bmax, mag * bmax) * sign_of(rng));
  }
  shuffle(b, 16, rng);
}

// A BF16 subnormal (k * 2^-133, k in 1..127) or, unless `subnormal_only`, one time in five
// a normal value below 2^-115, with a random sign.
float tiny_value(Rng& rng, bool subnormal_only) {
  if (subnormal_only || rng.below(5) != 0) {
    return std::ldexp(float(1 + rng.below(127)), -133) * sign_of(rng);
  }
  return bf16_round(std::ldexp(float(1.0 + rng.uniform()), -126 + int(rng.below(11)))) *
         sign_of(rng);
}

// The random generators, by name (the fixed examples are made apart).
enum class Generator {
  kNormal,
  kOutlier,
  kZeros,
  kZeroBlocks,
  kMidpoints,
  kSaturate,
  kScaleEdges,
  kSubnormals,
  kWideRange,
  kActivations,
  kWeights
};

// The random generator named `name`: false when there is none (the examples are not).
bool find_generator(const std::string& name, Generator* g) {
  static const std::pair<const char*, Generator> kNames[] = {
      {"normal", Generator::kNormal},
      {"outlier", Generator::kOutlier},
      {"zeros", Generator::kZeros},
      {"zero_blocks", Generator::kZeroBlocks},
      {"midpoints", Generator::kMidpoints},
      {"saturate", Generator::kSaturate},
      {"scale_edges", Generator::kScaleEdges},
      {"subnormals", Generator::kSubnormals},
      {"wide_range", Generator::kWideRange},
      {"activations", Generator::kActivations},
      {"weights", Generator::kWeights}};
  for (const auto& n : kNames) {
    if (name == n.first) {
      *g = n.second;
      return true;
    }
  }
  return false;
}

// Block `index` (row-major over the tensor's blocks) of generator g: B values into b, drawn
// from brng. `row_scale` is the weights' per-row scale; `outlier` the activations' outlier
// flag of each of the block's columns.
void fill_block(Generator g, QuantFormat f, uint64_t index, float row_scale, const uint8_t* outlier,
                Rng& brng, float* b) {
  const int B = quant_block(f);
  const bool nv = f != QuantFormat::kMxfp4;
  switch (g) {
    case Generator::kNormal:
    case Generator::kOutlier:
      for (int i = 0; i < B; ++i) b[i] = bf16_round(float(brng.normal()));
      break;
    case Generator::kZeroBlocks: {
      const bool zero = index == 1 || (index != 0 && brng.below(3) == 0);
      for (int i = 0; i < B; ++i) b[i] = zero ? 0.0f : bf16_round(float(brng.normal()));
      break;
    }
    case Generator::kMidpoints: {
      // Block scales 2^j: E4M3 normal and subnormal powers of two (NVFP4), any E8M0 one
      // in a wide range (MXFP4).
      const int j = nv ? int(brng.below(18)) - 9 : int(brng.below(61)) - 30;
      const float unit = nv ? std::ldexp(1.0f, j) / design_gs(f) : std::ldexp(1.0f, j);
      midpoint_block(f, unit, brng, b);
      break;
    }
    case Generator::kSaturate:
      saturate_block(f, brng, b);
      break;
    case Generator::kScaleEdges: {
      // bmax exactly 6 * 2^j (scale 2^j, an element at 6) or the next BF16 above it (scale
      // 2^(j+1): rounding the scale down instead saturates that element).
      const int j = int(brng.below(41)) - 20;
      const bool above = brng.below(2) != 0;
      const float bmax = std::ldexp(above ? 6.0f * (1.0f + 1.0f / 128.0f) : 6.0f, j);
      for (int i = 0; i < B; ++i) {
        b[i] = i == 0 ? bmax : bf16_round(bmax * float(brng.uniform()) * sign_of(brng));
      }
      shuffle(b, B, brng);
      break;
    }
    case Generator::kSubnormals: {
      // Seven blocks in ten hold subnormals only (their codes are not all zero); the rest
      // mix in normal values, next to which the subnormals round to zero.
      const bool only = brng.below(10) < 7;
      for (int i = 0; i < B; ++i) b[i] = tiny_value(brng, only);
      break;
    }
    case Generator::kWideRange: {
      const int e = int(brng.below(81)) - 40;
      for (int i = 0; i < B; ++i) b[i] = bf16_round(std::ldexp(float(brng.normal()), e));
      break;
    }
    case Generator::kActivations:
      for (int i = 0; i < B; ++i) {
        float v = float(brng.normal());
        if (outlier[i]) v *= 20.0f;  // outlier channel
        if (brng.below(1000) == 0) v *= 10.0f + 40.0f * float(brng.uniform());
        b[i] = bf16_round(v);
      }
      break;
    case Generator::kWeights:
      for (int i = 0; i < B; ++i) b[i] = bf16_round(float(brng.normal()) * row_scale);
      break;
    case Generator::kZeros:
      break;
  }
}

bool fixed_example(const std::string& name, QuantFormat f, int64_t M, int64_t K,
                   std::vector<float>* x, std::string* err) {
  // The worked examples of the challenges' READMEs.
  if (name == "example_four_over_six") {
    if (M != 1 || K != 32) {
      *err = "generator 'example_four_over_six' makes a 1 x 32 tensor";
      return false;
    }
    // Block 0: amax 6 (global scale 256); the 4 candidate wins. Block 1: the 6 candidate.
    const float v[32] = {6.0f, 4.5f, -4.5f, 3.0f, 2.25f, -2.25f, 1.5f,   0.75f, -0.75f, 0.0f, 0.0f,
                         0.0f, 0.0f, 0.0f,  0.0f, 0.0f,  1.5f,   -0.75f, 0.5f,  0.25f,  0.0f, 0.0f,
                         0.0f, 0.0f, 0.0f,  0.0f, 0.0f,  0.0f,   0.0f,   0.0f,  0.0f,   0.0f};
    x->assign(v, v + 32);
    return true;
  }
  if (f == QuantFormat::kMxfp4) {
    if (M != 2 || K != 64) {
      *err = "generator 'example' makes a 2 x 64 tensor for MXFP4";
      return false;
    }
    x->assign(size_t(128), 0.0f);
    // Row 0, block 0: amax 6 -> scale 2^0. Block 1: amax 7 -> scale 2^1 (7/6 rounds up).
    const float b0[4] = {6.0f, -2.5f, 0.75f, 0.1f};
    const float b1[4] = {7.0f, -3.0f, 1.0f, 5.0f};
    // Row 1, block 0: all zero (scale code 0). Block 1: amax 2^-10 * 3 -> scale 2^-11.
    const float b3[3] = {0.0029296875f, -0.0009765625f, 0.00048828125f};
    std::copy(b0, b0 + 4, x->begin());
    std::copy(b1, b1 + 4, x->begin() + 32);
    std::copy(b3, b3 + 3, x->begin() + 96);
    return true;
  }
  if (M != 2 || K != 32) {
    *err = "generator 'example' makes a 2 x 32 tensor for NVFP4";
    return false;
  }
  x->assign(size_t(64), 0.0f);
  // Row 0, block 0: the amax 5.25 (rule 0: global scale 512, block scale 448).
  const float b0[4] = {5.25f, -2.625f, 1.3125f, 0.5f};
  // Row 0, block 1: amax 0.75 -> block scale 64, v = 8 x.
  const float b1[4] = {0.75f, -0.1875f, 0.30078125f, 0.046875f};
  // Row 1, block 0: all zero. Row 1, block 1: amax 2^-5 -> block scale 2.667 -> E4M3 2.75.
  const float b3[3] = {0.03125f, -0.015625f, 0.0078125f};
  std::copy(b0, b0 + 4, x->begin());
  std::copy(b1, b1 + 4, x->begin() + 16);
  std::copy(b3, b3 + 3, x->begin() + 48);
  return true;
}

}  // namespace

int quant_block(QuantFormat f) {
  return f == QuantFormat::kMxfp4 ? 32 : 16;
}

float bf16_round(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  if ((b & 0x7F800000u) == 0x7F800000u) return v;  // infinity or NaN: as is
  b += 0x7FFFu + ((b >> 16) & 1u);
  b &= 0xFFFF0000u;
  float r;
  std::memcpy(&r, &b, 4);
  return r;
}

uint16_t bf16_bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return uint16_t(b >> 16);
}

std::vector<uint8_t> bf16_buffer(const std::vector<float>& x) {
  std::vector<uint8_t> out(x.size() * 2);
  ParallelFor(ResolveThreads(0), (x.size() + 65535) / 65536, [&](size_t c) {
    for (size_t i = c * 65536; i < std::min(x.size(), (c + 1) * 65536); ++i) {
      const uint16_t h = bf16_bits(x[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  });
  return out;
}

std::vector<float> bf16_buffer_values(const std::vector<uint8_t>& bytes) {
  std::vector<float> out(bytes.size() / 2);
  ParallelFor(ResolveThreads(0), (out.size() + 65535) / 65536, [&](size_t c) {
    for (size_t i = c * 65536; i < std::min(out.size(), (c + 1) * 65536); ++i) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      out[i] = bf16_bits_to_float(h);
    }
  });
  return out;
}

bool quantize_generator_known(const std::string& name, QuantFormat f) {
  if (name == "example") return true;
  if (name == "example_four_over_six") return f == QuantFormat::kNvfp4Rule1;
  Generator g;
  if (!find_generator(name, &g)) return false;
  if (g == Generator::kSaturate) return f != QuantFormat::kMxfp4;
  if (g == Generator::kScaleEdges) return f == QuantFormat::kMxfp4;
  return true;
}

bool make_quantize_input(const std::string& name, QuantFormat f, int64_t M, int64_t K,
                         uint64_t seed, std::vector<float>* x, std::string* err) {
  const int B = quant_block(f);
  if (!quantize_generator_known(name, f)) {
    *err = "unknown generator '" + name + "' for this format";
    return false;
  }
  if (M <= 0 || K <= 0 || K % B != 0) {
    *err = "M and K must be positive and K a multiple of " + std::to_string(B);
    return false;
  }
  if (name == "example" || name == "example_four_over_six") {
    return fixed_example(name, f, M, K, x, err);
  }
  x->assign(size_t(M * K), 0.0f);
  Generator g = Generator::kZeros;
  find_generator(name, &g);  // known: checked above
  const bool nv = f != QuantFormat::kMxfp4;
  // Element (0, 0) carries the designed amax of the generators that need one.
  const bool pinned_amax = nv && (g == Generator::kMidpoints || g == Generator::kSaturate);
  const int64_t outlier_at = int64_t(Rng(seed, 7, 0).next() % uint64_t(M * K));
  const float outlier = 30000.0f * (Rng(seed, 7, 1).next() & 1 ? -1.0f : 1.0f);
  // The activations' outlier channels: one column in 64, the same in every row.
  std::vector<uint8_t> outlier_column;
  if (g == Generator::kActivations) {
    outlier_column.resize(size_t(K));
    for (int64_t c = 0; c < K; ++c) {
      outlier_column[size_t(c)] = Rng(seed, 3, uint64_t(c)).below(64) == 0;
    }
  }
  ParallelFor(ResolveThreads(0), size_t(M), [&](size_t row) {
    const int64_t r = int64_t(row);
    float* xr = x->data() + r * K;
    Rng rng(seed, 1, uint64_t(r));
    const float row_scale = g == Generator::kWeights
                                ? 0.02f * (0.5f + 1.5f * float(Rng(seed, 4, uint64_t(r)).uniform()))
                                : 1.0f;
    for (int64_t b0 = 0; b0 < K; b0 += B) {
      const uint64_t index = uint64_t(r * (K / B) + b0 / B);
      Rng brng(seed, 2, index);
      fill_block(g, f, index, row_scale, outlier_column.data() + (outlier_column.empty() ? 0 : b0),
                 brng, xr + b0);
    }
    if (r == 0 && pinned_amax) {
      if (g == Generator::kMidpoints && f == QuantFormat::kNvfp4Rule1) {
        midpoint_block(f, 1.0f, rng, xr);  // amax 6: block scale 256, a power of two
        for (int i = 0; i < 16; ++i) {
          if (std::fabs(xr[i]) == 6.0f) std::swap(xr[i], xr[0]);
        }
        xr[0] = 6.0f;
      } else {
        xr[0] = design_amax(f);
      }
    }
    if (g == Generator::kSubnormals && r == 0) xr[0] = std::ldexp(1.0f, -114);
  });
  if (g == Generator::kOutlier) (*x)[size_t(outlier_at)] = outlier;
  return true;
}

}  // namespace fp4arena

// Input tensors for the quantization challenges (nvfp4_quantize, and mxfp4_quantize, which
// includes this file): BF16 values, held as floats, made by named generators. Each generator is
// deterministic in (name, format, M, K, seed) and independent of the thread count. The challenges'
// READMEs describe what each one is for; the designs that rely on exact arithmetic (midpoints,
// saturate) are checked against the reference quantizer by the challenges' CPU tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fp4arena {

/// The quantizer a tensor is designed for: the generators that aim at rounding boundaries
/// need to know the global scale and block size.
enum class QuantFormat {
  kNvfp4Rule0,  ///< NVFP4, blocks of 16, global scale 2688 / amax
  kNvfp4Rule1,  ///< NVFP4 four over six, blocks of 16, global scale 1536 / amax
  kMxfp4,       ///< MXFP4, blocks of 32, no global scale
};

/// Block size of `f`: 16 or 32.
int quant_block(QuantFormat f);

/// The nearest BF16 value (round half to even), as a float.
float bf16_round(float v);

/// The BF16 bits of a float that is exactly a BF16 value.
uint16_t bf16_bits(float v);

/// The raw BF16 buffer of floats that are exactly BF16 values (two bytes each, as solve()
/// reads them).
std::vector<uint8_t> bf16_buffer(const std::vector<float>& x);

/// The floats of a raw BF16 buffer.
std::vector<float> bf16_buffer_values(const std::vector<uint8_t>& bytes);

/// True when `name` is a generator for `f`: example, example_four_over_six (rule 1 only),
/// normal, zeros, zero_blocks, midpoints, saturate (NVFP4 only), scale_edges (MXFP4 only),
/// subnormals, outlier, wide_range, activations, weights.
bool quantize_generator_known(const std::string& name, QuantFormat f);

/// Fills *x with M x K BF16 values (row-major, as floats). The examples need fixed shapes
/// (NVFP4: 2 x 32 and 1 x 32; MXFP4: 2 x 64); false + *err when the shape does not fit the
/// generator or the name is unknown. K must be a multiple of the format's block.
bool make_quantize_input(const std::string& name, QuantFormat f, int64_t M, int64_t K,
                         uint64_t seed, std::vector<float>* x, std::string* err);

}  // namespace fp4arena

// nvfp4_quantize: the input generators and oracle glue of NVFP4 quantization (rule 0, the
// standard recipe, and rule 1, fouroversix's four over six). The math, the tie rule and the
// sets of acceptable codes are reference/fp4_quantize.h's; this file turns them into what
// the judge compares: exact codes with ties and their alternatives, and a global scale
// within 1 ulp. The acceptable element codes depend on the global scale the solution wrote
// (one ulp above or below the reference's moves exactly hit midpoints to one side), so
// condition() picks the matching set after the call.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "challenges/nvfp4_quantize/quantize_inputs.h"
#include "harness/challenge.h"
#include "harness/copy_yardstick.h"
#include "reference/fp4_quantize.h"
#include "reference/parallel.h"

namespace fp4arena {
namespace {

QuantFormat format_of(int64_t rule) {
  return rule == kNvfp4RuleFourOverSix ? QuantFormat::kNvfp4Rule1 : QuantFormat::kNvfp4Rule0;
}

// The case's rule: params {"rule": 0 or 1}, required. False + *err otherwise.
bool case_rule(const CaseSpec& c, int64_t* rule, std::string* err) {
  auto it = c.params.find("rule");
  if (it == c.params.end() || !it->is_number_integer() ||
      (it->get<int64_t>() != kNvfp4RuleStatic6 && it->get<int64_t>() != kNvfp4RuleFourOverSix)) {
    *err = "case '" + c.name + "': params.rule must be 0 (block amax to 6) or 1 (four over six)";
    return false;
  }
  for (auto p = c.params.begin(); p != c.params.end(); ++p) {
    if (p.key() != "rule") {
      *err = "case '" + c.name + "': unknown params." + p.key() + " (only rule is known)";
      return false;
    }
  }
  *rule = it->get<int64_t>();
  return true;
}

// The packed E2M1 output: the reference's codes, a tie wherever `accept` (one 16-bit mask
// per element) holds more than one code, and as many alternative buffers as the largest set
// needs (alternative j holds an element's j-th other code, the last one repeated). Spread
// over threads by chunks of whole bytes (two elements share one).
ExpectedOutput codes_expected(const QuantizedFp4& q, const std::vector<uint16_t>& accept) {
  ExpectedOutput e;
  e.bytes = q.packed;
  const size_t n = accept.size(), bytes = q.packed.size();
  constexpr size_t kChunk = size_t(1) << 16;  // bytes
  const size_t chunks = (bytes + kChunk - 1) / kChunk;
  const int threads = ResolveThreads(0);
  std::vector<int> chunk_extra(chunks, 0);
  ParallelFor(threads, chunks, [&](size_t c) {
    const uint16_t* mask = accept.data();
    const size_t end = std::min(n, 2 * (c + 1) * kChunk);
    unsigned most = 1;
    for (size_t i = 2 * c * kChunk; i < end; ++i) {
      // The mask's popcount by halves, without a branch or a library call (which a portable
      // build's __builtin_popcount is), so that the loop vectorises.
      unsigned m = mask[i];
      m = m - ((m >> 1) & 0x5555u);
      m = (m & 0x3333u) + ((m >> 2) & 0x3333u);
      m = (m + (m >> 4)) & 0x0F0Fu;
      m = (m + (m >> 8)) & 0x1Fu;
      most = std::max(most, m);
    }
    chunk_extra[c] = int(most) - 1;
  });
  int extra = 0;
  for (int x : chunk_extra) extra = std::max(extra, x);
  if (extra == 0) return e;
  e.tie.assign(n, 0);
  e.alternatives.assign(size_t(extra), q.packed);
  ParallelFor(threads, chunks, [&](size_t c) {
    for (size_t i = 2 * c * kChunk; i < std::min(n, 2 * (c + 1) * kChunk); ++i) {
      if (!(accept[i] & (accept[i] - 1))) continue;  // one code: the reference's own
      const int own = (q.packed[i / 2] >> (i % 2 ? 4 : 0)) & 0xF;
      const uint16_t others = uint16_t(accept[i] & ~(1u << own));
      e.tie[i] = 1;
      int j = 0, last = own;
      for (int code = 0; code < 16; ++code) {
        if (!((others >> code) & 1)) continue;
        last = code;
        uint8_t& byte = e.alternatives[size_t(j)][i / 2];
        byte = uint8_t(i % 2 ? (byte & 0x0F) | (code << 4) : (byte & 0xF0) | code);
        ++j;
      }
      for (; j < extra; ++j) {
        uint8_t& byte = e.alternatives[size_t(j)][i / 2];
        byte = uint8_t(i % 2 ? (byte & 0x0F) | (last << 4) : (byte & 0xF0) | last);
      }
    }
  });
  return e;
}

// The E4M3 scales: the reference's, a tie where scale_options names more than one code.
ExpectedOutput scales_expected(const QuantizedFp4& q) {
  ExpectedOutput e;
  e.bytes = q.scales;
  const size_t n = q.scales.size();
  int extra = 0;
  for (size_t k = 0; k < n; ++k) {
    const uint8_t* opt = q.scale_options.data() + k * kMaxScaleOptions;
    int distinct = 0;
    for (int j = 1; j < kMaxScaleOptions; ++j) distinct += opt[j] != opt[0];
    extra = std::max(extra, distinct);
  }
  if (extra == 0) return e;
  e.tie.assign(q.scale_tie.begin(), q.scale_tie.end());
  e.alternatives.assign(size_t(extra), q.scales);
  for (size_t k = 0; k < n; ++k) {
    const uint8_t* opt = q.scale_options.data() + k * kMaxScaleOptions;
    for (int j = 0; j < extra; ++j) e.alternatives[size_t(j)][k] = opt[1 + j];
  }
  return e;
}

// The reference's answer for the set, without the tie codes the judge does not read, and
// with the global scale's neighbours' masks where `gs_neighbours` (Fp4RefOutputs).
bool quantize(const ProblemData& in, bool gs_neighbours, QuantizedFp4* q, std::string* err) {
  const int64_t M = in.dims.at("M"), K = in.dims.at("K");
  const int64_t rule = int64_t(in.scalars.at("rule"));
  const std::vector<float> x = bf16_buffer_values(in.buffers.at("x"));
  *q = nvfp4_quantize_ref(x.data(), int(M), int(K), int(rule), 0,
                          Fp4RefOutputs{gs_neighbours, false});
  if (q->rows == 0) {
    *err = "the reference quantizer refused M=" + std::to_string(M) + " K=" + std::to_string(K) +
           " rule=" + std::to_string(rule);
    return false;
  }
  return true;
}

class Nvfp4Quantize : public Challenge {
 public:
  bool check_case(const CaseSpec& c, std::string* err) const override {
    int64_t rule = 0;
    if (!case_rule(c, &rule, err)) return false;
    if (!quantize_generator_known(c.generator, format_of(rule))) {
      *err = "case '" + c.name + "': unknown generator '" + c.generator + "' for rule " +
             std::to_string(rule);
      return false;
    }
    return true;
  }

  bool generate(const CaseSpec& c, uint64_t seed, ProblemData* out,
                std::string* err) const override {
    const int64_t M = c.dims.at("M"), K = c.dims.at("K");
    int64_t rule = 0;
    if (!case_rule(c, &rule, err)) return false;
    std::vector<float> x;
    if (!make_quantize_input(c.generator, format_of(rule), M, K, seed, &x, err)) {
      *err = "case '" + c.name + "': " + *err;
      return false;
    }
    out->dims = c.dims;
    out->scalars["rule"] = double(rule);
    out->buffers["x"] = bf16_buffer(x);
    return true;
  }

  bool oracle(const ProblemData& in, OracleDevice, Expected* out, std::string* err) const override {
    QuantizedFp4 q;
    if (!quantize(in, false, &q, err)) return false;
    (*out)["q"] = codes_expected(q, q.element_accept);
    (*out)["scales"] = scales_expected(q);
    (*out)["global_scale"].values = {q.global_scale};
    return true;
  }

  // A global scale one ulp off the reference's (which the ulp comparison accepts) sees
  // exactly hit midpoints a hair to one side: there the codes on that side count too.
  bool condition(const ProblemData& in, const std::map<std::string, std::vector<uint8_t>>& written,
                 Expected* expected, std::string* err) const override {
    auto it = written.find("global_scale");
    if (it == written.end() || it->second.size() != 4) return true;
    float got;
    std::memcpy(&got, it->second.data(), 4);
    const float ref = expected->at("global_scale").values.at(0);
    const bool up = got == std::nextafter(ref, INFINITY);
    const bool down = got == std::nextafter(ref, -INFINITY);
    if (!up && !down) return true;  // the same scale, or one the ulp comparison rejects
    QuantizedFp4 q;
    if (!quantize(in, true, &q, err)) return false;
    (*expected)["q"] = codes_expected(q, up ? q.element_accept_gs_up : q.element_accept_gs_down);
    return true;
  }

  std::string yardstick_name() const override {
    return "device-to-device copy of the same number of bytes";
  }

  std::unique_ptr<Yardstick> make_yardstick(const ProblemData& in,
                                            std::string* err) const override {
    const int64_t M = in.dims.at("M"), K = in.dims.at("K");
    return make_copy_yardstick(size_t(2 * M * K + M * K / 2 + M * K / 16 + 4), err);
  }
};

const bool kRegistered = register_challenge(
    "nvfp4_quantize", [] { return std::unique_ptr<Challenge>(new Nvfp4Quantize()); });

}  // namespace
}  // namespace fp4arena

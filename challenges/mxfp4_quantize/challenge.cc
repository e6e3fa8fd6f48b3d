// mxfp4_quantize: the input generators and oracle glue of MXFP4 quantization (OCP MX E2M1
// codes, one E8M0 scale per block of 32, fouroversix's scale choice). Dividing by a power of
// two is exact, so every correct kernel writes the reference's codes: both outputs are
// compared exactly (reference/fp4_quantize.h says why no ties arise). The generators are
// nvfp4_quantize's (challenges/nvfp4_quantize/quantize_inputs.h).
#include "harness/challenge.h"
#include "challenges/nvfp4_quantize/quantize_inputs.h"
#include "harness/copy_yardstick.h"
#include "reference/fp4_quantize.h"

namespace fp4arena {
namespace {

class Mxfp4Quantize : public Challenge {
 public:
  bool check_case(const CaseSpec& c, std::string* err) const override {
    if (!quantize_generator_known(c.generator, QuantFormat::kMxfp4)) {
      *err = "case '" + c.name + "': unknown generator '" + c.generator + "'";
      return false;
    }
    if (!c.params.empty()) {
      *err = "case '" + c.name + "': mxfp4_quantize's generators take no params";
      return false;
    }
    return true;
  }

  bool generate(const CaseSpec& c, uint64_t seed, ProblemData* out,
                std::string* err) const override {
    std::vector<float> x;
    if (!make_quantize_input(c.generator, QuantFormat::kMxfp4, c.dims.at("M"), c.dims.at("K"), seed,
                             &x, err)) {
      *err = "case '" + c.name + "': " + *err;
      return false;
    }
    out->dims = c.dims;
    out->buffers["x"] = bf16_buffer(x);
    return true;
  }

  bool oracle(const ProblemData& in, OracleDevice, Expected* out, std::string* err) const override {
    const int64_t M = in.dims.at("M"), K = in.dims.at("K");
    const std::vector<float> x = bf16_buffer_values(in.buffers.at("x"));
    // Only the codes and scales are compared (MXFP4 has no ties): no optional outputs.
    QuantizedFp4 q = mxfp4_quantize_ref(x.data(), int(M), int(K), 0, Fp4RefOutputs{false, false});
    if (q.rows == 0) {
      *err = "the reference quantizer refused M=" + std::to_string(M) + " K=" + std::to_string(K);
      return false;
    }
    (*out)["q"].bytes = std::move(q.packed);
    (*out)["scales"].bytes = std::move(q.scales);
    return true;
  }

  std::string yardstick_name() const override {
    return "device-to-device copy of the same number of bytes";
  }

  std::unique_ptr<Yardstick> make_yardstick(const ProblemData& in,
                                            std::string* err) const override {
    const int64_t M = in.dims.at("M"), K = in.dims.at("K");
    return make_copy_yardstick(size_t(2 * M * K + M * K / 2 + M * K / 32), err);
  }
};

const bool kRegistered = register_challenge(
    "mxfp4_quantize", [] { return std::unique_ptr<Challenge>(new Mxfp4Quantize()); });

}  // namespace
}  // namespace fp4arena

// stream_read: a test-only challenge whose best solution only reads its input once: the
// judged streaming floor (tests/bench/stream_floor.cu) and the judge's timing tests run it.
// Linked into the test and benchmark binaries only; tests/solutions/stream_read/ has its
// solution.
//
//   sum = the sum modulo 2^32 over w of the first 32-bit lane (little-endian) of the 16-byte
//         word x[16w..], as an int32 (spec_version 2; version 1 was their XOR)
#include <algorithm>
#include <cstring>

#include "harness/challenge.h"
#include "harness/copy_yardstick.h"
#include "harness/rng.h"
#include "reference/parallel.h"

namespace fp4arena {
namespace {

class StreamRead : public Challenge {
 public:
  bool check_case(const CaseSpec& c, std::string* err) const override {
    if (c.generator != "random") {
      *err = "case '" + c.name + "': unknown generator '" + c.generator + "'";
      return false;
    }
    return true;
  }

  bool generate(const CaseSpec& c, uint64_t seed, ProblemData* out,
                std::string* err) const override {
    (void)err;
    const int64_t words = c.dims.at("W");
    std::vector<uint8_t>& x = out->buffers["x"];
    x.resize(size_t(words) * 16);
    // One counter-based stream per 64 KiB chunk, filled in parallel.
    const int64_t chunk = 8192;  // 8-byte values per chunk
    const int64_t values = words * 2;
    parallel_for((values + chunk - 1) / chunk, [&](int64_t first, int64_t last) {
      for (int64_t c = first; c < last; ++c) {
        Rng rng(seed, 7, uint64_t(c));
        for (int64_t i = c * chunk; i < std::min(values, (c + 1) * chunk); ++i) {
          const uint64_t v = rng.next();
          std::memcpy(&x[size_t(i) * 8], &v, 8);
        }
      }
    });
    out->dims = c.dims;
    return true;
  }

  bool oracle(const ProblemData& in, OracleDevice, Expected* out, std::string* err) const override {
    (void)err;
    const std::vector<uint8_t>& x = in.buffers.at("x");
    uint32_t acc = 0;
    for (size_t i = 0; i + 16 <= x.size(); i += 16) {
      uint32_t lane;
      std::memcpy(&lane, &x[i], 4);
      acc += lane;  // unsigned: wraps modulo 2^32
    }
    ExpectedOutput& sum = (*out)["sum"];
    sum.bytes.resize(4);
    std::memcpy(sum.bytes.data(), &acc, 4);
    return true;
  }

  std::string yardstick_name() const override { return "device-to-device copy of the same bytes"; }

  std::unique_ptr<Yardstick> make_yardstick(const ProblemData& in,
                                            std::string* err) const override {
    return make_copy_yardstick(size_t(16 * in.dims.at("W") + 4), err);
  }
};

const bool kRegistered =
    register_challenge("stream_read", [] { return std::unique_ptr<Challenge>(new StreamRead()); });

}  // namespace
}  // namespace fp4arena

#include "harness/device_limits.h"

namespace fp4arena {
namespace {

struct ArchRow {
  int cc_major, cc_minor;  // cc_minor -1: any minor
  // Dense FLOP/clk/SM: fp16 (FP32 accumulate), fp8, fp4.
  double fp16, fp8, fp4;
  // Upper bounds for plausibility checks on records.
  int max_sms;
  double max_sm_mhz, max_mem_mhz;
  int max_bus_bits;
};

// Sources:
// - sm_80 (A100): NVIDIA A100 Tensor Core GPU Architecture whitepaper: 312 TFLOPS dense
//   FP16 on 108 SMs at 1410 MHz = 2048 FLOP/clk/SM; no FP8 or FP4 tensor cores.
// - sm_90 (H100/H200): NVIDIA H100 Tensor Core GPU Architecture whitepaper: per SM and
//   clock, 1024 dense FP16 FMA (4096 FLOP) and 2048 dense FP8 FMA (8192 FLOP); 989.4 /
//   1978.9 TFLOPS dense at 132 SMs and 1830 MHz. Hopper has no FP4 tensor cores: E2M1
//   values are exact in E4M3, so the fastest exact path for FP4 operands is the FP8 rate.
// - sm_100 (B200): NVIDIA Blackwell datasheet (HGX B200): 2.25 / 4.5 / 9 PFLOPS dense
//   FP16 / FP8 / FP4 = 8192 / 16384 / 32768 FLOP/clk/SM at 148 SMs.
// The judge multiplies by the device's own SM count and rated maximum SM clock, so the
// limit is at or above what the datasheet quotes for the part.
// DRAM: 2 transfers per memory clock x bus width / 8 bytes (H200: 3201 MHz x 6144 bits =
// 4917 GB/s; H100 SXM: 2619 MHz x 5120 bits = 3352 GB/s, the datasheet's 3.35 TB/s).
constexpr ArchRow kTable[] = {
    {8, 0, 2048, 0, 0, 128, 2000, 2000, 5120},
    {9, 0, 4096, 8192, 8192, 144, 2200, 3500, 6144},
    {10, 0, 8192, 16384, 32768, 160, 2400, 4500, 8192},
};

const ArchRow* row_for(int cc_major, int cc_minor) {
  for (const ArchRow& r : kTable) {
    if (r.cc_major == cc_major && (r.cc_minor == -1 || r.cc_minor == cc_minor)) return &r;
  }
  return nullptr;
}

}  // namespace

const char* limit_name(LimitKind k) {
  switch (k) {
    case LimitKind::kFp16Dense:
      return "fp16_dense";
    case LimitKind::kFp8Dense:
      return "fp8_dense";
    case LimitKind::kFp4Dense:
      return "fp4_dense";
    case LimitKind::kDram:
      return "dram";
  }
  return "?";
}

bool parse_limit(const std::string& name, LimitKind* out) {
  for (LimitKind k :
       {LimitKind::kFp16Dense, LimitKind::kFp8Dense, LimitKind::kFp4Dense, LimitKind::kDram}) {
    if (name == limit_name(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

std::vector<std::string> limit_names() {
  return {"fp16_dense", "fp8_dense", "fp4_dense", "dram"};
}

double dense_flops_per_clock_per_sm(LimitKind k, int cc_major, int cc_minor) {
  const ArchRow* r = row_for(cc_major, cc_minor);
  if (!r) return 0;
  switch (k) {
    case LimitKind::kFp16Dense:
      return r->fp16;
    case LimitKind::kFp8Dense:
      return r->fp8;
    case LimitKind::kFp4Dense:
      return r->fp4;
    case LimitKind::kDram:
      return 0;
  }
  return 0;
}

double limit_value(LimitKind k, const DeviceShape& d) {
  if (k == LimitKind::kDram) {
    if (!row_for(d.cc_major, d.cc_minor)) return 0;
    return 2.0 * d.mem_clock_max_mhz * 1e6 * (d.mem_bus_width_bits / 8.0) / 1e9;
  }
  return double(d.sm_count) * d.sm_clock_max_mhz * 1e6 *
         dense_flops_per_clock_per_sm(k, d.cc_major, d.cc_minor) / 1e12;
}

bool plausible_device(const DeviceShape& d, std::string* why) {
  const ArchRow* r = row_for(d.cc_major, d.cc_minor);
  if (!r) {
    *why = "compute capability " + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) +
           " is not in the judge's table of limits";
    return false;
  }
  auto bad = [why](const std::string& what) {
    *why = what;
    return false;
  };
  if (d.sm_count < 1 || d.sm_count > r->max_sms) {
    return bad("sm_count " + std::to_string(d.sm_count) + " is outside 1.." +
               std::to_string(r->max_sms) + " for this architecture");
  }
  if (!(d.sm_clock_max_mhz > 0) || d.sm_clock_max_mhz > r->max_sm_mhz) {
    return bad("sm_clock_max_mhz " + std::to_string(d.sm_clock_max_mhz) + " is outside (0, " +
               std::to_string(int(r->max_sm_mhz)) + "] for this architecture");
  }
  if (d.mem_clock_max_mhz < 0 || d.mem_clock_max_mhz > r->max_mem_mhz) {
    return bad("mem_clock_max_mhz " + std::to_string(d.mem_clock_max_mhz) + " is outside [0, " +
               std::to_string(int(r->max_mem_mhz)) + "] for this architecture");
  }
  if (d.mem_bus_width_bits < 0 || d.mem_bus_width_bits > r->max_bus_bits) {
    return bad("mem_bus_width_bits " + std::to_string(d.mem_bus_width_bits) + " is outside [0, " +
               std::to_string(r->max_bus_bits) + "] for this architecture");
  }
  return true;
}

}  // namespace fp4arena

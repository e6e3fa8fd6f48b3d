// What the judge knows about the GPU it runs on: identity, clocks, versions and the dense
// FP16 tensor peak used for "% of peak" and for rejecting impossible scores.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fp4arena {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  std::string arch;  ///< the architecture solutions are compiled for, e.g. sm_90a
  int sm_count = 0;
  int sm_clock_max_mhz = 0;   ///< the device's rated maximum SM clock
  int sm_clock_now_mhz = -1;  ///< NVML's current SM clock; -1 where NVML is unavailable
  int mem_clock_max_mhz = 0;
  long long l2_bytes = 0;
  long long memory_bytes = 0;
  std::string driver_version;  ///< NVML's driver version string; empty if unavailable
  std::string cuda_driver;     ///< e.g. "13.0"
  std::string cuda_runtime;    ///< e.g. "13.0"
  std::string pci_bus_id;
  double peak_fp16_dense_tflops = 0;  ///< 0 where the architecture is not in our table
};

/// Number of CUDA devices; 0 with *why set (no driver, no device, ...) when there are none.
int cuda_device_count(std::string* why);

/// Fills *out for device `index`; false + *err on a CUDA error.
bool query_device(int index, DeviceInfo* out, std::string* err);

/// Re-reads the current SM clock (NVML), e.g. right after a benchmark; -1 if unavailable.
int current_sm_clock_mhz(const DeviceInfo& d);

/// Dense FP16 tensor-core FLOP per clock per SM with FP32 accumulation: 4096 on Hopper
/// (sm_90), 2048 on Ampere A100 (sm_80), 8192 on Blackwell B200 (sm_100); 0 if unknown.
int dense_fp16_flops_per_clock_per_sm(int cc_major, int cc_minor);

nlohmann::json device_to_json(const DeviceInfo& d, const std::string& nvcc_version);

}  // namespace fp4arena

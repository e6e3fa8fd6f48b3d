// What the judge knows about the GPU it runs on: identity, clocks, memory bus and versions,
// all measured by the judge itself; its physical limits come from harness/device_limits.h.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "harness/device_limits.h"

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
  int mem_bus_width_bits = 0;
  long long l2_bytes = 0;
  long long memory_bytes = 0;
  std::string driver_version;  ///< NVML's driver version string; empty if unavailable
  std::string cuda_driver;     ///< e.g. "13.0"
  std::string cuda_runtime;    ///< e.g. "13.0"
  std::string pci_bus_id;
  /// The shape the table of limits needs.
  DeviceShape shape() const {
    return {
        cc_major,          cc_minor, sm_count, double(sm_clock_max_mhz), double(mem_clock_max_mhz),
        mem_bus_width_bits};
  }
  /// The physical limit of kind `k` in its metric's unit (0 where the table has none).
  double limit(LimitKind k) const { return limit_value(k, shape()); }
};

/// Number of CUDA devices; 0 with *why set (no driver, no device, ...) when there are none.
int cuda_device_count(std::string* why);

/// Fills *out for device `index`; false + *err on a CUDA error.
bool query_device(int index, DeviceInfo* out, std::string* err);

/// Re-reads the current SM clock (NVML), e.g. right after a benchmark; -1 if unavailable.
int current_sm_clock_mhz(const DeviceInfo& d);

nlohmann::json device_to_json(const DeviceInfo& d, const std::string& nvcc_version);

}  // namespace fp4arena

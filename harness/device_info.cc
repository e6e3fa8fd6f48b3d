#include "harness/device_info.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <fstream>

namespace fp4arena {
namespace {

// The few NVML entry points we use, loaded at run time so that the judge builds and runs
// where NVML is absent (CI) and needs no NVML headers.
struct Nvml {
  using InitFn = int (*)();
  using ByPciFn = int (*)(const char*, void**);
  using ClockFn = int (*)(void*, int, unsigned*);
  using DriverFn = int (*)(char*, unsigned);
  bool ok = false;
  ByPciFn by_pci = nullptr;
  ClockFn clock = nullptr;
  DriverFn driver = nullptr;

  static Nvml& get() {
    static Nvml n = load();
    return n;
  }
  static Nvml load() {
    Nvml n;
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return n;
    auto init = reinterpret_cast<InitFn>(dlsym(h, "nvmlInit_v2"));
    n.by_pci = reinterpret_cast<ByPciFn>(dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2"));
    n.clock = reinterpret_cast<ClockFn>(dlsym(h, "nvmlDeviceGetClockInfo"));
    n.driver = reinterpret_cast<DriverFn>(dlsym(h, "nvmlSystemGetDriverVersion"));
    n.ok = init && n.by_pci && n.clock && n.driver && init() == 0;
    return n;
  }
};

constexpr int kNvmlClockSm = 1;

std::string version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace

namespace {

// The first line of the NVIDIA kernel module's version file, or "" where no driver is loaded.
std::string loaded_driver() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return line;
}

// Why cudaGetDeviceCount failed with `e`, in words: no driver, no device, or a driver older
// than the runtime the judge was built with.
std::string no_gpu_cause(cudaError_t e) {
  const std::string code = std::string(" (") + cudaGetErrorName(e) + ")";
  const std::string driver = loaded_driver();
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) {
    if (driver.empty()) return "no NVIDIA driver is loaded on this machine" + code;
  }
  if (e == cudaErrorInsufficientDriver) {
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    return "the NVIDIA driver (" + driver + ") is older than the CUDA runtime " +
           std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) +
           " this judge was built with" + code;
  }
  if (e == cudaErrorNoDevice) return "the NVIDIA driver sees no GPU" + code;
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

}  // namespace

int cuda_device_count(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    *why = no_gpu_cause(e);
    cudaGetLastError();
    return 0;
  }
  if (n == 0) *why = "the CUDA driver reports no devices";
  return n;
}

bool query_device(int index, DeviceInfo* out, std::string* err) {
  cudaDeviceProp prop;
  cudaError_t e = cudaGetDeviceProperties(&prop, index);
  if (e != cudaSuccess) {
    *err = "cudaGetDeviceProperties(" + std::to_string(index) + "): " + cudaGetErrorString(e);
    return false;
  }
  DeviceInfo d;
  d.index = index;
  d.name = prop.name;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.l2_bytes = prop.l2CacheSize;
  d.memory_bytes = static_cast<long long>(prop.totalGlobalMem);
  int khz = 0;
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, index);
  d.sm_clock_max_mhz = khz / 1000;
  cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, index);
  d.mem_clock_max_mhz = khz / 1000;
  cudaDeviceGetAttribute(&d.mem_bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, index);
  int v = 0;
  cudaDriverGetVersion(&v);
  d.cuda_driver = version_string(v);
  cudaRuntimeGetVersion(&v);
  d.cuda_runtime = version_string(v);
  char bus[64] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, index) == cudaSuccess) d.pci_bus_id = bus;
  Nvml& nvml = Nvml::get();
  if (nvml.ok) {
    char ver[96] = {0};
    if (nvml.driver(ver, sizeof ver) == 0) d.driver_version = ver;
  }
  d.sm_clock_now_mhz = current_sm_clock_mhz(d);
  *out = d;
  return true;
}

int current_sm_clock_mhz(const DeviceInfo& d) {
  Nvml& nvml = Nvml::get();
  if (!nvml.ok || d.pci_bus_id.empty()) return -1;
  void* h = nullptr;
  unsigned mhz = 0;
  if (nvml.by_pci(d.pci_bus_id.c_str(), &h) != 0 || nvml.clock(h, kNvmlClockSm, &mhz) != 0) {
    return -1;
  }
  return static_cast<int>(mhz);
}

nlohmann::json device_to_json(const DeviceInfo& d, const std::string& nvcc_version) {
  return {{"name", d.name},
          {"index", d.index},
          {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
          {"arch", d.arch},
          {"sm_count", d.sm_count},
          {"sm_clock_max_mhz", d.sm_clock_max_mhz},
          {"sm_clock_now_mhz", d.sm_clock_now_mhz},
          {"mem_clock_max_mhz", d.mem_clock_max_mhz},
          {"l2_bytes", d.l2_bytes},
          {"memory_bytes", d.memory_bytes},
          {"driver_version", d.driver_version},
          {"cuda_driver", d.cuda_driver},
          {"cuda_runtime", d.cuda_runtime},
          {"nvcc", nvcc_version},
          {"mem_bus_width_bits", d.mem_bus_width_bits},
          {"limits",
           {{"fp16_dense", d.limit(LimitKind::kFp16Dense)},
            {"fp8_dense", d.limit(LimitKind::kFp8Dense)},
            {"fp4_dense", d.limit(LimitKind::kFp4Dense)},
            {"dram", d.limit(LimitKind::kDram)}}}};
}

}  // namespace fp4arena

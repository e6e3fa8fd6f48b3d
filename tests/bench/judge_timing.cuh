// How the benchmark programs under tests/bench time a launch: exactly as the judge times a
// solution's call (harness/pre_call.h: warm-up, L2 flush by memset, blocking kernel, events),
// and optionally from a clean L2 (a 256 MB read after the flush, so that the L2 holds clean
// lines, as under Nsight Compute). One place for both programs, with the start-up they share
// (the device they need, and a CUDA check that ends the program).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "harness/pre_call.h"

namespace fp4arena {
namespace bench {

/// Ends the program `program` with exit code 2 and a message naming `what` if `e` failed.
inline void check_or_exit(const char* program, cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s: %s\n", program, what, cudaGetErrorString(e));
  std::exit(2);
}

/// The current device's SM count and properties; ends the program `program` (exit code 2) on a
/// CUDA error or below sm_90, which its kernels need for `needs`.
inline void require_sm90(const char* program, const char* needs, int* sms, cudaDeviceProp* prop) {
  int device = 0, major = 0;
  check_or_exit(program, cudaGetDevice(&device), "cudaGetDevice");
  check_or_exit(program, cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device),
                "attribute");
  check_or_exit(program, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                "attribute");
  if (major < 9) {
    std::fprintf(stderr, "%s: needs sm_90 or later (%s)\n", program, needs);
    std::exit(2);
  }
  check_or_exit(program, cudaGetDeviceProperties(prop, device), "cudaGetDeviceProperties");
}

// Reads n 16-byte words; the sink keeps the loads alive (the data never matches it).
static __global__ void clean_l2_read_kernel(const uint4* p, size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    acc ^= p[i].x;
  if (acc == 0x9E3779B9u) *sink = 1;
}

/// The judge's pre-call steps plus a buffer whose read leaves the L2 clean.
class JudgeTiming {
 public:
  JudgeTiming() = default;
  JudgeTiming(const JudgeTiming&) = delete;
  JudgeTiming& operator=(const JudgeTiming&) = delete;
  ~JudgeTiming() {
    cudaFree(clean_);
    cudaFree(sink_);
  }

  /// PreCall::init and the 256 MB clean-read buffer on the current device. False with *err set.
  bool init(std::string* err) {
    if (!pre_.init(1.0, err)) return false;
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaMalloc(&clean_, kCleanBytes) != cudaSuccess || cudaMalloc(&sink_, 4) != cudaSuccess ||
        cudaMemset(clean_, 0x11, kCleanBytes) != cudaSuccess) {
      *err = std::string("clean-L2 buffer: ") + cudaGetErrorString(cudaGetLastError());
      return false;
    }
    return true;
  }

  /// The median of `calls` timed calls of `launch`, in microseconds; each call is prepared as
  /// the judge prepares one, then (with `clean_l2`) the L2 is left clean. False with *err set
  /// (naming the step) on a CUDA error, the launch's own errors included.
  bool median_us(const std::function<void()>& launch, bool clean_l2, int calls, double* us,
                 std::string* err) {
    std::vector<double> ms;
    for (int call = 0; call < calls; ++call) {
      cudaError_t e = pre_.prepare(call);
      if (e == cudaSuccess && clean_l2) {
        clean_l2_read_kernel<<<4 * sms_, 256>>>(reinterpret_cast<const uint4*>(clean_),
                                                kCleanBytes / 16, sink_);
        e = cudaDeviceSynchronize();
      }
      const char* where = "prepare";
      PreCall::Timed t;
      if (e == cudaSuccess) e = pre_.timed_call(launch, true, 50, &t, &where);
      if (e == cudaSuccess) {
        where = "the timed launch";
        e = cudaGetLastError();
      }
      if (e != cudaSuccess) {
        *err = std::string(where) + ": " + cudaGetErrorString(e);
        return false;
      }
      ms.push_back(t.event_ms);
    }
    std::sort(ms.begin(), ms.end());
    *us = ms[ms.size() / 2] * 1000.0;
    return true;
  }

 private:
  static constexpr size_t kCleanBytes = size_t(256) << 20;
  PreCall pre_;
  int sms_ = 0;
  uint8_t* clean_ = nullptr;
  unsigned* sink_ = nullptr;
};

}  // namespace bench
}  // namespace fp4arena

#include "harness/pre_call.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace fp4arena {
namespace {

constexpr int kHoldThreads = 1024;
constexpr unsigned long long kHoldTimeoutNs =
    static_cast<unsigned long long>(kHoldTimeoutMs * 1000 * 1000);

__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  // PTX ISA, Special Registers: %globaltimer, a 64-bit nanosecond timer.
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Occupies every thread slot of the SM it lands on until flag[0] becomes non-zero or the
// timeout passes; one thread per block polls the host-mapped flag.
__global__ void __launch_bounds__(kHoldThreads) hold_kernel(volatile int* flag) {
  if (threadIdx.x == 0) {
    unsigned long long start = global_timer_ns();
    while (flag[0] == 0) {
      if (global_timer_ns() - start > kHoldTimeoutNs) {
        flag[1] = 1;
        break;
      }
      __nanosleep(500);
    }
  }
  __syncthreads();
}

// Returns `ns` nanoseconds of GPU time after it starts.
__global__ void spin_kernel(unsigned long long ns) {
  const unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < ns) __nanosleep(200);
}

}  // namespace

PreCall::~PreCall() {
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
  if (signalled_) cudaEventDestroy(signalled_);
  if (buf_) cudaFree(buf_);
  if (flag_) cudaFreeHost(const_cast<int*>(flag_));
}

bool PreCall::init(double warm_ms, std::string* err) {
  auto fail = [err](const char* what, cudaError_t e) {
    *err = std::string(what) + ": " + cudaGetErrorString(e);
    return false;
  };
  int device = 0, l2 = 0, sms = 0, threads_per_sm = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device);
  blocks_ = sms * std::max(1, threads_per_sm / kHoldThreads);
  bytes_ = std::max<size_t>(size_t(2) * size_t(l2), size_t(64) << 20);
  cudaError_t e = cudaMalloc(&buf_, bytes_);
  if (e != cudaSuccess) return fail("cudaMalloc of the L2 flush buffer", e);
  int* host_flag = nullptr;
  e = cudaHostAlloc(reinterpret_cast<void**>(&host_flag), 2 * sizeof(int), cudaHostAllocMapped);
  if (e != cudaSuccess) return fail("cudaHostAlloc of the release flag", e);
  flag_ = host_flag;
  e = cudaHostGetDevicePointer(reinterpret_cast<void**>(&flag_dev_), host_flag, 0);
  if (e != cudaSuccess) return fail("cudaHostGetDevicePointer", e);
  cudaEvent_t a, b;
  if ((e = cudaEventCreate(&a)) != cudaSuccess || (e = cudaEventCreate(&b)) != cudaSuccess) {
    return fail("cudaEventCreate", e);
  }
  const int kProbe = 8;
  float ms = 0;
  for (int rep = 0; rep < 2; ++rep) {  // the first round warms the clocks up
    cudaEventRecord(a);
    for (int i = 0; i < kProbe; ++i) cudaMemsetAsync(buf_, i, bytes_);
    cudaEventRecord(b);
    if ((e = cudaEventSynchronize(b)) != cudaSuccess) return fail("L2 flush calibration", e);
    cudaEventElapsedTime(&ms, a, b);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  if ((e = cudaEventCreate(&start_)) != cudaSuccess ||
      (e = cudaEventCreate(&stop_)) != cudaSuccess ||
      (e = cudaEventCreate(&signalled_)) != cudaSuccess) {
    return fail("cudaEventCreate", e);
  }
  warm_iters_ = static_cast<int>(std::ceil(warm_ms / std::max(1e-3, double(ms) / kProbe)));
  return true;
}

cudaError_t PreCall::prepare(int salt) const {
  for (int i = 0; i <= warm_iters_; ++i) {
    cudaError_t e = cudaMemsetAsync(buf_, (salt + i) & 0xFF, bytes_);
    if (e != cudaSuccess) return e;
  }
  return cudaDeviceSynchronize();
}

cudaError_t PreCall::flush(cudaStream_t stream, int salt) const {
  return cudaMemsetAsync(buf_, salt & 0xFF, bytes_, stream);
}

cudaError_t PreCall::hold() {
  flag_[0] = 0;
  flag_[1] = 0;
  __sync_synchronize();
  hold_kernel<<<blocks_, kHoldThreads>>>(reinterpret_cast<volatile int*>(flag_dev_));
  return cudaGetLastError();
}

void PreCall::release() {
  __sync_synchronize();
  flag_[0] = 1;
  __sync_synchronize();
}

cudaError_t PreCall::spin(cudaStream_t stream, double us) {
  spin_kernel<<<1, 32, 0, stream>>>(static_cast<unsigned long long>(us * 1000.0));
  return cudaGetLastError();
}

bool PreCall::timed_out() const {
  return flag_[1] != 0;
}

cudaError_t PreCall::timed_call(const std::function<void()>& enqueue, bool hold_first,
                                double count_after_us, Timed* out, const char** where,
                                const std::function<void()>& after_stop) {
  using Clock = std::chrono::steady_clock;
  auto ms_between = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  *out = Timed{};
  cudaError_t e;
  if (hold_first && (e = hold()) != cudaSuccess) {
    return *where = "the blocking kernel before the call", e;
  }
  cudaEventRecord(start_);
  auto t0 = Clock::now();
  enqueue();
  auto t1 = Clock::now();
  cudaEventRecord(stop_);
  // What after_stop() enqueues is the worker's, not the code under test's: the device counts
  // as busy after the call only from its completion on.
  if (after_stop) {
    after_stop();
    cudaEventRecord(signalled_);
  }
  if (hold_first) release();
  e = cudaEventSynchronize(stop_);
  if (e == cudaSuccess && after_stop) e = cudaEventSynchronize(signalled_);
  auto t2 = Clock::now();
  if (e != cudaSuccess) return *where = "the call", e;
  e = cudaDeviceSynchronize();
  auto t3 = Clock::now();
  if (e != cudaSuccess) return *where = "the call (work still running after it returned)", e;
  e = cudaGetLastError();
  if (e != cudaSuccess) return *where = "the call (a failed launch)", e;
  float ms = 0;
  cudaEventElapsedTime(&ms, start_, stop_);
  out->event_only_ms = ms;
  out->host_call_ms = ms_between(t0, t1);
  out->busy_after_us = ms_between(t2, t3) * 1000.0;
  out->hold_timed_out = hold_first && timed_out();
  out->event_ms = ms + (out->busy_after_us > count_after_us ? out->busy_after_us / 1000.0 : 0.0);
  return cudaSuccess;
}

}  // namespace fp4arena

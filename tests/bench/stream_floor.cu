// fp4arena_stream_floor: a benchmark program (it reports figures; it passes or fails nothing).
// How long does the GPU take, timed exactly as the judge times a solution, only to read N
// bytes of weights into the SMs? That is the floor under any memory-bound kernel's judged
// time, e.g. w4a16_matmul's decode case (12.6 MB of packed weights, 14.2 MB with scales).
//
// Each call runs PreCall::prepare (about 1 ms of memset traffic and an L2 flush by memset, as
// before every judged call) and PreCall::timed_call (blocking kernel, start event, one
// launch, stop event), so the figures are comparable with a record's median_ms. Two ways to
// read, each block its contiguous slice: `bulk`, cp.async.bulk into shared memory in chunks
// of at most 16 KB, every chunk in flight at once; `loads`, 16-byte loads by 256 threads.
// And two L2 states: `judge` (after the flush, the L2 holds the memset's dirty lines, which
// are written back while the kernel reads) and `clean` (a 256 MB read after the flush, so the
// L2 holds clean lines: what the floor would be without those write-backs).
//
// Usage: fp4arena_stream_floor [bytes ...]   (default: 12582912 14155776). Needs sm_90.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/bench/judge_timing.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kChunk = 16384;   // bytes per bulk copy
constexpr int kMaxChunks = 14;  // 224 KB of shared memory per block at most

__device__ __forceinline__ void mbar_init(uint32_t bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar) {
  asm volatile(
      "{\n.reg .pred p;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n"
      "@!p bra WAIT;\n}\n" ::"r"(bar)
      : "memory");
}

// PTX ISA "cp.async.bulk" (global to shared, completion on an mbarrier), sm_90.
__global__ void __launch_bounds__(kThreads, 1)
    bulk_kernel(const uint8_t* src, size_t slice, unsigned* sink) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[kMaxChunks];
  const uint8_t* from = src + blockIdx.x * slice;
  const int chunks = static_cast<int>((slice + kChunk - 1) / kChunk);
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t bar0 = static_cast<uint32_t>(__cvta_generic_to_shared(bars));
  if (threadIdx.x == 0) {
    for (int c = 0; c < chunks; ++c) mbar_init(bar0 + 8 * c);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    for (int c = 0; c < chunks; ++c) {
      const size_t left = slice - size_t(c) * kChunk;
      const uint32_t bytes = static_cast<uint32_t>(left < kChunk ? left : kChunk);
      mbar_expect(bar0 + 8 * c, bytes);
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
          "[%3];\n" ::"r"(dst + c * kChunk),
          "l"(from + c * kChunk), "r"(bytes), "r"(bar0 + 8 * c)
          : "memory");
    }
  }
  __syncthreads();
  for (int c = 0; c < chunks; ++c) mbar_wait(bar0 + 8 * c);
  if (reinterpret_cast<const unsigned*>(smem)[threadIdx.x] == 0x9E3779B9u) *sink = 1;
}

__global__ void __launch_bounds__(kThreads)
    loads_kernel(const uint8_t* src, size_t slice, unsigned* sink) {
  const uint4* from = reinterpret_cast<const uint4*>(src + blockIdx.x * slice);
  const size_t n = slice / 16;
  unsigned acc = 0;
  for (size_t i = threadIdx.x; i < n; i += 4 * kThreads) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = i + u * kThreads < n ? from[i + u * kThreads] : uint4{};
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= v[u].x ^ v[u].w;
  }
  if (acc == 0x9E3779B9u) *sink = 1;
}

constexpr const char* kProgram = "fp4arena_stream_floor";
void check(cudaError_t e, const char* what) {
  fp4arena::bench::check_or_exit(kProgram, e, what);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(argv[i], &end, 10);
    if (!end || *end != '\0' || v == 0 || v > (size_t(1) << 30)) {
      std::fprintf(stderr,
                   "fp4arena_stream_floor: argument %d ('%s'): expected a byte count, "
                   "1 to 1073741824\n",
                   i, argv[i]);
      return 2;
    }
    sizes.push_back(v);
  }
  if (sizes.empty()) sizes = {12582912, 14155776};
  int sms = 0;
  cudaDeviceProp prop;
  fp4arena::bench::require_sm90(kProgram, "cp.async.bulk", &sms, &prop);
  fp4arena::bench::JudgeTiming timing;
  std::string err;
  if (!timing.init(&err)) {
    std::fprintf(stderr, "fp4arena_stream_floor: %s\n", err.c_str());
    return 2;
  }
  uint8_t* src = nullptr;
  unsigned* sink = nullptr;
  const size_t most = *std::max_element(sizes.begin(), sizes.end());
  check(cudaMalloc(&src, most + 4096), "cudaMalloc");
  check(cudaMalloc(&sink, 4), "cudaMalloc");
  check(cudaMemset(src, 0x35, most + 4096), "cudaMemset");
  check(cudaFuncSetAttribute(bulk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kMaxChunks * kChunk),
        "cudaFuncSetAttribute");
  std::printf("%s, %d SMs; median of 21 calls, each timed as the judge times a solution\n",
              prop.name, sms);
  std::printf("%12s %7s %6s %6s %10s %10s\n", "bytes", "blocks", "read", "L2", "median us", "GB/s");
  for (size_t bytes : sizes) {
    for (int blocks : {128, sms}) {
      const size_t slice = (bytes / blocks + 15) / 16 * 16;
      for (int mode = 0; mode < 2; ++mode) {
        if (mode == 0 && slice > size_t(kMaxChunks) * kChunk) continue;
        for (int clean_l2 = 0; clean_l2 < 2; ++clean_l2) {
          double us = 0;
          const auto launch = [&] {
            if (mode == 0) {
              bulk_kernel<<<blocks, kThreads, kMaxChunks * kChunk>>>(src, slice, sink);
            } else {
              loads_kernel<<<blocks, kThreads>>>(src, slice, sink);
            }
          };
          if (!timing.median_us(launch, clean_l2 != 0, 21, &us, &err)) {
            std::fprintf(stderr, "fp4arena_stream_floor: %s\n", err.c_str());
            return 2;
          }
          std::printf("%12zu %7d %6s %6s %10.2f %10.0f\n", slice * blocks, blocks,
                      mode == 0 ? "bulk" : "loads", clean_l2 ? "clean" : "judge", us,
                      double(slice * blocks) / (us * 1e3));
        }
      }
    }
  }
  return 0;
}

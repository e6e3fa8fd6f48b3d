// stream_read's kernel: one kernel on at most 128 blocks. Each block streams a contiguous
// slice of x into shared memory with cp.async.bulk (PTX ISA, sm_90), 16 KB per copy and up to
// 12 copies in flight, completion on one mbarrier per stage; its threads add up the first
// 32-bit lane of each word of a landed stage before thread 0 reuses it (a barrier only where a
// stage is refilled: at 14 MiB a block's 7 copies all fit at once). The tail of a call is
// one relaxed 64-bit atomic add per block: the block's sum in the high half and a count of one
// in the low half (the high half wraps modulo 2^32, the low half never carries: at most 128
// blocks). The block whose add returns a count of gridDim.x - 1 is the last; the value it got
// back holds every other block's sum, so it writes `sum` and zeroes the word for the next call
// with no fence and no second round trip to L2.
//
// Measured at 14 MiB on an H200 (in process, as the judge times a yardstick), against 6.54 to
// 6.64 us for the stream floor's own read kernel, which has no tail: 8.70 us with a partials
// array, two fences and the last block reading every partial; 8.27 us with three atomics
// (XOR into a word, a count with release and acquire order, an exchange) (2026-12-02).
// Used by read.cu (the judged streaming floor, tests/bench/stream_floor.cu, whose own best
// kernel streams the same way) and by the fixture
// tests/solutions/adversarial/stream_read/persisting_l2.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace stream_read {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 128;
constexpr int kStageWords = 1024;  // 16 KB
constexpr int kStages = 12;
constexpr int kSmemBytes = kStages * kStageWords * 16;

__device__ __forceinline__ void issue(uint32_t dst, const uint4* src, uint32_t bytes,
                                      uint32_t bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}

__device__ __forceinline__ void wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred p;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// Sum modulo 2^32 of `v` over the block's threads (every thread gets it); `warps` is
// kThreads/32 words of shared memory, free on entry and on return.
__device__ __forceinline__ unsigned block_sum(unsigned v, unsigned* warps) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = v;
  __syncthreads();
  v = 0;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) v += warps[w];
  __syncthreads();
  return v;
}

// Every block adds its slice's sum and a count of one to *acc in one atomic; the last block
// to do so (the count it got back is gridDim.x - 1) writes the whole sum to *sum and leaves
// *acc zero for the next call. Relaxed order is enough: the data travels in the atomic itself.
__device__ void finish(unsigned mine, unsigned long long* acc, int* sum) {
  __shared__ unsigned warps[kThreads / 32];
  const unsigned b = block_sum(mine, warps);
  if (threadIdx.x != 0) return;
  const unsigned long long add = (static_cast<unsigned long long>(b) << 32) | 1ull;
  unsigned long long before = 0;
  asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;\n"
               : "=l"(before)
               : "l"(acc), "l"(add)
               : "memory");
  if (static_cast<unsigned>(before) != gridDim.x - 1) return;
  *sum = static_cast<int>(static_cast<unsigned>(before >> 32) + b);
  *acc = 0;
}

__global__ void __launch_bounds__(kThreads, 1)
    read_kernel(const uint4* x, int64_t words, unsigned long long* acc, int* sum) {
  extern __shared__ __align__(128) uint4 stage[];
  __shared__ __align__(8) uint64_t bars[kStages];
  const int64_t per_block = (words + gridDim.x - 1) / gridDim.x;
  const int64_t begin = blockIdx.x * per_block;
  const int64_t end = begin + per_block < words ? begin + per_block : words;
  const int chunks = end > begin ? int((end - begin + kStageWords - 1) / kStageWords) : 0;
  const uint32_t smem = static_cast<uint32_t>(__cvta_generic_to_shared(stage));
  const uint32_t bar0 = static_cast<uint32_t>(__cvta_generic_to_shared(bars));
  auto chunk_words = [&](int c) {
    const int64_t left = end - begin - int64_t(c) * kStageWords;
    return static_cast<uint32_t>(left < kStageWords ? left : kStageWords);
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar0 + 8 * s) : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    for (int c = 0; c < chunks && c < kStages; ++c) {
      issue(smem + c * kStageWords * 16, x + begin + int64_t(c) * kStageWords, 16 * chunk_words(c),
            bar0 + 8 * c);
    }
  }
  __syncthreads();
  unsigned mine = 0;
  for (int c = 0; c < chunks; ++c) {
    const int s = c % kStages;
    wait(bar0 + 8 * s, (c / kStages) & 1);
    const uint32_t n = chunk_words(c);
    for (uint32_t i = threadIdx.x; i < n; i += kThreads) mine += stage[s * kStageWords + i].x;
    const int next = c + kStages;
    if (next >= chunks) continue;  // the same for every thread: no refill, no barrier
    __syncthreads();               // the stage is read: it may be refilled
    if (threadIdx.x == 0) {
      issue(smem + s * kStageWords * 16, x + begin + int64_t(next) * kStageWords,
            16 * chunk_words(next), bar0 + 8 * s);
    }
  }
  finish(mine, acc, sum);
}

// One call of the kernel on the legacy default stream, with the launch attributes `attrs`
// (none for the honest solution).
inline cudaError_t launch_read(const uint8_t* x, int* sum, int W, cudaLaunchAttribute* attrs,
                               unsigned n_attrs) {
  static unsigned long long* scratch = nullptr;  // the blocks' sums (high) and count (low)
  if (!scratch) {
    cudaFuncSetAttribute(read_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    cudaMalloc(&scratch, sizeof(*scratch));
    cudaMemset(scratch, 0, sizeof(*scratch));
  }
  // At least 512 words (8 KB) a block, so that a small x is not spread thinner than that.
  const int64_t want = (int64_t(W) + 511) / 512;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(want < kMaxBlocks ? unsigned(want > 0 ? want : 1) : kMaxBlocks);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = kSmemBytes;
  config.stream = cudaStreamLegacy;
  config.attrs = attrs;
  config.numAttrs = n_attrs;
  return cudaLaunchKernelEx(&config, read_kernel, reinterpret_cast<const uint4*>(x), int64_t(W),
                            scratch, sum);
}

}  // namespace stream_read

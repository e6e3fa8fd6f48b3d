// stream_read's solution: one kernel. Every block reads a contiguous slice of x with 16-byte
// loads, four in flight per thread, and XORs the first 32-bit lane of each word; each block
// leaves its partial in a scratch array, and the last block to finish (an atomic counter)
// XORs the partials into `sum` and resets the counter for the next call. The judged streaming
// floor (tests/bench/stream_floor.cu).
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    read_kernel(const uint4* x, int64_t words, unsigned* partials, unsigned* done, int* sum) {
  const int64_t per_block = (words + gridDim.x - 1) / gridDim.x;
  const int64_t begin = blockIdx.x * per_block;
  const int64_t end = begin + per_block < words ? begin + per_block : words;
  unsigned acc = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += 4 * kThreads) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = i + u * kThreads < end ? x[i + u * kThreads] : uint4{};
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= v[u].x;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  __shared__ unsigned warps[kThreads / 32];
  __shared__ bool last;
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned b = 0;
    for (int w = 0; w < kThreads / 32; ++w) b ^= warps[w];
    partials[blockIdx.x] = b;
    __threadfence();
    last = atomicAdd(done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last || threadIdx.x != 0) return;
  __threadfence();
  unsigned all = 0;
  for (unsigned b = 0; b < gridDim.x; ++b) all ^= *static_cast<volatile unsigned*>(&partials[b]);
  *sum = static_cast<int>(all);
  *done = 0;
}

}  // namespace

extern "C" void solve(const uint8_t* x, int* sum, int W) {
  static int blocks = 0;
  static unsigned* scratch = nullptr;  // [blocks] partials, then the counter
  if (!scratch) {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    blocks = sms;
    cudaMalloc(&scratch, (blocks + 1) * sizeof(unsigned));
    cudaMemset(scratch, 0, (blocks + 1) * sizeof(unsigned));
  }
  read_kernel<<<blocks, kThreads>>>(reinterpret_cast<const uint4*>(x), W, scratch, scratch + blocks,
                                    sum);
}

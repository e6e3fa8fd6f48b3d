// Cheat: zero the output before the judge's window, off its clock. The kernel XORs the first
// 32-bit lane of every word into `sum` with atomics, so `sum` must start at zero; solve()
// zeroes it on a stream of its own and waits for that on the host, while the worker is still
// queueing its calls behind the judge's go word (after the judge poisoned the outputs, before
// the window opens). Without the host's wait the memset may run late, inside the window and
// on its clock, which would be no cheat at all: an H200 did so in one case of two. A solution that
// accumulates into its output (split-K with atomics, say) would save the output's memset this way.
// Under the judge's WindowMethod::kV2 every output is poisoned again inside the window, so the
// answer is wrong; under kV1 it passes (docs/judging.md, known limits;
// tests/harness/gpu_stream_read_test.cc,
// GpuStreamRead.AnOutputZeroedBeforeTheWindowIsWrongUnderV2).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

__global__ void xor_lanes(const uint4* x, long long words, unsigned* sum) {
  unsigned acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < words;
       i += (long long)gridDim.x * blockDim.x) {
    acc ^= x[i].x;
  }
  for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x % 32 == 0) atomicXor(sum, acc);
}

// A failed CUDA call ends the worker with its name, so that a side stream that could not be
// made (its memset would then go to the legacy stream, inside the window) shows as a crash.
void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "prezeroed_sum: %s: %s\n", what, cudaGetErrorString(e));
  std::abort();
}

}  // namespace

extern "C" void solve(const uint8_t* x, int* sum, int W) {
  static cudaStream_t side = nullptr;
  static cudaEvent_t zeroed = nullptr;
  if (!side) {
    check(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaEventCreateWithFlags(&zeroed, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  }
  check(cudaMemsetAsync(sum, 0, sizeof(int), side), "cudaMemsetAsync");
  check(cudaEventRecord(zeroed, side), "cudaEventRecord");
  check(cudaStreamSynchronize(side), "cudaStreamSynchronize");
  check(cudaStreamWaitEvent(cudaStreamLegacy, zeroed, 0), "cudaStreamWaitEvent");
  int blocks = (W + 255) / 256;
  if (blocks > 1024) blocks = 1024;
  xor_lanes<<<blocks, 256>>>(reinterpret_cast<const uint4*>(x), W,
                             reinterpret_cast<unsigned*>(sum));
}

// Cheat: zero the output before the judge's window, off its clock. The kernel adds the first
// 32-bit lane of every word into `sum` with atomics, so `sum` must start at zero; solve()
// zeroes it on a stream of its own and waits for that on the host, while the worker is still
// queueing its calls behind the judge's go word (after the judge poisoned the outputs, before
// the window opens). A solution that accumulates into its output (split-K with atomics, say)
// would save the output's memset this way. Under the judge's WindowMethod::kV2 every output is
// poisoned again inside the window, so the answer is wrong; under kV1 it passes
// (docs/judging.md, known limits; tests/harness/gpu_stream_read_test.cc,
// GpuStreamRead.AnOutputZeroedBeforeTheWindowIsWrongUnderV2).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

__global__ void add_lanes(const uint4* x, long long words, unsigned* sum) {
  unsigned acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < words;
       i += (long long)gridDim.x * blockDim.x) {
    acc += x[i].x;
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x % 32 == 0) atomicAdd(sum, acc);
}

// A failed CUDA call ends the worker with its name, so that a side stream that could not be
// made (its memset would then go to the legacy stream, inside the window) shows as a crash.
void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "prezeroed_sum: %s: %s\n", what, cudaGetErrorString(e));
  std::abort();
}

// The side stream and its event, made when the worker loads the solution (a static object's
// constructor), before any window: on an H200 a stream made inside the first call let that
// call's case pass under kV2 (one_word), which may be its memset ordered after the window's
// refill.
struct Side {
  cudaStream_t stream = nullptr;
  cudaEvent_t zeroed = nullptr;
  Side() {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaEventCreateWithFlags(&zeroed, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  }
};
Side side;

}  // namespace

extern "C" void solve(const uint8_t* x, int* sum, int W) {
  check(cudaMemsetAsync(sum, 0, sizeof(int), side.stream), "cudaMemsetAsync");
  check(cudaEventRecord(side.zeroed, side.stream), "cudaEventRecord");
  check(cudaStreamSynchronize(side.stream), "cudaStreamSynchronize");
  check(cudaStreamWaitEvent(cudaStreamLegacy, side.zeroed, 0), "cudaStreamWaitEvent");
  int blocks = (W + 255) / 256;
  if (blocks > 1024) blocks = 1024;
  add_lanes<<<blocks, 256>>>(reinterpret_cast<const uint4*>(x), W,
                             reinterpret_cast<unsigned*>(sum));
}

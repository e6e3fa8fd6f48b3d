// Cheat: computes correctly on the default stream, but also starts a detached std::thread that
// sleeps 50 ms and then launches more device work (on its own stream and buffer), outside the
// window the judge times. The judge must give `thread_escape` ("thread(s) it started still
// running") on a small case, where solve() and its checks take far less than 50 ms.
#include <chrono>
#include <thread>

#include "naive_kernel.cuh"

namespace {

__device__ unsigned g_sink[256];

__global__ void late_kernel() {
  g_sink[threadIdx.x] += threadIdx.x;
}

void late_work() {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  cudaStream_t s = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return;
  late_kernel<<<1, 256, 0, s>>>();
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
}

}  // namespace

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K);
  std::thread(late_work).detach();
}

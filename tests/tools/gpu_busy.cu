// Keeps a GPU busy from a context of its own, as another user's job would: back-to-back
// kernels of about one millisecond (one block spinning on the global timer), until a stop
// file appears or a time limit passes. Used by GpuJudge.ASharedGpuStopsTheTimingNotTheTests.
//
// usage: fp4arena_gpu_busy READY_FILE STOP_FILE MAX_SECONDS
//   READY_FILE is created once the first kernel has run; exit 0 when stopped, 1 on error.
#include <cuda_runtime.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

__global__ void spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

bool exists(const char* path) {
  struct stat st;
  return stat(path, &st) == 0;
}

bool check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "fp4arena_gpu_busy: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: fp4arena_gpu_busy READY_FILE STOP_FILE MAX_SECONDS\n");
    return 2;
  }
  const double max_seconds = std::atof(argv[3]);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  bool ready = false;
  while (!exists(argv[2]) && elapsed() < max_seconds) {
    // Eight kernels queued at a time keep the GPU busy while the host looks for the stop file.
    for (int i = 0; i < 8; ++i) spin<<<1, 1>>>(1000000ull);
    if (!check(cudaGetLastError(), "launch") || !check(cudaDeviceSynchronize(), "sync")) return 1;
    if (!ready) {
      FILE* f = std::fopen(argv[1], "w");
      if (!f) {
        std::perror(argv[1]);
        return 1;
      }
      std::fclose(f);
      ready = true;
    }
  }
  return 0;
}

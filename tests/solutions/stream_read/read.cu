// stream_read's solution: read_kernel.cuh's kernel, launched plainly. The judged streaming
// floor (tests/bench/stream_floor.cu).
#include "read_kernel.cuh"

extern "C" void solve(const uint8_t* x, int* sum, int W) {
  stream_read::launch_read(x, sum, W, nullptr, 0);
}

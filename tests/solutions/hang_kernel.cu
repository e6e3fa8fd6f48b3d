// Test fixture: a kernel that never ends; the judge must time out, kill the worker and go on.
#include <cuda_fp16.h>

#include <cstdint>
__global__ void spin(volatile int* flag) {
  while (*flag != 0) {
  }
}
extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  spin<<<1, 1>>>(reinterpret_cast<volatile int*>(c));  // c is poisoned: never zero
}

// Test fixture: solve() dereferences a null host pointer; the worker dies on SIGSEGV.
#include <cuda_fp16.h>

#include <cstdint>
extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  volatile int* p = nullptr;
  *p = 1;
}

// Cheat: calls exit(0) inside solve(), hoping a clean exit status reads as success.
// The judge must give `early_exit` with "the worker exited with status 0 while solve() was
// running".
#include <cstdlib>

#include "naive_kernel.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  std::exit(0);
}

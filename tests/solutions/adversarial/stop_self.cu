// Cheat (or a hang of another kind): solve() stops its own process with SIGSTOP, the one
// signal the sandbox lets it send (to itself). A stopped worker answers nothing: the judge must
// give the case `timeout` after its call limit, kill the stopped worker, and go on with a fresh
// one (which stops again on its first call).
#include <csignal>

#include "naive_kernel.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  raise(SIGSTOP);
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K);
}

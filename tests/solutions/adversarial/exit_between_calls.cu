// Cheat (or a time bomb): solve() arms a one-second alarm and returns the right answer; a
// second later the worker dies of SIGALRM, between calls or inside a later one. The judge must
// give that case the worker's death, go on with a fresh worker (which arms its own alarm) and
// write a record of every case (tests/harness/gpu_adversarial_test.cc,
// AWorkerThatDiesBetweenCallsCannotEndTheJudge).
#include <unistd.h>

#include "naive_kernel.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  static bool armed = false;
  if (!armed) {
    armed = true;
    alarm(1);
  }
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K);
}

// Cheat: end the judge. On its second call solve() shuts the worker's end of the channel down
// (shutdown(3, SHUT_RDWR)); a judge that wrote to it next was killed by SIGPIPE (exit 141, no
// record). The judge must write with MSG_NOSIGNAL, give the case the worker's failure, go on
// with a fresh worker and write a complete record (tests/harness/gpu_adversarial_test.cc,
// AWorkerThatShutsItsChannelDownCannotEndTheJudge).
#include <sys/socket.h>

#include "naive_kernel.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  static int calls = 0;
  if (++calls == 2) shutdown(3, SHUT_RDWR);
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K);
}

// Cheat: solve() writes garbage into the worker's channel to the judge (fd 3): a length
// prefix of almost 4 GiB and bytes that are no message, as a solution corrupting the protocol
// would. The judge must read it as a broken channel (it never allocates what the prefix
// claims), give the case the worker's failure (`crashed`), and go on with a fresh worker.
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "naive_kernel.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  unsigned char junk[64];
  const uint32_t length = 0xFFFFFFF0u;
  std::memcpy(junk, &length, sizeof length);
  for (size_t i = sizeof length; i < sizeof junk; ++i) junk[i] = static_cast<unsigned char>(i * 37);
  if (write(3, junk, sizeof junk) < 0) return;
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K);
}

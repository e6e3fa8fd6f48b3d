// Cheat (a kernel tuned to the spec's list): at the shapes spec.json names (its tests and
// benchmarks) it computes all of c; at any other shape it leaves the last M % 32 rows of c
// unwritten, as a tile loop without a tail would. Every named case passes; the judge's
// random_tests (shapes drawn afresh each run, M in [1, 640]) must catch it: `wrong_answer`,
// "never written", on a case named random_<8 hex digits> that replays it.
#include "naive_kernel.cuh"

namespace {

struct Shape {
  int m, n, k;
};

// tests, then benchmarks, of challenges/nvfp4_matmul/spec.json.
constexpr Shape kListed[] = {
    {2, 2, 32},         {1, 1, 16},          {1, 300, 64},      {200, 1, 64},    {77, 135, 48},
    {129, 257, 80},     {383, 511, 528},     {64, 72, 16},      {128, 96, 256},  {40, 252, 2016},
    {252, 40, 2016},    {64, 64, 256},       {96, 128, 512},    {100, 120, 256}, {256, 384, 1024},
    {2048, 2048, 3072}, {2048, 18432, 3072}, {2048, 8192, 3072}};

bool listed(int M, int N, int K) {
  for (const Shape& s : kListed) {
    if (s.m == M && s.n == N && s.k == K) return true;
  }
  return false;
}

}  // namespace

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  const int rows = listed(M, N, K) ? M : M - M % 32;
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, rows, N, K);
}

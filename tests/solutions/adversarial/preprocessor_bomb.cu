// Attack on the judge's machine at compile time: a preprocessor bomb. Each macro below
// doubles or squares the number of copies of its argument, and a macro's argument is
// expanded in full before it is substituted, so the preprocessor builds 2^32 tokens (about a
// hundred GiB) in memory before the compiler proper starts. The judge's compile limits stop
// it: every program nvcc starts may use at most 8 GiB of address space (the preprocessor
// runs out of memory), and the whole compile has a time limit. tests/harness/compile_test.cc
// asserts both; nothing here ever runs.
#define TWICE(x) x x
#define TIMES_4(x) TWICE(TWICE(x))
#define TIMES_16(x) TIMES_4(TIMES_4(x))
#define TIMES_256(x) TIMES_16(TIMES_16(x))
#define TIMES_65536(x) TIMES_256(TIMES_256(x))
#define TIMES_2_POW_32(x) TIMES_65536(TIMES_65536(x))

static const unsigned kBomb = 0 TIMES_2_POW_32(+1);

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  (void)a, (void)a_scales, (void)b, (void)b_scales, (void)alpha, (void)c, (void)M, (void)N, (void)K,
      (void)kBomb;
}

// Test fixture: c declared as float* instead of __half*; the judge must reject it at
// compile time and show both signatures.
#include <cstdint>
extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, float* c, int M, int N, int K) {}

// Test fixture: solve() with another parameter list and C++ linkage, so no C function
// named solve exists; the judge must reject it at link time with both signatures.
#include <cstdint>
void solve(const uint8_t* a, const uint8_t* b, __half* c, int M, int N, int K) {}

#include <cuda_fp16.h>
#include <cstdint>

// All pointers are device pointers. x: [M][K] FP16 row-major; w: [N][K/2] packed E2M1
// (element 2j in the LOW nibble of byte j); w_scales: [N][K/group_size] FP16, the scale of
// elements g*group_size .. (g+1)*group_size-1 of a row. Write y: [M][N] row-major FP16,
// y[m][n] = sum_k x[m][k] * e2m1(w[n][k]) * w_scales[n][k / group_size]. group_size is 32 or
// 128. Launch on the default stream.
extern "C" void solve(const __half* x, const uint8_t* w, const __half* w_scales, __half* y, int M,
                      int N, int K, int group_size) {}

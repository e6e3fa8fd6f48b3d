// Test fixture: a kernel that writes through a wild device pointer. Without a sanitizer the
// judge reports a CUDA error; under --action sanitize, memcheck names the invalid write.
#include <cuda_fp16.h>

#include <cstdint>
__global__ void wild(__half* p) {
  p[threadIdx.x] = __float2half(1.0f);
}
extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  wild<<<1, 32>>>(reinterpret_cast<__half*>(0x100));
}

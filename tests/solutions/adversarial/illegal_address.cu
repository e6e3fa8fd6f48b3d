// Cheat (or a pointer bug): a kernel stores to the wild device address 0x10. The judge must
// give `cuda_error` with "cudaErrorIllegalAddress: an illegal memory access was encountered",
// and a fresh worker for the next case (the context is dead after a fault).
#include "naive_kernel.cuh"

namespace {

__global__ void store_to(uint16_t* p) {
  *reinterpret_cast<volatile uint16_t*>(p) = 0x3C00;  // 1.0 in fp16
}

}  // namespace

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  store_to<<<1, 1>>>(reinterpret_cast<uint16_t*>(uintptr_t{0x10}));
}

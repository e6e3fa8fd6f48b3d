// w4a8_grouped_gemm rung 4, "wgmma_ring_decode": wgmma_grouped.cu with a decode kernel that
// streams the weights by TMA into a per-warp shared-memory ring.
//
//   y[t][n] = x_scales[t] * w_global[g] * sum_k e4m3(x[t][k]) * e2m1(w[g][n][k]) *
//             e4m3(w_scales[g][n][k / 16]),  g = the expert whose rows hold t
//   x (T, K) e4m3, rows sorted by expert; w (G, N, K/2) packed e2m1, low nibble = even k;
//   w_scales (G, N, K/16) e4m3; w_global (G) fp32; group_offsets (G + 1); y (T, N) bf16.
//
// Three paths, chosen on the host from T, N, K, G and pointer alignment (the offsets stay on
// the device):
//   decode  T <= 4 G, K % 256 == 0, G < 1024, 16-byte aligned x, w, w_scales: a prologue
//           converts x to FP16 (pairs ordered for the fragments), then independent warps
//           stream each non-empty expert's weights (16 rows x up to 8 tokens per work item)
//           through a 3-stage TMA ring in shared memory, as the M side of mma.sync m16n8k16.
//   wgmma   K % 256 == 0 (and 16-byte aligned x, w): a prologue converts x to FP16 in the K
//           order of the nvfp4_matmul ladder, then a persistent kernel (1 TMA producer
//           warpgroup, 2 consumer warpgroups) runs wgmma m64nNk16 over (token tile of up to
//           256 rows of one expert, 128 weight rows) work tiles, the weights dequantized in
//           registers as the A operand and x_h as the B operand from shared memory.
//   general anything else: mma_sync.cu's kernel, unchanged.
// Exactness: e4m3(x) is exact in FP16; e2m1 * e4m3 scale * 2^-7 is exact in FP16 (subnormals
// included; the epilogue multiplies by 128); the tensor cores accumulate in FP32. No path
// rounds a scaled weight to FP8.
// Changed since wgmma_grouped.cu: the decode kernel only (see "Decode path" below for what
// changed and why); the prefill kernel and the general path are the same code. Figures and the
// command that measured them: the ladder table in README.md (the records are in
// results/w4a8_grouped_gemm/).
#include <cuda.h>  // CUtensorMap and its enums (types only; the encoder is fetched at run time)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "hopper.cuh"  // the ladder's shared device helpers

namespace {

using namespace w4a8_hopper;

// ----------------------------------------------------------------------------------------
// Configuration (grouped wgmma kernel)
constexpr int kTileN = 128;    // weight rows per tile: wgmma M side, 2 consumer WGs x 64
constexpr int kTileT = 256;    // tokens per tile at most: wgmma N side
constexpr int kBoxT = 32;      // tokens per TMA box; a tile's wgmma N is a multiple of it
constexpr int kStageK = 64;    // K per shared stage: one 128-byte swizzle row of FP16
constexpr int kStages = 4;     // x_h ring depth
constexpr int kChunkK = 256;   // K per register refill of packed w (the K-order period)
constexpr int kConsumers = 2;  // consumer warpgroups
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kMaxRowTiles = 1024;  // token tiles: at most ceil(T / 256) + G <= 256 + 512
constexpr int kStageBytes = kTileT * kStageK * 2;
constexpr int kBoxBytes = kBoxT * kStageK * 2;
constexpr int kEpiPitch = kTileN + 8;  // halves per staged y row: +16 B kills bank conflicts
constexpr int kEpiBytes = kTileT * kEpiPitch * 2;
constexpr int kTableOffset = kStages * kStageBytes + kEpiBytes;   // int2 per token tile
constexpr int kColScaleOffset = kTableOffset + kMaxRowTiles * 8;  // float per token of a tile
constexpr int kBarOffset = kColScaleOffset + kTileT * 4;
constexpr int kSmemBytes = kBarOffset + 2 * kStages * 8 + 16 + 1024;  // + count, 1 KB align
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = 232;

static_assert(kTileN == 64 * kConsumers, "each consumer warpgroup owns 64 w rows (wgmma m64)");
static_assert(kStageK * 2 == 128, "a stage row must be exactly one 128-byte swizzle span");
static_assert(kChunkK == 4 * kStageK, "one w register chunk spans 4 stages (the K order)");
static_assert(kStageBytes % 1024 == 0 && kBoxBytes % 1024 == 0,
              "128B-swizzled stages and boxes must stay 1024-byte aligned");
static_assert(kTileT % kBoxT == 0 && kTileT <= 256, "wgmma N is at most 256");
static_assert((kEpiPitch * 2) % 16 == 0, "staged y rows must stay 16-byte aligned");
static_assert(kSmemBytes <= 227 * 1024, "shared memory per block on sm_90 is 227 KB");
static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536,
              "setmaxnreg budgets must fit the 64K-register file");

// PTX primitives of this rung alone (the shared ones are in hopper.cuh)

// wgmma.mma_async m64nNk16 (N = 32..256), D f32 += A f16 (registers) x B f16 (shared,
// descriptor). PTX ISA "wgmma.mma_async" register-A form: d, a, b-desc, scale-d,
// imm-scale-a, imm-scale-b, imm-trans-b (0: B is K-major). D is the first N/2 of d.
template <int NT>
__device__ __forceinline__ void wgmma_rs(float (&d)[128], const uint32_t (&a)[4], uint64_t desc_b);

template <>
__device__ __forceinline__ void wgmma_rs<32>(float (&d)[128], const uint32_t (&a)[4],
                                             uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_rs<64>(float (&d)[128], const uint32_t (&a)[4],
                                             uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_rs<96>(float (&d)[128], const uint32_t (&a)[4],
                                             uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, "
      "{%48, %49, %50, %51}, %52, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_rs<128>(float (&d)[128], const uint32_t (&a)[4],
                                              uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_rs<160>(float (&d)[128], const uint32_t (&a)[4],
                                              uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %85, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n160k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, "
      "%74, %75, %76, %77, %78, %79}, "
      "{%80, %81, %82, %83}, %84, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_rs<192>(float (&d)[128], const uint32_t (&a)[4],
                                              uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, "
      "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, "
      "%92, %93, %94, %95}, "
      "{%96, %97, %98, %99}, %100, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_rs<224>(float (&d)[128], const uint32_t (&a)[4],
                                              uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %117, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n224k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, "
      "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, "
      "%92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
      "%108, %109, %110, %111}, "
      "{%112, %113, %114, %115}, %116, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
        "+f"(d[110]), "+f"(d[111])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_rs<256>(float (&d)[128], const uint32_t (&a)[4],
                                              uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, "
      "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, "
      "%92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
      "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "
      "%123, %124, %125, %126, %127}, "
      "{%128, %129, %130, %131}, %132, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
        "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
        "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

// PTX ISA "bar.sync" with a named barrier (id 1) over the consumer threads only.
__device__ __forceinline__ void consumer_barrier() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(128 * kConsumers) : "memory");
}

// ----------------------------------------------------------------------------------------
// Prologue: x_h (T, K) FP16 = e4m3(x), exact, K permuted per 256-wide chunk (see "K order").
// Real k (within a chunk) = 64 t + 8 u + 4 b + 2 v + h sits at position 32 u + 16 v + 8 h +
// 2 t + b, so the pair (k, k + 4) is one 4-byte word W = 16 u + 8 v + 4 h + t. With K % 256
// == 0 the chunks of all rows are contiguous (chunk c = row * K / 256 + S). A block takes 16
// chunks; thread j (0..15) of a chunk loads its bytes [16 j, 16 j + 16) (t = j / 4, u = 2 (j %
// 4) + {0, 1}), converts byte pairs (i, i + 4) of each 8-byte half to one word and stores it
// to shared memory at W ^ ((W >> 5) << 2) ^ ((chunk & 1) << 4) (the 32 lanes of a store hit 32
// banks; groups of 4 words stay together); the block then writes whole 16-byte pieces, 512
// contiguous bytes per warp.
constexpr int kPrologueThreads = 256;
constexpr int kPrologueChunks = kPrologueThreads / 16;
__global__ void __launch_bounds__(kPrologueThreads)
    w4a8_x_to_f16_kernel(const uint8_t* __restrict__ x, __half* __restrict__ x_h,
                         long long num_chunks) {
  __shared__ uint4 stage[kPrologueChunks * 32];
  // Every CTA of this grid is resident once all have passed this point: the main kernel
  // (programmatic stream serialization) may start; its producer waits for this grid's end.
  griddep_launch_dependents();
  const int tid = threadIdx.x, cb = tid / 16, j = tid % 16, t = j / 4;
  const long long chunk0 = static_cast<long long>(blockIdx.x) * kPrologueChunks;
  uint4 v = make_uint4(0, 0, 0, 0);
  if (chunk0 + cb < num_chunks) v = ldg_nc_v4(x + static_cast<size_t>(chunk0 + cb) * 256 + 16 * j);
  uint32_t* const st32 = reinterpret_cast<uint32_t*>(stage) + cb * 128;
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int u = 2 * (j % 4) + half;
    const uint32_t lo = words[2 * half], hi = words[2 * half + 1];  // b = 0, b = 1
#pragma unroll
    for (int vh = 0; vh < 4; ++vh) {  // byte vh of each word: k % 4 = 2 v + h
      const uint32_t pair = __byte_perm(lo, hi, vh | ((vh + 4) << 4));
      const int W = 16 * u + 8 * (vh >> 1) + 4 * (vh & 1) + t;
      st32[prologue_word(W, cb)] = e4m3x2_to_f16x2(pair);
    }
  }
  __syncthreads();
  uint4* const out = reinterpret_cast<uint4*>(x_h) + static_cast<size_t>(chunk0) * 32;
#pragma unroll
  for (int q = 0; q < kPrologueChunks * 32 / kPrologueThreads; ++q) {
    const int P = tid + q * kPrologueThreads, c = P / 32, p = P % 32;
    if (chunk0 + c < num_chunks) out[P] = stage[c * 32 + prologue_word(4 * p, c) / 4];
  }
}

// ----------------------------------------------------------------------------------------
// Main kernel, persistent. Token tiles: each expert's rows cut into tiles of at most 256
// (one partial tile per expert at most), listed in expert order in shared memory by warp 0
// (a warp prefix sum over the experts' tile counts; empty experts have none). Work tile id
// = token_tile * tiles_n + n_tile (weight-row blocks fastest: the tiles in flight together
// share one expert's x rows and weights in L2); CTA i takes i, i + gridDim.x, ...
// Warpgroup 0 = producer (one thread issues TMA, running ahead into the next tile),
// warpgroups 1..2 = consumers. A tile of r tokens runs wgmma m64nNk16 with N = r rounded up
// to a multiple of 32, and its producer loads only those rows (boxes of 32 rows). Requires
// K % 256 == 0.
__global__ void __launch_bounds__(kThreads, 1)
    w4a8_wgmma_grouped_kernel(const __grid_constant__ CUtensorMap tmap_x_h,
                              const float* __restrict__ x_scales, const uint8_t* __restrict__ w,
                              const uint8_t* __restrict__ w_scales,
                              const float* __restrict__ w_global, const int* __restrict__ offsets,
                              __nv_bfloat16* __restrict__ y, int N, int K, int G, bool y_vec_ok) {
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t base = (raw_base + 1023u) & ~1023u;
  uint8_t* const base_ptr = smem_raw + (base - raw_base);
  const uint32_t epi = base + kStages * kStageBytes;
  int2* const table = reinterpret_cast<int2*>(base_ptr + kTableOffset);
  float* const col_scale = reinterpret_cast<float*>(base_ptr + kColScaleOffset);
  const uint32_t full_bar = base + kBarOffset;
  const uint32_t empty_bar = full_bar + kStages * 8;
  int* const table_size = reinterpret_cast<int*>(base_ptr + kBarOffset + 2 * kStages * 8);
  const int wg = threadIdx.x / 128;
  const int lane = threadIdx.x & 31;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full_bar + 8 * s, 1);
      mbar_init(empty_bar + 8 * s, 4 * kConsumers);  // one arrival per consumer warp
    }
    fence_barrier_init();
  }
  if (threadIdx.x < 32) {
    // Token tiles: (first row, expert | rows << 16), rows in 1..256.
    int count = 0;
    for (int g0 = 0; g0 < G; g0 += 32) {
      const int g = g0 + lane;
      const int first = g < G ? offsets[g] : 0;
      const int rows = g < G ? offsets[g + 1] - first : 0;
      const int tiles = (rows + kTileT - 1) / kTileT;
      int incl = tiles;
#pragma unroll
      for (int d = 1; d < 32; d *= 2) {
        const int other = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += other;
      }
      const int excl = count + incl - tiles;
      for (int i = 0; i < tiles; ++i) {
        const int r = min(kTileT, rows - kTileT * i);
        table[excl + i] = make_int2(first + kTileT * i, g | (r << 16));
      }
      count += __shfl_sync(0xffffffffu, incl, 31);
    }
    if (lane == 0) *table_size = count;
  }
  __syncthreads();
  const int tiles_n = (N + kTileN - 1) / kTileN;
  const int num_tiles = *table_size * tiles_n;
  const int stages_per_tile = K / kStageK;

  if (wg == 0) {
    // ---------------- producer
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) {
      griddep_wait();  // x_h is written by the prologue grid (PDL: it may still be running)
      int it = 0;
      for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
        const int2 e = table[tile / tiles_n];
        const int boxes = ((e.y >> 16) + kBoxT - 1) / kBoxT;
        for (int ks = 0; ks < stages_per_tile; ++ks, ++it) {
          const int st = it % kStages;
          mbar_wait(empty_bar + 8 * st, ((it / kStages) & 1) ^ 1);
          mbar_arrive_expect_tx(full_bar + 8 * st, boxes * kBoxBytes);
          for (int b = 0; b < boxes; ++b)
            tma_load_2d(base + st * kStageBytes + b * kBoxBytes, &tmap_x_h, full_bar + 8 * st,
                        ks * kStageK, e.x + kBoxT * b);
        }
      }
    }
    return;
  }

  // ---------------- consumers
  setmaxnreg_inc<kConsumerRegs>();
  const int cw = wg - 1;                  // consumer warpgroup 0..1
  const int wq = (threadIdx.x >> 5) & 3;  // warp inside the warpgroup
  const int g8 = lane >> 2, t = lane & 3;
  const int row_in_tile = cw * 64 + wq * 16 + g8;
  const size_t row_bytes = static_cast<size_t>(K) / 2, row_scales = K / 16;
  // Quad lane t owns packed bytes [32t, 32t+32) and scale bytes [4t, 4t+4) of each chunk.
  auto row_ptrs = [&](int tile, const uint8_t*& pb0, const uint8_t*& pb1, const uint8_t*& ps0,
                      const uint8_t*& ps1) {
    const size_t g = static_cast<size_t>(table[tile / tiles_n].y & 0xFFFF);
    const int n0 = (tile % tiles_n) * kTileN;
    const size_t r0 = g * N + min(n0 + row_in_tile, N - 1);
    const size_t r1 = g * N + min(n0 + row_in_tile + 8, N - 1);
    pb0 = w + r0 * row_bytes + 32 * t;
    pb1 = w + r1 * row_bytes + 32 * t;
    ps0 = w_scales + r0 * row_scales + 4 * t;
    ps1 = w_scales + r1 * row_scales + 4 * t;
  };

  int tile = blockIdx.x;
  if (tile >= num_tiles) return;
  const uint8_t *pb0, *pb1, *ps0, *ps1;
  row_ptrs(tile, pb0, pb1, ps0, ps1);
  uint4 cur0[2], cur1[2];
  uint32_t csc0, csc1;
  cur0[0] = ldg_nc_v4(pb0);
  cur0[1] = ldg_nc_v4(pb0 + 16);
  cur1[0] = ldg_nc_v4(pb1);
  cur1[1] = ldg_nc_v4(pb1 + 16);
  csc0 = ldg_nc_u32(ps0);
  csc1 = ldg_nc_u32(ps1);

  const int num_chunks = K / kChunkK;
  int it = 0;
  float acc[128];
  for (; tile < num_tiles; tile += gridDim.x) {
    const int2 e = table[tile / tiles_n];
    const int row0 = e.x, expert = e.y & 0xFFFF, rows = e.y >> 16;
    const int boxes = (rows + kBoxT - 1) / kBoxT;  // wgmma N = 32 * boxes
    const int n0 = (tile % tiles_n) * kTileN;
    const int next_tile = tile + gridDim.x < num_tiles ? tile + gridDim.x : tile;
    const uint8_t *qb0, *qb1, *qs0, *qs1;  // the next tile's rows (prefetched at its end)
    row_ptrs(next_tile, qb0, qb1, qs0, qs1);
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.f;

    // The K loop, instantiated once per wgmma N (32 * boxes): one N inside each loop, so that
    // ptxas keeps the wgmma pipeline across steps (a run-time switch around each wgmma made
    // it inject warpgroup.arrive waits).
    auto k_loop = [&](auto n_tag) {
      constexpr int kN = decltype(n_tag)::value;
      for (int S = 0; S < num_chunks; ++S) {
        // Prefetch the next chunk (of this tile, or chunk 0 of the next tile).
        uint4 nxt0[2], nxt1[2];
        uint32_t nsc0, nsc1;
        {
          const bool last = S + 1 == num_chunks;
          const uint8_t* p0 = last ? qb0 : pb0 + (S + 1) * 128;
          const uint8_t* p1 = last ? qb1 : pb1 + (S + 1) * 128;
          nxt0[0] = ldg_nc_v4(p0);
          nxt0[1] = ldg_nc_v4(p0 + 16);
          nxt1[0] = ldg_nc_v4(p1);
          nxt1[1] = ldg_nc_v4(p1 + 16);
          nsc0 = ldg_nc_u32(last ? qs0 : ps0 + (S + 1) * 16);
          nsc1 = ldg_nc_u32(last ? qs1 : ps1 + (S + 1) * 16);
        }
#pragma unroll
        for (int q = 0; q < 4; ++q, ++it) {
          const uint32_t sc0 = e4m3_to_f16x2_x128(csc0, q);  // scale block 4t + q, * 2^7
          const uint32_t sc1 = e4m3_to_f16x2_x128(csc1, q);
          const int st = it % kStages;
          mbar_wait(full_bar + 8 * st, (it / kStages) & 1);
          const uint64_t desc = sw128_kmajor_desc(base + st * kStageBytes);
#pragma unroll
          for (int s4 = 0; s4 < 4; ++s4) {
            const int s = q * 4 + s4;
            const uint32_t w0 = word_of(cur0, s >> 1), w1 = word_of(cur1, s >> 1);
            const uint32_t w03 = w0 << 3, w13 = w1 << 3;
            uint32_t f[4];
            if (s & 1) {
              f[0] = hmul2(e2m1x2_to_f16x2_pow2m14<2>(w0, w03), sc0);  // row g,   slots 2t, 2t+1
              f[1] = hmul2(e2m1x2_to_f16x2_pow2m14<2>(w1, w13), sc1);  // row g+8, slots 2t, 2t+1
              f[2] = hmul2(e2m1x2_to_f16x2_pow2m14<3>(w0, w03), sc0);  // row g,   slots 2t+8, 2t+9
              f[3] = hmul2(e2m1x2_to_f16x2_pow2m14<3>(w1, w13), sc1);  // row g+8, slots 2t+8, 2t+9
            } else {
              f[0] = hmul2(e2m1x2_to_f16x2_pow2m14<0>(w0, w03), sc0);
              f[1] = hmul2(e2m1x2_to_f16x2_pow2m14<0>(w1, w13), sc1);
              f[2] = hmul2(e2m1x2_to_f16x2_pow2m14<1>(w0, w03), sc0);
              f[3] = hmul2(e2m1x2_to_f16x2_pow2m14<1>(w1, w13), sc1);
            }
            wgmma_fence(f);
            // Step s4 of the stage: K columns [16 s4, 16 s4 + 16) = +32 B in the swizzle row.
            const uint64_t d = desc + 2 * s4;
            wgmma_rs<kN>(acc, f, d);
            wgmma_commit();
            wgmma_wait<1>();  // the previous step is done: its stage may be released
            // (The previous stage of this tile; the tile's last stage is released below.)
            if (s4 == 0 && (S > 0 || q > 0) && lane == 0)
              mbar_arrive(empty_bar + 8 * ((it - 1) % kStages));
          }
        }
        cur0[0] = nxt0[0];
        cur0[1] = nxt0[1];
        cur1[0] = nxt1[0];
        cur1[1] = nxt1[1];
        csc0 = nsc0;
        csc1 = nsc1;
      }
      // Every wgmma of the tile retires inside its instantiation, before the paths join.
      wgmma_wait<0>();
      fence_accumulators(acc);
    };
    switch (boxes) {  // warpgroup-uniform: the tile's wgmma N = 32 * boxes
      case 1:
        k_loop(std::integral_constant<int, 32>());
        break;
      case 2:
        k_loop(std::integral_constant<int, 64>());
        break;
      case 3:
        k_loop(std::integral_constant<int, 96>());
        break;
      case 4:
        k_loop(std::integral_constant<int, 128>());
        break;
      case 5:
        k_loop(std::integral_constant<int, 160>());
        break;
      case 6:
        k_loop(std::integral_constant<int, 192>());
        break;
      case 7:
        k_loop(std::integral_constant<int, 224>());
        break;
      default:
        k_loop(std::integral_constant<int, 256>());
        break;
    }
    // Release the tile's last stage now, so the producer fills all stages during the epilogue.
    if (lane == 0) mbar_arrive(empty_bar + 8 * ((it - 1) % kStages));
    pb0 = qb0;
    pb1 = qb1;
    ps0 = qs0;
    ps1 = qs1;

    // ---------------- epilogue: D (64 w rows x N tokens per warpgroup) -> y rows.
    // Column (token) scale x_scales[t] * w_global[g] * 2^7 (the weights were deq * 2^-7);
    // 0 past the tile's rows. The previous tile's staging reads ended at its second barrier.
    const int ct = threadIdx.x - 128;  // 0..255
    col_scale[ct] = ct < rows ? x_scales[row0 + ct] * (w_global[expert] * 128.0f) : 0.0f;
    // Warp wq holds D rows 16 wq + {g, g+8}, columns 8 j + {2t, 2t+1} in acc[4j .. 4j+3].
    // Each 8x8 block of D, stored transposed, is 8 y rows (tokens) x 8 contiguous columns.
    consumer_barrier();  // col_scale is written; the previous copy-out has left the staging
    {
      const int mi = lane >> 3, rr = lane & 7;  // this lane addresses row rr of matrix mi
      const int nb = mi & 1;
      const uint32_t col_off = (cw * 64 + wq * 16 + nb * 8) * 2;
#pragma unroll
      for (int jp = 0; jp < 16; ++jp) {
        if (16 * jp >= 32 * boxes) break;
        const int j0 = 2 * jp;
        const float2 s0 = *reinterpret_cast<const float2*>(col_scale + 8 * j0 + 2 * t);
        const float2 s1 = *reinterpret_cast<const float2*>(col_scale + 8 * j0 + 8 + 2 * t);
        const uint32_t r0 = pack_bf16x2(acc[4 * j0 + 0] * s0.x, acc[4 * j0 + 1] * s0.y);
        const uint32_t r1 = pack_bf16x2(acc[4 * j0 + 2] * s0.x, acc[4 * j0 + 3] * s0.y);
        const uint32_t r2 = pack_bf16x2(acc[4 * j0 + 4] * s1.x, acc[4 * j0 + 5] * s1.y);
        const uint32_t r3 = pack_bf16x2(acc[4 * j0 + 6] * s1.x, acc[4 * j0 + 7] * s1.y);
        const int jj = j0 + (mi >> 1);
        stmatrix_x4_trans(epi + (8 * jj + rr) * (kEpiPitch * 2) + col_off, r0, r1, r2, r3);
      }
    }
    consumer_barrier();
    {
      constexpr int kPiecesPerRow = kTileN / 8;
#pragma unroll 4
      for (int i = 0; i < kTileT * kPiecesPerRow / (128 * kConsumers); ++i) {
        const int id = ct + i * 128 * kConsumers;
        const int row = id / kPiecesPerRow, pc = id % kPiecesPerRow;
        if (row >= rows) break;  // rows grow with i
        const int n = n0 + pc * 8;
        if (n >= N) continue;
        const uint4 v = lds128(epi + row * (kEpiPitch * 2) + pc * 16);
        __nv_bfloat16* dst = y + static_cast<size_t>(row0 + row) * N + n;
        if (y_vec_ok && n + 8 <= N) {
          *reinterpret_cast<uint4*>(dst) = v;
        } else {
          const uint32_t wv[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
          for (int k = 0; k < 8; ++k)
            if (n + k < N)
              dst[k] =
                  __ushort_as_bfloat16(static_cast<unsigned short>(wv[k / 2] >> (16 * (k % 2))));
        }
      }
    }
  }
}

// ----------------------------------------------------------------------------------------
// Decode path: few rows per expert (T <= 4 G), meant to be memory-bound. The weights are the wide
// operand, so they take the M side of mma.sync m16n8k16 (16 weight rows) and the tokens the
// N side (8 per item).
// In-thread K order: lane (g, c) = (lane / 4, lane % 4) holds, for weight rows g and g + 8,
// the 32 consecutive k at it * 128 + 32 c (one 16-byte piece per row, iteration it); mma
// step s (0..7) takes word w = s / 2 of them and nibble pairs (J, J + 4), J = 2 (s % 2) and
// J + 1, as the fragment slots (2c, 2c+1) and (2c+8, 2c+9). The decode prologue writes x_h
// so that the token side of step s is FP16 words 2 s, 2 s + 1 of the same 32 k: word 4 w + J
// of each 32-k piece = (x[8 w + J], x[8 w + J + 4]); each product meets its own k.
// Work item = (expert, chunk of at most 8 of its rows, 16 weight rows), listed chunk-major
// (the warps of a block work on one expert's x rows together, so L1 serves most x loads);
// every warp is an independent worker that takes items (global warp id), + (warps in the
// grid), ... and runs each item's whole K, two iterations of 128 per stage.
// Weight streaming: each warp owns a ring of kStages stages in shared memory, filled by TMA
// (lane 0 issues two 16-row x 64-byte boxes of packed weights and one 16-row x 16-byte box of
// scales per stage, kStages - 1 stages ahead of the math, across item boundaries; a full
// mbarrier per stage). So the weights never pass through registers or the load/store unit,
// and the x loads (16 bytes per lane, through L1) do not queue behind them; they are issued
// one iteration ahead of their MMAs. 24 warps per SM (3 blocks of 8, at most 80 registers).
// Changed since wgmma_grouped.cu: this kernel. That one kept 2 iterations of weights in
// registers (2 KB per warp at 16 warps per SM) and loaded x after dequantizing, with items of
// up to 16 tokens; it reached 28-33% of DRAM bandwidth. Steps measured on the way (ncu,
// H200, decode benchmark, kernel time): weights through a per-warp cp.async ring, 83 us; the
// x loads one iteration ahead, 81 us (they still waited, queued in L1 behind the weight
// copies); x through the ring as well, 98 us (the load/store unit saturated); weights by
// TMA, 70 us (0.075 ms under --action run, 16 warps per SM, items of up to 16 tokens); then
// items of at most 8 tokens (96 registers) and 24 warps per SM (80): 0.065-0.067 ms under
// --action run. The judged figures are in README.md. The decode path now needs K % 256 == 0
// and 16-byte aligned scales.
namespace decode {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kBlocksPerSm = 3;             // 24 warps per SM
constexpr int kRowsT = 8;                   // tokens per item at most (one mma n8)
constexpr int kIterK = 128;                 // K per iteration: 4 lanes x 32
constexpr int kStages = 3;                  // ring stages per warp (kStages - 1 in flight)
constexpr int kStageK = 2 * kIterK;         // K per stage: two iterations
constexpr int kBoxBytes = 16 * kIterK / 2;  // one weight box: 16 rows x 64 B
constexpr int kStageBytes = 2 * kBoxBytes + 16 * kStageK / 16;    // + scale box: 16 rows x 16 B
constexpr int kSmemBytes = kWarps * kStages * (kStageBytes + 8);  // + a full barrier per stage
constexpr int kMaxG = 1024;  // experts whose chunk prefix fits the shared table (G < kMaxG)
static_assert(kMaxG <= 4 * kThreads, "the prefix scan gives each thread 4 experts");
static_assert(kBoxBytes % 128 == 0 && kStageBytes % 128 == 0,
              "TMA destinations must stay 128-byte aligned");
static_assert(kStages >= 2 && kStages <= 32, "a ring needs two stages; phases fit one word");
static_assert(kBlocksPerSm * (kSmemBytes + 128 + 4 * (kMaxG + 1 + kWarps) + 1024) <= 228 * 1024,
              "kBlocksPerSm blocks (and the 1 KB each reserves) must fit in 228 KB per SM");

__device__ __forceinline__ uint32_t lds_u16(uint32_t addr) {
  uint16_t v;
  asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(addr));
  return v;
}

// Decode prologue: x_h (T, K) FP16 = e4m3(x), exact, each 8-byte group's pairs (J, J + 4)
// as words 4 w + J (see "In-thread K order"). One thread per 16 bytes of x.
__global__ void __launch_bounds__(256)
    w4a8_x_to_f16_pairs_kernel(const uint8_t* __restrict__ x, __half* __restrict__ x_h,
                               long long pieces) {
  griddep_launch_dependents();  // the decode kernel may launch; it waits before reading x_h
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= pieces) return;
  const uint4 v = ldg_nc_v4(x + 16 * i);
  const uint32_t b[4] = {v.x, v.y, v.z, v.w};
  uint32_t h[8];
#pragma unroll
  for (int w = 0; w < 2; ++w)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      h[4 * w + j] = e4m3x2_to_f16x2(__byte_perm(b[2 * w], b[2 * w + 1], j | ((j + 4) << 4)));
  uint4* const out = reinterpret_cast<uint4*>(x_h) + 2 * i;
  out[0] = make_uint4(h[0], h[1], h[2], h[3]);
  out[1] = make_uint4(h[4], h[5], h[6], h[7]);
}

struct Item {
  int g, row0, rows, tile;
};
// Item `item` (< the item count): the last expert whose first chunk is <= its chunk is the
// item's (that expert is non-empty).
__device__ __forceinline__ Item item_of(long long item, const int* chunk_start, const int* offsets,
                                        int G, int n_tiles) {
  const int chunk = static_cast<int>(item / n_tiles);
  int lo = 0, hi = G - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (chunk_start[mid] <= chunk)
      lo = mid;
    else
      hi = mid - 1;
  }
  Item r;
  r.g = lo;
  r.row0 = __ldg(offsets + lo) + (chunk - chunk_start[lo]) * kRowsT;
  r.rows = min(kRowsT, __ldg(offsets + lo + 1) - r.row0);
  r.tile = static_cast<int>(item - static_cast<long long>(chunk) * n_tiles);
  return r;
}

// The two e4m3 scales of a lane's 32 k (u16) -> FP16x2 broadcasts of scale * 2^7 (exact).
__device__ __forceinline__ void scales_x128(uint32_t two_codes, uint32_t& s0, uint32_t& s1) {
  const uint32_t h2 = hmul2(e4m3x2_to_f16x2(two_codes), 0x58005800u);  // 128.0 in both halves
  s0 = __byte_perm(h2, 0, 0x1010);
  s1 = __byte_perm(h2, 0, 0x3232);
}

// Row coordinate (in the (G N) x ... tensor maps) of item `item`'s 16 weight rows; rows past
// the expert's N belong to the next expert or lie past the end (TMA fills zeros): they are
// computed, never stored.
__device__ __forceinline__ int row_coord(long long item, const int* chunk_start, const int* offsets,
                                         int G, int n_tiles, int N) {
  const Item it = item_of(item, chunk_start, offsets, G, n_tiles);
  return it.g * N + it.tile * 16;
}

__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    w4a8_decode_kernel(const __grid_constant__ CUtensorMap tmap_w,
                       const __grid_constant__ CUtensorMap tmap_s, const __half* __restrict__ x_h,
                       const float* __restrict__ x_scales, const float* __restrict__ w_global,
                       const int* __restrict__ offsets, __nv_bfloat16* __restrict__ y, int N, int K,
                       int G) {
  extern __shared__ uint8_t ring_smem[];  // kSmemBytes + 128 (aligned to 128 here)
  __shared__ int chunk_start[kMaxG + 1];  // exclusive prefix of ceil(rows_g / kRowsT)
  __shared__ int warp_sums[kWarps];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;

  // Chunk prefix: thread i sums experts 4i .. 4i + 3, then a block scan of the 256 sums.
  int local[4], sum = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int g = 4 * tid + j;
    const int rows = g < G ? __ldg(offsets + g + 1) - __ldg(offsets + g) : 0;
    local[j] = (rows + kRowsT - 1) / kRowsT;
    sum += local[j];
  }
  int incl = sum;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int v = __shfl_up_sync(0xFFFFFFFFu, incl, d);
    if (lane >= d) incl += v;
  }
  if (lane == 31) warp_sums[warp] = incl;
  __syncthreads();
  int before = incl - sum;
  for (int i = 0; i < warp; ++i) before += warp_sums[i];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int g = 4 * tid + j;
    if (g <= G) chunk_start[g] = before;
    before += local[j];
  }
  __syncthreads();

  const int g_lane = lane / 4, c = lane % 4;
  const int n_tiles = (N + 15) / 16, iters = K / kIterK, xk = 2 * K;  // xk: bytes per x_h row
  const int stages_per_item = K / kStageK;
  const long long items = static_cast<long long>(chunk_start[G]) * n_tiles;
  const long long stride = static_cast<long long>(gridDim.x) * kWarps;
  long long item = static_cast<long long>(blockIdx.x) * kWarps + warp;
  if (item >= items) return;

  // This warp's ring of kStages stages and their full barriers (one arrival: the issuing
  // lane's expect_tx; the TMA's bytes complete the phase).
  const uint32_t smem = (static_cast<uint32_t>(__cvta_generic_to_shared(ring_smem)) + 127u) & ~127u;
  const uint32_t ring = smem + warp * (kStages * kStageBytes);
  const uint32_t bars = smem + kWarps * kStages * kStageBytes + warp * (kStages * 8);
  if (lane == 0) {
    for (int s = 0; s < kStages; ++s) mbar_init(bars + 8 * s, 1);
    fence_barrier_init();
  }
  __syncwarp();

  // The load cursor (lane 0's): item, stage within the item, row coordinate.
  long long l_item = item;
  int l_st = 0, l_y = 0;
  if (lane == 0) l_y = row_coord(l_item, chunk_start, offsets, G, n_tiles, N);
  // Lane 0 issues the cursor's stage into `slot` (two weight boxes, one scale box) and
  // advances the cursor; past the warp's last item it issues nothing.
  auto issue_stage = [&](int slot) {
    if (l_item < items) {
      const uint32_t st = ring + slot * kStageBytes, bar = bars + 8 * slot;
      mbar_arrive_expect_tx(bar, kStageBytes);
      tma_load_2d(st, &tmap_w, bar, l_st * (kStageK / 2), l_y);
      tma_load_2d(st + kBoxBytes, &tmap_w, bar, l_st * (kStageK / 2) + kIterK / 2, l_y);
      tma_load_2d(st + 2 * kBoxBytes, &tmap_s, bar, l_st * (kStageK / 16), l_y);
      if (++l_st == stages_per_item) {
        l_st = 0;
        l_item += stride;
        if (l_item < items) l_y = row_coord(l_item, chunk_start, offsets, G, n_tiles, N);
      }
    }
  };
  if (lane == 0)
    for (int s = 0; s < kStages - 1; ++s) issue_stage(s);

  const uint8_t* const xb = reinterpret_cast<const uint8_t*>(x_h);
  griddep_wait();  // x_h comes from the decode prologue (PDL: it may still be running)

  int slot = 0;         // the stage the math reads next
  uint32_t phases = 0;  // bit s: the parity stage s completes next
  for (;;) {
    const Item cur = item_of(item, chunk_start, offsets, G, n_tiles);
    // This lane's token row (clamped: rows past the item's are computed, not stored), + 64 c.
    const uint8_t* const xrow =
        xb + static_cast<size_t>(cur.row0 + min(g_lane, cur.rows - 1)) * xk + 64 * c;
    // x fragments of iteration `it`: 16-byte loads through L1, which the block's warps share.
    auto load_x = [&](uint4(&xv)[4], int it) {
      const uint4* const xp = reinterpret_cast<const uint4*>(xrow + it * 2 * kIterK);
#pragma unroll
      for (int v = 0; v < 4; ++v) xv[v] = __ldg(xp + v);
    };
    // acc[h]: the MMAs of even (h = 0) and odd steps, two independent accumulation chains.
    float acc[2][4] = {};
    // One iteration: half j of stage `st`, with x fragments xv. One straight block, so the
    // scheduler interleaves the dequantization of word W + 1 with the MMAs of word W.
    auto step = [&](uint32_t st, int j, const uint4(&xv)[4]) {
      const uint32_t wbox = st + j * kBoxBytes;
      const uint4 va = lds128(wbox + 64 * g_lane + 16 * c);
      const uint4 vb = lds128(wbox + 64 * (g_lane + 8) + 16 * c);
      const uint32_t sbox = st + 2 * kBoxBytes + 8 * j + 2 * c;
      const uint32_t ua = lds_u16(sbox + 16 * g_lane), ub = lds_u16(sbox + 16 * (g_lane + 8));
      uint32_t sa0, sa1, sb0, sb1;
      scales_x128(ua, sa0, sa1);
      scales_x128(ub, sb0, sb1);
      const uint32_t wa[4] = {va.x, va.y, va.z, va.w}, wb[4] = {vb.x, vb.y, vb.z, vb.w};
#pragma unroll
      for (int W = 0; W < 4; ++W) {
        // Word W -> steps 2W (nibble pairs 0, 1) and 2W + 1 (pairs 2, 3): value * scale *
        // 2^-7 in FP16, exact (the epilogue multiplies by 128).
        uint32_t a[8];
        const uint32_t s0 = W < 2 ? sa0 : sa1, s1 = W < 2 ? sb0 : sb1;
        const uint32_t w0 = wa[W], w1 = wb[W], w03 = w0 << 3, w13 = w1 << 3;
        a[0] = hmul2(e2m1x2_to_f16x2_pow2m14<0>(w0, w03), s0);
        a[1] = hmul2(e2m1x2_to_f16x2_pow2m14<0>(w1, w13), s1);
        a[2] = hmul2(e2m1x2_to_f16x2_pow2m14<1>(w0, w03), s0);
        a[3] = hmul2(e2m1x2_to_f16x2_pow2m14<1>(w1, w13), s1);
        a[4] = hmul2(e2m1x2_to_f16x2_pow2m14<2>(w0, w03), s0);
        a[5] = hmul2(e2m1x2_to_f16x2_pow2m14<2>(w1, w13), s1);
        a[6] = hmul2(e2m1x2_to_f16x2_pow2m14<3>(w0, w03), s0);
        a[7] = hmul2(e2m1x2_to_f16x2_pow2m14<3>(w1, w13), s1);
        const uint4 xq = xv[W];
        general::mma_f16_f32(acc[0], a, xq.x, xq.y);
        general::mma_f16_f32(acc[1], a + 4, xq.z, xq.w);
      }
    };
    // Waits for stage `slot`, then hands the stage before it (read by every lane, its values
    // consumed) back to lane 0 for the cursor's next stage.
    auto acquire = [&]() {
      mbar_wait(bars + 8 * slot, (phases >> slot) & 1u);
      phases ^= 1u << slot;
      __syncwarp();
      if (lane == 0) issue_stage(slot == 0 ? kStages - 1 : slot - 1);
      const uint32_t st = ring + slot * kStageBytes;
      slot = slot == kStages - 1 ? 0 : slot + 1;
      return st;
    };
    // Two x buffers used in turn, one iteration ahead (the load past the last iteration
    // re-reads it, unused).
    uint4 x0[4], x1[4];
    load_x(x0, 0);
#pragma unroll 1
    for (int s = 0; s < stages_per_item; ++s) {
      const uint32_t st = acquire();
      load_x(x1, 2 * s + 1);
      step(st, 0, x0);
      load_x(x0, min(2 * s + 2, iters - 1));
      step(st, 1, x1);
    }

    // acc[0] + acc[1] = (weight rows tile * 16 + g_lane (+ 8), tokens 2 c (+ 1)).
    const float wg = __ldg(w_global + cur.g) * 128.f;
    const int n = cur.tile * 16 + g_lane;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int t = 2 * c + e;
      if (t < cur.rows) {
        const int row = cur.row0 + t;
        const float s = __ldg(x_scales + row) * wg;
        __nv_bfloat16* const out = y + static_cast<size_t>(row) * N;
        if (n < N) out[n] = __float2bfloat16_rn((acc[0][e] + acc[1][e]) * s);
        if (n + 8 < N) out[n + 8] = __float2bfloat16_rn((acc[0][2 + e] + acc[1][2 + e]) * s);
      }
    }
    item += stride;
    if (item >= items) break;
  }
}

}  // namespace decode

bool aligned(const void* p, uintptr_t n) {
  return (reinterpret_cast<uintptr_t>(p) % n) == 0;
}

// ----------------------------------------------------------------------------------------
// Scratch cache: the only mutable state of this file. Holds the x_h buffer (grown, never
// shrunk), the TMA descriptor for its current (pointer, T, K), and the one-time kernel
// attribute, SM count and driver entry point.
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
struct ScratchCache {
  __half* x_h = nullptr;
  size_t x_h_bytes = 0;
  CUtensorMap map;
  const void* map_ptr = nullptr;
  int map_T = 0, map_K = 0;
  EncodeTiledFn encode = nullptr;
  bool smem_configured = false;
  int sm_count = 0;
  int decode_blocks_per_sm = 0;
  CUtensorMap dmap_w, dmap_s;  // the decode kernel's maps of w and w_scales, for:
  const void *dmap_w_ptr = nullptr, *dmap_s_ptr = nullptr;
  long long dmap_rows = 0;
  int dmap_K = 0;
};
ScratchCache g_scratch;

bool query_sm_count() {
  ScratchCache& sc = g_scratch;
  if (sc.sm_count == 0) {
    int dev = 0, count = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        count <= 0)
      return false;
    sc.sm_count = count;
  }
  return true;
}

// x_h holds at least T x K halves. False on failure.
bool ensure_x_h(int T, int K) {
  ScratchCache& sc = g_scratch;
  const size_t need = static_cast<size_t>(T) * K * sizeof(__half);
  if (need > sc.x_h_bytes) {
    if (sc.x_h) cudaFree(sc.x_h);
    sc.x_h = nullptr;
    sc.x_h_bytes = 0;
    if (cudaMalloc(&sc.x_h, need) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    sc.x_h_bytes = need;
  }
  return true;
}

bool query_encode() {
  ScratchCache& sc = g_scratch;
  if (!sc.encode) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !fn)
      return false;
    sc.encode = reinterpret_cast<EncodeTiledFn>(fn);
  }
  return true;
}

// A 2D uint8 map of `rows` x `cols` bytes (row pitch `cols`, a multiple of 16), box
// box_cols x 16 rows, no swizzle, zeros past the end. False on failure.
bool encode_bytes_map(CUtensorMap* map, const void* ptr, long long rows, int cols, int box_cols) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols), 16};
  const cuuint32_t elem_strides[2] = {1, 1};
  return g_scratch.encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(ptr), dims,
                          strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                          CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// x_h, the decode kernel's tensor maps of w and w_scales, and its resident blocks per SM (its
// persistent grid). False on failure.
bool prepare_decode(const uint8_t* w, const uint8_t* w_scales, int T, int N, int K, int G) {
  ScratchCache& sc = g_scratch;
  if (!query_sm_count() || !ensure_x_h(T, K) || !query_encode()) return false;
  const long long rows = static_cast<long long>(G) * N;
  if (sc.dmap_w_ptr != w || sc.dmap_s_ptr != w_scales || sc.dmap_rows != rows || sc.dmap_K != K) {
    sc.dmap_w_ptr = sc.dmap_s_ptr = nullptr;
    if (!encode_bytes_map(&sc.dmap_w, w, rows, K / 2, decode::kIterK / 2) ||
        !encode_bytes_map(&sc.dmap_s, w_scales, rows, K / 16, decode::kStageK / 16))
      return false;
    sc.dmap_w_ptr = w;
    sc.dmap_s_ptr = w_scales;
    sc.dmap_rows = rows;
    sc.dmap_K = K;
  }
  if (sc.decode_blocks_per_sm == 0) {
    int blocks = 0;
    if (cudaFuncSetAttribute(decode::w4a8_decode_kernel,
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             decode::kSmemBytes + 128) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, decode::w4a8_decode_kernel,
                                                      decode::kThreads,
                                                      decode::kSmemBytes + 128) != cudaSuccess ||
        blocks <= 0) {
      (void)cudaGetLastError();
      return false;
    }
    sc.decode_blocks_per_sm = blocks;
  }
  return true;
}

// Returns false on any failure (the caller then takes the general path).
bool prepare_scratch(int T, int K) {
  ScratchCache& sc = g_scratch;
  if (!ensure_x_h(T, K) || !query_encode()) return false;
  if (sc.map_ptr != sc.x_h || sc.map_T != T || sc.map_K != K) {
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(T)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(K) * sizeof(__half)};
    const cuuint32_t box[2] = {kStageK, kBoxT};
    const cuuint32_t elem_strides[2] = {1, 1};
    if (sc.encode(&sc.map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, sc.x_h, dims, strides, box,
                  elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
      sc.map_ptr = nullptr;
      return false;
    }
    sc.map_ptr = sc.x_h;
    sc.map_T = T;
    sc.map_K = K;
  }
  if (!query_sm_count()) return false;
  if (!sc.smem_configured) {
    sc.smem_configured =
        cudaFuncSetAttribute(w4a8_wgmma_grouped_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kSmemBytes) == cudaSuccess;
    if (!sc.smem_configured) return false;
  }
  return true;
}

// Launches `kernel` with programmatic stream serialization (PDL) on the legacy default
// stream, so that its CTAs start (list their work, load their first weights) while the
// prologue before it drains; each waits (griddepcontrol.wait) before its first read of x_h. If
// the extended launch is refused, its error is cleared and the kernel is launched plainly.
template <typename... Params, typename... Args>
void launch_pdl(void (*kernel)(Params...), int grid, int threads, int smem, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = 0;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  if (cudaLaunchKernelEx(&cfg, kernel, args...) == cudaSuccess) return;
  (void)cudaGetLastError();
  kernel<<<grid, threads, smem>>>(args...);
}

}  // namespace

// Launcher. All pointers are device pointers; everything runs on the legacy default stream.
extern "C" void solve(const uint8_t* x, const float* x_scales, const uint8_t* w,
                      const uint8_t* w_scales, const float* w_global, const int* group_offsets,
                      __nv_bfloat16* y, int T, int N, int K, int G) {
  if (T <= 0 || N <= 0 || G <= 0) return;
  const bool vec_y = aligned(y, 16) && N % 8 == 0;
  // Few rows per expert: the weights stream once through the decode kernel.
  if (K % decode::kStageK == 0 && G < decode::kMaxG && T <= 4 * G && aligned(x, 16) &&
      aligned(w, 16) && aligned(w_scales, 16) && prepare_decode(w, w_scales, T, N, K, G)) {
    const long long pieces = static_cast<long long>(T) * K / 16;
    decode::w4a8_x_to_f16_pairs_kernel<<<static_cast<unsigned>((pieces + 255) / 256), 256>>>(
        x, g_scratch.x_h, pieces);
    const long long items =
        (static_cast<long long>(T / decode::kRowsT + 1 + (T < G ? T : G)) * ((N + 15) / 16) + 7) /
        8;  // blocks: 8 warp-items each
    const long long slots =
        static_cast<long long>(g_scratch.sm_count) * g_scratch.decode_blocks_per_sm;
    launch_pdl(decode::w4a8_decode_kernel, static_cast<int>(items < slots ? items : slots),
               decode::kThreads, decode::kSmemBytes + 128, g_scratch.dmap_w, g_scratch.dmap_s,
               static_cast<const __half*>(g_scratch.x_h), x_scales, w_global, group_offsets, y, N,
               K, G);
    return;
  }
  const bool fast = K % kChunkK == 0 && (T + kTileT - 1) / kTileT + G <= kMaxRowTiles &&
                    aligned(x, 16) && aligned(w, 16) && aligned(w_scales, 4);
  if (!fast || !prepare_scratch(T, K)) {
    general::launch_for(x, x_scales, w, w_scales, w_global, group_offsets, y, T, N, K, G);
    return;
  }
  const long long chunks = static_cast<long long>(T) * (K / kChunkK);
  const long long blocks = (chunks + kPrologueChunks - 1) / kPrologueChunks;
  w4a8_x_to_f16_kernel<<<static_cast<unsigned>(blocks), kPrologueThreads>>>(x, g_scratch.x_h,
                                                                            chunks);
  // Token tiles are at most ceil(T / 256) + G; the grid never exceeds the work tiles.
  const long long tiles =
      static_cast<long long>((T + kTileT - 1) / kTileT + G) * ((N + kTileN - 1) / kTileN);
  const int grid = static_cast<int>(tiles < g_scratch.sm_count ? tiles : g_scratch.sm_count);
  launch_pdl(w4a8_wgmma_grouped_kernel, grid, kThreads, kSmemBytes, g_scratch.map, x_scales, w,
             w_scales, w_global, group_offsets, y, N, K, G, vec_y);
}

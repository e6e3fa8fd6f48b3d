#include "harness/pre_call.h"

#include <algorithm>
#include <cmath>

namespace fp4arena {
namespace {

constexpr size_t kLine = 128;  // bytes of one L2 line

// Drops every line of [p, p + n) from L2 without writing it back (PTX ISA, "discard":
// sm_80+, 128-byte lines; the contents become undefined, which the flush buffer's may).
__global__ void discard_kernel(uint8_t* p, size_t n) {
  const size_t stride = size_t(gridDim.x) * blockDim.x * kLine;
  for (size_t i = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) * kLine; i + kLine <= n;
       i += stride) {
    asm volatile("discard.global.L2 [%0], 128;" ::"l"(p + i) : "memory");
  }
}

// One block copies (or fills) one piece of at most kCopyPieceBytes (copy_pieces): where
// source and destination are both 16-byte aligned, each thread loads its kPieceWords 16-byte
// words before it stores any, so that a block keeps the whole piece in flight; bytes
// otherwise. The pieces of a copy go to the blocks side by side, so many small segments (the
// snapshot of many sets' outputs) take about as long as one.
constexpr int kCopyThreads = 256;
constexpr int kPieceWords = int(kCopyPieceBytes / 16 / kCopyThreads);
static_assert(kCopyPieceBytes % (16 * kCopyThreads) == 0, "a piece is whole words per thread");

__device__ void copy_piece(const CopySegment& g) {
  const unsigned b = 0x01010101u * g.fill;
  const uint4 word = make_uint4(b, b, b, b);
  const bool wide =
      ((reinterpret_cast<uintptr_t>(g.src) | reinterpret_cast<uintptr_t>(g.dst)) & 15) == 0;
  size_t done = 0;
  if (wide) {
    const int words = int(g.bytes / 16);
    const uint4* __restrict__ src = reinterpret_cast<const uint4*>(g.src);
    uint4* __restrict__ dst = reinterpret_cast<uint4*>(g.dst);
    uint4 v[kPieceWords];
#pragma unroll
    for (int k = 0; k < kPieceWords; ++k) {
      const int i = int(threadIdx.x) + k * kCopyThreads;
      if (i < words) v[k] = src ? src[i] : word;
    }
#pragma unroll
    for (int k = 0; k < kPieceWords; ++k) {
      const int i = int(threadIdx.x) + k * kCopyThreads;
      if (i < words) dst[i] = v[k];
    }
    done = size_t(words) * 16;
  }
  for (size_t i = done + threadIdx.x; i < g.bytes; i += kCopyThreads) {
    g.dst[i] = g.src ? g.src[i] : g.fill;
  }
}

__global__ void __launch_bounds__(kCopyThreads)
    copy_pieces_kernel(const CopySegment* pieces, int n) {
  for (int p = blockIdx.x; p < n; p += gridDim.x) copy_piece(pieces[p]);
}

__global__ void null_kernel() {}

int sm_count() {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return std::max(1, sms);
}

}  // namespace

PreCall::~PreCall() {
  if (buf_) cudaFree(buf_);
}

bool PreCall::init(double warm_ms, std::string* err) {
  auto fail = [err](const char* what, cudaError_t e) {
    *err = std::string(what) + ": " + cudaGetErrorString(e);
    return false;
  };
  int device = 0, l2 = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
  bytes_ = std::max<size_t>(size_t(2) * size_t(l2), size_t(64) << 20);
  bytes_ = (bytes_ + kLine - 1) / kLine * kLine;
  cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&buf_), bytes_);
  if (e != cudaSuccess) return fail("cudaMalloc of the L2 flush buffer", e);
  cudaEvent_t a, b;
  if ((e = cudaEventCreate(&a)) != cudaSuccess || (e = cudaEventCreate(&b)) != cudaSuccess) {
    return fail("cudaEventCreate", e);
  }
  const int kProbe = 8;
  float ms = 0;
  for (int rep = 0; rep < 2; ++rep) {  // the first round warms the clocks up
    cudaEventRecord(a);
    for (int i = 0; i < kProbe; ++i) cudaMemsetAsync(buf_, i, bytes_);
    cudaEventRecord(b);
    if ((e = cudaEventSynchronize(b)) != cudaSuccess) return fail("L2 flush calibration", e);
    cudaEventElapsedTime(&ms, a, b);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  warm_iters_ = static_cast<int>(std::ceil(warm_ms / std::max(1e-3, double(ms) / kProbe)));
  return true;
}

cudaError_t PreCall::warm(cudaStream_t stream, int salt) const {
  for (int i = 0; i < warm_iters_; ++i) {
    cudaError_t e = cudaMemsetAsync(buf_, (salt + i) & 0xFF, bytes_, stream);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t PreCall::flush(cudaStream_t stream, int salt) const {
  // Demotes every persisting line of the device's L2, whoever's access-policy window set it,
  // so that the memset below evicts it like any other.
  cudaError_t e = cudaCtxResetPersistingL2Cache();
  if (e == cudaSuccess) e = cudaMemsetAsync(buf_, salt & 0xFF, bytes_, stream);
  if (e != cudaSuccess) return e;
  discard_kernel<<<4 * sm_count(), 256, 0, stream>>>(buf_, bytes_);
  return cudaGetLastError();
}

bool time_back_to_back(const PreCall& pre, int calls, int salt, const IndexedLaunch& launch,
                       double* per_call_ms, std::string* err) {
  cudaEvent_t start = nullptr, stop = nullptr;
  auto fail = [&](const std::string& what, cudaError_t e) {
    if (err->empty()) *err = what + ": " + cudaGetErrorString(e);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    return false;
  };
  cudaError_t e;
  if ((e = cudaEventCreate(&start)) != cudaSuccess || (e = cudaEventCreate(&stop)) != cudaSuccess) {
    return fail("cudaEventCreate", e);
  }
  if ((e = pre.warm(cudaStreamLegacy, salt)) != cudaSuccess ||
      (e = pre.flush(cudaStreamLegacy, salt)) != cudaSuccess) {
    return fail("the warm-up and L2 flush", e);
  }
  cudaEventRecord(start, cudaStreamLegacy);
  for (int i = 0; i < calls; ++i) {
    if (!launch(i, err)) return fail("launch " + std::to_string(i), cudaErrorLaunchFailure);
  }
  cudaEventRecord(stop, cudaStreamLegacy);
  if ((e = cudaEventSynchronize(stop)) != cudaSuccess) return fail("the timed calls", e);
  if ((e = cudaDeviceSynchronize()) != cudaSuccess || (e = cudaGetLastError()) != cudaSuccess) {
    return fail("the timed calls", e);
  }
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  *per_call_ms = double(ms) / std::max(1, calls);
  return true;
}

std::vector<CopySegment> copy_pieces(const std::vector<CopySegment>& segments) {
  std::vector<CopySegment> pieces;
  for (const CopySegment& g : segments) {
    for (size_t at = 0; at < g.bytes; at += kCopyPieceBytes) {
      const size_t bytes = std::min(kCopyPieceBytes, g.bytes - at);
      pieces.push_back({g.src ? g.src + at : nullptr, g.dst + at, bytes, g.fill});
    }
  }
  return pieces;
}

cudaError_t copy_segments(const CopySegment* pieces, int n, cudaStream_t stream) {
  // Eight blocks an SM at most (2048 threads), one for each piece where there are fewer; one
  // even for none, so that an empty window runs the same launch as the others.
  const int blocks = std::max(1, std::min(n, 8 * sm_count()));
  copy_pieces_kernel<<<blocks, kCopyThreads, 0, stream>>>(pieces, n);
  return cudaGetLastError();
}

cudaError_t launch_null_kernel(cudaStream_t stream) {
  null_kernel<<<1, 32, 0, stream>>>();
  return cudaGetLastError();
}

}  // namespace fp4arena

// fp4arena_stream_floor: a benchmark program (it reports figures; it passes or fails nothing).
// How long does the GPU take only to read N bytes into the SMs, and how close does the judge's
// figure come to it? That is the floor under every memory-bound kernel's judged time (e.g.
// w4a16_matmul's decode case reads 14.2 MB, w4a8_grouped_gemm's decode about 138 MB).
//
// For 1, 14 and 138 MiB it prints:
//   judged     the judge's figure (--action run) for tests/solutions/stream_read/read.cu on the
//              test-only challenge tests/challenges/stream_read, case mb1, mb14 or mb138:
//              windows of back-to-back calls, each on fresh inputs, timed by the judge's events;
//   in-process the same shared object timed in this process as the judge times a yardstick
//              (the same number of back-to-back calls on distinct buffers after the judge's
//              warm-up and clean L2 flush, CUDA events around them);
//   best       the best of this file's own read kernels timed the same way: cp.async.bulk into
//              shared memory in chunks of at most 16 KB, or 16-byte loads by 256 threads, on
//              128 blocks or one per SM;
//   cold       the best kernel's single call after the clean flush (no call before it).
//
// Usage: fp4arena_stream_floor [MIB ...] [--no-window-study] [--tlb-study]
//                              [--window-method v1|v2]
//   MIB: 1, 14 or 138 (default all three, for the rows and the studies); exit 2 on anything
//   else. --window-method judges with that method (harness/verdict.h, WindowMethod; default
//   the judge's, v2 since judge 0.4): v1 is there to compare. --tlb-study adds the
//   in-process figure with the inputs' address translations evicted before each window
//   (tlb_study below). Needs sm_90 and the fp4arena_worker next to it.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/bench/judge_timing.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kChunk = 16384;   // bytes per bulk copy
constexpr int kMaxChunks = 14;  // 224 KB of shared memory per block at most

__device__ __forceinline__ void mbar_init(uint32_t bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar) {
  asm volatile(
      "{\n.reg .pred p;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n"
      "@!p bra WAIT;\n}\n" ::"r"(bar)
      : "memory");
}

// PTX ISA "cp.async.bulk" (global to shared, completion on an mbarrier), sm_90.
__global__ void __launch_bounds__(kThreads, 1)
    bulk_kernel(const uint8_t* src, size_t slice, unsigned* sink) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[kMaxChunks];
  const uint8_t* from = src + blockIdx.x * slice;
  const int chunks = static_cast<int>((slice + kChunk - 1) / kChunk);
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t bar0 = static_cast<uint32_t>(__cvta_generic_to_shared(bars));
  if (threadIdx.x == 0) {
    for (int c = 0; c < chunks; ++c) mbar_init(bar0 + 8 * c);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    for (int c = 0; c < chunks; ++c) {
      const size_t left = slice - size_t(c) * kChunk;
      const uint32_t bytes = static_cast<uint32_t>(left < kChunk ? left : kChunk);
      mbar_expect(bar0 + 8 * c, bytes);
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
          "[%3];\n" ::"r"(dst + c * kChunk),
          "l"(from + c * kChunk), "r"(bytes), "r"(bar0 + 8 * c)
          : "memory");
    }
  }
  __syncthreads();
  for (int c = 0; c < chunks; ++c) mbar_wait(bar0 + 8 * c);
  if (reinterpret_cast<const unsigned*>(smem)[threadIdx.x] == 0x9E3779B9u) *sink = 1;
}

__global__ void __launch_bounds__(kThreads)
    loads_kernel(const uint8_t* src, size_t slice, unsigned* sink) {
  const uint4* from = reinterpret_cast<const uint4*>(src + blockIdx.x * slice);
  const size_t n = slice / 16;
  unsigned acc = 0;
  for (size_t i = threadIdx.x; i < n; i += 4 * kThreads) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = i + u * kThreads < n ? from[i + u * kThreads] : uint4{};
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= v[u].x ^ v[u].w;
  }
  if (acc == 0x9E3779B9u) *sink = 1;
}

// One 4-byte load every 64 KiB of `bytes` (64 KiB and 2 MiB pages alike): every page of the
// buffer is translated, and next to nothing of it is left in L2 for the flush to clear.
__global__ void touch_pages(const uint8_t* p, size_t bytes, unsigned* sink) {
  constexpr size_t kStep = size_t(64) << 10;
  const size_t stride = size_t(gridDim.x) * blockDim.x * kStep;
  unsigned acc = 0;
  for (size_t off = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * kStep; off < bytes;
       off += stride) {
    acc ^= *reinterpret_cast<const unsigned*>(p + off);
  }
  if (acc == 0x9E3779B9u) *sink = 1;
}

constexpr const char* kProgram = "fp4arena_stream_floor";
void check(cudaError_t e, const char* what) {
  fp4arena::bench::check_or_exit(kProgram, e, what);
}

struct Variant {
  int mode;  // 0 bulk, 1 loads
  int blocks;
};

}  // namespace

// Does the judge's excess over the same calls in process grow with the window? Judged per-call
// us with windows of 1 and 4 ms of calls (at most 512), each beside the in-process figure over
// the same number of calls on the judge's own inputs.
bool window_study(const fp4arena::PreCall& pre, const std::string& dir, const std::string& solution,
                  const std::vector<std::string>& names, fp4arena::WindowMethod method) {
  std::printf("\nwindow study: judged and in-process us per call, by window length\n");
  std::printf("%10s | %6s %9s %9s %8s | %6s %9s %9s %8s\n", "MiB", "calls", "judged", "in-proc",
              "excess", "calls", "judged", "in-proc", "excess");
  for (const std::string& name : names) {
    std::printf("%10s", name.c_str() + 2);
    for (double window_ms : {1.0, 4.0}) {
      fp4arena::bench::JudgedFigure j;
      double us = 0;
      std::string err;
      if (!fp4arena::bench::judged_figure(dir, solution, name, &j, &err, window_ms, method) ||
          !fp4arena::bench::in_process_figure(pre, dir, solution, name, j.calls_per_sample, 21, &us,
                                              &err, j.sample_seeds)) {
        std::fprintf(stderr, "%s: %s\n", kProgram, err.c_str());
        return false;
      }
      const double judged = j.median_ms * 1000.0;
      std::printf(" | %6d %9.2f %9.2f %+8.2f", j.calls_per_sample, judged, us, judged - us);
    }
    std::printf("\n");
  }
  return true;
}

// Is the judge's excess the worker's cold address translation? In a window the worker's
// context reads inputs the judge's context has just written, after a context switch; the
// in-process figure reads buffers its own earlier samples translated. Judged and in-process
// us per call beside the in-process figure with a 16 GiB buffer (at most half the free
// memory) touched a page at a time before each sample's flush and window, which leaves the
// TLBs holding its pages instead of the inputs'.
bool tlb_study(const fp4arena::PreCall& pre, const std::string& dir, const std::string& solution,
               const std::vector<std::string>& names, fp4arena::WindowMethod method,
               unsigned* sink) {
  size_t free_bytes = 0, total = 0;
  check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  const size_t evict_bytes = std::min(size_t(16) << 30, free_bytes / 2);
  uint8_t* evict = nullptr;
  check(cudaMalloc(&evict, evict_bytes), "cudaMalloc of the eviction buffer");
  check(cudaMemset(evict, 0x35, evict_bytes), "cudaMemset of the eviction buffer");
  auto touch = [&] {
    touch_pages<<<132, 256>>>(evict, evict_bytes, sink);
    check(cudaDeviceSynchronize(), "the page-touching kernel");
  };
  std::printf(
      "\nTLB study: us per call; touched (t): in-process (ip) after touching %.1f GiB a "
      "page at a time; j: judged\n",
      double(evict_bytes) / double(size_t(1) << 30));
  std::printf("%10s %5s | %9s %9s %9s | %8s %8s\n", "MiB", "calls", "judged", "in-proc", "touched",
              "j - ip", "t - ip");
  bool ok = true;
  for (const std::string& name : names) {
    fp4arena::bench::JudgedFigure j;
    double plain = 0, touched = 0;
    std::string err;
    if (!fp4arena::bench::judged_figure(dir, solution, name, &j, &err, 1.0, method) ||
        !fp4arena::bench::in_process_figure(pre, dir, solution, name, j.calls_per_sample, 21,
                                            &plain, &err, j.sample_seeds) ||
        !fp4arena::bench::in_process_figure(pre, dir, solution, name, j.calls_per_sample, 21,
                                            &touched, &err, j.sample_seeds, touch)) {
      std::fprintf(stderr, "%s: %s\n", kProgram, err.c_str());
      ok = false;
      break;
    }
    const double judged = j.median_ms * 1000.0;
    std::printf("%10s %5d | %9.2f %9.2f %9.2f | %+8.2f %+8.2f\n", name.c_str() + 2,
                j.calls_per_sample, judged, plain, touched, judged - plain, touched - plain);
  }
  cudaFree(evict);
  return ok;
}

// The case names (mb1, mb14, mb138) the arguments ask for, whether to run the window study
// and the TLB study, and the window method; false on an argument it does not know.
bool parse_args(int argc, char** argv, std::vector<std::string>* names, bool* study, bool* tlb,
                fp4arena::WindowMethod* method) {
  *study = true;
  *tlb = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string next = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--no-window-study") {
      *study = false;
    } else if (a == "--tlb-study") {
      *tlb = true;
    } else if (a == "1" || a == "14" || a == "138") {
      names->push_back("mb" + a);
    } else if (a == "--window-method" && fp4arena::bench::parse_window_method(next, method)) {
      ++i;
    } else {
      std::fprintf(stderr,
                   "%s: unknown argument '%s'\nusage: %s [1|14|138 ...] [--no-window-study] "
                   "[--tlb-study] [--window-method v1|v2]\n",
                   kProgram, a.c_str(), kProgram);
      return false;
    }
  }
  if (names->empty()) *names = {"mb1", "mb14", "mb138"};
  return true;
}

int main(int argc, char** argv) {
  // Line-buffered even into a file: a run cut short by a time limit keeps its finished rows.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::vector<std::string> names;
  bool study = true, tlb = false;
  fp4arena::WindowMethod method = fp4arena::kJudgeWindowMethod;
  if (!parse_args(argc, argv, &names, &study, &tlb, &method)) return 2;
  int sms = 0;
  cudaDeviceProp prop;
  fp4arena::PreCall pre;
  fp4arena::bench::start_or_exit(kProgram, "cp.async.bulk", &sms, &prop, &pre);
  std::string err;
  check(cudaFuncSetAttribute(bulk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kMaxChunks * kChunk),
        "cudaFuncSetAttribute");
  unsigned* sink = nullptr;
  check(cudaMalloc(&sink, 4), "cudaMalloc");
  const std::string src = FP4ARENA_SOURCE_DIR;
  const std::string dir = src + "/tests/challenges/stream_read";
  const std::string solution = src + "/tests/solutions/stream_read/read.cu";
  std::printf("%s, %d SMs; medians of 21 samples (judged: the judge's own samples, %s)\n",
              prop.name, sms, fp4arena::window_method_name(method));
  std::printf("%10s %5s | %9s %7s | %9s %7s | %9s %7s %-11s | %9s %7s | %8s\n", "MiB", "calls",
              "judged us", "GB/s", "in-proc", "GB/s", "best", "GB/s", "(kernel)", "cold us", "GB/s",
              "judged %");
  for (const std::string& name : names) {
    const size_t mib = std::stoul(name.substr(2));
    const size_t bytes = mib << 20;
    fp4arena::bench::JudgedFigure j;
    double inproc_us = 0;
    if (!fp4arena::bench::judged_figure(dir, solution, name, &j, &err, 1.0, method) ||
        !fp4arena::bench::in_process_figure(pre, dir, solution, name, j.calls_per_sample, 21,
                                            &inproc_us, &err)) {
      std::fprintf(stderr, "%s: %s\n", kProgram, err.c_str());
      return 2;
    }
    const int calls = j.calls_per_sample;
    std::vector<uint8_t*> bufs(size_t(calls), nullptr);
    for (uint8_t*& b : bufs) {
      check(cudaMalloc(&b, bytes + 4096), "cudaMalloc");
      check(cudaMemset(b, 0x35, bytes + 4096), "cudaMemset");
    }
    double best_us = 1e30, cold_us = 0;
    std::string best_name;
    for (Variant v : {Variant{0, 128}, Variant{0, sms}, Variant{1, 128}, Variant{1, sms}}) {
      const size_t slice = (bytes / size_t(v.blocks) + 15) / 16 * 16;
      if (v.mode == 0 && slice > size_t(kMaxChunks) * kChunk) continue;
      auto launch = [&, v, slice](int i, std::string*) {
        if (v.mode == 0) {
          bulk_kernel<<<v.blocks, kThreads, kMaxChunks * kChunk>>>(bufs[size_t(i)], slice, sink);
        } else {
          loads_kernel<<<v.blocks, kThreads>>>(bufs[size_t(i)], slice, sink);
        }
        return true;
      };
      double us = 0;
      if (!fp4arena::bench::in_process_us(pre, calls, 21, launch, &us, &err)) {
        std::fprintf(stderr, "%s: %s\n", kProgram, err.c_str());
        return 2;
      }
      if (us < best_us) {
        best_us = us;
        best_name = std::string(v.mode == 0 ? "bulk/" : "loads/") + std::to_string(v.blocks);
        if (!fp4arena::bench::in_process_us(pre, 1, 21, launch, &cold_us, &err)) {
          std::fprintf(stderr, "%s: %s\n", kProgram, err.c_str());
          return 2;
        }
      }
    }
    for (uint8_t* b : bufs) cudaFree(b);
    const double judged_us = j.median_ms * 1000.0;
    auto gbps = [bytes](double us) { return double(bytes) / (us * 1e3); };
    std::printf(
        "%10zu %5d | %9.2f %7.0f | %9.2f %7.0f | %9.2f %7.0f %-11s | %9.2f %7.0f | %7.1f%%\n", mib,
        calls, judged_us, gbps(judged_us), inproc_us, gbps(inproc_us), best_us, gbps(best_us),
        best_name.c_str(), cold_us, gbps(cold_us), 100.0 * gbps(judged_us) / gbps(best_us));
  }
  if (tlb && !tlb_study(pre, dir, solution, names, method, sink)) return 2;
  return !study || window_study(pre, dir, solution, names, method) ? 0 : 2;
}

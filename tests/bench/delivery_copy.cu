// fp4arena_delivery_copy: a benchmark program (it reports figures; it passes or fails nothing).
// The judge delivers a window's inputs with one copy kernel (harness/pre_call.h,
// copy_segments) and predicts how long that takes from a copy model it measures at start-up
// (harness/call_window.cc, CallWindow::init: the same kernel over 4 KiB and over one 256 MiB
// segment of its own memory). What a delivery takes beyond 1.05x that model is charged to the
// window's calls. On an H200, deliveries of 1-6 GB into a worker's buffers ran 10-13% over it
// (docs/development.md, "Where the H200's excess comes from"). This program tells the
// candidate causes apart, one at a time:
//
//   where     the destination: memory of this process ("local"), or buffers a second process
//             allocated and exported by CUDA IPC, mapped here as the judge maps a worker's
//             ("ipc");
//   form      one segment of the whole size ("one"), or one segment per set ("sets"), each
//             set's buffer a cudaMalloc of its own, as a window's are;
//   bytes     the delivery's total, 256 MiB (the model's own size) up to --max-gib;
//   kernel    the judge's copy_segments over the segments' pieces ("judge"), or this file's
//             copy: the judge's earlier loop, every thread through every segment in turn, with
//             four 16-byte loads in flight per thread before their stores ("ilp4"), on four
//             blocks an SM.
//
// Every row: the judge's warm-up (as before a window's first event), then the copy between
// two events; "first" is the first copy after the buffers were mapped, "median" the median
// of the next kReps; "model" is that kernel's own model (its 4 KiB and 256 MiB copies of
// local memory, as CallWindow::init measures the judge's); "ratio" is median over model.
// A ratio near 1 for "local one" at every size and above it for "ipc" points at the mapping;
// above it for "local sets" at the segments; growing with bytes for "local one" at the working
// set; a ratio of "ilp4" near 1 where "judge" is not, at the judge kernel's few loads in
// flight (its rate then follows the memory's latency).
//
// Last, rows of 1, 16 and 128 segments of 4 KiB each (a snapshot of many sets' small
// outputs), by both kernels.
//
// Usage: fp4arena_delivery_copy [--max-gib G]   (G in 1..32, default 6; exit 2 otherwise)
// Needs sm_90. It runs itself as the exporting process (--export SETS BYTES).
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness/ipc.h"
#include "harness/pre_call.h"
#include "tests/bench/judge_timing.cuh"

namespace {

constexpr const char* kProgram = "fp4arena_delivery_copy";
constexpr int kReps = 5;
constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kModelBytes = 256 * kMiB;

using fp4arena::CopySegment;

void check(cudaError_t e, const char* what) {
  fp4arena::bench::check_or_exit(kProgram, e, what);
}

// The judge's earlier kernel's loop (every thread strides over every segment in turn), with
// kIlp 16-byte words loaded before any is stored.
constexpr int kIlp = 4;
__global__ void ilp_copy_kernel(const CopySegment* segs, int n) {
  const size_t threads = size_t(gridDim.x) * blockDim.x;
  const size_t me = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  for (int s = 0; s < n; ++s) {
    const CopySegment g = segs[s];
    const size_t words = g.bytes / 16;  // every segment here is 16-byte aligned and sized
    const uint4* __restrict__ src = reinterpret_cast<const uint4*>(g.src);
    uint4* __restrict__ dst = reinterpret_cast<uint4*>(g.dst);
    for (size_t i = me; i < words; i += kIlp * threads) {
      uint4 v[kIlp];
#pragma unroll
      for (int k = 0; k < kIlp; ++k) {
        if (i + k * threads < words) v[k] = src[i + k * threads];
      }
#pragma unroll
      for (int k = 0; k < kIlp; ++k) {
        if (i + k * threads < words) dst[i + k * threads] = v[k];
      }
    }
  }
}

enum class Kernel { kJudge, kIlp4 };
const char* kernel_name(Kernel k) {
  return k == Kernel::kJudge ? "judge" : "ilp4";
}

// One copy of the device table `table` (n segments) on `stream` with kernel `k`.
void launch(Kernel k, const CopySegment* table, int n, cudaStream_t stream) {
  if (k == Kernel::kJudge) {
    check(fp4arena::copy_segments(table, n, stream), "copy_segments");
    return;
  }
  int device = 0, sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "attribute");
  ilp_copy_kernel<<<4 * sms, 256, 0, stream>>>(table, n);
  check(cudaGetLastError(), "the ilp4 copy kernel");
}

struct Timer {
  cudaStream_t stream = nullptr;
  cudaEvent_t a = nullptr, b = nullptr;
  CopySegment* table = nullptr;
  int capacity = 0;
  Timer() {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreate(&a), "cudaEventCreate");
    check(cudaEventCreate(&b), "cudaEventCreate");
  }
  // The copy of `segs`, after the warm-up when `pre` is given, in ms.
  double once(Kernel k, const std::vector<CopySegment>& segs, const fp4arena::PreCall* pre,
              int salt) {
    // The judge's kernel takes the segments cut into pieces, as a window uploads them.
    const std::vector<CopySegment> rows = k == Kernel::kJudge ? fp4arena::copy_pieces(segs) : segs;
    if (int(rows.size()) > capacity) {
      if (table) check(cudaFree(table), "cudaFree");
      capacity = int(rows.size());
      check(cudaMalloc(&table, rows.size() * sizeof(CopySegment)), "cudaMalloc of the table");
    }
    check(cudaMemcpyAsync(table, rows.data(), rows.size() * sizeof(CopySegment),
                          cudaMemcpyHostToDevice, stream),
          "the table's upload");
    if (pre) check(pre->warm(stream, salt), "the judge's warm-up");
    check(cudaEventRecord(a, stream), "cudaEventRecord");
    launch(k, table, int(rows.size()), stream);
    check(cudaEventRecord(b, stream), "cudaEventRecord");
    check(cudaEventSynchronize(b), "the timed copy");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    return ms;
  }
  // The first copy and the median of the next kReps.
  void first_and_median(Kernel k, const std::vector<CopySegment>& segs,
                        const fp4arena::PreCall& pre, double* first, double* median) {
    *first = once(k, segs, &pre, 0);
    std::vector<double> t;
    for (int r = 1; r <= kReps; ++r) t.push_back(once(k, segs, &pre, r));
    std::sort(t.begin(), t.end());
    *median = t[t.size() / 2];
  }
};

// A kernel's copy model (the judge's CopyModel, no filled bytes) as CallWindow::init measures
// the judge's: medians of seven copies (no warm-up) of 4 KiB and of one 256 MiB segment of
// local memory.
using Model = fp4arena::CopyModel;

Model measure_model(Timer* t, Kernel k, uint8_t* src, uint8_t* dst) {
  auto median7 = [&](size_t bytes) {
    std::vector<double> v;
    for (int i = 0; i < 7; ++i) v.push_back(t->once(k, {{src, dst, bytes}}, nullptr, 0));
    std::sort(v.begin(), v.end());
    return v[3];
  };
  const double small = median7(4096), big = median7(kModelBytes);
  return {small, std::max(0.0, big - small) / double(kModelBytes), 0};
}

// The exporting process: `sets` buffers of `bytes`, their IPC handles on stdout (one per
// line), kept until stdin closes.
int export_main(int sets, size_t bytes) {
  std::vector<void*> ptrs;
  for (int i = 0; i < sets; ++i) {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc in the exporting process");
    check(cudaMemset(p, 0x5A, bytes), "cudaMemset in the exporting process");
    cudaIpcMemHandle_t h;
    check(cudaIpcGetMemHandle(&h, p), "cudaIpcGetMemHandle");
    std::printf("%s\n", fp4arena::hex_of_bytes(h.reserved, sizeof h.reserved).c_str());
    ptrs.push_back(p);
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize in the exporting process");
  std::fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  for (void* p : ptrs) cudaFree(p);
  return 0;
}

// A second process holding `sets` buffers of `bytes`, mapped here.
struct Exporter {
  pid_t pid = -1;
  int to_child = -1;
  std::vector<uint8_t*> mapped;
  Exporter(int sets, size_t bytes) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) {
      std::perror("fp4arena_delivery_copy: pipe");
      std::exit(2);
    }
    pid = fork();
    if (pid == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      const std::string n = std::to_string(sets), b = std::to_string(bytes);
      execl("/proc/self/exe", kProgram, "--export", n.c_str(), b.c_str(), (char*)nullptr);
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_child = in[1];
    FILE* from = fdopen(out[0], "r");
    char line[256];
    for (int i = 0; i < sets; ++i) {
      cudaIpcMemHandle_t h;
      if (!from || !std::fgets(line, sizeof line, from) ||
          !fp4arena::bytes_of_hex(std::string(line, strcspn(line, "\n")), h.reserved,
                                  sizeof h.reserved)) {
        std::fprintf(stderr, "%s: the exporting process sent no handle %d\n", kProgram, i);
        std::exit(2);
      }
      void* p = nullptr;
      check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
      mapped.push_back(static_cast<uint8_t*>(p));
    }
    if (from) std::fclose(from);
  }
  ~Exporter() {
    for (uint8_t* p : mapped) cudaIpcCloseMemHandle(p);
    close(to_child);
    int status = 0;
    waitpid(pid, &status, 0);
  }
};

void print_row(const char* where, const char* form, size_t seg, int sets, Kernel k, const Model& m,
               double first, double median) {
  const size_t bytes = seg * size_t(sets);
  std::printf("%-5s  %-4s  %7.1f  %4d  %6.2f  %-5s  %8.3f  %8.3f  %8.3f  %6.3f  %7.0f\n", where,
              form, double(seg) / double(kMiB), sets, double(bytes) / double(kMiB * 1024),
              kernel_name(k), first, median, m.predict(double(bytes), 0),
              median / m.predict(double(bytes), 0), 2.0 * double(bytes) / (median * 1e6));
}

// Every row of one segment size and set count (see the file comment).
void rows_for(Timer* t, const fp4arena::PreCall& pre, const Model models[2], uint8_t* src,
              uint8_t* one_dst, size_t seg, int sets) {
  const Kernel kernels[2] = {Kernel::kJudge, Kernel::kIlp4};
  double first = 0, median = 0;
  for (int k = 0; k < 2; ++k) {
    t->first_and_median(kernels[k], {{src, one_dst, seg * size_t(sets)}}, pre, &first, &median);
    print_row("local", "one", seg, sets, kernels[k], models[k], first, median);
  }
  std::vector<uint8_t*> local(size_t(sets), nullptr);
  for (uint8_t*& p : local) check(cudaMalloc(&p, seg), "cudaMalloc of a set's buffer");
  Exporter ipc(sets, seg);
  for (const char* where : {"local", "ipc"}) {
    const std::vector<uint8_t*>& dst = where[0] == 'l' ? local : ipc.mapped;
    std::vector<CopySegment> segs;
    for (int s = 0; s < sets; ++s) segs.push_back({src + size_t(s) * seg, dst[size_t(s)], seg});
    for (int k = 0; k < 2; ++k) {
      t->first_and_median(kernels[k], segs, pre, &first, &median);
      print_row(where, "sets", seg, sets, kernels[k], models[k], first, median);
    }
  }
  for (uint8_t* p : local) check(cudaFree(p), "cudaFree");
}

// Many small segments, as a snapshot of many sets' outputs: `sets` segments of 4 KiB, the
// median of kReps copies by each kernel after the warm-up. The earlier loop took about 1 us
// a segment on an H200; the judge's pieces go to the blocks side by side.
void tiny_rows(Timer* t, const fp4arena::PreCall& pre, uint8_t* src, uint8_t* dst) {
  const size_t seg = 4096;
  for (int sets : {1, 16, 128}) {
    std::vector<CopySegment> segs;
    for (int s = 0; s < sets; ++s) segs.push_back({src + s * 2 * seg, dst + s * 2 * seg, seg});
    double first = 0, judge = 0, ilp4 = 0;
    t->first_and_median(Kernel::kJudge, segs, pre, &first, &judge);
    t->first_and_median(Kernel::kIlp4, segs, pre, &first, &ilp4);
    std::printf("tiny   %4d segments of 4 KiB: judge %7.2f us, ilp4 (the earlier loop) %7.2f us\n",
                sets, judge * 1e3, ilp4 * 1e3);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--export") == 0) {
    return export_main(std::atoi(argv[2]), size_t(std::atoll(argv[3])));
  }
  long max_gib = 6;
  if (argc == 3 && std::strcmp(argv[1], "--max-gib") == 0) {
    char* end = nullptr;
    max_gib = std::strtol(argv[2], &end, 10);
    if (end == argv[2] || *end != '\0') max_gib = 0;
  } else if (argc != 1) {
    max_gib = 0;
  }
  if (max_gib < 1 || max_gib > 32) {
    std::fprintf(stderr, "%s: usage: %s [--max-gib G]  (G a whole number of GiB, 1 to 32)\n",
                 kProgram, kProgram);
    return 2;
  }
  int sms = 0;
  cudaDeviceProp prop;
  fp4arena::PreCall pre;
  fp4arena::bench::start_or_exit(kProgram, "the judge's copy kernel as built", &sms, &prop, &pre);
  // A whole number of segments may pass the total by half a segment.
  const size_t max_bytes = size_t(max_gib) << 30, room = max_bytes + 128 * kMiB;
  uint8_t *src = nullptr, *one_dst = nullptr;
  check(cudaMalloc(&src, room), "cudaMalloc of the source");
  check(cudaMalloc(&one_dst, room), "cudaMalloc of the one-segment destination");
  check(cudaMemset(src, 0x3C, room), "cudaMemset");
  Timer t;
  const Model models[2] = {measure_model(&t, Kernel::kJudge, src, one_dst),
                           measure_model(&t, Kernel::kIlp4, src, one_dst)};
  std::printf("%s on %s (%d SMs); models: judge %.4f ms + %.1f GB/s, ilp4 %.4f ms + %.1f GB/s\n",
              kProgram, prop.name, sms, models[0].fixed_ms, 2e-6 / models[0].ms_per_byte,
              models[1].fixed_ms, 2e-6 / models[1].ms_per_byte);
  std::printf(
      "where  form  seg MiB  sets     GiB  kernel  first ms  median ms  model ms  ratio"
      "   GB/s r+w\n");
  for (size_t seg : {14 * kMiB, 138 * kMiB}) {
    for (size_t total :
         {kModelBytes, size_t(1) << 30, size_t(3) << 30, size_t(6) << 30, size_t(12) << 30}) {
      if (total > max_bytes) continue;
      const int sets = int(std::max<size_t>(1, (total + seg / 2) / seg));
      rows_for(&t, pre, models, src, one_dst, seg, sets);
    }
  }
  tiny_rows(&t, pre, src, one_dst);
  return 0;
}

// Cheat: solve() never returns. On its first call it takes over the worker's end of the
// channel (fd 3, length-prefixed JSON) and shared memory (fd 4) and serves every later
// request itself, so that the work moves out of the part the judge times:
//
//   prepare  its own fresh buffers (filled from shared memory when asked, CUDA IPC handles
//            when asked), as the worker would;
//   go       on its stream: waits for the judge's go word, writes the done word at once
//            (the judge's device clock would stop there), launches the correct kernel;
//            then waits half of the time the kernel took last time on this shape, and
//            answers with that half as the device time (so the judge's clock around go
//            agrees with it), while the kernel runs on;
//   collect  (a judge that reads the outputs through the worker) waits for the kernel and
//            copies the outputs back: correct outputs, timed at half.
//
// Against a judge that ends its clock on go's answer and then asks for the outputs, every
// case passes at twice the real speed. This judge instead times its own window and expects the
// worker to say "queued" and then nothing until the judge's "settle" (harness/call_window.h):
// the hand-made answer arrives while the window still waits for a done word that nobody wrote,
// and the judge ends the window and reports the worker's failure (`crashed`).
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <nlohmann/json.hpp>

#include "naive_kernel.cuh"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kSocket = 3, kShm = 4;
// The worker's sync buffer as the judge expects it (harness/stream_memops.h).
constexpr size_t kSyncBytes = 256, kSyncGoOffset = 0, kSyncDoneOffset = 128;

bool read_exact(void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = read(kSocket, c, n);
    if (r <= 0) return false;
    c += r;
    n -= size_t(r);
  }
  return true;
}

void send(const nlohmann::json& m) {
  std::string body = m.dump();
  uint32_t len = uint32_t(body.size());
  unsigned char hdr[4] = {uint8_t(len), uint8_t(len >> 8), uint8_t(len >> 16), uint8_t(len >> 24)};
  if (write(kSocket, hdr, 4) != 4 || write(kSocket, body.data(), body.size()) != ssize_t(len)) {
    _exit(0);
  }
}

nlohmann::json receive() {
  unsigned char hdr[4];
  if (!read_exact(hdr, 4)) _exit(0);
  uint32_t len = hdr[0] | hdr[1] << 8 | hdr[2] << 16 | uint32_t(hdr[3]) << 24;
  std::string body(len, '\0');
  if (!read_exact(&body[0], len)) _exit(0);
  return nlohmann::json::parse(body);
}

std::string hex(const cudaIpcMemHandle_t& h) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (char c : h.reserved) {
    s += d[static_cast<unsigned char>(c) >> 4];
    s += d[c & 15];
  }
  return s;
}

nlohmann::json go_reply(double event_ms) {
  return {{"ok", true},
          {"worker_go_ms", event_ms},
          {"event_ms", event_ms},
          {"event_only_ms", event_ms},
          {"host_call_ms", 0.01},
          {"busy_after_us", 0.0},
          {"threads_before", 1},
          {"threads_after", 1},
          {"hold_timed_out", false}};
}

struct Region {
  size_t offset, total, canary;
  uint8_t* dev;
};

[[noreturn]] void serve(uint8_t* shm, size_t shm_size) {
  std::vector<Region> regions, previous;
  std::vector<uint64_t> slots;
  std::map<std::string, float> last_ms;  // kernel time by shape
  std::string shape;
  cudaStream_t stream;
  cudaEvent_t start, stop;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  bool running = false;
  uint8_t* sync = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&sync), kSyncBytes);
  cudaMemset(sync, 0, kSyncBytes);
  cudaIpcMemHandle_t sync_handle;
  cudaIpcGetMemHandle(&sync_handle, sync);
  auto entry = [](const char* name) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q);
    return p;
  };
  auto wait_value = reinterpret_cast<PFN_cuStreamWaitValue32_v11070>(entry("cuStreamWaitValue32"));
  auto write_value =
      reinterpret_cast<PFN_cuStreamWriteValue32_v11070>(entry("cuStreamWriteValue32"));
  // Waits for the kernel launched at the last go, and learns how long it took.
  auto finish = [&] {
    if (!running) return;
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    last_ms[shape] = ms;
    running = false;
  };
  for (;;) {
    nlohmann::json req = receive();
    const std::string op = req.value("op", "");
    if (op == "quit") _exit(0);
    if (op == "prepare") {
      finish();
      for (Region& r : previous) cudaFree(r.dev);
      previous = regions;
      regions.clear();
      nlohmann::json handles = nlohmann::json::array();
      for (const auto& b : req["buffers"]) {
        Region r{b["offset"], size_t(b["size"]) + 2 * size_t(b["canary"]), b["canary"], nullptr};
        cudaMalloc(reinterpret_cast<void**>(&r.dev), r.total);
        if (req.value("fill", true) && r.offset + r.total <= shm_size) {
          cudaMemcpy(r.dev, shm + r.offset, r.total, cudaMemcpyHostToDevice);
        }
        cudaIpcMemHandle_t h;
        cudaIpcGetMemHandle(&h, r.dev);
        handles.push_back(hex(h));
        regions.push_back(r);
      }
      slots.clear();
      shape.clear();
      for (const auto& a : req["args"]) {
        uint64_t v = 0;
        if (a.contains("buffer")) {
          const Region& r = regions.at(a["buffer"].get<size_t>());
          uint8_t* p = r.dev + r.canary;
          std::memcpy(&v, &p, sizeof p);
        } else if (a.contains("int")) {
          int i = a["int"];
          std::memcpy(&v, &i, sizeof i);
          shape += std::to_string(i) + "x";
        } else {
          float f = a["float"];
          std::memcpy(&v, &f, sizeof f);
        }
        slots.push_back(v);
      }
      nlohmann::json reply = {{"ok", true}};
      if (req.value("export", false)) {
        reply["handles"] = handles;
        reply["sync"] = hex(sync_handle);
      }
      send(reply);
    } else if (op == "empty") {
      if (req.contains("seq")) {
        const cuuint32_t seq = req["seq"];
        cudaMemcpy(sync + kSyncDoneOffset, &seq, sizeof seq, cudaMemcpyHostToDevice);
      }
      send(go_reply(0.005));
    } else if (op == "go") {
      auto t0 = Clock::now();
      auto arg = [&](int i) { return reinterpret_cast<const void*>(&slots.at(size_t(i))); };
      const uint8_t* a = *static_cast<const uint8_t* const*>(arg(0));
      const uint8_t* as = *static_cast<const uint8_t* const*>(arg(1));
      const uint8_t* b = *static_cast<const uint8_t* const*>(arg(2));
      const uint8_t* bs = *static_cast<const uint8_t* const*>(arg(3));
      float alpha = *static_cast<const float*>(arg(4));
      __half* c = *static_cast<__half* const*>(arg(5));
      int M = *static_cast<const int*>(arg(6)), N = *static_cast<const int*>(arg(7)),
          K = *static_cast<const int*>(arg(8));
      if (req.contains("seq") && wait_value && write_value) {
        const cuuint32_t seq = req["seq"];
        CUstream s = reinterpret_cast<CUstream>(stream);
        wait_value(s, reinterpret_cast<CUdeviceptr>(sync + kSyncGoOffset), seq,
                   CU_STREAM_WAIT_VALUE_GEQ);
        write_value(s, reinterpret_cast<CUdeviceptr>(sync + kSyncDoneOffset), seq,
                    CU_STREAM_WRITE_VALUE_DEFAULT);
      }
      cudaEventRecord(start, stream);
      adversarial::launch_naive(a, as, b, bs, alpha, c, M, N, K, stream);
      cudaEventRecord(stop, stream);
      running = true;
      // Half the last time on this shape, spent here so that go's round trip agrees with it.
      auto it = last_ms.find(shape);
      const double half = it == last_ms.end() ? 0.005 : 0.5 * it->second;
      while (std::chrono::duration<double, std::milli>(Clock::now() - t0).count() < half) {
      }
      send(go_reply(half));
    } else if (op == "collect") {
      finish();
      for (const Region& r : regions) {
        if (r.offset + r.total <= shm_size) {
          cudaMemcpy(shm + r.offset, r.dev, r.total, cudaMemcpyDeviceToHost);
        }
      }
      send({{"ok", true}});
    } else {
      send({{"ok", true}});
    }
  }
}

}  // namespace

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  // The call the worker made is computed honestly (once the worker's blocking kernel lets
  // go, after its timeout) and answered by hand; every later request is served here.
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K);
  cudaDeviceSynchronize();
  struct stat st;
  if (fstat(kShm, &st) != 0) _exit(0);
  void* shm = mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, kShm, 0);
  if (shm == MAP_FAILED) _exit(0);
  send(go_reply(0.005));
  serve(static_cast<uint8_t*>(shm), size_t(st.st_size));
}

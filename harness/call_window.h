// The judge's own hands on a call's device buffers. The worker allocates every argument
// buffer and hands the judge a CUDA IPC handle for each; the judge maps them into its own
// context and from then on does everything to them itself, on its own clock:
//
//   before the window  canaries and output poison written into the worker's buffers, and
//                      the inputs staged in judge-only device memory;
//   the window         t0; the staged inputs copied into the worker's buffers; L2 flushed;
//                      go round trip (solve() runs); every output copied to judge-only
//                      memory (the snapshot); t1;
//   after the window   every buffer read back to judge-only host memory, outputs from the
//                      snapshot, for the canary, input and answer checks.
//
// So a solution sees its inputs only inside the window, and whatever it did not finish
// inside the window is not in the snapshot: work moved out of the timed call (into prepare,
// after a forged early reply, into a later request) is either on the judge's clock or
// missing from the answer. Nothing the worker says is needed for either: a handle that does
// not name a buffer of the stated size is refused.
//
// Two contexts sharing one GPU are time-sliced: a snapshot issued while the worker's work
// still runs waits for it (it is on the judge's clock) or preempts it after a time slice
// (about 2 ms on an H200) and copies unfinished outputs. The window's own work is the
// judge's, in its own context, so the worker cannot slow the copies except by keeping the
// GPU busy, which costs it the same time.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fp4arena {

class PreCall;

/// One argument buffer of a call as the judge sees it: `canary` bytes, the payload, `canary`
/// bytes (total = payload + 2 * canary).
struct WindowBuffer {
  size_t payload = 0;
  size_t canary = 0;
  bool output = false;
  uint8_t poison = 0;  ///< the byte every payload byte of an output starts as
  size_t total() const { return payload + 2 * canary; }
};

class CallWindow {
 public:
  CallWindow() = default;
  CallWindow(const CallWindow&) = delete;
  CallWindow& operator=(const CallWindow&) = delete;
  ~CallWindow();

  /// On the current device: a stream, and the cost model of the window's copies, measured
  /// on judge-only memory (before any worker runs). `flush` (not owned) flushes L2 in the
  /// window.
  bool init(const PreCall* flush, std::string* err);

  /// Maps the worker's buffers of one call, named by `handles` (hex_of_bytes of a
  /// cudaIpcMemHandle_t, one per buffer). A handle mapped for an earlier call is reused; mappings
  /// not used in the last few calls are closed. False + *err (the worker's fault: the handle is
  /// malformed, names no allocation, one smaller than the buffer, or one named twice) otherwise.
  bool map(const std::vector<std::string>& handles, const std::vector<WindowBuffer>& buffers,
           std::string* err);

  /// Before the window: `canary` (each buffer's canary bytes) before and after every
  /// buffer's payload, and every output's payload set to its poison byte.
  cudaError_t fill(const uint8_t* canary);

  /// Before the window: the payload of every input buffer (in buffer order, one pointer per
  /// input) into judge-only device memory.
  cudaError_t stage(const std::vector<const uint8_t*>& inputs);

  /// The window's start: the staged inputs into the worker's buffers, then the L2 flush.
  cudaError_t deliver();
  /// The window's end: every output buffer, canaries included, into judge-only memory.
  cudaError_t snapshot();
  /// Waits for the window's work on the judge's stream until `deadline`: cudaSuccess,
  /// cudaErrorNotReady when the deadline passed, or the error.
  cudaError_t wait(std::chrono::steady_clock::time_point deadline) const;

  /// After the window: every buffer (canaries included) into host_image() at `offsets`
  /// (one per buffer), outputs from the snapshot.
  cudaError_t read_back(const std::vector<size_t>& offsets, size_t image_bytes);
  const uint8_t* host_image() const { return image_; }

  /// The time the window's copies of this call may take beyond an empty window, from the
  /// model measured at init (twice the model: the allowance for slower copies).
  double copy_allowance_ms() const;

  /// Closes every mapping (the worker is gone).
  void unmap_all();

 private:
  struct Mapping {
    uint8_t* ptr = nullptr;
    size_t size = 0;
    uint64_t last_used = 0;
  };
  // Judge-only device memory that grows to the largest call.
  struct Scratch {
    uint8_t* ptr = nullptr;
    size_t size = 0;
    cudaError_t reserve(size_t bytes);
    ~Scratch();
  };

  // Closes every mapping whose handle is not in `keep`.
  void close_except(const std::vector<std::string>& keep);

  const PreCall* flush_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::map<std::string, Mapping> mappings_;  // by handle
  uint64_t generation_ = 0;
  std::vector<WindowBuffer> buffers_;
  std::vector<uint8_t*> worker_ptrs_;  // of the current call, one per buffer
  Scratch staged_, snap_, marker_;
  uint8_t* image_ = nullptr;  // pinned host memory
  size_t image_size_ = 0;
  double copy_fixed_ms_ = 0, copy_ms_per_byte_ = 0;
};

}  // namespace fp4arena

// The judge's own hands on a call's device buffers. The worker allocates every argument
// buffer and hands the judge a CUDA IPC handle for each; the judge maps them into its own
// context and from then on does everything to them itself, on its own clock:
//
//   before the window  canaries and output poison written into the worker's buffers, and
//                      the inputs staged in judge-only device memory;
//   the window         t0; the staged inputs copied into the worker's buffers; L2 flushed;
//                      go round trip (solve() runs); every output copied to judge-only
//                      memory (the snapshot); t1;
//
// The window is also timed on the GPU's own timeline, by the judge's events in its own
// stream, with no host latency inside. The whole window is enqueued before the worker is
// told to go: device start event; delivery; L2 flush; device mid event; a short spin (long
// enough for the worker to have queued its call behind it); the go word (the call's
// sequence number) into the worker's sync buffer; a wait for the worker's done word; device
// end event; snapshot; device after event.
// The worker's launch stream waits for the go word before its blocking kernel and writes
// the done word right after its stop event (harness/stream_memops.h). So everything the
// worker's context does on the GPU between delivery and its done word lies between the
// judge's two events, and what a solution leaves running past its done word is in the
// snapshot or missing from it, as for the host clock.
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

#include "harness/verdict.h"

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

/// How long the window's spin lasts between delivery and the go word: longer than the go
/// request takes to reach the worker and the worker to queue its call behind its wait, so
/// that no host latency falls between the judge's device events.
constexpr double kWindowSpinUs = 200;

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

  /// Maps the worker's sync buffer (harness/stream_memops.h), named by its handle in every
  /// exported prepare; a new handle (a new worker) replaces the old mapping. False + *err
  /// (the worker's fault) when it is malformed, cannot be mapped or is too small.
  bool map_sync(const std::string& handle, std::string* err);

  /// Enqueues the whole window of call `seq` (see the file comment): device start event,
  /// delivery of the staged inputs, L2 flush, spin, go word, wait for the done word, device
  /// end event, snapshot of every output. Nothing waits here.
  cudaError_t open(uint32_t seq);
  /// Writes the done word of call `seq` from the judge's side, so that a window whose worker
  /// will never write it (it failed, was killed, or answered without it) can finish.
  cudaError_t release(uint32_t seq);
  /// Waits for the window's work on the judge's stream until `deadline`: cudaSuccess,
  /// cudaErrorNotReady when the deadline passed, or the error.
  cudaError_t wait(std::chrono::steady_clock::time_point deadline) const;
  /// After wait(): the window's three parts on the GPU timeline (harness/verdict.h).
  WindowClock clock() const;
  /// What delivering this call's inputs, and copying its outputs into the snapshot, cost on
  /// the GPU timeline by the device copy model measured at init (with events): the parts of
  /// clock().pre_ms and clock().post_ms beyond an empty window's.
  double delivery_model_ms() const;
  double snapshot_model_ms() const;

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
  // The worker's sync buffer as mapped here, its handle, the window's device events and the
  // stream release() writes from.
  uint8_t* sync_ = nullptr;
  std::string sync_handle_;
  cudaEvent_t dev_start_ = nullptr, dev_mid_ = nullptr, dev_end_ = nullptr, dev_after_ = nullptr;
  cudaStream_t release_stream_ = nullptr;
  double dev_copy_fixed_ms_ = 0, dev_copy_ms_per_byte_ = 0;
  // The window's own copies, enqueued by open().
  cudaError_t deliver();
  cudaError_t snapshot();
  uint8_t* image_ = nullptr;  // pinned host memory
  size_t image_size_ = 0;
  double copy_fixed_ms_ = 0, copy_ms_per_byte_ = 0;
};

}  // namespace fp4arena

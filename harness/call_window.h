// The judge's own hands on a window's device buffers, and its own clock around the calls.
// The worker allocates `sets` sets of argument buffers (one set per call of the window) and
// hands the judge a CUDA IPC handle for each buffer; the judge maps them into its own context
// and from then on does everything to them itself:
//
//   before the window  canaries and output poison written into every set, and every set's
//                      inputs staged in judge-only device memory;
//   the window         (all enqueued on the judge's stream before the worker is told to go)
//                      warm-up traffic; E0; every set's inputs delivered (one copy kernel;
//                      under WindowMethod::kV2 it also writes every output's poison again);
//                      the clean L2 flush (harness/pre_call.h); E1; the go word (the
//                      window's sequence number) into the worker's sync buffer; a wait for
//                      the worker's done word; E2; every set's outputs copied to judge-only
//                      memory (the snapshot, one copy kernel); E3;
//   after the window   every buffer read back to judge-only host memory, outputs from the
//                      snapshot, for the canary, input and answer checks.
//
// The worker queues its calls first, behind a wait for the go word on its launch stream
// (solve() for set 0, set 1, ...; then its done word), so the calls run back to back on the
// GPU the moment the go word lands, with no host latency in the window.
//
// E0..E3 are the judge's events in its own context: they give every figure that ranks
// (verdict.h, window_call_ms). Two contexts on one GPU are time-sliced, so E1..E2 holds the
// worker's calls plus the GPU's two switches between the contexts (about 0.28 ms in all on an
// H100, stable to a microsecond), which the judge calibrates before any user code is loaded
// (windows whose worker runs a null kernel of its own) and subtracts. Work the worker's context
// does beside the delivery, or past a done word it wrote early, lengthens E0..E1 or E2..E3
// (the copies are kernels, time-sliced with it) and is charged beyond the copies' model.
//
// So a solution sees its inputs only inside the window, and whatever it did not finish
// inside the window is not in the snapshot. Nothing the worker says is needed for either: a
// handle that does not name a buffer of the stated size is refused.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/pre_call.h"
#include "harness/verdict.h"

namespace fp4arena {

/// One argument buffer of a call as the judge sees it: `canary` bytes, the payload, `canary`
/// bytes (total = payload + 2 * canary).
struct WindowBuffer {
  size_t payload = 0;
  size_t canary = 0;
  bool output = false;
  uint8_t poison = 0;  ///< the byte every payload byte of an output starts as
  size_t total() const { return payload + 2 * canary; }
};

/// A window's copies as CallWindow::stage() plans them from one set's `buffers`, `sets`, the
/// worker's buffers (worker[set * buffers.size() + i]) and the judge's staged and snapshot
/// memory: set by set and buffer by buffer, each input's payload from its own 256-aligned
/// piece of `staged` into the worker's buffer past its leading canary, and each output whole
/// (canaries too) into its own 256-aligned piece of `snap`; with `refill`, each output's
/// payload filled with its poison, after every input. A buffer of no payload delivers nothing.
struct CopyPlan {
  std::vector<CopySegment> delivery, snapshot;
  std::vector<uint8_t*> staged_at;  ///< where each input's payload is staged, set by set
};
CopyPlan plan_copies(const std::vector<WindowBuffer>& buffers, int sets,
                     const std::vector<uint8_t*>& worker, uint8_t* staged, uint8_t* snap,
                     bool refill);

class CallWindow {
 public:
  CallWindow() = default;
  CallWindow(const CallWindow&) = delete;
  CallWindow& operator=(const CallWindow&) = delete;
  ~CallWindow();

  /// On the current device: a stream, events, and the cost model of the window's copy kernel
  /// measured on judge-only memory (before any worker runs; WindowMethod::kV1). `pre` (not
  /// owned) warms and flushes.
  bool init(const PreCall* pre, std::string* err);

  /// WindowMethod::kV2 (verdict.h): from now on stage() adds every output's poison to the
  /// delivery, so that outputs are poisoned again inside every window.
  void refill_outputs() { refill_outputs_ = true; }
  /// WindowMethod::kV2: the delivery's and the snapshot's models measured in the worker's own
  /// windows replace init's.
  void use_models(const CopyModel& delivery, const CopyModel& snapshot) {
    delivery_model_ = delivery;
    snapshot_model_ = snapshot;
  }

  /// Maps the worker's buffers of one window: `handles` holds `sets` groups of
  /// buffers.size() handles (hex_of_bytes of a cudaIpcMemHandle_t), set by set. A handle
  /// mapped for an earlier window is reused; mappings not named now are closed. False + *err
  /// (the worker's fault: a handle is malformed, names no allocation, one smaller than the
  /// buffer, or one named twice) otherwise.
  bool map(const std::vector<std::string>& handles, const std::vector<WindowBuffer>& buffers,
           int sets, std::string* err);

  /// Before the window: `canary` (each buffer's canary bytes) before and after every
  /// buffer's payload in every set, and every output's payload set to its poison byte.
  cudaError_t fill(const uint8_t* canary);

  /// Before the window: every set's input payloads (inputs[set][k], one pointer per input
  /// buffer in buffer order) into judge-only device memory, and the copy tables (after
  /// refill_outputs(), every output's payload refilled with its poison after the inputs).
  cudaError_t stage(const std::vector<std::vector<const uint8_t*>>& inputs);

  /// Maps the worker's sync buffer (harness/stream_memops.h), named in every prepare reply;
  /// a new handle (a new worker) replaces the old mapping. False + *err (the worker's fault)
  /// when it is malformed, cannot be mapped or is too small.
  bool map_sync(const std::string& handle, std::string* err);

  /// Enqueues the whole window of sequence number `seq` (see the file comment). Nothing
  /// waits here.
  cudaError_t open(uint32_t seq);
  /// Writes the done word of `seq` from the judge's side, so that a window whose worker
  /// will never write it (it failed, was killed, or never queued its calls) can finish.
  cudaError_t release(uint32_t seq);
  /// Waits for the window's work on the judge's stream until `deadline`: cudaSuccess,
  /// cudaErrorNotReady when the deadline passed, or the error.
  cudaError_t wait(std::chrono::steady_clock::time_point deadline) const;
  /// After wait(): the window's parts on the GPU timeline.
  WindowClock clock() const;
  /// What the window's delivery and snapshot cost by their copy models.
  double delivery_model_ms() const;
  double snapshot_model_ms() const;

  /// After the window: every buffer of every set (canaries included) into host memory, set
  /// `s` at host_image(s) with buffer i at offsets[i]; outputs come from the snapshot.
  cudaError_t read_back(const std::vector<size_t>& offsets, size_t image_bytes);
  const uint8_t* host_image(int set) const { return image_ + size_t(set) * image_stride_; }

  /// Closes every mapping (the worker is gone).
  void unmap_all();

 private:
  struct Mapping {
    uint8_t* ptr = nullptr;
    size_t size = 0;
  };
  // Judge-only device memory that grows to the largest window.
  struct Scratch {
    uint8_t* ptr = nullptr;
    size_t size = 0;
    cudaError_t reserve(size_t bytes);
    ~Scratch();
  };

  // Closes every mapping whose handle is not in `keep`.
  void close_except(const std::vector<std::string>& keep);
  // `segments` cut into pieces (copy_pieces) and copied into `*table` (grown to fit) on the
  // window's stream, outside any window; *pieces is how many.
  cudaError_t upload(Scratch* table, const std::vector<CopySegment>& segments, int* pieces);
  // One copy kernel over the first `pieces` pieces of `table` (copy_segments), on the
  // window's stream.
  cudaError_t copy(const Scratch& table, int pieces);

  const PreCall* pre_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::map<std::string, Mapping> mappings_;  // by handle
  std::vector<WindowBuffer> buffers_;
  int sets_ = 0;
  std::vector<uint8_t*> worker_ptrs_;  // [set * buffers + i]
  std::vector<CopySegment> delivery_, snapshot_;
  Scratch staged_, snap_, delivery_table_, snapshot_table_;
  int delivery_pieces_ = 0, snapshot_pieces_ = 0;  // in the two tables
  // The worker's sync buffer as mapped here, its handle, the window's events and the stream
  // release() writes from.
  uint8_t* sync_ = nullptr;
  std::string sync_handle_;
  cudaEvent_t e0_ = nullptr, e1_ = nullptr, e2_ = nullptr, e3_ = nullptr;
  cudaStream_t release_stream_ = nullptr;
  CopyModel delivery_model_, snapshot_model_;
  bool refill_outputs_ = false;
  uint8_t* image_ = nullptr;  // pinned host memory
  size_t image_size_ = 0, image_stride_ = 0;
};

}  // namespace fp4arena

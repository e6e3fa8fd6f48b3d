// What the judge does on the GPU around timed calls, in its own process, for solutions (in
// the judge's call window, harness/call_window.h) and yardsticks (time_back_to_back below)
// alike, so that both are timed under the same conditions:
//
//   1. warm(): about 1 ms of memset traffic, so that clocks are up as in a busy application;
//   2. flush(): every L2 line left clean and holding nobody's data: persisting lines demoted
//      to normal (cudaCtxResetPersistingL2Cache, so that a persisting access-policy window a
//      solution set cannot carry its inputs over), a memset of twice the L2 (which evicts, and
//      writes back, every line), then `discard.global.L2` of every line of that buffer (which
//      drops the memset's own dirty lines without writing them back). The call after it finds
//      no dirty line to write back on its clock, and none of its inputs in the cache;
//   3. the timed calls, back to back, between two events.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fp4arena {

class PreCall {
 public:
  PreCall() = default;
  PreCall(const PreCall&) = delete;
  PreCall& operator=(const PreCall&) = delete;
  ~PreCall();

  /// Allocates the flush buffer (twice the L2, at least 64 MiB) on the current device and
  /// measures how many memsets of it make `warm_ms` of GPU work.
  bool init(double warm_ms, std::string* err);

  /// Step 1 on `stream`, not waited for; `salt` varies the fill byte.
  cudaError_t warm(cudaStream_t stream, int salt) const;

  /// Step 2 on `stream`, not waited for (the persisting reset is a host call made first).
  cudaError_t flush(cudaStream_t stream, int salt) const;

  size_t flush_bytes() const { return bytes_; }

 private:
  uint8_t* buf_ = nullptr;
  size_t bytes_ = 0;
  int warm_iters_ = 0;
};

/// One timed launch of code under test, `index` in 0..calls-1 (which input set to use).
using IndexedLaunch = std::function<bool(int index, std::string* err)>;

/// Times `calls` back-to-back launches in this process on the default stream: warm-up,
/// flush, start event, launch(0) .. launch(calls-1), stop event; *per_call_ms is the events'
/// interval over `calls`. The yardstick's timed sample, and the in-process reference of
/// tests/bench. False + *err on a CUDA error or a failed launch.
bool time_back_to_back(const PreCall& pre, int calls, int salt, const IndexedLaunch& launch,
                       double* per_call_ms, std::string* err);

/// One piece of a judge's copy: `bytes` from `src` to `dst`, both device memory of the
/// current device (the judge's own, or a worker's buffer mapped into the judge); where `src`
/// is null, `bytes` bytes of `fill` written at `dst` (an output's poison, written again inside
/// a window).
struct CopySegment {
  const uint8_t* src;
  uint8_t* dst;
  size_t bytes;
  uint8_t fill = 0;
};

/// The most bytes of one piece of a copy: one block's work, eight 16-byte words for each of
/// its 256 threads.
constexpr size_t kCopyPieceBytes = size_t(32) << 10;

/// `segments` cut, in order, into pieces of at most kCopyPieceBytes (a piece of a 16-byte
/// aligned segment stays aligned): the table copy_segments takes. Each piece is one block's,
/// so that the pieces of many small segments (a snapshot of many sets' outputs) are copied
/// side by side, not one segment after another (about 1 us each on an H200).
std::vector<CopySegment> copy_pieces(const std::vector<CopySegment>& segments);

/// Copies (or fills) every piece of the device array `pieces` (n of them, from copy_pieces)
/// in one kernel on `stream`: the judge's delivery of a window's inputs and its snapshot of
/// the outputs. A kernel rather than copy-engine copies: its time is the GPU's, shared with
/// the worker's context by time slicing, so work of the worker's beside it lengthens it on
/// the judge's clock instead of overlapping it.
cudaError_t copy_segments(const CopySegment* pieces, int n, cudaStream_t stream);

/// A kernel that does nothing, launched on `stream` (one warp): the worker's stand-in for a
/// solution in the judge's calibration of its clock, before any user code is loaded.
cudaError_t launch_null_kernel(cudaStream_t stream);

}  // namespace fp4arena

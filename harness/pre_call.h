// What happens on the GPU around every timed call, for solutions (in the worker) and for the
// vendor yardstick (in the judge) alike, so both are timed under the same conditions:
//
//   1. about 1 ms of memset traffic (clocks up from idle, as in a busy application), one L2
//      flush (a memset of twice the L2 size), and a device synchronisation;
//   2. a blocking kernel on the default stream that fills every SM's thread slots and spins
//      until the host releases it; meanwhile the host records the start event, calls the
//      code under test, records the stop event;
//   3. release: the GPU runs start event, the queued work, stop event back to back.
//
// So host launch latency is not counted (as in any queued benchmark), and no work can run
// before the start event: while the blocker holds every thread slot, no kernel of another
// stream can start either. If the code under test synchronises while queued, the blocker
// releases itself after a timeout and the call is timed from there.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <string>

namespace fp4arena {

/// How long the blocking kernel waits for its release before letting the queued work run
/// (the code under test synchronised while being queued).
constexpr double kHoldTimeoutMs = 200;

class PreCall {
 public:
  PreCall() = default;
  PreCall(const PreCall&) = delete;
  PreCall& operator=(const PreCall&) = delete;
  ~PreCall();

  /// Allocates the flush buffer (twice the L2, at least 64 MiB) and the release flag on the
  /// current device, and measures how many flushes make `warm_ms` of GPU work.
  bool init(double warm_ms, std::string* err);

  /// Step 1: warm-up, flush, synchronise; `salt` varies the fill byte.
  cudaError_t prepare(int salt) const;

  /// One L2 flush alone (a memset of the flush buffer) on `stream`, not waited for: the
  /// judge's flush inside a call's window (harness/call_window.h).
  cudaError_t flush(cudaStream_t stream, int salt) const;

  /// Step 2: launches the blocking kernel on the default stream.
  cudaError_t hold();

  /// Step 3: releases the blocking kernel.
  void release();

  /// True when the last hold() ended by its timeout rather than by release() (the code
  /// under test waited for the device while it was being queued).
  bool timed_out() const;

  size_t flush_bytes() const { return bytes_; }

  /// What one timed_call() measured.
  struct Timed {
    double event_ms = 0;          ///< start to stop event, work left after it included
    double event_only_ms = 0;     ///< start to stop event alone
    double host_call_ms = 0;      ///< how long the code under test ran on the host
    double busy_after_us = 0;     ///< device busy after the stop event completed
    bool hold_timed_out = false;  ///< the code under test synchronised while queued
  };

  /// The one timed sequence, for solutions (in the worker) and yardsticks (in the judge),
  /// run after prepare() for a timed call: with `hold`, step 2 above; then start event,
  /// `enqueue()`, stop event, release, wait for the stop event, then for the whole device.
  /// Device work still running after the stop event (past `count_after_us`, what an idle
  /// device takes to answer) is added to event_ms. On a CUDA error returns it and sets
  /// *where to the step that failed.
  /// `after_stop`, where given, is enqueued right after the stop event (the worker signals
  /// the judge's window there, harness/call_window.h); the device counts as busy after the
  /// call only once that has completed too (its own latency is the harness's).
  cudaError_t timed_call(const std::function<void()>& enqueue, bool hold, double count_after_us,
                         Timed* out, const char** where,
                         const std::function<void()>& after_stop = {});

  /// A one-block kernel on `stream` that returns `us` microseconds of GPU time after it
  /// starts (%globaltimer): the judge's window waits so on its own stream (call_window.h).
  static cudaError_t spin(cudaStream_t stream, double us);

 private:
  void* buf_ = nullptr;
  size_t bytes_ = 0;
  int warm_iters_ = 0;
  volatile int* flag_ = nullptr;  // host-mapped: [0] release, [1] timed out
  int* flag_dev_ = nullptr;
  int blocks_ = 0;
  cudaEvent_t start_ = nullptr, stop_ = nullptr, signalled_ = nullptr;
};

}  // namespace fp4arena

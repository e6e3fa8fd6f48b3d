// The judge <-> worker channel: length-prefixed JSON messages over a stream socket for
// control, and one shared-memory region (memfd) for the bulk bytes of inputs and outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace fp4arena {

/// Sends one message; false + *err on failure (peer gone, ...). With `timeout_ms` >= 0, a
/// peer that stops reading (the channel's buffer full) makes it fail after that long
/// instead of blocking forever; *err then says so.
bool send_message(int fd, const nlohmann::json& msg, std::string* err, int timeout_ms = -1);

enum class RecvStatus { kOk, kTimeout, kClosed, kError };

/// Waits up to `timeout_ms` (negative: forever) for one whole message. For the first
/// `spin_ms` of the wait it polls without sleeping, then it blocks.
RecvStatus recv_message(int fd, int timeout_ms, nlohmann::json* msg, std::string* err,
                        int spin_ms = 0);

/// How long each side of the judge <-> worker channel polls without sleeping for the next
/// message before it blocks. A blocked process is woken by the scheduler, and on a virtual
/// machine whose idle CPUs have halted that wake-up took 0.1-0.35 ms more than in a burst of
/// back-to-back calls (H200, Firecracker): enough to make the judge's clock around a timed
/// call drift far above its calibration. Messages of one timed call follow each other within
/// microseconds, so both sides catch them while spinning.
constexpr int kChannelSpinMs = 50;

/// `n` bytes as 2n lowercase hex digits (CUDA IPC handles travel as text in messages).
std::string hex_of_bytes(const void* data, size_t n);
/// The inverse: false unless `hex` is exactly 2n hex digits (either case).
bool bytes_of_hex(const std::string& hex, void* out, size_t n);

/// An anonymous shared-memory region (memfd) mapped read-write.
class SharedRegion {
 public:
  SharedRegion() = default;
  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  /// Creates and maps `bytes` bytes; the fd is close-on-exec.
  bool create(size_t bytes, std::string* err);
  /// Maps an inherited fd of `bytes` bytes.
  bool attach(int fd, size_t bytes, std::string* err);

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

/// The most calls (argument-buffer sets) one window of the judge holds.
constexpr int kMaxWindowCalls = 512;

/// Fixed descriptor numbers in the worker.
constexpr int kWorkerSocketFd = 3;
constexpr int kWorkerShmFd = 4;

}  // namespace fp4arena

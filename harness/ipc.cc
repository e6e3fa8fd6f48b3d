#include "harness/ipc.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace fp4arena {
namespace {

// A socket is written with MSG_NOSIGNAL: a peer that closed or shut its end down makes the
// write fail with EPIPE instead of raising SIGPIPE, which would end the writer (the judge,
// when a solution calls shutdown() on the worker's end). Anything else is written plainly.
bool write_all(int fd, const void* data, size_t n, std::string* err,
               std::chrono::steady_clock::time_point deadline, bool forever) {
  const char* p = static_cast<const char*>(data);
  bool socket = true;
  while (n > 0) {
    if (!forever) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      pollfd pfd{fd, POLLOUT, 0};
      const int pr = left > 0 ? poll(&pfd, 1, static_cast<int>(left)) : 0;
      if (pr < 0 && errno == EINTR) continue;
      if (pr == 0) {
        *err = "the peer stopped reading (no room to write the message before its deadline)";
        return false;
      }
    }
    // With a deadline, never block inside send(): write what fits, then poll again.
    ssize_t w =
        socket ? send(fd, p, n, MSG_NOSIGNAL | (forever ? 0 : MSG_DONTWAIT)) : write(fd, p, n);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !forever) continue;
    if (w < 0 && socket && errno == ENOTSOCK) {
      socket = false;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *err = std::string("write to peer failed: ") + std::strerror(errno);
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Reads exactly n bytes before `deadline`, polling without sleeping until `spin_until`.
RecvStatus read_all(int fd, void* data, size_t n, std::chrono::steady_clock::time_point deadline,
                    bool forever, std::chrono::steady_clock::time_point spin_until,
                    std::string* err) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    int wait_ms = -1;
    const auto now = std::chrono::steady_clock::now();
    if (now < spin_until && (forever || now < deadline)) {
      wait_ms = 0;
    } else if (!forever) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) return RecvStatus::kTimeout;
      wait_ms = static_cast<int>(left);
    }
    pollfd pfd{fd, POLLIN, 0};
    int pr = poll(&pfd, 1, wait_ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) {
      *err = std::string("poll failed: ") + std::strerror(errno);
      return RecvStatus::kError;
    }
    if (pr == 0 && wait_ms == 0) continue;  // still spinning
    if (pr == 0) return RecvStatus::kTimeout;
    ssize_t r = read(fd, p, n);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r == 0) return RecvStatus::kClosed;
    if (r < 0) {
      if (errno == ECONNRESET) return RecvStatus::kClosed;
      *err = std::string("read failed: ") + std::strerror(errno);
      return RecvStatus::kError;
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return RecvStatus::kOk;
}

}  // namespace

bool send_message(int fd, const nlohmann::json& msg, std::string* err, int timeout_ms) {
  std::string body = msg.dump();
  uint32_t len = static_cast<uint32_t>(body.size());
  unsigned char hdr[4] = {uint8_t(len), uint8_t(len >> 8), uint8_t(len >> 16), uint8_t(len >> 24)};
  const bool forever = timeout_ms < 0;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(0, timeout_ms));
  return write_all(fd, hdr, 4, err, deadline, forever) &&
         write_all(fd, body.data(), body.size(), err, deadline, forever);
}

RecvStatus recv_message(int fd, int timeout_ms, nlohmann::json* msg, std::string* err,
                        int spin_ms) {
  bool forever = timeout_ms < 0;
  const auto start = std::chrono::steady_clock::now();
  auto deadline = start + std::chrono::milliseconds(timeout_ms);
  auto spin_until = start + std::chrono::milliseconds(std::max(0, spin_ms));
  unsigned char hdr[4];
  RecvStatus st = read_all(fd, hdr, 4, deadline, forever, spin_until, err);
  if (st != RecvStatus::kOk) return st;
  uint32_t len = hdr[0] | hdr[1] << 8 | hdr[2] << 16 | uint32_t(hdr[3]) << 24;
  if (len > (64u << 20)) {
    *err = "message too large (" + std::to_string(len) + " bytes): corrupt channel";
    return RecvStatus::kError;
  }
  std::string body(len, '\0');
  st = read_all(fd, &body[0], len, deadline, forever, spin_until, err);
  if (st != RecvStatus::kOk) return st;
  try {
    *msg = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    *err = std::string("malformed message: ") + e.what();
    return RecvStatus::kError;
  }
  return RecvStatus::kOk;
}

std::string hex_of_bytes(const void* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  const auto* b = static_cast<const unsigned char*>(data);
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s += digits[b[i] >> 4];
    s += digits[b[i] & 15];
  }
  return s;
}

bool bytes_of_hex(const std::string& hex, void* out, size_t n) {
  if (hex.size() != 2 * n) return false;
  auto nibble = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  auto* b = static_cast<unsigned char*>(out);
  for (size_t i = 0; i < n; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    b[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return true;
}

SharedRegion::~SharedRegion() {
  if (data_) munmap(data_, size_);
  if (fd_ >= 0) close(fd_);
}

bool SharedRegion::create(size_t bytes, std::string* err) {
  fd_ = memfd_create("fp4arena-io", MFD_CLOEXEC);
  if (fd_ < 0) {
    *err = std::string("memfd_create failed: ") + std::strerror(errno);
    return false;
  }
  if (ftruncate(fd_, static_cast<off_t>(bytes)) != 0) {
    *err =
        "cannot size shared memory to " + std::to_string(bytes) + " bytes: " + std::strerror(errno);
    return false;
  }
  return attach(fd_, bytes, err);
}

bool SharedRegion::attach(int fd, size_t bytes, std::string* err) {
  fd_ = fd;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    *err = std::string("mmap of shared memory failed: ") + std::strerror(errno);
    return false;
  }
  data_ = static_cast<uint8_t*>(p);
  size_ = bytes;
  return true;
}

}  // namespace fp4arena

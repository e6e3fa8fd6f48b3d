#include "harness/call_window.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <functional>
#include <thread>

#include "harness/ipc.h"
#include "harness/pre_call.h"
#include "harness/stream_memops.h"

namespace fp4arena {
namespace {

using Clock = std::chrono::steady_clock;

// Mappings unused for this many calls are closed: the worker's ring (kRingDepth sets) plus
// one keeps every live set mapped.
constexpr uint64_t kKeepGenerations = 4;

// cuMemGetAddressRange through the runtime's entry-point query, so that the judge does not
// link the driver library itself (machines without a GPU have none).
PFN_cuMemGetAddressRange_v3020 address_range_fn() {
  static PFN_cuMemGetAddressRange_v3020 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      p = nullptr;
    }
    return reinterpret_cast<PFN_cuMemGetAddressRange_v3020>(p);
  }();
  return fn;
}

// Opens a worker's IPC handle (a failure's sticky error cleared), retrying once after
// `before_retry()` when the driver says the address is already mapped.
cudaError_t open_handle(const cudaIpcMemHandle_t& h, void** p,
                        const std::function<void()>& before_retry = {}) {
  cudaError_t e = cudaIpcOpenMemHandle(p, h, cudaIpcMemLazyEnablePeerAccess);
  if (e == cudaErrorAlreadyMapped && before_retry) {
    cudaGetLastError();
    before_retry();
    e = cudaIpcOpenMemHandle(p, h, cudaIpcMemLazyEnablePeerAccess);
  }
  if (e != cudaSuccess) cudaGetLastError();
  return e;
}

// The size of the allocation that starts at `p`, or 0 when `p` starts none the driver can
// size.
size_t allocation_size(void* p) {
  CUdeviceptr base = 0;
  size_t size = 0;
  if (address_range_fn()(&base, &size, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS ||
      base != reinterpret_cast<CUdeviceptr>(p)) {
    return 0;
  }
  return size;
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

}  // namespace

cudaError_t CallWindow::Scratch::reserve(size_t bytes) {
  if (bytes <= size) return cudaSuccess;
  if (ptr) cudaFree(ptr);
  ptr = nullptr;
  size = 0;
  cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&ptr), bytes);
  if (e == cudaSuccess) size = bytes;
  return e;
}

CallWindow::Scratch::~Scratch() {
  if (ptr) cudaFree(ptr);
}

CallWindow::~CallWindow() {
  unmap_all();
  if (image_) cudaFreeHost(image_);
  if (dev_start_) cudaEventDestroy(dev_start_);
  if (dev_mid_) cudaEventDestroy(dev_mid_);
  if (dev_end_) cudaEventDestroy(dev_end_);
  if (dev_after_) cudaEventDestroy(dev_after_);
  if (release_stream_) cudaStreamDestroy(release_stream_);
  if (stream_) cudaStreamDestroy(stream_);
}

bool CallWindow::init(const PreCall* flush, std::string* err) {
  flush_ = flush;
  auto fail = [err](const char* what, cudaError_t e) {
    *err = std::string("the judge's call window: ") + what + ": " + cudaGetErrorString(e);
    return false;
  };
  if (!address_range_fn()) {
    *err = "the judge's call window: the CUDA driver has no cuMemGetAddressRange";
    return false;
  }
  if (!stream_memops().ok()) {
    *err = "the judge's call window: the CUDA driver has no stream memory operations";
    return false;
  }
  cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&release_stream_, cudaStreamNonBlocking);
  if (e != cudaSuccess) return fail("cudaStreamCreate", e);
  if ((e = cudaEventCreate(&dev_start_)) != cudaSuccess ||
      (e = cudaEventCreate(&dev_mid_)) != cudaSuccess ||
      (e = cudaEventCreate(&dev_end_)) != cudaSuccess ||
      (e = cudaEventCreate(&dev_after_)) != cudaSuccess) {
    return fail("cudaEventCreate", e);
  }
  if ((e = marker_.reserve(256)) != cudaSuccess) return fail("cudaMalloc", e);
  // The copy model: one small and one 64 MiB device-to-device copy, medians of a few.
  const size_t big = size_t(64) << 20;
  if ((e = staged_.reserve(big)) != cudaSuccess || (e = snap_.reserve(big)) != cudaSuccess) {
    return fail("cudaMalloc", e);
  }
  auto time_copy = [&](size_t bytes, double* ms) {
    std::vector<double> t;
    for (int i = 0; i < 7; ++i) {
      auto t0 = Clock::now();
      cudaError_t c =
          cudaMemcpyAsync(snap_.ptr, staged_.ptr, bytes, cudaMemcpyDeviceToDevice, stream_);
      if (c == cudaSuccess) c = cudaStreamSynchronize(stream_);
      if (c != cudaSuccess) return c;
      t.push_back(ms_since(t0));
    }
    std::sort(t.begin(), t.end());
    *ms = t[t.size() / 2];
    return cudaSuccess;
  };
  // The same copies on the GPU's timeline (events): the model of delivery_model_ms() and
  // snapshot_model_ms().
  auto device_copy = [&](size_t bytes, double* ms) {
    std::vector<double> t;
    for (int i = 0; i < 7; ++i) {
      cudaEventRecord(dev_start_, stream_);
      cudaError_t c =
          cudaMemcpyAsync(snap_.ptr, staged_.ptr, bytes, cudaMemcpyDeviceToDevice, stream_);
      cudaEventRecord(dev_end_, stream_);
      if (c == cudaSuccess) c = cudaEventSynchronize(dev_end_);
      if (c != cudaSuccess) return c;
      float f = 0;
      cudaEventElapsedTime(&f, dev_start_, dev_end_);
      t.push_back(f);
    }
    std::sort(t.begin(), t.end());
    *ms = t[t.size() / 2];
    return cudaSuccess;
  };
  double small_ms = 0, big_ms = 0, dev_small_ms = 0, dev_big_ms = 0;
  if ((e = time_copy(4096, &small_ms)) != cudaSuccess ||
      (e = time_copy(big, &big_ms)) != cudaSuccess ||
      (e = device_copy(4096, &dev_small_ms)) != cudaSuccess ||
      (e = device_copy(big, &dev_big_ms)) != cudaSuccess) {
    return fail("timing a copy", e);
  }
  copy_fixed_ms_ = small_ms;
  copy_ms_per_byte_ = std::max(0.0, big_ms - small_ms) / double(big);
  dev_copy_fixed_ms_ = dev_small_ms;
  dev_copy_ms_per_byte_ = std::max(0.0, dev_big_ms - dev_small_ms) / double(big);
  return true;
}

bool CallWindow::map_sync(const std::string& handle, std::string* err) {
  if (sync_ && handle == sync_handle_) return true;
  cudaIpcMemHandle_t h;
  if (!bytes_of_hex(handle, h.reserved, sizeof h.reserved)) {
    *err = "the sync buffer's handle is not 128 hex digits";
    return false;
  }
  if (sync_) {
    cudaStreamSynchronize(stream_);
    cudaStreamSynchronize(release_stream_);
    cudaIpcCloseMemHandle(sync_);
    sync_ = nullptr;
    sync_handle_.clear();
  }
  for (const auto& m : mappings_) {
    if (m.first == hex_of_bytes(h.reserved, sizeof h.reserved)) {
      *err = "the sync buffer's handle names an argument buffer";
      return false;
    }
  }
  void* p = nullptr;
  cudaError_t e = open_handle(h, &p);
  if (e != cudaSuccess) {
    *err = std::string("the sync buffer cannot be mapped: ") + cudaGetErrorString(e);
    return false;
  }
  if (allocation_size(p) < kSyncBytes) {
    cudaIpcCloseMemHandle(p);
    *err =
        "the sync buffer's handle names no allocation of " + std::to_string(kSyncBytes) + " bytes";
    return false;
  }
  for (const auto& m : mappings_) {
    if (m.second.ptr == p) {
      cudaIpcCloseMemHandle(p);
      *err = "the sync buffer's handle names an argument buffer";
      return false;
    }
  }
  sync_ = static_cast<uint8_t*>(p);
  sync_handle_ = handle;
  return true;
}

cudaError_t CallWindow::open(uint32_t seq) {
  if (!sync_) return cudaErrorInvalidValue;
  const StreamMemOps& ops = stream_memops();
  cudaError_t e;
  if ((e = cudaEventRecord(dev_start_, stream_)) != cudaSuccess || (e = deliver()) != cudaSuccess ||
      (e = cudaEventRecord(dev_mid_, stream_)) != cudaSuccess ||
      (e = PreCall::spin(stream_, kWindowSpinUs)) != cudaSuccess) {
    return e;
  }
  if (ops.write(reinterpret_cast<CUstream>(stream_),
                reinterpret_cast<CUdeviceptr>(sync_ + kSyncGoOffset), seq,
                CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS ||
      ops.wait(reinterpret_cast<CUstream>(stream_),
               reinterpret_cast<CUdeviceptr>(sync_ + kSyncDoneOffset), seq,
               CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
    return cudaErrorLaunchFailure;
  }
  if ((e = cudaEventRecord(dev_end_, stream_)) != cudaSuccess || (e = snapshot()) != cudaSuccess) {
    return e;
  }
  return cudaEventRecord(dev_after_, stream_);
}

cudaError_t CallWindow::release(uint32_t seq) {
  if (!sync_) return cudaSuccess;
  if (stream_memops().write(reinterpret_cast<CUstream>(release_stream_),
                            reinterpret_cast<CUdeviceptr>(sync_ + kSyncDoneOffset), seq,
                            CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS) {
    return cudaErrorLaunchFailure;
  }
  return cudaSuccess;
}

WindowClock CallWindow::clock() const {
  auto between = [](cudaEvent_t a, cudaEvent_t b) {
    float ms = 0;
    return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? double(ms) : 0.0;
  };
  WindowClock c;
  c.pre_ms = between(dev_start_, dev_mid_);
  c.device_ms = between(dev_mid_, dev_end_);
  c.post_ms = between(dev_end_, dev_after_);
  return c;
}

double CallWindow::delivery_model_ms() const {
  double ms = 0;
  for (const WindowBuffer& b : buffers_) {
    if (!b.output && b.payload > 0) {
      ms += dev_copy_fixed_ms_ + double(b.payload) * dev_copy_ms_per_byte_;
    }
  }
  return ms;
}

double CallWindow::snapshot_model_ms() const {
  double ms = 0;
  for (const WindowBuffer& b : buffers_) {
    if (b.output) ms += dev_copy_fixed_ms_ + double(b.total()) * dev_copy_ms_per_byte_;
  }
  return ms;
}

bool CallWindow::map(const std::vector<std::string>& handles,
                     const std::vector<WindowBuffer>& buffers, std::string* err) {
  ++generation_;
  buffers_ = buffers;
  worker_ptrs_.assign(buffers.size(), nullptr);
  if (handles.size() != buffers.size()) {
    *err = "the worker named " + std::to_string(handles.size()) + " buffer handle(s) for " +
           std::to_string(buffers.size()) + " buffer(s)";
    return false;
  }
  // Handles are keyed by their bytes (hex digits in either case name the same handle).
  std::vector<std::string> keys;
  std::vector<cudaIpcMemHandle_t> decoded(handles.size());
  for (size_t i = 0; i < handles.size(); ++i) {
    cudaIpcMemHandle_t& h = decoded[i];
    if (!bytes_of_hex(handles[i], h.reserved, sizeof h.reserved)) {
      *err = "the handle of buffer " + std::to_string(i) + " is not 128 hex digits";
      return false;
    }
    keys.push_back(hex_of_bytes(h.reserved, sizeof h.reserved));
    if (std::find(keys.begin(), keys.end() - 1, keys.back()) != keys.end() - 1) {
      *err = "the handle of buffer " + std::to_string(i) + " names a buffer named before";
      return false;
    }
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string what = "the handle of buffer " + std::to_string(i);
    const cudaIpcMemHandle_t& h = decoded[i];
    auto it = mappings_.find(keys[i]);
    if (it == mappings_.end()) {
      void* p = nullptr;
      // Already mapped: the worker freed a buffer the judge still maps and allocated a new
      // one at the same address (a ring slot resized, or fresh buffers): the stale mappings
      // go first.
      cudaError_t e = open_handle(h, &p, [&] { close_except(keys); });
      if (e != cudaSuccess) {
        *err = what + " cannot be mapped: " + cudaGetErrorString(e);
        return false;
      }
      const size_t size = allocation_size(p);
      if (size == 0) {
        cudaIpcCloseMemHandle(p);
        *err = what + " maps to no allocation the driver can size";
        return false;
      }
      // Two handles that open to one mapping would let closing one pull the memory from
      // under the other's copies (a fault in the judge's own context): refused, and left
      // mapped until the worker is gone (unmap_all).
      for (const auto& m : mappings_) {
        if (m.second.ptr == p) {
          *err = what + " names the same buffer as another handle";
          return false;
        }
      }
      it = mappings_.emplace(keys[i], Mapping{static_cast<uint8_t*>(p), size, 0}).first;
    }
    it->second.last_used = generation_;
    if (it->second.size < buffers[i].total()) {
      *err = what + " names " + std::to_string(it->second.size) + " bytes, not the " +
             std::to_string(buffers[i].total()) + " the buffer needs";
      return false;
    }
    worker_ptrs_[i] = it->second.ptr;
  }
  for (auto it = mappings_.begin(); it != mappings_.end();) {
    if (it->second.last_used + kKeepGenerations <= generation_) {
      cudaIpcCloseMemHandle(it->second.ptr);
      it = mappings_.erase(it);
    } else {
      ++it;
    }
  }
  return true;
}

void CallWindow::close_except(const std::vector<std::string>& keep) {
  for (auto it = mappings_.begin(); it != mappings_.end();) {
    if (std::find(keep.begin(), keep.end(), it->first) == keep.end()) {
      cudaIpcCloseMemHandle(it->second.ptr);
      it = mappings_.erase(it);
    } else {
      ++it;
    }
  }
}

cudaError_t CallWindow::fill(const uint8_t* canary) {
  // The judge-only memory the window needs, reserved here so that nothing is allocated
  // inside it.
  size_t in_bytes = 0, out_bytes = 0;
  for (const WindowBuffer& b : buffers_) {
    if (b.output) {
      out_bytes += b.total();
    } else {
      in_bytes += b.payload;
    }
  }
  cudaError_t r;
  if ((r = staged_.reserve(std::max<size_t>(in_bytes, 1))) != cudaSuccess ||
      (r = snap_.reserve(std::max<size_t>(out_bytes, 1))) != cudaSuccess) {
    return r;
  }
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const WindowBuffer& b = buffers_[i];
    uint8_t* p = worker_ptrs_[i];
    cudaError_t e;
    if ((e = cudaMemcpyAsync(p, canary, b.canary, cudaMemcpyHostToDevice, stream_)) !=
            cudaSuccess ||
        (e = cudaMemcpyAsync(p + b.canary + b.payload, canary, b.canary, cudaMemcpyHostToDevice,
                             stream_)) != cudaSuccess) {
      return e;
    }
    if (b.output &&
        (e = cudaMemsetAsync(p + b.canary, b.poison, b.payload, stream_)) != cudaSuccess) {
      return e;
    }
  }
  return cudaStreamSynchronize(stream_);
}

cudaError_t CallWindow::stage(const std::vector<const uint8_t*>& inputs) {
  cudaError_t e;
  size_t at = 0, k = 0;
  for (const WindowBuffer& b : buffers_) {
    if (b.output) continue;
    if (k >= inputs.size()) return cudaErrorInvalidValue;
    e = cudaMemcpyAsync(staged_.ptr + at, inputs[k++], b.payload, cudaMemcpyHostToDevice, stream_);
    if (e != cudaSuccess) return e;
    at += b.payload;
  }
  return cudaStreamSynchronize(stream_);
}

cudaError_t CallWindow::deliver() {
  size_t at = 0;
  cudaError_t e;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const WindowBuffer& b = buffers_[i];
    if (b.output || b.payload == 0) continue;
    // Before stage() (the empty round trip beside a call) whatever the staging memory holds
    // is copied, at the same cost; fill() sized it.
    if (at + b.payload > staged_.size) return cudaErrorInvalidValue;
    e = cudaMemcpyAsync(worker_ptrs_[i] + b.canary, staged_.ptr + at, b.payload,
                        cudaMemcpyDeviceToDevice, stream_);
    if (e != cudaSuccess) return e;
    at += b.payload;
  }
  return flush_ ? flush_->flush(stream_, int(generation_)) : cudaSuccess;
}

cudaError_t CallWindow::snapshot() {
  size_t at = 0;
  cudaError_t e;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const WindowBuffer& b = buffers_[i];
    if (!b.output) continue;
    if (at + b.total() > snap_.size) return cudaErrorInvalidValue;
    e = cudaMemcpyAsync(snap_.ptr + at, worker_ptrs_[i], b.total(), cudaMemcpyDeviceToDevice,
                        stream_);
    if (e != cudaSuccess) return e;
    at += b.total();
  }
  // Work of the judge's own even without outputs (the calibration's empty window), so that
  // every window ends with the same switch from the worker's context to the judge's.
  return cudaMemsetAsync(marker_.ptr, 0, 1, stream_);
}

cudaError_t CallWindow::wait(Clock::time_point deadline) const {
  // Spin first (the judge's clock ends when the copies do), then poll with short sleeps.
  const auto spin_until = Clock::now() + std::chrono::milliseconds(50);
  for (;;) {
    cudaError_t e = cudaStreamQuery(stream_);
    if (e != cudaErrorNotReady) return e;
    const auto now = Clock::now();
    if (now >= deadline) return cudaErrorNotReady;
    if (now >= spin_until) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

cudaError_t CallWindow::read_back(const std::vector<size_t>& offsets, size_t image_bytes) {
  if (offsets.size() != buffers_.size()) return cudaErrorInvalidValue;
  if (image_bytes > image_size_) {
    if (image_) cudaFreeHost(image_);
    image_ = nullptr;
    image_size_ = 0;
    cudaError_t e =
        cudaHostAlloc(reinterpret_cast<void**>(&image_), image_bytes, cudaHostAllocDefault);
    if (e != cudaSuccess) return e;
    image_size_ = image_bytes;
  }
  size_t at = 0;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const WindowBuffer& b = buffers_[i];
    if (offsets[i] + b.total() > image_size_) return cudaErrorInvalidValue;
    const uint8_t* from = b.output ? snap_.ptr + at : worker_ptrs_[i];
    if (b.output) at += b.total();
    cudaError_t e =
        cudaMemcpyAsync(image_ + offsets[i], from, b.total(), cudaMemcpyDeviceToHost, stream_);
    if (e != cudaSuccess) return e;
  }
  return cudaStreamSynchronize(stream_);
}

double CallWindow::copy_allowance_ms() const {
  double ms = 0;
  for (const WindowBuffer& b : buffers_) {
    ms += copy_fixed_ms_ + double(b.output ? b.total() : b.payload) * copy_ms_per_byte_;
  }
  return 2 * ms;
}

void CallWindow::unmap_all() {
  if (stream_) cudaStreamSynchronize(stream_);
  if (release_stream_) cudaStreamSynchronize(release_stream_);
  if (sync_) cudaIpcCloseMemHandle(sync_);
  sync_ = nullptr;
  sync_handle_.clear();
  for (auto& m : mappings_) cudaIpcCloseMemHandle(m.second.ptr);
  mappings_.clear();
  worker_ptrs_.clear();
  buffers_.clear();
}

}  // namespace fp4arena

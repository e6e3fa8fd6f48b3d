#include "harness/call_window.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <limits>
#include <thread>

#include "harness/ipc.h"
#include "harness/stream_memops.h"

namespace fp4arena {
namespace {

using Clock = std::chrono::steady_clock;

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

// Opens a worker's IPC handle (a failure's sticky error cleared).
cudaError_t open_handle(const cudaIpcMemHandle_t& h, void** p) {
  cudaError_t e = cudaIpcOpenMemHandle(p, h, cudaIpcMemLazyEnablePeerAccess);
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
  for (cudaEvent_t e : {e0_, e1_, e2_, e3_}) {
    if (e) cudaEventDestroy(e);
  }
  if (release_stream_) cudaStreamDestroy(release_stream_);
  if (stream_) cudaStreamDestroy(stream_);
}

bool CallWindow::init(const PreCall* pre, std::string* err) {
  pre_ = pre;
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
  for (cudaEvent_t* ev : {&e0_, &e1_, &e2_, &e3_}) {
    if ((e = cudaEventCreate(ev)) != cudaSuccess) return fail("cudaEventCreate", e);
  }
  // The copy model: the copy kernel over one small and one 256 MiB segment, medians of a few.
  const size_t big = size_t(256) << 20;
  if ((e = staged_.reserve(big)) != cudaSuccess || (e = snap_.reserve(big)) != cudaSuccess) {
    return fail("cudaMalloc", e);
  }
  auto time_copy = [&](size_t bytes, double* ms) {
    std::vector<double> t;
    cudaError_t c = upload(&delivery_table_, {{staged_.ptr, snap_.ptr, bytes}}, &delivery_pieces_);
    if (c != cudaSuccess) return c;
    for (int i = 0; i < 7; ++i) {
      cudaEventRecord(e0_, stream_);
      c = copy(delivery_table_, delivery_pieces_);
      cudaEventRecord(e1_, stream_);
      if (c == cudaSuccess) c = cudaEventSynchronize(e1_);
      if (c != cudaSuccess) return c;
      float f = 0;
      cudaEventElapsedTime(&f, e0_, e1_);
      t.push_back(f);
    }
    std::sort(t.begin(), t.end());
    *ms = t[t.size() / 2];
    return cudaSuccess;
  };
  double small_ms = 0, big_ms = 0;
  if ((e = time_copy(4096, &small_ms)) != cudaSuccess ||
      (e = time_copy(big, &big_ms)) != cudaSuccess) {
    return fail("timing the copy kernel", e);
  }
  delivery_model_ = snapshot_model_ =
      CopyModel{small_ms, std::max(0.0, big_ms - small_ms) / double(big), 0};
  return true;
}

cudaError_t CallWindow::upload(Scratch* table, const std::vector<CopySegment>& segments,
                               int* pieces) {
  const std::vector<CopySegment> p = copy_pieces(segments);
  *pieces = 0;
  if (p.size() > size_t(std::numeric_limits<int>::max())) return cudaErrorInvalidValue;
  cudaError_t e = table->reserve(std::max<size_t>(p.size(), 1) * sizeof(CopySegment));
  if (e != cudaSuccess || p.empty()) return e;
  *pieces = int(p.size());
  return cudaMemcpyAsync(table->ptr, p.data(), p.size() * sizeof(CopySegment),
                         cudaMemcpyHostToDevice, stream_);
}

cudaError_t CallWindow::copy(const Scratch& table, int pieces) {
  return copy_segments(reinterpret_cast<const CopySegment*>(table.ptr), pieces, stream_);
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
  if (mappings_.count(hex_of_bytes(h.reserved, sizeof h.reserved))) {
    *err = "the sync buffer's handle names an argument buffer";
    return false;
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
  if ((e = pre_->warm(stream_, int(seq))) != cudaSuccess ||
      (e = cudaEventRecord(e0_, stream_)) != cudaSuccess ||
      (e = copy(delivery_table_, delivery_pieces_)) != cudaSuccess ||
      (e = pre_->flush(stream_, int(seq))) != cudaSuccess ||
      (e = cudaEventRecord(e1_, stream_)) != cudaSuccess) {
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
  if ((e = cudaEventRecord(e2_, stream_)) != cudaSuccess ||
      (e = copy(snapshot_table_, snapshot_pieces_)) != cudaSuccess) {
    return e;
  }
  return cudaEventRecord(e3_, stream_);
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
  c.pre_ms = between(e0_, e1_);
  c.call_ms = between(e1_, e2_);
  c.post_ms = between(e2_, e3_);
  return c;
}

double CallWindow::delivery_model_ms() const {
  double copied = 0, filled = 0;
  for (const CopySegment& g : delivery_) (g.src ? copied : filled) += double(g.bytes);
  return delivery_.empty() ? 0.0 : delivery_model_.predict(copied, filled);
}

double CallWindow::snapshot_model_ms() const {
  double bytes = 0;
  for (const CopySegment& g : snapshot_) bytes += double(g.bytes);
  return snapshot_.empty() ? 0.0 : snapshot_model_.predict(bytes, 0);
}

bool CallWindow::map(const std::vector<std::string>& handles,
                     const std::vector<WindowBuffer>& buffers, int sets, std::string* err) {
  buffers_ = buffers;
  sets_ = sets;
  worker_ptrs_.assign(buffers.size() * size_t(sets), nullptr);
  delivery_.clear();
  snapshot_.clear();
  delivery_pieces_ = snapshot_pieces_ = 0;
  if (handles.size() != worker_ptrs_.size()) {
    *err = "the worker named " + std::to_string(handles.size()) + " buffer handle(s) for " +
           std::to_string(worker_ptrs_.size()) + " buffer(s)";
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
  close_except(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string what = "the handle of buffer " + std::to_string(i);
    auto it = mappings_.find(keys[i]);
    if (it == mappings_.end()) {
      void* p = nullptr;
      cudaError_t e = open_handle(decoded[i], &p);
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
      it = mappings_.emplace(keys[i], Mapping{static_cast<uint8_t*>(p), size}).first;
    }
    const WindowBuffer& b = buffers[i % buffers.size()];
    if (it->second.size < b.total()) {
      *err = what + " names " + std::to_string(it->second.size) + " bytes, not the " +
             std::to_string(b.total()) + " the buffer needs";
      return false;
    }
    worker_ptrs_[i] = it->second.ptr;
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
  for (size_t i = 0; i < worker_ptrs_.size(); ++i) {
    const WindowBuffer& b = buffers_[i % buffers_.size()];
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

namespace {
size_t up256(size_t n) {
  return (n + 255) / 256 * 256;
}
}  // namespace

CopyPlan plan_copies(const std::vector<WindowBuffer>& buffers, int sets,
                     const std::vector<uint8_t*>& worker, uint8_t* staged, uint8_t* snap,
                     bool refill) {
  CopyPlan p;
  std::vector<CopySegment> refills;
  size_t at_in = 0, at_out = 0;
  for (int s = 0; s < sets; ++s) {
    for (size_t i = 0; i < buffers.size(); ++i) {
      const WindowBuffer& b = buffers[i];
      uint8_t* w = worker[size_t(s) * buffers.size() + i];
      if (b.output) {
        p.snapshot.push_back({w, snap + at_out, b.total()});
        at_out += up256(b.total());
        if (refill && b.payload > 0)
          refills.push_back({nullptr, w + b.canary, b.payload, b.poison});
        continue;
      }
      p.staged_at.push_back(staged + at_in);
      if (b.payload > 0) p.delivery.push_back({staged + at_in, w + b.canary, b.payload});
      at_in += up256(b.payload);
    }
  }
  p.delivery.insert(p.delivery.end(), refills.begin(), refills.end());
  return p;
}

cudaError_t CallWindow::stage(const std::vector<std::vector<const uint8_t*>>& inputs) {
  if (int(inputs.size()) != sets_) return cudaErrorInvalidValue;
  // Judge-only memory for every set's inputs and outputs, and the two copy tables, reserved
  // here so that nothing is allocated inside the window. Each piece starts 256-aligned.
  size_t in_bytes = 0, out_bytes = 0, in_count = 0;
  for (const WindowBuffer& b : buffers_) {
    (b.output ? out_bytes : in_bytes) += up256(b.output ? b.total() : b.payload);
    in_count += !b.output;
  }
  cudaError_t e;
  if ((e = staged_.reserve(std::max<size_t>(in_bytes * sets_, 1))) != cudaSuccess ||
      (e = snap_.reserve(std::max<size_t>(out_bytes * sets_, 1))) != cudaSuccess) {
    return e;
  }
  for (const auto& set : inputs) {
    if (set.size() != in_count) return cudaErrorInvalidValue;
  }
  CopyPlan plan =
      plan_copies(buffers_, sets_, worker_ptrs_, staged_.ptr, snap_.ptr, refill_outputs_);
  delivery_ = std::move(plan.delivery);
  snapshot_ = std::move(plan.snapshot);
  // The copy tables go to the device now, so that the window launches its kernels only.
  if ((e = upload(&delivery_table_, delivery_, &delivery_pieces_)) != cudaSuccess ||
      (e = upload(&snapshot_table_, snapshot_, &snapshot_pieces_)) != cudaSuccess) {
    return e;
  }
  size_t j = 0;
  for (int s = 0; s < sets_; ++s) {
    size_t k = 0;
    for (const WindowBuffer& b : buffers_) {
      if (b.output) continue;
      e = cudaMemcpyAsync(plan.staged_at[j++], inputs[s][k++], b.payload, cudaMemcpyHostToDevice,
                          stream_);
      if (e != cudaSuccess) return e;
    }
  }
  return cudaStreamSynchronize(stream_);
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
  const size_t need = image_bytes * size_t(std::max(1, sets_));
  if (need > image_size_) {
    if (image_) cudaFreeHost(image_);
    image_ = nullptr;
    image_size_ = 0;
    cudaError_t e = cudaHostAlloc(reinterpret_cast<void**>(&image_), need, cudaHostAllocDefault);
    if (e != cudaSuccess) return e;
    image_size_ = need;
  }
  image_stride_ = image_bytes;
  size_t snap_i = 0;
  for (int s = 0; s < sets_; ++s) {
    for (size_t i = 0; i < buffers_.size(); ++i) {
      const WindowBuffer& b = buffers_[i];
      if (offsets[i] + b.total() > image_bytes) return cudaErrorInvalidValue;
      const uint8_t* from =
          b.output ? snapshot_[snap_i++].dst : worker_ptrs_[size_t(s) * buffers_.size() + i];
      cudaError_t e = cudaMemcpyAsync(image_ + size_t(s) * image_stride_ + offsets[i], from,
                                      b.total(), cudaMemcpyDeviceToHost, stream_);
      if (e != cudaSuccess) return e;
    }
  }
  return cudaStreamSynchronize(stream_);
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
  delivery_.clear();
  snapshot_.clear();
  sets_ = 0;
}

}  // namespace fp4arena

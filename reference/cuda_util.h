// Host-side CUDA and cuBLAS plumbing shared by the GPU oracles (internal to reference/):
// owning handles that free on every path, and checks that turn a failed call into a message
// naming it.
#pragma once

#include <cstddef>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace fp4arena {
namespace cuda_util {

/// One cudaMalloc'd allocation, freed by the destructor.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  /// Allocates `bytes` (at least 1, so that an empty buffer is still a valid pointer).
  cudaError_t Allocate(size_t bytes) { return cudaMalloc(&ptr_, bytes > 0 ? bytes : 1); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

/// One cuBLAS handle, destroyed by the destructor.
class CublasHandle {
 public:
  CublasHandle() = default;
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle() {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }
  cublasStatus_t Create() { return cublasCreate(&handle_); }
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

/// True on cudaSuccess; otherwise sets *err to "<call> failed: <name>: <description>".
inline bool CudaOk(cudaError_t e, const std::string& call, std::string* err) {
  if (e == cudaSuccess) return true;
  if (err != nullptr) {
    *err = call + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  }
  return false;
}

/// True on CUBLAS_STATUS_SUCCESS; otherwise sets *err like CudaOk.
inline bool CublasOk(cublasStatus_t s, const std::string& call, std::string* err) {
  if (s == CUBLAS_STATUS_SUCCESS) return true;
  if (err != nullptr) {
    *err = call + " failed: " + cublasGetStatusName(s) + ": " + cublasGetStatusString(s);
  }
  return false;
}

/// Creates a handle in CUBLAS_PEDANTIC_MATH mode: SGEMM then multiplies and adds in FP32,
/// never through TF32 or another reduced-precision path.
inline bool CreatePedanticCublas(CublasHandle* handle, std::string* err) {
  return CublasOk(handle->Create(), "cublasCreate", err) &&
         CublasOk(cublasSetMathMode(handle->get(), CUBLAS_PEDANTIC_MATH),
                  "cublasSetMathMode(CUBLAS_PEDANTIC_MATH)", err);
}

/// Allocates `bytes` in *d and copies them from host `src`; `what` names the buffer in *err.
inline bool Upload(const void* src, size_t bytes, DeviceBuffer* d, const std::string& what,
                   std::string* err) {
  if (!CudaOk(d->Allocate(bytes), "cudaMalloc (" + what + ")", err)) return false;
  if (bytes == 0) return true;
  return CudaOk(cudaMemcpy(d->as<void>(), src, bytes, cudaMemcpyHostToDevice),
                "cudaMemcpy H2D (" + what + ")", err);
}

}  // namespace cuda_util
}  // namespace fp4arena

#include "harness/copy_yardstick.h"

#include <cuda_runtime.h>

namespace fp4arena {
namespace {

class CopyYardstick : public Yardstick {
 public:
  ~CopyYardstick() override {
    if (src_) cudaFree(src_);
    if (dst_) cudaFree(dst_);
  }
  bool init(size_t bytes, std::string* err) {
    half_ = std::max<size_t>(1, bytes / 2);
    cudaError_t e = cudaMalloc(&src_, half_);
    if (e == cudaSuccess) e = cudaMalloc(&dst_, half_);
    if (e == cudaSuccess) e = cudaMemset(src_, 0x5A, half_);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      *err = std::string("copy yardstick: ") + cudaGetErrorString(e);
      return false;
    }
    return true;
  }
  bool launch(std::string* err) override {
    cudaError_t e = cudaMemcpyAsync(dst_, src_, half_, cudaMemcpyDeviceToDevice, 0);
    if (e != cudaSuccess) {
      *err = std::string("copy yardstick: cudaMemcpyAsync: ") + cudaGetErrorString(e);
      return false;
    }
    return true;
  }

 private:
  void* src_ = nullptr;
  void* dst_ = nullptr;
  size_t half_ = 0;
};

}  // namespace

std::unique_ptr<Yardstick> make_copy_yardstick(size_t bytes, std::string* err) {
  auto y = std::make_unique<CopyYardstick>();
  if (!y->init(bytes, err)) return nullptr;
  return y;
}

}  // namespace fp4arena

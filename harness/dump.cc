#include "harness/dump.h"

#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/npy.h"
#include "harness/process.h"

namespace fp4arena {
namespace {

std::vector<int64_t> shape_of(const ParamSpec& p, const std::map<std::string, int64_t>& dims) {
  std::vector<int64_t> shape;
  for (const std::string& e : p.shape) {
    int64_t v = 0;
    std::string err;
    eval_expr(e, dims, &v, &err);
    shape.push_back(v);
  }
  return shape;
}

// What a dumped file holds, for case.json and load.py.
std::string torch_view(DType t) {
  switch (t) {
    case DType::kBf16:
      return "torch.bfloat16";
    case DType::kFp8E4m3:
      return "torch.float8_e4m3fn";
    case DType::kFp8E8m0:
      return "torch.float8_e8m0fnu";
    case DType::kE2m1x2:
      return "torch.float4_e2m1fn_x2";
    default:
      return "";
  }
}

const char* kLoadPy = R"PY(# Loads a case dumped by `run_challenge ... --action dump`.
#   python3 load.py            prints every array's dtype and shape
#   from load import load_case; arrays, meta = load_case("<this folder>")
#   decoded(arrays, meta): FP4/FP8/bf16 codes as float32 (NumPy only); as_torch: torch views
import json
import os

import numpy as np


def load_case(folder=os.path.dirname(os.path.abspath(__file__))):
    with open(os.path.join(folder, "case.json")) as f:
        meta = json.load(f)
    arrays = {}
    for name, info in meta["files"].items():
        arrays[name] = np.load(os.path.join(folder, info["file"]))
    return arrays, meta


# NumPy has no FP4, FP8 or bfloat16 types: these decode the raw codes to float32.
E2M1_VALUES = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6],
                       dtype=np.float32)


def e2m1(packed):
    """Packed E2M1 pairs (element 2j in the low nibble of byte j) as float32, twice as long."""
    lo, hi = E2M1_VALUES[packed & 0xF], E2M1_VALUES[packed >> 4]
    return np.stack([lo, hi], axis=-1).reshape(*packed.shape[:-1], packed.shape[-1] * 2)


def e4m3(codes):
    """E4M3 (OCP 'fn': no infinities, S.1111.111 is NaN) codes as float32."""
    c = codes.astype(np.int32)
    e, m = (c >> 3) & 0xF, (c & 7).astype(np.float32)
    v = np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * 2.0 ** (e - 7))
    v = np.where((c & 0x7F) == 0x7F, np.nan, v)
    return np.where(c & 0x80, -v, v).astype(np.float32)


def e8m0(codes):
    """E8M0 scale codes (2^(code-127); 255 is NaN) as float32."""
    v = np.exp2(np.where(codes == 255, 127, codes).astype(np.float64) - 127)
    return np.where(codes == 255, np.nan, v).astype(np.float32)


def bf16(bits):
    """bfloat16 bit patterns (uint16) as float32."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


DECODERS = {"e2m1x2": e2m1, "fp8_e4m3": e4m3, "fp8_e8m0": e8m0, "bf16": bf16}


def decoded(arrays, meta):
    """The arrays with FP4, FP8 and bf16 codes decoded to float32 (others as they are)."""
    out = {}
    for name, a in arrays.items():
        decode = DECODERS.get(meta["files"][name]["dtype"])
        out[name] = decode(a) if decode else a
    return out


def as_torch(arrays, meta):
    """The arrays as PyTorch tensors, raw bf16/FP8/FP4 storage viewed as its dtype."""
    import torch

    out = {}
    for name, a in arrays.items():
        t = torch.from_numpy(a.copy())
        view = meta["files"][name].get("torch_view")
        if view and hasattr(torch, view.split(".")[1]):
            t = t.view(getattr(torch, view.split(".")[1]))
        out[name] = t
    return out


if __name__ == "__main__":
    arrays, meta = load_case()
    print(f"{meta['challenge']} case {meta['case']} seed {meta['seed']} dims {meta['dims']}")
    print(f"scalars {meta['scalars']}")
    for name, a in arrays.items():
        info = meta["files"][name]
        print(f"  {name:24s} {str(a.dtype):8s} {str(a.shape):20s} {info['meaning']}")
)PY";

}  // namespace

namespace {

// Writes a case's arrays as .npy files into one folder, listing each in case.json's "files".
class CaseWriter {
 public:
  CaseWriter(const std::string& dir, std::vector<std::string>* files, std::string* err)
      : dir_(dir), files_(files), err_(err) {}

  bool put(const std::string& key, const std::string& descr, const std::vector<int64_t>& shape,
           const void* data, size_t bytes, const std::string& meaning, const std::string& dtype,
           const std::string& view) {
    const std::string file = key + ".npy";
    if (!write_npy(dir_ + "/" + file, descr, shape, data, bytes, err_)) return false;
    listing_[key] = {{"file", file}, {"dtype", dtype}, {"shape", shape}, {"meaning", meaning}};
    if (!view.empty()) listing_[key]["torch_view"] = view;
    files_->push_back(file);
    return true;
  }
  const nlohmann::json& listing() const { return listing_; }

 private:
  std::string dir_;
  std::vector<std::string>* files_;
  std::string* err_;
  nlohmann::json listing_ = nlohmann::json::object();
};

// An output compared exactly: the expected bytes and, where some elements lie on a rounding
// boundary, the tie mask and the alternatives stacked into one array [n][shape...].
bool put_exact_output(CaseWriter& w, const ParamSpec& p, const ProblemData& in,
                      const ExpectedOutput& e, const std::vector<int64_t>& shape) {
  const std::string key = "expected_" + p.name;
  const std::string dtype = dtype_name(p.dtype);
  if (!w.put(key, npy_descr(dtype), shape, e.bytes.data(), e.bytes.size(),
             "expected '" + p.name + "' exactly (" + dtype + ")", dtype, torch_view(p.dtype))) {
    return false;
  }
  if (e.tie.empty()) return true;
  std::vector<int64_t> stacked = {int64_t(e.alternatives.size())};
  stacked.insert(stacked.end(), shape.begin(), shape.end());
  std::vector<uint8_t> all;
  for (const std::vector<uint8_t>& alt : e.alternatives)
    all.insert(all.end(), alt.begin(), alt.end());
  int64_t rows = 0, cols = 0;
  output_matrix(p, in.dims, &rows, &cols);
  return w.put(key + "_tie", "|u1", {rows, cols}, e.tie.data(), e.tie.size(),
               "1 where an element of '" + p.name +
                   "' lies on a rounding boundary within FP32 noise (either neighbour passes)",
               "uint8", "") &&
         w.put(key + "_alternatives", npy_descr(dtype), stacked, all.data(), all.size(),
               "other codes '" + p.name +
                   "' may take at its tie elements: any of the n buffers (first axis)",
               dtype, torch_view(p.dtype));
}

// One buffer parameter: an input as given, an output as its expected values.
bool put_param(CaseWriter& w, const ParamSpec& p, const ProblemData& in, const Expected& expected) {
  const std::vector<int64_t> shape = shape_of(p, in.dims);
  const std::string dtype = dtype_name(p.dtype);
  if (p.role == "in") {
    const std::vector<uint8_t>& b = in.buffers.at(p.name);
    return w.put(p.name, npy_descr(dtype), shape, b.data(), b.size(),
                 "input '" + p.name + "' (" + dtype + ")", dtype, torch_view(p.dtype));
  }
  const ExpectedOutput& e = expected.at(p.name);
  if (p.compare.kind == CompareKind::kTolerance || p.compare.kind == CompareKind::kUlp) {
    const std::string key = "expected_" + p.name;
    return w.put(
        key, "<f4", shape, e.values.data(), e.values.size() * 4,
        "expected '" + p.name + "' as float32 (compare: " + compare_name(p.compare.kind) + ")",
        "fp32", "");
  }
  return put_exact_output(w, p, in, e, shape);
}

}  // namespace

namespace {

// The case's scalars as the signature types them: an int parameter as an integer (the
// generators hold every scalar as a double).
nlohmann::json scalars_json(const Spec& spec, const ProblemData& in) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : in.scalars) {
    const ParamSpec* p = spec.find_param(name);
    if (p && p->scalar_type == "int") {
      out[name] = static_cast<int64_t>(value);
    } else {
      out[name] = value;
    }
  }
  return out;
}

}  // namespace

bool dump_case(const Spec& spec, const CaseSpec& c, uint64_t seed, const ProblemData& in,
               const Expected& expected, const std::string& dir, std::vector<std::string>* files,
               std::string* err) {
  if (!make_dirs(dir, err)) return false;
  nlohmann::json meta = {{"challenge", spec.name},
                         {"spec_version", spec.spec_version},
                         {"case", c.name},
                         {"seed", seed},
                         {"dims", in.dims},
                         {"scalars", scalars_json(spec, in)},
                         {"prototype", c_prototype(spec)}};
  CaseWriter w(dir, files, err);
  for (const ParamSpec& p : spec.params) {
    if (p.is_buffer() && !put_param(w, p, in, expected)) return false;
  }
  meta["files"] = w.listing();
  if (!write_file_atomic(dir + "/case.json", meta.dump(2) + "\n", err) ||
      !write_file_atomic(dir + "/load.py", kLoadPy, err)) {
    return false;
  }
  files->push_back("case.json");
  files->push_back("load.py");
  return true;
}

}  // namespace fp4arena

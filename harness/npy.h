// NumPy .npy files (format version 1.0), so that inputs, outputs and mismatches can be
// inspected with numpy.load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fp4arena {

/// The .npy descr of one of the judge's dtypes: uint8 '|u1', int32 '<i4', fp16 '<f2',
/// bf16 '<u2' (the raw bits: NumPy has no bfloat16), fp32 '<f4', and the byte-coded
/// fp8_e4m3, fp8_e8m0 and e2m1x2 (two FP4 codes per byte) as '|u1'. Empty for any other.
std::string npy_descr(const std::string& dtype);

/// Writes `bytes` bytes at `data` as a C-order array of `shape` with element type `descr`
/// (e.g. "<f4"), format version 1.0: magic "\x93NUMPY", version 1.0, a little-endian
/// uint16 header length, then the header dict
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }` padded with spaces and
/// ending in '\n' so that the data starts at a multiple of 64 bytes. Shapes print as
/// `(n,)` for one dimension and `()` for none. False + *err when the descr is not of the
/// form [<|>][a-zA-Z]N, a dimension is negative, `bytes` is not the product of the shape
/// times the item size, or the file cannot be written.
bool write_npy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape,
               const void* data, size_t bytes, std::string* err);

/// Reads the header of a version 1.0 .npy file held in `bytes`: its descr, its shape and
/// where its data starts. Only C order is accepted. False + *err naming what is wrong.
bool read_npy_header(const std::string& bytes, std::string* descr, std::vector<int64_t>* shape,
                     size_t* data_offset, std::string* err);

}  // namespace fp4arena

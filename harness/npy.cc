#include "harness/npy.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "harness/process.h"

namespace fp4arena {
namespace {

const char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kPrefixLen = kMagicLen + 2 + 2;  // magic, version, header length

bool descr_item_size(const std::string& descr, size_t* size) {
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '>' && descr[0] != '|')) return false;
  char kind = descr[1];
  if (!((kind >= 'a' && kind <= 'z') || (kind >= 'A' && kind <= 'Z'))) return false;
  size_t n = 0;
  for (size_t i = 2; i < descr.size(); ++i) {
    if (descr[i] < '0' || descr[i] > '9' || n > 1000000) return false;
    n = n * 10 + static_cast<size_t>(descr[i] - '0');
  }
  if (n == 0) return false;
  *size = n;
  return true;
}

// A small cursor over the header dict's text; each method skips blanks first.
struct Cursor {
  const std::string& s;
  size_t i = 0;
  void blanks() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
  }
  bool eat(char c) {
    blanks();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  bool quoted(std::string* out) {
    blanks();
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"')) return false;
    char q = s[i++];
    size_t end = s.find(q, i);
    if (end == std::string::npos) return false;
    *out = s.substr(i, end - i);
    i = end + 1;
    return true;
  }
  bool word(std::string* out) {
    blanks();
    size_t start = i;
    while (i < s.size() && ((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z'))) ++i;
    *out = s.substr(start, i - start);
    return !out->empty();
  }
  bool integer(int64_t* out) {
    blanks();
    size_t start = i;
    int64_t v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (v > (INT64_MAX - 9) / 10) return false;
      v = v * 10 + (s[i++] - '0');
    }
    if (i < s.size() && s[i] == 'L') ++i;  // Python 2 longs
    *out = v;
    return i > start;
  }
};

}  // namespace

std::string npy_descr(const std::string& dtype) {
  if (dtype == "uint8" || dtype == "fp8_e4m3" || dtype == "fp8_e8m0" || dtype == "e2m1x2") {
    return "|u1";
  }
  if (dtype == "int32") return "<i4";
  if (dtype == "fp16") return "<f2";
  if (dtype == "bf16") return "<u2";
  if (dtype == "fp32") return "<f4";
  return "";
}

bool write_npy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape,
               const void* data, size_t bytes, std::string* err) {
  size_t item = 0;
  if (!descr_item_size(descr, &item)) {
    *err = path + ": '" + descr + "' is not a .npy descr such as '<f4' or '|u1'";
    return false;
  }
  size_t count = 1;
  std::string dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) {
      *err = path + ": dimension " + std::to_string(d) + " is negative";
      return false;
    }
    count *= static_cast<size_t>(shape[d]);
    dims += (d ? ", " : "") + std::to_string(shape[d]);
  }
  if (shape.size() == 1) dims += ",";
  if (count * item != bytes) {
    *err = path + ": " + std::to_string(bytes) + " bytes do not hold " + std::to_string(count) +
           " elements of " + std::to_string(item) + " bytes";
    return false;
  }
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Spaces, then '\n', so that prefix + dict ends on a multiple of 64.
  size_t total = kPrefixLen + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  if (dict.size() > 0xffff) {
    *err = path + ": the header is too long for format version 1.0";
    return false;
  }
  std::string header(kMagic, kMagicLen);
  header += static_cast<char>(1);
  header += static_cast<char>(0);
  header += static_cast<char>(dict.size() & 0xff);
  header += static_cast<char>(dict.size() >> 8);
  header += dict;

  return write_file_atomic(path, header.data(), header.size(), data, bytes, err);
}

namespace {

// The header's shape tuple at the cursor, "(2, 3)", "(5,)" or "()", into *shape.
bool read_shape(Cursor& c, std::vector<int64_t>* shape, std::string* err) {
  if (!c.eat('(')) {
    *err = "header: shape must be a tuple";
    return false;
  }
  while (!c.eat(')')) {
    int64_t d = 0;
    if (!c.integer(&d)) {
      *err = "header: shape holds something other than whole numbers";
      return false;
    }
    shape->push_back(d);
    if (!c.eat(',') && !(c.blanks(), c.i < c.s.size() && c.s[c.i] == ')')) {
      *err = "header: expected ',' or ')' in shape";
      return false;
    }
  }
  return true;
}

}  // namespace

bool read_npy_header(const std::string& bytes, std::string* descr, std::vector<int64_t>* shape,
                     size_t* data_offset, std::string* err) {
  if (bytes.size() < kPrefixLen || bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0) {
    *err = "not a .npy file (no \\x93NUMPY magic)";
    return false;
  }
  if (bytes[6] != 1 || bytes[7] != 0) {
    *err = "format version " + std::to_string(static_cast<unsigned char>(bytes[6])) + "." +
           std::to_string(static_cast<unsigned char>(bytes[7])) + " (only 1.0 is read)";
    return false;
  }
  size_t len = static_cast<unsigned char>(bytes[8]) |
               (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
  if (bytes.size() < kPrefixLen + len) {
    *err = "header length " + std::to_string(len) + " runs past the end of the file";
    return false;
  }
  std::string dict = bytes.substr(kPrefixLen, len);
  Cursor c{dict};
  if (!c.eat('{')) {
    *err = "header: expected '{'";
    return false;
  }
  bool have_descr = false, have_order = false, have_shape = false;
  shape->clear();
  while (!c.eat('}')) {
    std::string key;
    if (!c.quoted(&key) || !c.eat(':')) {
      *err = "header: expected 'key': at offset " + std::to_string(c.i);
      return false;
    }
    if (key == "descr") {
      if (!c.quoted(descr)) {
        *err = "header: descr must be a quoted string";
        return false;
      }
      have_descr = true;
    } else if (key == "fortran_order") {
      std::string w;
      if (!c.word(&w) || (w != "False" && w != "True")) {
        *err = "header: fortran_order must be True or False";
        return false;
      }
      if (w == "True") {
        *err = "header: fortran_order True is not supported";
        return false;
      }
      have_order = true;
    } else if (key == "shape") {
      if (!read_shape(c, shape, err)) return false;
      have_shape = true;
    } else {
      *err = "header: unknown key '" + key + "'";
      return false;
    }
    if (!c.eat(',')) {
      if (c.eat('}')) break;
      *err = "header: expected ',' or '}' at offset " + std::to_string(c.i);
      return false;
    }
  }
  if (!have_descr || !have_order || !have_shape) {
    *err = "header: needs descr, fortran_order and shape";
    return false;
  }
  *data_offset = kPrefixLen + len;
  return true;
}

}  // namespace fp4arena

// Test helpers shared by the reference tests: reading tests/data/*.json (which may hold the
// non-standard tokens Infinity / -Infinity / NaN that Python's json module writes), the
// golden NVFP4 matmul cases, the FP32 error bound, and random NVFP4 problems.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/fp4_codecs.h"
#include "reference/oracle.h"

namespace fp4arena {
namespace testing {

/// Path of a file under the repository root.
inline std::string SourcePath(const std::string& relative) {
  return std::string(FP4ARENA_SOURCE_DIR) + "/" + relative;
}

/// Rewrites the bare tokens Infinity, -Infinity and NaN (outside strings) as the strings
/// "inf", "-inf" and "nan", so that nlohmann::json accepts the text.
inline std::string QuoteNonFiniteTokens(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      out += ch;
      if (ch == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (ch == '"') {
        in_string = false;
      }
      continue;
    }
    if (ch == '"') {
      in_string = true;
      out += ch;
    } else if (text.compare(i, 9, "-Infinity") == 0) {
      out += "\"-inf\"";
      i += 8;
    } else if (text.compare(i, 8, "Infinity") == 0) {
      out += "\"inf\"";
      i += 7;
    } else if (text.compare(i, 3, "NaN") == 0) {
      out += "\"nan\"";
      i += 2;
    } else {
      out += ch;
    }
  }
  return out;
}

/// Reads a JSON file under the repository root; on failure returns null and sets *err.
inline nlohmann::json LoadJson(const std::string& relative, std::string* err) {
  std::ifstream in(SourcePath(relative));
  if (!in) {
    *err = "cannot open " + SourcePath(relative);
    return nullptr;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(QuoteNonFiniteTokens(buf.str()), nullptr, false);
  if (j.is_discarded()) {
    *err = "cannot parse " + SourcePath(relative);
    return nullptr;
  }
  return j;
}

/// A JSON number, or a string such as "0.5", "nan", "-inf", as a double.
inline double JsonToDouble(const nlohmann::json& v) {
  if (v.is_string()) return std::strtod(v.get<std::string>().c_str(), nullptr);
  return v.get<double>();
}

/// One case of tests/data/nvfp4_matmul_golden.json.
/// A problem that owns its operand bytes; Problem() is the reference/ view of them.
struct OwnedProblem {
  int M = 0, N = 0, K = 0;
  float alpha = 1.0f;
  std::vector<uint8_t> a, a_scales, b, b_scales;

  Nvfp4MatmulProblem Problem() const {
    Nvfp4MatmulProblem p;
    p.M = M;
    p.N = N;
    p.K = K;
    p.a = a.data();
    p.a_scales = a_scales.data();
    p.b = b.data();
    p.b_scales = b_scales.data();
    p.alpha = alpha;
    return p;
  }
};

struct GoldenCase : OwnedProblem {
  std::string name;
  std::vector<double> c_fp64;  ///< exact alpha * deq(a) @ deq(b)^T
  std::vector<double> c_fp16;  ///< c_fp64 rounded to half (may hold infinities)
};

/// Loads every golden case; on failure returns false and sets *err.
inline bool LoadGoldenCases(std::vector<GoldenCase>* cases, std::string* err) {
  const nlohmann::json j = LoadJson("tests/data/nvfp4_matmul_golden.json", err);
  if (j.is_null()) return false;
  if (!j.contains("cases") || !j["cases"].is_array()) {
    *err = "golden file has no \"cases\" array";
    return false;
  }
  cases->clear();
  for (const nlohmann::json& c : j["cases"]) {
    GoldenCase g;
    g.name = c.at("name").get<std::string>();
    g.M = c.at("M").get<int>();
    g.N = c.at("N").get<int>();
    g.K = c.at("K").get<int>();
    g.alpha = static_cast<float>(JsonToDouble(c.at("alpha")));
    g.a = c.at("a").get<std::vector<uint8_t>>();
    g.a_scales = c.at("a_scales").get<std::vector<uint8_t>>();
    g.b = c.at("b").get<std::vector<uint8_t>>();
    g.b_scales = c.at("b_scales").get<std::vector<uint8_t>>();
    for (const nlohmann::json& v : c.at("c_fp64")) g.c_fp64.push_back(JsonToDouble(v));
    for (const nlohmann::json& v : c.at("c_fp16")) g.c_fp16.push_back(JsonToDouble(v));
    const size_t m = g.M, n = g.N, k = g.K;
    if (g.K % 16 != 0 || g.a.size() != m * k / 2 || g.b.size() != n * k / 2 ||
        g.a_scales.size() != m * k / 16 || g.b_scales.size() != n * k / 16 ||
        g.c_fp64.size() != m * n || g.c_fp16.size() != m * n) {
      *err = "golden case " + g.name + " has inconsistent sizes";
      return false;
    }
    cases->push_back(std::move(g));
  }
  return true;
}

/// Owns the buffers of a random NVFP4 problem.
using RandomProblem = OwnedProblem;

/// Random nibbles, and random non-NaN scale codes of either sign with exponent field in
/// [scale_exp_lo, scale_exp_hi] (0..15; 15 only with mantissa < 7).
inline RandomProblem MakeRandomProblem(int M, int N, int K, float alpha, uint32_t seed,
                                       int scale_exp_lo = 4, int scale_exp_hi = 10) {
  RandomProblem r;
  r.M = M;
  r.N = N;
  r.K = K;
  r.alpha = alpha;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> exp(scale_exp_lo, scale_exp_hi);
  std::uniform_int_distribution<int> man(0, 7);
  auto fill_packed = [&](std::vector<uint8_t>* v, size_t n) {
    v->resize(n);
    for (uint8_t& x : *v) x = static_cast<uint8_t>(byte(rng));
  };
  auto fill_scales = [&](std::vector<uint8_t>* v, size_t n) {
    v->resize(n);
    for (uint8_t& x : *v) {
      do {
        x = static_cast<uint8_t>((byte(rng) & 0x80) | exp(rng) << 3 | man(rng));
      } while (e4m3_is_nan(x));
    }
  };
  fill_packed(&r.a, static_cast<size_t>(M) * K / 2);
  fill_scales(&r.a_scales, static_cast<size_t>(M) * K / 16);
  fill_packed(&r.b, static_cast<size_t>(N) * K / 2);
  fill_scales(&r.b_scales, static_cast<size_t>(N) * K / 16);
  return r;
}

/// Exact reference in double (every product and, for these sizes, every partial sum of
/// dequantized NVFP4 values is exact in double) and the per-element bound
/// K * 2^-24 * |alpha| * sum_k |a_k b_k| on the error of an FP32 dot product.
struct ExactResult {
  std::vector<double> c;
  std::vector<double> bound;
};

inline ExactResult ExactMatmul(const Nvfp4MatmulProblem& p) {
  ExactResult r;
  const size_t M = p.M, N = p.N, K = p.K;
  std::vector<double> a(M * K), b(N * K);
  auto deq = [K](const uint8_t* packed, const uint8_t* scales, size_t row, size_t k) {
    const uint8_t byte = packed[row * K / 2 + k / 2];
    return static_cast<double>(e2m1_decode((k & 1) ? byte >> 4 : byte & 0xF)) *
           e4m3_decode(scales[row * K / 16 + k / 16]);
  };
  for (size_t m = 0; m < M; ++m)
    for (size_t k = 0; k < K; ++k) a[m * K + k] = deq(p.a, p.a_scales, m, k);
  for (size_t n = 0; n < N; ++n)
    for (size_t k = 0; k < K; ++k) b[n * K + k] = deq(p.b, p.b_scales, n, k);
  r.c.resize(M * N);
  r.bound.resize(M * N);
  for (size_t m = 0; m < M; ++m) {
    for (size_t n = 0; n < N; ++n) {
      double s = 0, s_abs = 0;
      for (size_t k = 0; k < K; ++k) {
        const double prod = a[m * K + k] * b[n * K + k];
        s += prod;
        s_abs += std::fabs(prod);
      }
      r.c[m * N + n] = p.alpha * s;
      r.bound[m * N + n] =
          static_cast<double>(K) * std::ldexp(1.0, -24) * std::fabs(p.alpha) * s_abs;
    }
  }
  return r;
}

}  // namespace testing
}  // namespace fp4arena

#include "harness/spec.h"

#include "harness/json_read.h"

#include <sys/stat.h>
#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

namespace fp4arena {
namespace {

// Recursive-descent parser for the small integer expressions used in shapes and FLOP counts.
class ExprParser {
 public:
  ExprParser(const std::string& s, const std::map<std::string, int64_t>& vars)
      : s_(s), vars_(vars) {}

  bool parse(int64_t* out, std::string* err) {
    if (!sum(out, err)) return false;
    skip_ws();
    if (pos_ != s_.size()) return fail(err, "unexpected '" + s_.substr(pos_, 1) + "'");
    return true;
  }

 private:
  bool fail(std::string* err, const std::string& what) {
    *err = "expression \"" + s_ + "\": " + what;
    return false;
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool sum(int64_t* out, std::string* err) {
    if (!product(out, err)) return false;
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size() || (s_[pos_] != '+' && s_[pos_] != '-')) return true;
      char op = s_[pos_++];
      int64_t rhs;
      if (!product(&rhs, err)) return false;
      bool over = op == '+' ? __builtin_add_overflow(*out, rhs, out)
                            : __builtin_sub_overflow(*out, rhs, out);
      if (over) return fail(err, "overflow");
    }
  }
  bool product(int64_t* out, std::string* err) {
    if (!atom(out, err)) return false;
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size() || (s_[pos_] != '*' && s_[pos_] != '/')) return true;
      char op = s_[pos_++];
      int64_t rhs;
      if (!atom(&rhs, err)) return false;
      if (op == '*') {
        if (__builtin_mul_overflow(*out, rhs, out)) return fail(err, "overflow");
      } else {
        if (rhs == 0) return fail(err, "division by zero");
        if (rhs == -1 && *out == INT64_MIN) return fail(err, "overflow");
        if (*out % rhs != 0) {
          return fail(err, std::to_string(*out) + " is not divisible by " + std::to_string(rhs));
        }
        *out /= rhs;
      }
    }
  }
  bool atom(int64_t* out, std::string* err) {
    skip_ws();
    if (pos_ >= s_.size()) return fail(err, "unexpected end");
    char c = s_[pos_];
    if (c == '(') {
      if (++depth_ > 64) return fail(err, "parentheses nested too deeply");
      ++pos_;
      if (!sum(out, err)) return false;
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ')') return fail(err, "missing ')'");
      ++pos_;
      --depth_;
      return true;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (__builtin_mul_overflow(v, int64_t(10), &v) ||
            __builtin_add_overflow(v, int64_t(s_[pos_++] - '0'), &v)) {
          return fail(err, "number too large");
        }
      }
      *out = v;
      return true;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
        ++pos_;
      }
      std::string name = s_.substr(start, pos_ - start);
      auto it = vars_.find(name);
      if (it == vars_.end()) return fail(err, "unknown name '" + name + "'");
      *out = it->second;
      return true;
    }
    return fail(err, std::string("unexpected '") + c + "'");
  }

  const std::string& s_;
  const std::map<std::string, int64_t>& vars_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// Field access with messages that name the file and the JSON path of the field.
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  bool fail(std::string* err, const std::string& field, const std::string& expected,
            const nlohmann::json* got = nullptr) {
    std::ostringstream os;
    os << path_ << ": field '" << field << "': expected " << expected;
    if (got) {
      std::string text = got->is_null()
                             ? std::string("nothing")
                             : got->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      if (text.size() > 120) text = text.substr(0, 117) + "...";
      os << ", got " << text;
    }
    *err = os.str();
    return false;
  }

  const nlohmann::json* get(const nlohmann::json& obj, const std::string& key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  bool str(const nlohmann::json& obj, const std::string& key, const std::string& field,
           std::string* out, std::string* err) {
    const nlohmann::json* v = get(obj, key);
    if (!v || !v->is_string() || v->get<std::string>().empty()) {
      nlohmann::json none;
      return fail(err, field, "a non-empty string", v ? v : &none);
    }
    *out = v->get<std::string>();
    return true;
  }

  bool integer(const nlohmann::json& obj, const std::string& key, const std::string& field,
               int64_t* out, std::string* err, bool required = true) {
    const nlohmann::json* v = get(obj, key);
    if (!v) {
      if (!required) return true;
      nlohmann::json none;
      return fail(err, field, "an integer", &none);
    }
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX)) {
      return fail(err, field, "an integer below 2^63", v);
    }
    if (!v->is_number_integer()) return fail(err, field, "an integer", v);
    *out = v->get<int64_t>();
    return true;
  }

  bool number(const nlohmann::json& obj, const std::string& key, const std::string& field,
              double* out, std::string* err, bool required = true) {
    const nlohmann::json* v = get(obj, key);
    if (!v) {
      if (!required) return true;
      nlohmann::json none;
      return fail(err, field, "a number", &none);
    }
    if (!v->is_number() || !std::isfinite(v->get<double>())) {
      return fail(err, field, "a finite number", v);
    }
    *out = v->get<double>();
    return true;
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct BaseType {
  const char* c_name;
  DType dtype;                     // buffers: the default element type
  const char* scalar;              // scalars: "int" / "float"; nullptr where no scalar may have it
  std::vector<DType> refinements;  // other dtypes a buffer of this C type may declare
};

const std::vector<BaseType>& base_types() {
  static const std::vector<BaseType> kTypes = {
      {"uint8_t", DType::kUint8, nullptr, {DType::kFp8E4m3, DType::kFp8E8m0, DType::kE2m1x2}},
      {"int", DType::kInt32, "int", {}},
      {"int32_t", DType::kInt32, nullptr, {}},
      {"__half", DType::kFp16, nullptr, {}},
      {"__nv_bfloat16", DType::kBf16, nullptr, {}},
      {"float", DType::kFp32, "float", {}},
  };
  return kTypes;
}

std::string type_list() {
  std::string s;
  for (const BaseType& b : base_types()) {
    s += std::string(s.empty() ? "" : ", ") + "\"const " + b.c_name + "*\", \"" + b.c_name + "*\"";
  }
  return s + " for buffers; \"int\" or \"float\" for scalars and dims";
}

// Splits "const T*" / "T*" / "T" into its base type, constness and pointerness.
const BaseType* split_type(const std::string& c_type, bool* is_const, bool* pointer) {
  std::string t = c_type;
  *is_const = t.rfind("const ", 0) == 0;
  if (*is_const) t = t.substr(6);
  *pointer = !t.empty() && t.back() == '*';
  if (*pointer) t.pop_back();
  while (!t.empty() && t.back() == ' ') t.pop_back();
  for (const BaseType& b : base_types()) {
    if (t == b.c_name) return &b;
  }
  return nullptr;
}

bool parse_compare(Reader& r, const nlohmann::json& pj, const std::string& f, ParamSpec* p,
                   std::string* err) {
  const nlohmann::json* cj = r.get(pj, "compare");
  if (!cj || !cj->is_object()) {
    nlohmann::json none;
    return r.fail(err, f + ".compare",
                  "an object {kind: tolerance (atol, rtol) | exact | exact_or_tie | ulp (max_ulp)}",
                  cj ? cj : &none);
  }
  std::string kind;
  if (!r.str(*cj, "kind", f + ".compare.kind", &kind, err)) return false;
  CompareSpec& c = p->compare;
  const bool floating =
      p->dtype == DType::kFp16 || p->dtype == DType::kBf16 || p->dtype == DType::kFp32;
  if (kind == "tolerance") {
    c.kind = CompareKind::kTolerance;
    if (!r.number(*cj, "atol", f + ".compare.atol", &c.atol, err)) return false;
    if (!r.number(*cj, "rtol", f + ".compare.rtol", &c.rtol, err)) return false;
    if (c.atol < 0 || c.rtol < 0 || c.atol > 1e30 || c.rtol > 1e30) {
      return r.fail(err, f + ".compare", "0 <= atol, rtol <= 1e30", cj);
    }
  } else if (kind == "exact") {
    c.kind = CompareKind::kExact;
  } else if (kind == "exact_or_tie") {
    c.kind = CompareKind::kExactOrTie;
  } else if (kind == "ulp") {
    c.kind = CompareKind::kUlp;
    if (!floating) return r.fail(err, f + ".compare.kind", "ulp only for fp16, bf16 or fp32", cj);
    if (!r.integer(*cj, "max_ulp", f + ".compare.max_ulp", &c.max_ulp, err)) return false;
    if (c.max_ulp < 0 || c.max_ulp > (int64_t(1) << 30)) {
      return r.fail(err, f + ".compare.max_ulp", "an integer in [0, 2^30]", &(*cj)["max_ulp"]);
    }
  } else {
    return r.fail(err, f + ".compare.kind",
                  "one of \"tolerance\", \"exact\", \"exact_or_tie\", \"ulp\"", &(*cj)["kind"]);
  }
  if (c.kind == CompareKind::kTolerance && p->dtype == DType::kE2m1x2) {
    return r.fail(err, f + ".compare.kind", "exact or exact_or_tie for packed e2m1x2 codes",
                  &(*cj)["kind"]);
  }
  return true;
}

// One dim's value against its range; *err names the case and the dim.
bool check_dim(const DimSpec& d, int64_t v, const std::string& case_name, std::string* err) {
  bool listed =
      d.one_of.empty() || std::find(d.one_of.begin(), d.one_of.end(), v) != d.one_of.end();
  if (v >= d.min && v <= d.max && v % d.multiple_of == 0 && listed) return true;
  std::ostringstream os;
  os << "case '" << case_name << "': " << d.name << " = " << v << " is outside the spec: " << d.name
     << " must be in [" << d.min << ", " << d.max << "]";
  if (d.multiple_of > 1) os << " and a multiple of " << d.multiple_of;
  if (!d.one_of.empty()) {
    os << " and one of";
    for (int64_t x : d.one_of) os << " " << x;
  }
  *err = os.str();
  return false;
}

// Every buffer extent of case `c` a positive integer, each buffer of a size the judge can
// hold, and the metric's workload positive; *err says which failed (no file or field).
bool check_extents(const Spec& spec, const CaseSpec& c, std::string* err) {
  for (const ParamSpec& p : spec.params) {
    if (!p.is_buffer()) continue;
    for (const std::string& e : p.shape) {
      int64_t v = 0;
      std::string expr_err;
      if (!eval_expr(e, c.dims, &v, &expr_err) || v < 1) {
        *err = "the extent \"" + e + "\" of '" + p.name +
               "' must evaluate to a positive integer (" +
               (expr_err.empty() ? std::to_string(v) : expr_err) + ")";
        return false;
      }
    }
    if (buffer_bytes(p, c.dims) == 0) {
      *err = "buffer '" + p.name + "' is too large";
      return false;
    }
  }
  int64_t w = 0;
  std::string w_err;
  if (!eval_expr(spec.metric.expression, c.dims, &w, &w_err) || w <= 0) {
    *err = "the metric's workload \"" + spec.metric.expression +
           "\" must be positive for this case (" + (w_err.empty() ? std::to_string(w) : w_err) +
           ")";
    return false;
  }
  if (!spec.metric.min_bytes.empty() &&
      (!eval_expr(spec.metric.min_bytes, c.dims, &w, &w_err) || w <= 0)) {
    *err = "the metric's bytes \"" + spec.metric.min_bytes + "\" must be positive for this case (" +
           (w_err.empty() ? std::to_string(w) : w_err) + ")";
    return false;
  }
  return true;
}

bool parse_case(Reader& r, const nlohmann::json& c, const std::string& field, bool benchmark,
                const Spec& spec, CaseSpec* out, std::string* err) {
  if (!c.is_object()) return r.fail(err, field, "an object", &c);
  if (!r.str(c, "name", field + ".name", &out->name, err)) return false;
  if (out->name.size() > 64 ||
      out->name.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
          std::string::npos) {
    return r.fail(err, field + ".name", "at most 64 letters, digits, '_', '-' or '.'", &c["name"]);
  }
  if (!r.str(c, "generator", field + ".generator", &out->generator, err)) return false;
  int64_t seed = 0;
  if (!r.integer(c, "seed", field + ".seed", &seed, err)) return false;
  if (seed < 0) return r.fail(err, field + ".seed", "a non-negative integer", &c["seed"]);
  out->seed = static_cast<uint64_t>(seed);
  out->benchmark = benchmark;
  for (const DimSpec& d : spec.dims) {
    int64_t v = 0;
    if (!r.integer(c, d.name, field + "." + d.name, &v, err)) return false;
    out->dims[d.name] = v;
  }
  if (auto* p = r.get(c, "params")) {
    if (!p->is_object()) return r.fail(err, field + ".params", "an object", p);
    out->params = *p;
  }
  for (const DimSpec& d : spec.dims) {
    std::string dim_err;
    if (!check_dim(d, out->dims.at(d.name), out->name, &dim_err)) {
      *err = r.path() + ": field '" + field + "." + d.name + "': " + dim_err;
      return false;
    }
  }
  std::string shape_err;
  if (!check_extents(spec, *out, &shape_err)) {
    *err = r.path() + ": field '" + field + "': " + shape_err;
    return false;
  }
  return true;
}

// A drawn dim: every value `d` allows, in order, at most 2^20 of them (the "one_of" list, or
// min, min + step, ... up to max).
std::vector<int64_t> allowed_values(const DimSpec& d) {
  if (!d.one_of.empty()) return d.one_of;
  std::vector<int64_t> v;
  const int64_t first = (d.min + d.multiple_of - 1) / d.multiple_of * d.multiple_of;
  for (int64_t x = first; x <= d.max && v.size() <= (size_t(1) << 20); x += d.multiple_of) {
    v.push_back(x);
  }
  return v;
}

// One dim of a random_tests recipe (field `f`): an integer (that value), {min, max[,
// multiple_of]} or {one_of: [...]}; every value it allows must be one the spec's dim allows.
bool parse_random_dim(Reader& r, const nlohmann::json& j, const std::string& f,
                      const DimSpec& outer, DimSpec* d, std::string* err) {
  d->name = outer.name;
  const char* forms = "an integer, {min, max[, multiple_of]} or {one_of: [integers]}";
  if (j.is_number_integer()) {
    d->min = d->max = j.get<int64_t>();
  } else if (const nlohmann::json* one = j.is_object() ? r.get(j, "one_of") : nullptr) {
    if (!one->is_array() || one->empty() || one->size() > 1000) {
      return r.fail(err, f + ".one_of", "a non-empty array of at most 1000 integers", one);
    }
    for (const auto& v : *one) {
      if (!v.is_number_integer()) return r.fail(err, f + ".one_of", "integers only", one);
      d->one_of.push_back(v.get<int64_t>());
    }
  } else if (j.is_object()) {
    if (!r.integer(j, "min", f + ".min", &d->min, err) ||
        !r.integer(j, "max", f + ".max", &d->max, err) ||
        !r.integer(j, "multiple_of", f + ".multiple_of", &d->multiple_of, err, false)) {
      return false;
    }
    if (d->multiple_of < 1 || d->max < d->min || d->max > (int64_t(1) << 31)) {
      return r.fail(err, f, "min <= max < 2^31 and multiple_of >= 1", &j);
    }
  } else {
    return r.fail(err, f, forms, &j);
  }
  const std::vector<int64_t> values = allowed_values(*d);
  if (values.empty() || values.size() > (size_t(1) << 20)) {
    return r.fail(err, f, "between 1 and 2^20 values", &j);
  }
  for (int64_t v : values) {
    std::string dim_err;
    if (!check_dim(outer, v, "random_tests", &dim_err)) {
      return r.fail(err, f, "values the spec's dims allow (" + dim_err + ")", &j);
    }
  }
  return true;
}

// One recipe of "random_tests" (field `f`); 32 shapes it draws are checked as a case is.
bool parse_random_recipe(Reader& r, const nlohmann::json& j, const std::string& f, const Spec& spec,
                         RandomTestSpec* out, std::string* err) {
  if (!j.is_object())
    return r.fail(err, f, "an object {name, count, generator, dims[, params]}", &j);
  if (!r.str(j, "name", f + ".name", &out->name, err)) return false;
  if (out->name.size() > 40 ||
      out->name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
    return r.fail(err, f + ".name", "at most 40 lower-case letters, digits or '_'", &j["name"]);
  }
  int64_t count = 0;
  if (!r.integer(j, "count", f + ".count", &count, err)) return false;
  if (count < 1 || count > 16)
    return r.fail(err, f + ".count", "an integer in [1, 16]", &j["count"]);
  out->count = static_cast<int>(count);
  if (!r.str(j, "generator", f + ".generator", &out->generator, err)) return false;
  if (const nlohmann::json* p = r.get(j, "params")) {
    if (!p->is_object()) return r.fail(err, f + ".params", "an object", p);
    out->params = *p;
  }
  const nlohmann::json* dims = r.get(j, "dims");
  if (!dims || !dims->is_object()) {
    nlohmann::json none;
    return r.fail(err, f + ".dims", "an object giving every dim of the spec", dims ? dims : &none);
  }
  for (const DimSpec& outer : spec.dims) {
    const nlohmann::json* v = r.get(*dims, outer.name);
    if (!v) return r.fail(err, f + ".dims." + outer.name, "a value or a range");
    DimSpec d;
    if (!parse_random_dim(r, *v, f + ".dims." + outer.name, outer, &d, err)) return false;
    out->dims.push_back(d);
  }
  if (dims->size() != spec.dims.size()) {
    return r.fail(err, f + ".dims", "only the spec's dims", dims);
  }
  for (uint32_t seed = 0; seed < 32; ++seed) {
    std::string shape_err;
    if (!check_extents(spec, random_case(*out, seed), &shape_err)) {
      return r.fail(err, f + ".dims",
                    "ranges whose every shape is a valid case (" + shape_err + ")");
    }
  }
  return true;
}

// The optional "random_tests": an array of at most 8 recipes with distinct names.
bool parse_random_tests(Reader& r, const nlohmann::json& list, const Spec& spec,
                        std::vector<RandomTestSpec>* out, std::string* err) {
  if (!list.is_array() || list.empty() || list.size() > 8) {
    return r.fail(err, "random_tests", "a non-empty array of at most 8 recipes", &list);
  }
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    RandomTestSpec t;
    const std::string f = "random_tests[" + std::to_string(i) + "]";
    if (!parse_random_recipe(r, list[i], f, spec, &t, err)) return false;
    if (!names.insert(t.name).second) {
      return r.fail(err, f + ".name", "a name not used by another recipe", &list[i]["name"]);
    }
    out->push_back(std::move(t));
  }
  return true;
}

// A list of benchmark-like cases (the spec's "sweep", a --shapes file): a non-empty array
// of at most 1000 cases with distinct names; fields are named `list_field`[i].KEY.
bool parse_cases(Reader& r, const nlohmann::json& list, const std::string& list_field,
                 const Spec& spec, std::vector<CaseSpec>* out, std::string* err) {
  const std::string shown = list_field.empty() ? "(top level)" : list_field;
  if (!list.is_array() || list.empty() || list.size() > 1000) {
    return r.fail(err, shown, "a non-empty array of at most 1000 cases", &list);
  }
  std::set<std::string> names;
  std::vector<CaseSpec> cases;
  for (size_t i = 0; i < list.size(); ++i) {
    CaseSpec c;
    const std::string f = list_field + "[" + std::to_string(i) + "]";
    if (!parse_case(r, list[i], f, true, spec, &c, err)) return false;
    if (!names.insert(c.name).second) {
      return r.fail(err, f + ".name", "a name not used before in this list", &list[i]["name"]);
    }
    cases.push_back(std::move(c));
  }
  *out = std::move(cases);
  return true;
}

}  // namespace

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kUint8:
      return "uint8";
    case DType::kInt32:
      return "int32";
    case DType::kFp16:
      return "fp16";
    case DType::kBf16:
      return "bf16";
    case DType::kFp32:
      return "fp32";
    case DType::kFp8E4m3:
      return "fp8_e4m3";
    case DType::kFp8E8m0:
      return "fp8_e8m0";
    case DType::kE2m1x2:
      return "e2m1x2";
  }
  return "?";
}

bool parse_dtype(const std::string& name, DType* out) {
  for (DType t : {DType::kUint8, DType::kInt32, DType::kFp16, DType::kBf16, DType::kFp32,
                  DType::kFp8E4m3, DType::kFp8E8m0, DType::kE2m1x2}) {
    if (name == dtype_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::kInt32:
    case DType::kFp32:
      return 4;
    case DType::kFp16:
    case DType::kBf16:
      return 2;
    default:
      return 1;
  }
}

int dtype_elements_per_unit(DType t) {
  return t == DType::kE2m1x2 ? 2 : 1;
}

bool dtype_has_nan_poison(DType t) {
  return t == DType::kFp16 || t == DType::kBf16 || t == DType::kFp32 || t == DType::kFp8E4m3 ||
         t == DType::kFp8E8m0;
}

const char* compare_name(CompareKind k) {
  switch (k) {
    case CompareKind::kTolerance:
      return "tolerance";
    case CompareKind::kExact:
      return "exact";
    case CompareKind::kExactOrTie:
      return "exact_or_tie";
    case CompareKind::kUlp:
      return "ulp";
  }
  return "?";
}

bool eval_expr(const std::string& expr, const std::map<std::string, int64_t>& vars, int64_t* out,
               std::string* err) {
  if (expr.size() > 1000) {
    *err = "expression longer than 1000 characters";
    return false;
  }
  ExprParser p(expr, vars);
  return p.parse(out, err);
}

int64_t buffer_units(const ParamSpec& p, const std::map<std::string, int64_t>& dims) {
  int64_t n = 1;
  for (const std::string& e : p.shape) {
    int64_t v = 0;
    std::string err;
    if (!eval_expr(e, dims, &v, &err) || v < 0) return -1;
    if (__builtin_mul_overflow(n, v, &n)) return -1;
  }
  return n;
}

size_t buffer_bytes(const ParamSpec& p, const std::map<std::string, int64_t>& dims) {
  int64_t units = buffer_units(p, dims);
  // A single buffer above 64 GiB is beyond any device the judge runs on.
  if (units < 0 || units > (int64_t(64) << 30) / int64_t(dtype_bytes(p.dtype))) return 0;
  return size_t(units) * dtype_bytes(p.dtype);
}

void output_matrix(const ParamSpec& p, const std::map<std::string, int64_t>& dims, int64_t* rows,
                   int64_t* cols) {
  int64_t units = std::max<int64_t>(0, buffer_units(p, dims));
  int64_t last = 1;
  std::string err;
  if (!eval_expr(p.shape.back(), dims, &last, &err) || last < 1) last = 1;
  *rows = units / last;
  *cols = last * dtype_elements_per_unit(p.dtype);
}

CaseSpec random_case(const RandomTestSpec& r, uint32_t shape_seed) {
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", shape_seed);
  CaseSpec c;
  c.name = r.name + "_" + hex;
  c.generator = r.generator;
  c.params = r.params;
  c.seed = shape_seed;
  uint64_t state = 0x5eed5eed00000000ull ^ shape_seed;
  for (const DimSpec& d : r.dims) {
    // splitmix64 (Steele, Lea, Flood 2014): one draw per dim, in the spec's order.
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const std::vector<int64_t> values = allowed_values(d);
    c.dims[d.name] = values[z % values.size()];
  }
  return c;
}

bool random_case_named(const Spec& spec, const std::string& name, CaseSpec* out) {
  const size_t cut = name.rfind('_');
  if (cut == std::string::npos || name.size() - cut != 9 ||
      name.find_first_not_of("0123456789abcdef", cut + 1) != std::string::npos) {
    return false;
  }
  for (const RandomTestSpec& r : spec.random_tests) {
    if (r.name != name.substr(0, cut)) continue;
    *out = random_case(r, static_cast<uint32_t>(std::stoul(name.substr(cut + 1), nullptr, 16)));
    return true;
  }
  return false;
}

bool check_case_shape(const Spec& spec, const CaseSpec& c, std::string* err) {
  return check_case_dims(spec, c, err) && check_extents(spec, c, err);
}

bool check_case_dims(const Spec& spec, const CaseSpec& c, std::string* err) {
  for (const DimSpec& d : spec.dims) {
    auto it = c.dims.find(d.name);
    if (it == c.dims.end()) {
      *err = "case '" + c.name + "' has no dimension " + d.name;
      return false;
    }
    if (!check_dim(d, it->second, c.name, err)) return false;
  }
  return true;
}

std::vector<const ParamSpec*> Spec::outputs() const {
  std::vector<const ParamSpec*> out;
  for (const ParamSpec& p : params) {
    if (p.is_output()) out.push_back(&p);
  }
  return out;
}

const ParamSpec* Spec::find_param(const std::string& param_name) const {
  for (const ParamSpec& p : params) {
    if (p.name == param_name) return &p;
  }
  return nullptr;
}

const CaseSpec* Spec::find_case(const std::string& case_name) const {
  for (const CaseSpec& c : tests) {
    if (c.name == case_name) return &c;
  }
  for (const CaseSpec& c : benchmarks) {
    if (c.name == case_name) return &c;
  }
  return nullptr;
}

std::string c_prototype(const Spec& spec) {
  std::string s = "extern \"C\" void " + spec.function + "(";
  for (size_t i = 0; i < spec.params.size(); ++i) {
    if (i) s += ", ";
    s += spec.params[i].c_type + " " + spec.params[i].name;
  }
  return s + ")";
}

double case_workload(const Spec& spec, const std::map<std::string, int64_t>& dims) {
  int64_t v = 0;
  std::string err;
  if (!eval_expr(spec.metric.expression, dims, &v, &err)) return 0;
  return static_cast<double>(v);
}

SpeedOfLight speed_of_light(const Spec& spec, const std::map<std::string, int64_t>& dims,
                            const DeviceShape& device, double bytes_given) {
  SpeedOfLight s;
  int64_t flops = 0, counted = 0;
  std::string err;
  const bool tflops = spec.metric.kind == MetricKind::kTflops;
  if (tflops && !eval_expr(spec.metric.expression, dims, &flops, &err)) return s;
  const std::string& b = spec.metric.bytes_expression();
  if (bytes_given < 0 && !b.empty() && !eval_expr(b, dims, &counted, &err)) return s;
  const double bytes = bytes_given >= 0 ? bytes_given : static_cast<double>(counted);
  const double compute = tflops ? limit_value(spec.limit, device) : 0;  // TF/s
  const double dram = limit_value(LimitKind::kDram, device);            // GB/s
  if ((tflops && !(compute > 0)) || (bytes > 0 && !(dram > 0))) return s;
  s.compute_ms = tflops ? static_cast<double>(flops) / (compute * 1e9) : 0;
  s.memory_ms = bytes > 0 ? bytes / (dram * 1e6) : 0;
  s.ms = std::max(s.compute_ms, s.memory_ms);
  return s;
}

std::string shape_text(const Spec& spec, const std::map<std::string, int64_t>& dims) {
  std::string s;
  for (const DimSpec& d : spec.dims) {
    auto it = dims.find(d.name);
    s +=
        (s.empty() ? "" : "x") + (it == dims.end() ? std::string("?") : std::to_string(it->second));
  }
  return s;
}

namespace {

// The schema, the revision, the name and the title.
bool parse_header(Reader& r, const nlohmann::json& doc, Spec* sp, std::string* err) {
  Spec& s = *sp;
  if (!doc.is_object()) return r.fail(err, "(top level)", "a JSON object", &doc);
  std::string schema;
  if (!r.str(doc, "schema", "schema", &schema, err)) return false;
  if (schema != kSpecSchema) {
    return r.fail(err, "schema",
                  std::string("\"") + kSpecSchema + "\" (the format this judge reads)",
                  &doc["schema"]);
  }
  int64_t version = 0;
  if (!r.integer(doc, "spec_version", "spec_version", &version, err)) return false;
  if (version < 1 || version > 1000000) {
    return r.fail(err, "spec_version", "a positive integer (the problem's revision)",
                  &doc["spec_version"]);
  }
  s.spec_version = static_cast<int>(version);
  if (!r.str(doc, "name", "name", &s.name, err)) return false;
  if (s.name.size() > 64 ||
      s.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
    return r.fail(err, "name", "at most 64 lowercase letters, digits or '_'", &doc["name"]);
  }
  if (auto* t = r.get(doc, "title"); t && t->is_string()) s.title = t->get<std::string>();

  return true;
}

// "dims": each dimension's range.
bool parse_dims(Reader& r, const nlohmann::json& doc, Spec* sp, std::string* err) {
  Spec& s = *sp;
  // Dimensions.
  const nlohmann::json* dims = r.get(doc, "dims");
  if (!dims || !dims->is_object() || dims->empty()) {
    nlohmann::json none;
    return r.fail(err, "dims",
                  "an object mapping each dimension to {min, max[, multiple_of, one_of]}",
                  dims ? dims : &none);
  }
  for (auto it = dims->begin(); it != dims->end(); ++it) {
    DimSpec d;
    d.name = it.key();
    std::string f = "dims." + d.name;
    if (!it->is_object())
      return r.fail(err, f, "an object {min, max[, multiple_of, one_of]}", &*it);
    if (!r.integer(*it, "min", f + ".min", &d.min, err)) return false;
    if (!r.integer(*it, "max", f + ".max", &d.max, err)) return false;
    if (!r.integer(*it, "multiple_of", f + ".multiple_of", &d.multiple_of, err, false)) {
      return false;
    }
    if (d.min < 1 || d.max < d.min || d.max > (int64_t(1) << 31) - 1 || d.multiple_of < 1) {
      return r.fail(err, f, "1 <= min <= max < 2^31 and multiple_of >= 1", &*it);
    }
    if (auto* one = r.get(*it, "one_of")) {
      if (!one->is_array() || one->empty()) {
        return r.fail(err, f + ".one_of", "a non-empty array of integers", one);
      }
      for (const auto& v : *one) {
        if (!v.is_number_integer()) return r.fail(err, f + ".one_of", "integers only", one);
        d.one_of.push_back(v.get<int64_t>());
      }
    }
    s.dims.push_back(d);
  }

  return true;
}

// A buffer parameter's type, dtype, shape and (for an output) comparison; `base`, `is_const`
// and `pointer` are its C type split (field `f`).
bool parse_buffer(Reader& r, const nlohmann::json& pj, const std::string& f, const Spec& s,
                  const BaseType* base, bool is_const, bool pointer, ParamSpec* out,
                  std::string* err) {
  ParamSpec& p = *out;
  if (!pointer) return r.fail(err, f + ".type", "a pointer type for role " + p.role, &pj["type"]);
  if (p.role == "in" && !is_const) {
    return r.fail(err, f + ".type", "a const pointer for an input", &pj["type"]);
  }
  if (p.role == "out" && is_const) {
    return r.fail(err, f + ".type", "a non-const pointer for an output", &pj["type"]);
  }
  p.dtype = base->dtype;
  if (auto* dt = r.get(pj, "dtype")) {
    DType want;
    if (!dt->is_string() || !parse_dtype(dt->get<std::string>(), &want)) {
      return r.fail(err, f + ".dtype",
                    "one of uint8, int32, fp16, bf16, fp32, fp8_e4m3, fp8_e8m0, e2m1x2", dt);
    }
    bool allowed = want == base->dtype;
    for (DType x : base->refinements) allowed |= x == want;
    if (!allowed) {
      return r.fail(err, f + ".dtype",
                    std::string("a dtype stored as ") + base->c_name +
                        " (fp8_e4m3, fp8_e8m0 and e2m1x2 are stored as uint8_t)",
                    dt);
    }
    p.dtype = want;
  }
  const nlohmann::json* shape = r.get(pj, "shape");
  if (!shape || !shape->is_array() || shape->empty() || shape->size() > 8) {
    nlohmann::json none;
    return r.fail(err, f + ".shape", "a non-empty array of at most 8 extent expressions",
                  shape ? shape : &none);
  }
  for (size_t k = 0; k < shape->size(); ++k) {
    const nlohmann::json& e = (*shape)[k];
    std::string ef = f + ".shape[" + std::to_string(k) + "]";
    if (!e.is_string()) return r.fail(err, ef, "a string expression of the dims", &e);
    int64_t v;
    std::string expr_err;
    // Probe with dims that satisfy every multiple_of constraint.
    std::map<std::string, int64_t> vars;
    for (const DimSpec& d : s.dims) vars[d.name] = d.multiple_of * 16;
    if (!eval_expr(e.get<std::string>(), vars, &v, &expr_err)) {
      return r.fail(err, ef, "an expression of the dims (" + expr_err + ")", &e);
    }
    p.shape.push_back(e.get<std::string>());
  }
  if (p.role == "out" && !parse_compare(r, pj, f, &p, err)) return false;
  return true;
}

// One parameter of the signature (field `f`); `names` holds the names seen so far.
bool parse_param(Reader& r, const nlohmann::json& pj, const std::string& f, const Spec& s,
                 std::set<std::string>* names, ParamSpec* out, std::string* err) {
  ParamSpec p;
  if (!pj.is_object()) return r.fail(err, f, "an object {name, type, role[, shape]}", &pj);
  if (!r.str(pj, "name", f + ".name", &p.name, err)) return false;
  if (p.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
          std::string::npos ||
      std::isdigit(static_cast<unsigned char>(p.name[0])) || p.name.size() > 64) {
    return r.fail(err, f + ".name", "a C identifier", &pj["name"]);
  }
  if (!names->insert(p.name).second) return r.fail(err, f + ".name", "a unique name", &pj["name"]);
  if (!r.str(pj, "type", f + ".type", &p.c_type, err)) return false;
  bool is_const = false, pointer = false;
  const BaseType* base = split_type(p.c_type, &is_const, &pointer);
  if (!base) return r.fail(err, f + ".type", "one of " + type_list(), &pj["type"]);
  if (!r.str(pj, "role", f + ".role", &p.role, err)) return false;
  if (p.role == "in" || p.role == "out") {
    if (!parse_buffer(r, pj, f, s, base, is_const, pointer, &p, err)) return false;
  } else if (p.role == "dim") {
    if (p.c_type != "int") return r.fail(err, f + ".type", "\"int\" for a dim", &pj["type"]);
    p.scalar_type = "int";
    bool known = false;
    for (const DimSpec& d : s.dims) known |= d.name == p.name;
    if (!known) return r.fail(err, f + ".name", "a name listed under dims", &pj["name"]);
  } else if (p.role == "scalar") {
    if (pointer || is_const || !base->scalar) {
      return r.fail(err, f + ".type", "\"int\" or \"float\" for a scalar", &pj["type"]);
    }
    p.scalar_type = base->scalar;
  } else {
    return r.fail(err, f + ".role", "one of \"in\", \"out\", \"scalar\", \"dim\"", &pj["role"]);
  }
  *out = p;
  return true;
}

// "signature": the function and its parameters; then the dims in signature order.
bool parse_signature(Reader& r, const nlohmann::json& doc, Spec* sp, std::string* err) {
  Spec& s = *sp;
  // Signature.
  const nlohmann::json* sig = r.get(doc, "signature");
  if (!sig || !sig->is_object()) {
    nlohmann::json none;
    return r.fail(err, "signature", "an object {function, params}", sig ? sig : &none);
  }
  if (!r.str(*sig, "function", "signature.function", &s.function, err)) return false;
  if (s.function.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != std::string::npos ||
      std::isdigit(static_cast<unsigned char>(s.function[0]))) {
    return r.fail(err, "signature.function", "a C identifier", &(*sig)["function"]);
  }
  const nlohmann::json* params = r.get(*sig, "params");
  if (!params || !params->is_array() || params->empty() || params->size() > 64) {
    nlohmann::json none;
    return r.fail(err, "signature.params", "a non-empty array of at most 64 parameters",
                  params ? params : &none);
  }
  std::set<std::string> names;
  for (size_t i = 0; i < params->size(); ++i) {
    ParamSpec p;
    if (!parse_param(r, (*params)[i], "signature.params[" + std::to_string(i) + "]", s, &names, &p,
                     err)) {
      return false;
    }
    s.params.push_back(p);
  }
  if (s.outputs().empty()) {
    return r.fail(err, "signature.params", "at least one parameter with role \"out\"", params);
  }
  for (const DimSpec& d : s.dims) {
    if (!s.find_param(d.name) || s.find_param(d.name)->role != "dim") {
      return r.fail(err, "dims." + d.name,
                    "a dimension that is also a parameter with role \"dim\"");
    }
  }
  // Dimensions in signature order (M, N, K), not the JSON object's sorted key order.
  std::stable_sort(s.dims.begin(), s.dims.end(), [&s](const DimSpec& x, const DimSpec& y) {
    auto pos = [&s](const std::string& n) {
      for (size_t i = 0; i < s.params.size(); ++i) {
        if (s.params[i].name == n) return i;
      }
      return s.params.size();
    };
    return pos(x.name) < pos(y.name);
  });

  return true;
}

// "metric" and "limit".
bool parse_metric(Reader& r, const nlohmann::json& doc, Spec* sp, std::string* err) {
  Spec& s = *sp;
  // Metric and limit.
  const nlohmann::json* metric = r.get(doc, "metric");
  if (!metric || !metric->is_object()) {
    nlohmann::json none;
    return r.fail(err, "metric",
                  "an object {\"name\": \"tflops\", \"flops\": EXPR, \"bytes\": EXPR} or "
                  "{\"name\": \"gbps\", "
                  "\"bytes\": EXPR}",
                  metric ? metric : &none);
  }
  std::string metric_name;
  if (!r.str(*metric, "name", "metric.name", &metric_name, err)) return false;
  if (metric_name == "tflops") {
    s.metric.kind = MetricKind::kTflops;
    if (!r.str(*metric, "flops", "metric.flops", &s.metric.expression, err)) return false;
    if (r.get(*metric, "bytes") &&
        !r.str(*metric, "bytes", "metric.bytes", &s.metric.min_bytes, err))
      return false;
    if (const nlohmann::json* f = r.get(*metric, "bytes_from_inputs")) {
      if (!f->is_boolean() || (f->get<bool>() && s.metric.min_bytes.empty()))
        return r.fail(err, "metric.bytes_from_inputs",
                      "true or false (true only with \"bytes\", their upper bound)", f);
      s.metric.bytes_from_inputs = f->get<bool>();
    }
  } else if (metric_name == "gbps") {
    s.metric.kind = MetricKind::kGbps;
    if (!r.str(*metric, "bytes", "metric.bytes", &s.metric.expression, err)) return false;
  } else {
    return r.fail(err, "metric.name", "\"tflops\" or \"gbps\"", &(*metric)["name"]);
  }
  {
    std::map<std::string, int64_t> probe;
    for (const DimSpec& d : s.dims) probe[d.name] = d.multiple_of * 16;
    int64_t v;
    std::string expr_err;
    if (!eval_expr(s.metric.expression, probe, &v, &expr_err)) {
      return r.fail(err, std::string("metric.") + s.metric.workload(),
                    "an expression of the dims (" + expr_err + ")");
    }
    if (!s.metric.min_bytes.empty() && !eval_expr(s.metric.min_bytes, probe, &v, &expr_err)) {
      return r.fail(err, "metric.bytes", "an expression of the dims (" + expr_err + ")");
    }
  }
  std::string limit;
  if (!r.str(doc, "limit", "limit", &limit, err)) return false;
  if (!parse_limit(limit, &s.limit)) {
    return r.fail(err, "limit", "one of \"fp16_dense\", \"fp8_dense\", \"fp4_dense\", \"dram\"",
                  &doc["limit"]);
  }
  if ((s.limit == LimitKind::kDram) != (s.metric.kind == MetricKind::kGbps)) {
    return r.fail(err, "limit",
                  "\"dram\" for a gbps metric, and a *_dense limit for a tflops metric",
                  &doc["limit"]);
  }

  return true;
}

// "timeouts" and "timing".
bool parse_timing(Reader& r, const nlohmann::json& doc, Spec* sp, std::string* err) {
  Spec& s = *sp;
  // Timeouts and timing.
  if (auto* t = r.get(doc, "timeouts")) {
    if (!t->is_object()) return r.fail(err, "timeouts", "an object {call_seconds}", t);
    if (!r.number(*t, "call_seconds", "timeouts.call_seconds", &s.call_timeout_seconds, err,
                  false)) {
      return false;
    }
    if (s.call_timeout_seconds <= 0 || s.call_timeout_seconds > kMaxCallTimeoutSeconds) {
      return r.fail(
          err, "timeouts.call_seconds",
          "a number of seconds in (0, " + std::to_string(int(kMaxCallTimeoutSeconds)) + "]",
          &(*t)["call_seconds"]);
    }
  }
  if (auto* t = r.get(doc, "timing")) {
    if (!t->is_object()) return r.fail(err, "timing", "an object", t);
    int64_t v = 0;
    auto small_int = [&](const char* key, int* dst) {
      v = *dst;
      if (!r.integer(*t, key, std::string("timing.") + key, &v, err, false)) return false;
      if (v < 0 || v > 100000) {
        return r.fail(err, std::string("timing.") + key, "an integer in [0, 100000]", &(*t)[key]);
      }
      *dst = static_cast<int>(v);
      return true;
    };
    if (!small_int("warmup_calls", &s.timing.warmup_calls) ||
        !small_int("min_samples", &s.timing.min_samples) ||
        !small_int("max_samples", &s.timing.max_samples)) {
      return false;
    }
    if (!r.number(*t, "target_rse", "timing.target_rse", &s.timing.target_rse, err, false)) {
      return false;
    }
    if (!r.number(*t, "max_seconds", "timing.max_seconds", &s.timing.max_seconds, err, false)) {
      return false;
    }
    if (s.timing.min_samples < 1 || s.timing.max_samples < s.timing.min_samples ||
        s.timing.target_rse <= 0 || s.timing.max_seconds <= 0 || s.timing.max_seconds > 3600) {
      return r.fail(err, "timing",
                    "warmup_calls >= 0, 1 <= min_samples <= max_samples, target_rse > 0 and "
                    "0 < max_seconds <= 3600",
                    t);
    }
  }

  return true;
}

// "tests", "benchmarks", and the optional "sweep" and "random_tests".
bool parse_case_lists(Reader& r, const nlohmann::json& doc, Spec* sp, std::string* err) {
  Spec& s = *sp;
  // Cases.
  std::set<std::string> case_names;
  for (const char* key : {"tests", "benchmarks"}) {
    const nlohmann::json* list = r.get(doc, key);
    if (!list || !list->is_array() || list->empty() || list->size() > 1000) {
      nlohmann::json none;
      return r.fail(err, key, "a non-empty array of at most 1000 cases", list ? list : &none);
    }
    bool bench = std::string(key) == "benchmarks";
    for (size_t i = 0; i < list->size(); ++i) {
      CaseSpec c;
      std::string f = std::string(key) + "[" + std::to_string(i) + "]";
      if (!parse_case(r, (*list)[i], f, bench, s, &c, err)) return false;
      if (!case_names.insert(c.name).second) {
        return r.fail(err, f + ".name", "a case name not used before", &(*list)[i]["name"]);
      }
      (bench ? s.benchmarks : s.tests).push_back(c);
    }
  }
  // The optional sweep list: shapes for --action sweep, named apart from the cases above.
  if (const nlohmann::json* sweep = r.get(doc, "sweep")) {
    if (!parse_cases(r, *sweep, "sweep", s, &s.sweep, err)) return false;
  }
  if (const nlohmann::json* random = r.get(doc, "random_tests")) {
    if (!parse_random_tests(r, *random, s, &s.random_tests, err)) return false;
  }
  return true;
}

}  // namespace

bool parse_spec(const nlohmann::json& doc, const std::string& path, Spec* out, std::string* err) {
  Reader r(path);
  Spec s;
  s.path = path;
  if (!parse_header(r, doc, &s, err) || !parse_dims(r, doc, &s, err) ||
      !parse_signature(r, doc, &s, err) || !parse_metric(r, doc, &s, err) ||
      !parse_timing(r, doc, &s, err) || !parse_case_lists(r, doc, &s, err)) {
    return false;
  }
  *out = std::move(s);
  return true;
}

bool load_spec(const std::string& challenge_dir, Spec* out, std::string* err) {
  const std::string path = challenge_dir + "/spec.json";
  nlohmann::json doc;
  if (!read_json_file(path, 1 << 22, 32, "a spec",
                      " (is '" + challenge_dir + "' a challenge folder?)", &doc, err)) {
    return false;
  }
  try {
    if (!parse_spec(doc, path, out, err)) return false;
  } catch (const std::exception& e) {
    *err = path + ": malformed spec: " + e.what();
    return false;
  }
  out->dir = challenge_dir;
  return true;
}

bool load_shapes_file(const std::string& path, const Spec& spec, std::vector<CaseSpec>* out,
                      std::string* err) {
  nlohmann::json doc;
  if (!read_json_file(path, 1 << 22, 32, "a list of shapes", "", &doc, err)) return false;
  try {
    Reader r(path);
    return parse_cases(r, doc, "", spec, out, err);
  } catch (const std::exception& e) {
    *err = path + ": malformed list of shapes: " + e.what();
    return false;
  }
}

}  // namespace fp4arena

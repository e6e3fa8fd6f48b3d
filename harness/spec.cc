#include "harness/spec.h"

#include <algorithm>
#include <cctype>
#include <fstream>
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
      *out = op == '+' ? *out + rhs : *out - rhs;
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
        *out *= rhs;
      } else {
        if (rhs == 0) return fail(err, "division by zero");
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
      ++pos_;
      if (!sum(out, err)) return false;
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ')') return fail(err, "missing ')'");
      ++pos_;
      return true;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        v = v * 10 + (s_[pos_++] - '0');
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
};

// Field access with messages that name the file and the JSON path of the field.
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  bool fail(std::string* err, const std::string& field, const std::string& expected,
            const nlohmann::json* got = nullptr) {
    std::ostringstream os;
    os << path_ << ": field '" << field << "': expected " << expected;
    if (got) os << ", got " << (got->is_null() ? std::string("nothing") : got->dump());
    *err = os.str();
    return false;
  }

  const nlohmann::json* get(const nlohmann::json& obj, const std::string& key) {
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
    if (!v->is_number()) return fail(err, field, "a number", v);
    *out = v->get<double>();
    return true;
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool parse_type(const std::string& c_type, ParamSpec* p) {
  static const std::map<std::string, std::pair<std::string, size_t>> kTypes = {
      {"const uint8_t*", {"uint8_t", 1}},
      {"uint8_t*", {"uint8_t", 1}},
      {"const __half*", {"__half", 2}},
      {"__half*", {"__half", 2}},
      {"const float*", {"float", 4}},
      {"float*", {"float", 4}},
      {"float", {"float", 4}},
      {"int", {"int", 4}}};
  auto it = kTypes.find(c_type);
  if (it == kTypes.end()) return false;
  p->elem_type = it->second.first;
  p->elem_bytes = it->second.second;
  return true;
}

bool parse_case(Reader& r, const nlohmann::json& c, const std::string& field, bool benchmark,
                const Spec& spec, CaseSpec* out, std::string* err) {
  if (!c.is_object()) return r.fail(err, field, "an object", &c);
  if (!r.str(c, "name", field + ".name", &out->name, err)) return false;
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
  std::string dim_err;
  if (!check_case_dims(spec, *out, &dim_err)) {
    *err = r.path() + ": field '" + field + "': " + dim_err;
    return false;
  }
  return true;
}

}  // namespace

bool eval_expr(const std::string& expr, const std::map<std::string, int64_t>& vars, int64_t* out,
               std::string* err) {
  ExprParser p(expr, vars);
  return p.parse(out, err);
}

int64_t buffer_elements(const ParamSpec& p, const std::map<std::string, int64_t>& dims) {
  int64_t n = 1;
  for (const std::string& e : p.shape) {
    int64_t v = 0;
    std::string err;
    if (!eval_expr(e, dims, &v, &err)) return -1;
    n *= v;
  }
  return n;
}

bool check_case_dims(const Spec& spec, const CaseSpec& c, std::string* err) {
  for (const DimSpec& d : spec.dims) {
    auto it = c.dims.find(d.name);
    if (it == c.dims.end()) {
      *err = "case '" + c.name + "' has no dimension " + d.name;
      return false;
    }
    int64_t v = it->second;
    if (v < d.min || v > d.max || v % d.multiple_of != 0) {
      std::ostringstream os;
      os << "case '" << c.name << "': " << d.name << " = " << v
         << " is outside the spec: " << d.name << " must be in [" << d.min << ", " << d.max << "]";
      if (d.multiple_of > 1) os << " and a multiple of " << d.multiple_of;
      *err = os.str();
      return false;
    }
  }
  return true;
}

const ParamSpec& Spec::output() const {
  for (const ParamSpec& p : params) {
    if (p.role == "out") return p;
  }
  return params.front();  // parse_spec guarantees exactly one output
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

double case_flops(const Spec& spec, const std::map<std::string, int64_t>& dims) {
  int64_t v = 0;
  std::string err;
  if (!eval_expr(spec.flops, dims, &v, &err)) return 0;
  return static_cast<double>(v);
}

bool parse_spec(const nlohmann::json& doc, const std::string& path, Spec* out, std::string* err) {
  Reader r(path);
  Spec s;
  s.path = path;
  if (!doc.is_object()) return r.fail(err, "(top level)", "a JSON object", &doc);
  int64_t version = 0;
  if (!r.integer(doc, "spec_version", "spec_version", &version, err)) return false;
  if (version != 1) {
    return r.fail(err, "spec_version", "1 (the version this judge reads)", &doc["spec_version"]);
  }
  s.spec_version = static_cast<int>(version);
  if (!r.str(doc, "name", "name", &s.name, err)) return false;
  if (auto* t = r.get(doc, "title"); t && t->is_string()) s.title = t->get<std::string>();

  // Dimensions.
  const nlohmann::json* dims = r.get(doc, "dims");
  if (!dims || !dims->is_object() || dims->empty()) {
    nlohmann::json none;
    return r.fail(err, "dims", "an object mapping each dimension to {min, max[, multiple_of]}",
                  dims ? dims : &none);
  }
  for (auto it = dims->begin(); it != dims->end(); ++it) {
    DimSpec d;
    d.name = it.key();
    std::string f = "dims." + d.name;
    if (!it->is_object()) return r.fail(err, f, "an object {min, max[, multiple_of]}", &*it);
    if (!r.integer(*it, "min", f + ".min", &d.min, err)) return false;
    if (!r.integer(*it, "max", f + ".max", &d.max, err)) return false;
    if (!r.integer(*it, "multiple_of", f + ".multiple_of", &d.multiple_of, err, false)) {
      return false;
    }
    if (d.min < 1 || d.max < d.min || d.multiple_of < 1) {
      return r.fail(err, f, "1 <= min <= max and multiple_of >= 1", &*it);
    }
    s.dims.push_back(d);
  }
  std::map<std::string, int64_t> probe;
  for (const DimSpec& d : s.dims) probe[d.name] = d.max;

  // Signature.
  const nlohmann::json* sig = r.get(doc, "signature");
  if (!sig || !sig->is_object()) {
    nlohmann::json none;
    return r.fail(err, "signature", "an object {function, params}", sig ? sig : &none);
  }
  if (!r.str(*sig, "function", "signature.function", &s.function, err)) return false;
  const nlohmann::json* params = r.get(*sig, "params");
  if (!params || !params->is_array() || params->empty()) {
    nlohmann::json none;
    return r.fail(err, "signature.params", "a non-empty array", params ? params : &none);
  }
  int outputs = 0;
  std::set<std::string> names;
  for (size_t i = 0; i < params->size(); ++i) {
    const nlohmann::json& pj = (*params)[i];
    std::string f = "signature.params[" + std::to_string(i) + "]";
    if (!pj.is_object()) return r.fail(err, f, "an object {name, type, role[, shape]}", &pj);
    ParamSpec p;
    if (!r.str(pj, "name", f + ".name", &p.name, err)) return false;
    if (!names.insert(p.name).second) return r.fail(err, f + ".name", "a unique name", &pj["name"]);
    if (!r.str(pj, "type", f + ".type", &p.c_type, err)) return false;
    if (!parse_type(p.c_type, &p)) {
      return r.fail(err, f + ".type",
                    "one of \"const uint8_t*\", \"uint8_t*\", \"const __half*\", \"__half*\", "
                    "\"const float*\", \"float*\", \"float\", \"int\"",
                    &pj["type"]);
    }
    if (!r.str(pj, "role", f + ".role", &p.role, err)) return false;
    bool pointer = p.c_type.back() == '*';
    if (p.role == "in" || p.role == "out") {
      if (!pointer)
        return r.fail(err, f + ".type", "a pointer type for role " + p.role, &pj["type"]);
      if (p.role == "in" && p.c_type.rfind("const ", 0) != 0) {
        return r.fail(err, f + ".type", "a const pointer for an input", &pj["type"]);
      }
      const nlohmann::json* shape = r.get(pj, "shape");
      if (!shape || !shape->is_array() || shape->empty()) {
        nlohmann::json none;
        return r.fail(err, f + ".shape", "a non-empty array of extent expressions",
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
      if (p.role == "out") ++outputs;
    } else if (p.role == "dim") {
      if (p.c_type != "int") return r.fail(err, f + ".type", "\"int\" for a dim", &pj["type"]);
      bool known = false;
      for (const DimSpec& d : s.dims) known |= d.name == p.name;
      if (!known) return r.fail(err, f + ".name", "a name listed under dims", &pj["name"]);
    } else if (p.role == "scalar") {
      if (pointer) return r.fail(err, f + ".type", "a value type for a scalar", &pj["type"]);
    } else {
      return r.fail(err, f + ".role", "one of \"in\", \"out\", \"scalar\", \"dim\"", &pj["role"]);
    }
    s.params.push_back(p);
  }
  if (outputs != 1) {
    return r.fail(err, "signature.params", "exactly one parameter with role \"out\"", params);
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
  if (s.output().elem_type != "__half" && s.output().elem_type != "float") {
    return r.fail(err, "signature.params", "an output of type __half* or float*", params);
  }

  // Tolerances, FLOPs, timing.
  const nlohmann::json* tol = r.get(doc, "tolerance");
  if (!tol || !tol->is_object()) {
    nlohmann::json none;
    return r.fail(err, "tolerance", "an object {atol, rtol}", tol ? tol : &none);
  }
  if (!r.number(*tol, "atol", "tolerance.atol", &s.atol, err)) return false;
  if (!r.number(*tol, "rtol", "tolerance.rtol", &s.rtol, err)) return false;
  if (s.atol < 0 || s.rtol < 0) return r.fail(err, "tolerance", "non-negative atol and rtol", tol);
  if (!r.str(doc, "flops", "flops", &s.flops, err)) return false;
  {
    int64_t v;
    std::string expr_err;
    if (!eval_expr(s.flops, probe, &v, &expr_err)) {
      return r.fail(err, "flops", "an expression of the dims (" + expr_err + ")", &doc["flops"]);
    }
  }
  if (auto* t = r.get(doc, "timeouts")) {
    if (!t->is_object()) return r.fail(err, "timeouts", "an object {call_seconds}", t);
    if (!r.number(*t, "call_seconds", "timeouts.call_seconds", &s.call_timeout_seconds, err,
                  false)) {
      return false;
    }
    if (s.call_timeout_seconds <= 0) {
      return r.fail(err, "timeouts.call_seconds", "a positive number", &(*t)["call_seconds"]);
    }
  }
  if (auto* t = r.get(doc, "timing")) {
    if (!t->is_object()) return r.fail(err, "timing", "an object", t);
    int64_t v = 0;
    if (!r.integer(*t, "warmup_calls", "timing.warmup_calls", &v, err, false)) return false;
    if (r.get(*t, "warmup_calls")) s.timing.warmup_calls = static_cast<int>(v);
    if (!r.integer(*t, "min_samples", "timing.min_samples", &v, err, false)) return false;
    if (r.get(*t, "min_samples")) s.timing.min_samples = static_cast<int>(v);
    if (!r.integer(*t, "max_samples", "timing.max_samples", &v, err, false)) return false;
    if (r.get(*t, "max_samples")) s.timing.max_samples = static_cast<int>(v);
    if (!r.number(*t, "target_rse", "timing.target_rse", &s.timing.target_rse, err, false)) {
      return false;
    }
    if (!r.number(*t, "max_seconds", "timing.max_seconds", &s.timing.max_seconds, err, false)) {
      return false;
    }
    if (s.timing.warmup_calls < 0 || s.timing.min_samples < 1 ||
        s.timing.max_samples < s.timing.min_samples || s.timing.target_rse <= 0 ||
        s.timing.max_seconds <= 0) {
      return r.fail(err, "timing",
                    "warmup_calls >= 0, 1 <= min_samples <= max_samples, target_rse > 0 and "
                    "max_seconds > 0",
                    t);
    }
  }

  // Cases.
  std::set<std::string> case_names;
  for (const char* key : {"tests", "benchmarks"}) {
    const nlohmann::json* list = r.get(doc, key);
    if (!list || !list->is_array() || list->empty()) {
      nlohmann::json none;
      return r.fail(err, key, "a non-empty array of cases", list ? list : &none);
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
  *out = std::move(s);
  return true;
}

bool load_spec(const std::string& challenge_dir, Spec* out, std::string* err) {
  std::string path = challenge_dir + "/spec.json";
  std::ifstream in(path);
  if (!in) {
    *err = path + ": cannot open (is '" + challenge_dir + "' a challenge folder?)";
    return false;
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    *err = path + ": not valid JSON: " + e.what();
    return false;
  }
  if (!parse_spec(doc, path, out, err)) return false;
  out->dir = challenge_dir;
  return true;
}

}  // namespace fp4arena

#include "harness/python_solution.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "harness/compile.h"
#include "harness/process.h"
#include "harness/text.h"

namespace fp4arena {

namespace {

// Run by python3 -I (isolated: no user site, no PYTHON* variables) with the function's name and
// the file's path: parses the file (nothing in it runs), then prints one JSON line: the
// function's parameters or the syntax error, the top-level modules the file imports, and which
// of torch and triton this python3 can import (found, not imported).
constexpr const char* kReader = R"PY(
import ast, importlib.util, json, sys
fn, path = sys.argv[1], sys.argv[2]
out = {"python": sys.version.split()[0]}
try:
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), filename=path)
except SyntaxError as e:
    out["syntax"] = "%s:%s:%s: %s" % (path, e.lineno, e.offset, e.msg)
except (OSError, ValueError) as e:
    out["syntax"] = "%s: %s" % (path, e)
except (RecursionError, MemoryError) as e:
    out["syntax"] = "%s: too deeply nested or too large for the parser (%s)" % (path, type(e).__name__)
else:
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == fn]
    if defs:
        d, a = defs[-1], defs[-1].args
        out["line"] = d.lineno
        out["params"] = [x.arg for x in a.posonlyargs + a.args]
        out["extra"] = ([("*" + a.vararg.arg)] if a.vararg else []) + [x.arg for x in a.kwonlyargs] + \
            ([("**" + a.kwarg.arg)] if a.kwarg else [])
        out["async"] = isinstance(d, ast.AsyncFunctionDef)
    mods = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            mods.update(x.name.split(".")[0] for x in n.names)
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            mods.add(n.module.split(".")[0])
    out["imports"] = sorted(mods)
out["have"] = {m: importlib.util.find_spec(m) is not None for m in ("torch", "triton")}
print(json.dumps(out))
)PY";

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// What the file's imports need that this python3 cannot import.
std::vector<std::string> missing_modules(const nlohmann::json& r) {
  std::vector<std::string> out;
  const std::string py = r.value("python", std::string("?"));
  const nlohmann::json have = r.value("have", nlohmann::json::object());
  const nlohmann::json imports = r.value("imports", nlohmann::json::array());
  auto imported = [&](const char* m) {
    for (const auto& x : imports)
      if (x.is_string() && x.get<std::string>() == m) return true;
    return false;
  };
  if (!have.value("torch", false)) {
    out.push_back("torch is not installed for python3 " + py +
                  ": every Python solution gets its buffers as torch tensors (pip install torch; "
                  "see docs/python.md)");
  }
  if (imported("triton") && !have.value("triton", false)) {
    out.push_back("triton is not installed for python3 " + py +
                  ": the solution imports it (pip install triton; see docs/python.md)");
  }
  return out;
}

}  // namespace

std::string python_program() {
  const char* p = std::getenv("FP4ARENA_PYTHON");
  return p && *p ? p : "python3";
}

const char* language_name(Language l) {
  switch (l) {
    case Language::kCuda:
      return "cuda";
    case Language::kTriton:
      return "triton";
    case Language::kPytorch:
      return "pytorch";
  }
  return "?";
}

bool parse_language(const std::string& name, Language* out) {
  for (Language l : {Language::kCuda, Language::kTriton, Language::kPytorch}) {
    if (name == language_name(l)) {
      *out = l;
      return true;
    }
  }
  return false;
}

Language language_of(const std::string& path, const std::string& source) {
  if (!ends_with(path, ".py")) return Language::kCuda;
  const bool triton = source.find("import triton") != std::string::npos ||
                      source.find("from triton") != std::string::npos;
  return triton ? Language::kTriton : Language::kPytorch;
}

std::string python_prototype(const Spec& spec) {
  std::string s = "def " + spec.function + "(";
  for (size_t i = 0; i < spec.params.size(); ++i) s += (i ? ", " : "") + spec.params[i].name;
  return s + ")";
}

bool check_python_solution(const Spec& spec, const std::string& path, PythonCheck* out,
                           std::string* err) {
  std::string text;
  bool timed_out = false;
  // The file is only parsed, but a hostile one could still make the parser grow without end:
  // a time and an address-space limit, as for nvcc.
  ChildLimits limits;
  limits.timeout_seconds = 60;
  limits.address_space_bytes = uint64_t(4) << 30;
  const int status = run_capture_limited(
      {python_program(), "-I", "-c", kReader, spec.function, path}, limits, &text, &timed_out);
  if (status == -1 || status == 127) {
    *err = python_program() +
           " could not be run: a Python solution is read by python3 (apt-get install "
           "python3, or set FP4ARENA_PYTHON to one)";
    return false;
  }
  nlohmann::json r;
  const std::vector<std::string> lines = split_lines(text);
  if (status != 0 || timed_out || lines.empty() ||
      !(r = nlohmann::json::parse(lines.back(), nullptr, false)).is_object()) {
    *err = python_program() + " failed to read the solution (exit " + std::to_string(status) +
           "): " + shorten(valid_utf8(text), 400);
    return false;
  }
  out->python = r.value("python", std::string());
  if (r.contains("syntax")) {
    out->error =
        "the solution is not valid Python: " + valid_utf8(r.value("syntax", std::string()));
    return true;
  }
  out->missing = missing_modules(r);
  const std::string expected = python_prototype(spec);
  if (!r.contains("params")) {
    out->error = path + " defines no top-level `def " + spec.function + "(...)`; expected (" +
                 spec.path + "):\n    " + expected;
    return true;
  }
  std::vector<std::string> want, got = r.value("params", std::vector<std::string>());
  for (const ParamSpec& p : spec.params) want.push_back(p.name);
  const std::vector<std::string> extra = r.value("extra", std::vector<std::string>());
  const std::string line = path + ":" + std::to_string(r.value("line", 0));
  const std::string yours = "def " + spec.function + "(" + joined(got) +
                            (extra.empty() ? "" : (got.empty() ? "" : ", ") + joined(extra)) + ")";
  std::string diff = parameter_differences(want, got);
  if (!extra.empty()) diff += "  no other parameters: yours also has " + joined(extra) + "\n";
  if (r.value("async", false)) diff += "  " + spec.function + " must be a plain def, not async\n";
  if (!diff.empty()) {
    out->error = spec.function +
                 "() must take exactly the spec's parameters, in order:\n  expected (" + spec.path +
                 "):\n    " + expected + "\n  yours (" + line + "):\n    " + yours + "\n" + diff;
    return true;
  }
  out->ok = true;
  return true;
}

}  // namespace fp4arena

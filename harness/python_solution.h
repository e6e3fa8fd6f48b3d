// Python solutions (Triton or PyTorch): what the judge learns from a `.py` file without
// running any of it. The file is read by python3's own parser (`ast`); `solve`'s parameters
// are compared with the spec's names, in order, as the CUDA signature check compares types.
#pragma once

#include <string>
#include <vector>

#include "harness/spec.h"

namespace fp4arena {

/// The solution languages. "triton" and "pytorch" are both Python files with a `solve`.
enum class Language { kCuda, kTriton, kPytorch };
/// "cuda", "triton", "pytorch".
const char* language_name(Language l);
/// Parses a --language value; false for anything else.
bool parse_language(const std::string& name, Language* out);
/// The language a solution file's name implies: `.py` is Python (Triton where the source
/// imports triton, else PyTorch), anything else CUDA.
Language language_of(const std::string& path, const std::string& source);
inline bool is_python(Language l) {
  return l != Language::kCuda;
}

/// What the check of a Python solution found.
struct PythonCheck {
  bool ok = false;     ///< the file parses and solve's parameters are the spec's
  std::string error;   ///< why not (a syntax error, no solve, the parameter differences)
  std::string python;  ///< python3's version ("3.12.3"); empty where python3 did not run
  /// What a GPU run will need that this machine's python3 lacks, one line each ("torch is not
  /// installed for python3 3.11.2: ..."): notes for check, errors for the GPU actions.
  std::vector<std::string> missing;
};

/// The python3 the judge runs (the check, the Python worker): $FP4ARENA_PYTHON, else
/// "python3" found on PATH.
std::string python_program();

/// `def solve(a, a_scales, ...)`: the Python declaration the spec asks for.
std::string python_prototype(const Spec& spec);

/// Reads `path` with python3 (`python3` in PATH, or $FP4ARENA_PYTHON) and checks it against
/// `spec`. False + *err only when python3 cannot be run at all (the message says what to
/// install); a file that does not pass, or that its parser cannot read, is `ok == false` with
/// its `error`.
bool check_python_solution(const Spec& spec, const std::string& path, PythonCheck* out,
                           std::string* err);

}  // namespace fp4arena

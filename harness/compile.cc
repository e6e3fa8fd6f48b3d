#include "harness/compile.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "harness/process.h"
#include "harness/sha256.h"

#ifndef FP4ARENA_NVCC
#define FP4ARENA_NVCC ""
#endif

namespace fp4arena {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string find_in_path(const std::string& prog) {
  std::stringstream ss(env("PATH"));
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (!dir.empty() && is_executable(dir + "/" + prog)) return dir + "/" + prog;
  }
  return "";
}

std::vector<std::string> gencode_flags(const std::string& arch) {
  std::string num = arch.substr(3);  // "90a"
  return {"-gencode", "arch=compute_" + num + ",code=sm_" + num};
}

// nvcc front-end diagnostics read "file(12): error: ..."; rewrite them to the usual
// "file:12: error: ..." so editors and terminals can jump to them, and name our generated
// files by what they are.
std::string rewrite_diagnostics(const std::string& log, const std::string& proto_path,
                                const std::string& shim_path) {
  static const std::regex kEdg(R"(^(.+?)\((\d+)\): )", std::regex::multiline);
  std::string out = std::regex_replace(log, kEdg, "$1:$2: ");
  auto replace_all = [&out](const std::string& from, const std::string& to) {
    for (size_t pos = 0; (pos = out.find(from, pos)) != std::string::npos; pos += to.size()) {
      out.replace(pos, from.size(), to);
    }
  };
  replace_all(proto_path, "<fp4arena prototype>");
  replace_all(shim_path, "<fp4arena call shim>");
  return out;
}

// The user's own declaration of the function, for the side-by-side signature message.
std::string find_user_signature(const std::string& source, const std::string& fn,
                                const std::string& path) {
  std::regex decl("(^|[^A-Za-z0-9_])" + fn + R"(\s*\()");
  std::smatch m;
  if (!std::regex_search(source, m, decl)) return "(no function named " + fn + " found)";
  size_t start = source.rfind('\n', static_cast<size_t>(m.position(0)));
  start = start == std::string::npos ? 0 : start + 1;
  size_t close = source.find(')', static_cast<size_t>(m.position(0)));
  if (close == std::string::npos) close = source.size() - 1;
  std::string sig = source.substr(start, close - start + 1);
  std::string flat;
  for (char c : sig) {
    if (c == '\n' || c == '\t') c = ' ';
    if (!(c == ' ' && !flat.empty() && flat.back() == ' ')) flat += c;
  }
  int line = 1;
  for (size_t i = 0; i < start; ++i) line += source[i] == '\n';
  return flat + "    (" + path + ":" + std::to_string(line) + ")";
}

// Local headers (#include "x") of the source, recursively, so that editing a header a
// solution includes invalidates its cached object.
void hash_local_includes(const std::string& source, const std::string& dir, Sha256* h, int depth) {
  if (depth > 8) return;
  static const std::regex kInclude(R"re(^\s*#\s*include\s*"([^"]+)")re", std::regex::multiline);
  for (std::sregex_iterator it(source.begin(), source.end(), kInclude), end; it != end; ++it) {
    std::string path = dir + "/" + (*it)[1].str();
    std::string text, ignored;
    if (!read_file(path, &text, &ignored)) continue;  // a system header; nvcc reports misses
    h->update(path + "\n");
    h->update(text);
    hash_local_includes(text, dir_of(path), h, depth + 1);
  }
}

bool mentions_signature_problem(const std::string& log, const std::string& fn) {
  return log.find("undefined reference to `" + fn + "'") != std::string::npos ||
         log.find("\"" + fn + "\"") != std::string::npos ||
         log.find("'" + fn + "'") != std::string::npos;
}

}  // namespace

std::string find_nvcc() {
  std::vector<std::string> candidates = {env("FP4ARENA_NVCC"), find_in_path("nvcc")};
  if (!env("CUDA_HOME").empty()) candidates.push_back(env("CUDA_HOME") + "/bin/nvcc");
  candidates.push_back("/usr/local/cuda/bin/nvcc");
  candidates.push_back(FP4ARENA_NVCC);
  for (const std::string& c : candidates) {
    if (!c.empty() && is_executable(c)) return c;
  }
  return "";
}

std::string nvcc_version(const std::string& nvcc) {
  std::string out;
  if (run_capture({nvcc, "--version"}, &out) != 0) return "";
  std::smatch m;
  if (std::regex_search(out, m, std::regex(R"(release [0-9.]+, V([0-9.]+))"))) return m[1];
  return "";
}

std::string default_cache_dir() {
  if (!env("FP4ARENA_CACHE_DIR").empty()) return env("FP4ARENA_CACHE_DIR");
  if (!env("XDG_CACHE_HOME").empty()) return env("XDG_CACHE_HOME") + "/fp4arena";
  if (!env("HOME").empty()) return env("HOME") + "/.cache/fp4arena";
  return "/tmp/fp4arena-cache-" + std::to_string(getuid());
}

std::string arch_for_compute_capability(int major, int minor) {
  std::string num = std::to_string(major) + std::to_string(minor);
  if ((major == 9 && minor == 0) || (major == 10 && (minor == 0 || minor == 3))) {
    return "sm_" + num + "a";
  }
  return "sm_" + num;
}

bool valid_arch(const std::string& arch) {
  return std::regex_match(arch, std::regex(R"(sm_[1-9][0-9]{1,2}[af]?)"));
}

std::string prototype_header(const Spec& spec) {
  std::ostringstream os;
  os << "// Generated by fp4arena from " << spec.path << "; force-included into solutions.\n"
     << "#pragma once\n#include <cstdint>\n#include <cuda_fp16.h>\n"
     << c_prototype(spec) << ";\n";
  return os.str();
}

std::string call_shim(const Spec& spec) {
  std::ostringstream os;
  os << "// Generated by fp4arena: unpacks the worker's argument array and calls " << spec.function
     << "().\n"
     << "extern \"C\" int fp4arena_abi_version() { return 1; }\n"
     << "extern \"C\" void fp4arena_call(void* const* args) {\n  " << spec.function << "(";
  for (size_t i = 0; i < spec.params.size(); ++i) {
    if (i) os << ",\n      ";
    os << "*static_cast<" << spec.params[i].c_type << " const*>(args[" << i << "])";
  }
  os << ");\n}\n";
  return os.str();
}

bool compile_solution(const Spec& spec, const std::string& source_path, const CompileOptions& opts,
                      CompileResult* result, std::string* err) {
  *result = CompileResult();
  if (!valid_arch(opts.arch)) {
    *err = "--arch: expected sm_XY, sm_XYa or sm_XYf (e.g. sm_90a), got '" + opts.arch + "'";
    return false;
  }
  std::string source;
  if (!read_file(source_path, &source, err)) return false;
  result->source_sha256 = sha256_hex(source);

  std::string nvcc = opts.nvcc.empty() ? find_nvcc() : opts.nvcc;
  if (nvcc.empty() || !is_executable(nvcc)) {
    *err = "nvcc not found: install the CUDA Toolkit, put its bin/ on PATH, or set FP4ARENA_NVCC";
    return false;
  }
  std::string version_text;
  run_capture({nvcc, "--version"}, &version_text);

  std::string proto = prototype_header(spec);
  std::string shim = call_shim(spec);
  std::vector<std::string> flags = {"-std=c++17", "-O3",   "-lineinfo", "--shared",
                                    "-Xcompiler", "-fPIC", "-Xlinker",  "--no-undefined"};
  for (const std::string& f : gencode_flags(opts.arch)) flags.push_back(f);
  std::string stubs = dir_of(dir_of(nvcc)) + "/lib64/stubs";
  if (access((stubs + "/libcuda.so").c_str(), R_OK) == 0) {
    flags.push_back("-L" + stubs);
    flags.push_back("-lcuda");
  }

  Sha256 key;
  for (const std::string& part : {source, proto, shim, version_text}) {
    key.update(part);
    key.update("\0", 1);
  }
  for (const std::string& f : flags) key.update(f + "\n");
  hash_local_includes(source, dir_of(source_path), &key, 0);
  std::string hash = key.hex_digest().substr(0, 24);

  std::string cache = opts.cache_dir.empty() ? default_cache_dir() : opts.cache_dir;
  if (!make_dirs(cache, err)) return false;
  std::string so = cache + "/" + hash + ".so";
  result->so_path = so;
  if (opts.use_cache && access(so.c_str(), R_OK) == 0) {
    result->ok = true;
    result->cached = true;
    return true;
  }
  std::string proto_path = cache + "/" + hash + ".proto.h";
  std::string shim_path = cache + "/" + hash + ".shim.cu";
  if (!write_file_atomic(proto_path, proto, err) || !write_file_atomic(shim_path, shim, err)) {
    return false;
  }
  std::string tmp_so = so + ".tmp." + std::to_string(getpid());
  std::vector<std::string> argv = {nvcc};
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const std::string& a :
       {std::string("-include"), proto_path, std::string("-o"), tmp_so, source_path, shim_path}) {
    argv.push_back(a);
  }
  for (const std::string& a : argv) result->command += (result->command.empty() ? "" : " ") + a;

  auto t0 = std::chrono::steady_clock::now();
  std::string log;
  int status = run_capture(argv, &log);
  result->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result->diagnostics = rewrite_diagnostics(log, proto_path, shim_path);
  if (status != 0) {
    unlink(tmp_so.c_str());
    if (mentions_signature_problem(log, spec.function)) {
      result->diagnostics += "\nfp4arena: " + spec.function +
                             "() must be defined with exactly this signature:\n" + "  expected (" +
                             spec.path + "):\n    " + c_prototype(spec) + "\n" + "  yours:\n    " +
                             find_user_signature(source, spec.function, source_path) + "\n";
    }
    if (status == -1 || status == 127) {
      *err = "could not run nvcc (" + nvcc + "): " + log;
      return false;
    }
    return true;
  }
  if (rename(tmp_so.c_str(), so.c_str()) != 0) {
    *err = so + ": cannot move the compiled object into the cache";
    return false;
  }
  result->ok = true;
  return true;
}

}  // namespace fp4arena

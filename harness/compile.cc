#include "harness/compile.h"
#include "harness/text.h"

#include <cxxabi.h>
#include <dirent.h>
#include <glob.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "harness/process.h"
#include "harness/sha256.h"

#ifndef FP4ARENA_NVCC
#define FP4ARENA_NVCC ""
#endif

// Everything here that reads user-controlled text (sources, headers, compiler output that
// quotes them) is a hand-written linear scanner: std::regex recurses per character and
// overflows the stack on one long line.

namespace fp4arena {
namespace {

constexpr int64_t kMaxHeaderBytes = 16 << 20;
constexpr const char* kAllowedFlags =
    "allowed nvcc flags: -maxrregcount=N (N 1..255, one token), -DNAME, -DNAME=VALUE "
    "(VALUE of [A-Za-z0-9_.+-]), -UNAME, --use_fast_math, -Xptxas -v (or -Xptxas=-v), "
    "--expt-relaxed-constexpr, --expt-extended-lambda, -std=c++17 or -std=c++20 (CUTLASS and "
    "CuTe need the first; -std replaces the default c++17)";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_ident_start(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}
bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

std::string realpath_of(const std::string& path) {
  std::unique_ptr<char, decltype(&std::free)> p(realpath(path.c_str(), nullptr), &std::free);
  return p ? std::string(p.get()) : std::string();
}

bool is_directory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// "/a/b" is under "/a" and under "/a/b"; not under "/a/bc".
bool is_under(const std::string& path, const std::string& dir) {
  if (dir.empty() || !starts_with(path, dir)) return false;
  return path.size() == dir.size() || path[dir.size()] == '/' || dir.back() == '/';
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

// Parses a whole non-negative decimal (no sign, no spaces) that fits in int64.
bool parse_count(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 15) return false;
  int64_t v = 0;
  for (char c : s) {
    if (!is_digit(c)) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !is_ident_start(s[0])) return false;
  return std::all_of(s.begin(), s.end(), is_ident_char);
}

bool is_macro_value(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return is_ident_char(c) || c == '.' || c == '+' || c == '-'; });
}

// nvcc front-end diagnostics read "file(12): error: ..."; rewrite them to the usual
// "file:12: error: ..." so editors and terminals can jump to them. The first "(digits): "
// after at least one character of a line is the location.
std::string rewrite_line_location(const std::string& line) {
  for (size_t open = line.find('(', 1); open != std::string::npos;
       open = line.find('(', open + 1)) {
    size_t i = open + 1;
    while (i < line.size() && is_digit(line[i])) ++i;
    if (i == open + 1 || line.compare(i, 3, "): ") != 0) continue;
    return line.substr(0, open) + ":" + line.substr(open + 1, i - open - 1) + ": " +
           line.substr(i + 3);
  }
  return line;
}

// Rewrites locations and names our generated files by what they are.
std::string rewrite_diagnostics(const std::string& log, const std::string& proto_path,
                                const std::string& shim_path) {
  std::string out;
  out.reserve(log.size());
  size_t start = 0;
  while (start < log.size()) {
    size_t nl = log.find('\n', start);
    bool has_nl = nl != std::string::npos;
    if (!has_nl) nl = log.size();
    out += rewrite_line_location(log.substr(start, nl - start));
    if (has_nl) out += '\n';
    start = nl + 1;
  }
  auto replace_all = [&out](const std::string& from, const std::string& to) {
    for (size_t pos = 0; (pos = out.find(from, pos)) != std::string::npos; pos += to.size()) {
      out.replace(pos, from.size(), to);
    }
  };
  replace_all(proto_path, "<fp4arena prototype>");
  replace_all(shim_path, "<fp4arena call shim>");
  return out;
}

// The user's own declaration of the function, for the side-by-side signature message: the
// first `fn` that stands alone as a name and is followed (after blanks) by '('.
std::string find_user_signature(const std::string& source, const std::string& fn,
                                const std::string& path) {
  size_t at = std::string::npos;
  for (size_t pos = source.find(fn); pos != std::string::npos; pos = source.find(fn, pos + 1)) {
    if (pos > 0 && is_ident_char(source[pos - 1])) continue;
    size_t i = pos + fn.size();
    while (i < source.size() && (is_blank(source[i]) || source[i] == '\n' || source[i] == '\r')) {
      ++i;
    }
    if (i < source.size() && source[i] == '(') {
      at = pos;
      break;
    }
  }
  if (at == std::string::npos) return "(no function named " + fn + " found)";
  size_t start = at == 0 ? std::string::npos : source.rfind('\n', at - 1);
  start = start == std::string::npos ? 0 : start + 1;
  size_t close = source.find(')', at);
  if (close == std::string::npos) close = source.size() - 1;
  std::string sig = source.substr(start, std::min<size_t>(close - start + 1, 2000));
  std::string flat;
  for (char c : sig) {
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
    if (!(c == ' ' && !flat.empty() && flat.back() == ' ')) flat += c;
  }
  int line = 1;
  for (size_t i = 0; i < start; ++i) line += source[i] == '\n';
  return flat + "    (" + path + ":" + std::to_string(line) + ")";
}

bool mentions_signature_problem(const std::string& log, const std::string& fn) {
  return log.find("undefined reference to `" + fn + "'") != std::string::npos ||
         log.find("\"" + fn + "\"") != std::string::npos ||
         log.find("'" + fn + "'") != std::string::npos;
}

std::string demangle(const std::string& symbol) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(
      abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && d ? std::string(d.get()) : symbol;
}

// The text between the first pair of single quotes at or after `from`.
std::string quoted(const std::string& line, size_t from) {
  size_t a = line.find('\'', from);
  if (a == std::string::npos) return "";
  size_t b = line.find('\'', a + 1);
  return b == std::string::npos ? "" : line.substr(a + 1, b - a - 1);
}

// "Used 40 registers, used 1 barriers, 1024 bytes smem" and "0 bytes stack frame, 8 bytes
// spill stores, 8 bytes spill loads": comma-separated "<number> <what>" or "used <number>
// <what>" items. Unknown items are skipped, so a newer ptxas adding one does not break us.
void apply_property_items(const std::string& text, KernelResources* k) {
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::istringstream words(item);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (!w.empty() && (w[0] == "Used" || w[0] == "used")) w.erase(w.begin());
    int64_t n = 0;
    if (w.size() < 2 || !parse_count(w[0], &n)) continue;
    std::string what = w[1];
    for (size_t i = 2; i < w.size(); ++i) what += " " + w[i];
    if (what == "registers") {
      k->registers = static_cast<int>(n);
    } else if (what == "barriers") {
      k->barriers = static_cast<int>(n);
    } else if (what == "bytes smem") {
      k->shared_bytes = n;
    } else if (what == "bytes stack frame") {
      k->stack_bytes = n;
    } else if (what == "bytes spill stores") {
      k->spill_store_bytes = n;
    } else if (what == "bytes spill loads") {
      k->spill_load_bytes = n;
    }
  }
}

const char kPtxasInfo[] = "ptxas info";

bool is_ptxas_info(const std::string& line) {
  if (!starts_with(line, kPtxasInfo)) return false;
  size_t i = sizeof kPtxasInfo - 1;
  while (i < line.size() && is_blank(line[i])) ++i;
  return i < line.size() && line[i] == ':';
}

// The text after "ptxas info    : ".
std::string info_text(const std::string& line) {
  size_t colon = line.find(':');
  size_t i = colon + 1;
  while (i < line.size() && is_blank(line[i])) ++i;
  std::string t = line.substr(i);
  while (!t.empty() && (t.back() == '\r' || is_blank(t.back()))) t.pop_back();
  return t;
}

// The folders after -I and -isystem in the INCLUDES and SYSTEM_INCLUDES lines that
// `nvcc --dryrun` prints ("#$ INCLUDES=\"-I/usr/local/cuda/bin/../targets/x86_64-linux/include\"").
// Bounded by `limits`; *timed_out says when its time ran out.
std::vector<std::string> nvcc_include_dirs(const std::string& nvcc, const ChildLimits& limits,
                                           bool* timed_out) {
  std::vector<std::string> dirs;
  std::string out;
  if (run_capture_limited({nvcc, "--dryrun", "-E", "-x", "cu", "/dev/null"}, limits, &out,
                          timed_out) != 0) {
    return dirs;
  }
  for (const std::string& line : split_lines(out)) {
    if (line.rfind("#$ INCLUDES=", 0) != 0 && line.rfind("#$ SYSTEM_INCLUDES=", 0) != 0) continue;
    std::vector<std::string> words;
    std::string word;
    bool quoted = false, any = false;
    for (size_t i = line.find('=') + 1; i <= line.size(); ++i) {
      char c = i < line.size() ? line[i] : ' ';
      if (c == '"') {
        quoted = !quoted;
        any = true;
      } else if (!quoted && is_blank(c)) {
        if (any) words.push_back(word);
        word.clear();
        any = false;
      } else {
        word += c;
        any = true;
      }
    }
    for (size_t i = 0; i < words.size(); ++i) {
      const std::string& w = words[i];
      if ((w == "-I" || w == "-isystem") && i + 1 < words.size()) {
        dirs.push_back(words[++i]);
      } else if (w.size() > 2 && w.rfind("-I", 0) == 0) {
        dirs.push_back(w.substr(2));
      }
    }
  }
  return dirs;
}

// Folders whose headers belong to the system, not the solution: never hashed, never listed.
// nvcc's own include folders (nvcc_include_dirs), remembered in the file `memo` (in the
// compile cache, named by nvcc's path and version) so that a warm compile does not ask nvcc
// again. An empty `memo`: always ask.
std::vector<std::string> remembered_include_dirs(const std::string& nvcc, const ChildLimits& limits,
                                                 bool* timed_out, const std::string& memo) {
  std::string text, ignored;
  if (!memo.empty() && read_file(memo, &text, &ignored)) {
    std::vector<std::string> dirs;
    for (const std::string& line : split_lines(text)) {
      if (!line.empty()) dirs.push_back(line);
    }
    if (!dirs.empty()) return dirs;
  }
  std::vector<std::string> dirs = nvcc_include_dirs(nvcc, limits, timed_out);
  if (!*timed_out && !dirs.empty() && !memo.empty()) {
    std::string lines;
    for (const std::string& d : dirs) lines += d + "\n";
    write_file_atomic(memo, lines, &ignored);
  }
  return dirs;
}

std::vector<std::string> system_dirs(const std::string& nvcc, const ChildLimits& limits,
                                     bool* timed_out, const std::string& memo) {
  std::vector<std::string> dirs;
  auto add = [&dirs](const std::string& d) {
    std::string r = realpath_of(d);
    if (!r.empty() && std::find(dirs.begin(), dirs.end(), r) == dirs.end()) dirs.push_back(r);
  };
  std::string nvcc_real = realpath_of(nvcc);
  for (const std::string& bin : {dir_of(nvcc), dir_of(nvcc_real.empty() ? nvcc : nvcc_real)}) {
    std::string root = dir_of(bin);
    add(root + "/include");
    glob_t g;
    if (glob((root + "/targets/*/include").c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) add(g.gl_pathv[i]);
    }
    globfree(&g);
  }
  // The folders nvcc itself passes with -I and -isystem (its nvcc.profile may put the toolkit's
  // headers anywhere, and a wrapper script on PATH hides where nvcc lives).
  for (const std::string& d : remembered_include_dirs(nvcc, limits, timed_out, memo)) add(d);
  for (const char* var : {"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH"}) {
    std::string list = env(var);
    size_t start = 0;
    while (start <= list.size()) {
      size_t colon = list.find(':', start);
      if (colon == std::string::npos) colon = list.size();
      if (colon > start) add(list.substr(start, colon - start));
      start = colon + 1;
    }
  }
  for (const char* d : {"/usr/include", "/usr/lib/gcc", "/usr/local/include"}) add(d);
  return dirs;
}

// The non-system headers named by nvcc -M, hashed. False + *problem (naming the file) when
// one cannot be hashed: not found, not a regular file, or too large.
bool hash_headers(const std::vector<std::string>& deps, const std::vector<std::string>& skip_files,
                  const std::vector<std::string>& sys_dirs, std::vector<HeaderHash>* out,
                  std::string* problem) {
  std::set<std::string> seen(skip_files.begin(), skip_files.end());
  for (const std::string& dep : deps) {
    std::string path = realpath_of(dep);
    if (path.empty()) {
      *problem = dep + ": a header the solution reads cannot be resolved: " + std::strerror(errno);
      return false;
    }
    if (!seen.insert(path).second) continue;
    if (std::any_of(sys_dirs.begin(), sys_dirs.end(),
                    [&path](const std::string& d) { return is_under(path, d); })) {
      continue;
    }
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      *problem = path + ": a header the solution reads must be a regular file";
      return false;
    }
    if (st.st_size > kMaxHeaderBytes) {
      *problem = path + ": a header the solution reads must be at most " +
                 std::to_string(kMaxHeaderBytes >> 20) + " MiB (it has " +
                 std::to_string(st.st_size) + " bytes)";
      return false;
    }
    std::string text, err;
    if (!read_file(path, &text, &err)) {
      *problem = err;
      return false;
    }
    if (text.size() > static_cast<size_t>(kMaxHeaderBytes)) {
      *problem = path + ": grew past " + std::to_string(kMaxHeaderBytes >> 20) + " MiB";
      return false;
    }
    out->push_back({path, sha256_hex(text)});
  }
  return true;
}

// An assembler for nvcc's host compiler to find first (gcc -B): a script that runs the real
// one with --MD, so that each of its runs lists the files it read (.include and .incbin as
// well as its input) in a file of its own in the script's folder. A folder made for this
// compile in the cache, or "" with *err.
std::string assembler_wrapper(const std::string& cache, std::string* err) {
  std::string dir = make_private_dir(cache, "as-", err);
  if (dir.empty()) return dir;
  const std::string script = "#!/bin/sh\nexec as --MD \"" + dir + "/run-$$.d\" \"$@\"\n";
  if (!write_file_atomic(dir + "/as", script, err) || chmod((dir + "/as").c_str(), 0755) != 0) {
    if (err->empty()) *err = dir + "/as: cannot make it executable";
    remove_tree(dir);
    return "";
  }
  return dir;
}

// The files the host assembler read besides its inputs (GNU as --MD lists .include and
// .incbin files; its inputs, temporary files the compiler has removed by now, are left out),
// hashed as headers are: bytes a solution embeds that way are in the record and the cache
// check, not only what the preprocessor read.
bool assembler_inputs(const std::string& as_dir, const std::vector<std::string>& skip,
                      const std::vector<std::string>& sys_dirs, std::vector<HeaderHash>* out,
                      std::string* problem) {
  std::vector<std::string> present;
  int runs = 0;
  DIR* d = opendir(as_dir.c_str());
  while (dirent* e = d ? readdir(d) : nullptr) {
    const std::string name = e->d_name;
    if (name.size() < 3 || name.compare(name.size() - 2, 2, ".d") != 0) continue;
    ++runs;
    std::string text, err;
    std::vector<std::string> deps;
    if (!read_file(as_dir + "/" + name, &text, &err) ||
        !parse_make_dependencies(text, &deps, &err)) {
      *problem = "the assembler's list of the files it read: " + err;
      closedir(d);
      return false;
    }
    for (const std::string& dep : deps) {
      if (access(dep.c_str(), F_OK) == 0) present.push_back(dep);
    }
  }
  if (d) closedir(d);
  if (runs == 0) {
    *problem = "the host assembler wrote no list of the files it read (" + as_dir + "/as unused)";
    return false;
  }
  return hash_headers(present, skip, sys_dirs, out, problem);
}

// The cache's record of those files ("<sha256>  <path>" lines) and its check: an object is
// reused only if every file its assembler read still has the bytes it had.
std::string assembler_inputs_text(const std::vector<HeaderHash>& files) {
  std::string t;
  for (const HeaderHash& h : files) t += h.sha256 + "  " + h.path + "\n";
  return t;
}

bool assembler_inputs_unchanged(const std::string& record, std::vector<HeaderHash>* files,
                                std::string* changed) {
  std::string text, err;
  if (!read_file(record, &text, &err)) {
    *changed = "its list of the files the assembler read is missing";
    return false;
  }
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() < 67 || line.compare(64, 2, "  ") != 0) {
      *changed = "its list of the files the assembler read is damaged";
      return false;
    }
    HeaderHash h{line.substr(66), line.substr(0, 64)};
    std::string bytes;
    if (!read_file(h.path, &bytes, &err) || sha256_hex(bytes) != h.sha256) {
      *changed = h.path + " (read by the assembler) changed since it was built";
      return false;
    }
    files->push_back(std::move(h));
  }
  return true;
}

bool read_kernels_file(const std::string& path, std::vector<KernelResources>* kernels) {
  std::string text, err;
  if (!read_file(path, &text, &err)) return false;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("version", 0) != 1 || !j.contains("kernels") ||
      !j["kernels"].is_array()) {
    return false;
  }
  kernels->clear();
  try {
    for (const nlohmann::json& e : j["kernels"]) {
      if (!e.is_object()) return false;
      KernelResources k;
      k.name = e.value("name", "");
      k.mangled_name = e.value("mangled_name", "");
      k.arch = e.value("arch", "");
      k.registers = e.value("registers", 0);
      k.spill_store_bytes = e.value("spill_store_bytes", int64_t{0});
      k.spill_load_bytes = e.value("spill_load_bytes", int64_t{0});
      k.shared_bytes = e.value("shared_bytes", int64_t{0});
      k.stack_bytes = e.value("stack_bytes", int64_t{0});
      k.barriers = e.value("barriers", 0);
      kernels->push_back(k);
    }
  } catch (const nlohmann::json::exception&) {
    return false;  // a damaged report: compile again
  }
  return true;
}

std::string join_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

std::string seconds_text(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

namespace {

// The parameters of a declaration `decl` ("... solve(const uint8_t* a, int M)"), each with
// its blanks collapsed and none around '*' or '&'; empty when it has no parenthesised list.
std::vector<std::string> parameters_of(const std::string& decl) {
  std::vector<std::string> params;
  // The list follows a name: "(no function named solve found)" has none.
  size_t open = decl.find('(');
  size_t before = open;
  while (before != std::string::npos && before > 0 && decl[before - 1] == ' ') --before;
  if (open == std::string::npos || before == 0 || !is_ident_char(decl[before - 1])) return params;
  std::string cur;
  int depth = 0;
  for (size_t i = open + 1; i < decl.size(); ++i) {
    const char c = decl[i];
    if (depth == 0 && (c == ',' || c == ')')) {
      params.push_back(cur);
      cur.clear();
      if (c == ')') break;
      continue;
    }
    depth += (c == '(' || c == '<') - (c == ')' || c == '>');
    cur += c;
  }
  // Blanks collapsed; none before a run of '*' or '&', one after it ("const T *x" is
  // "const T* x").
  for (std::string& p : params) {
    std::string t;
    bool blank = false;
    for (char c : p) {
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        blank = !t.empty();
        continue;
      }
      const bool mark = c == '*' || c == '&';
      const bool after_mark = !t.empty() && (t.back() == '*' || t.back() == '&');
      if (!mark && (blank || after_mark)) t += ' ';
      t += c;
      blank = false;
    }
    p = t;
  }
  if (params.size() == 1 && (params[0].empty() || params[0] == "void")) params.clear();
  return params;
}

}  // namespace

std::string signature_differences(const std::string& expected, const std::string& yours) {
  if (yours.find('(') == std::string::npos || yours[0] == '(') return "";  // no declaration found
  return parameter_differences(parameters_of(expected), parameters_of(yours));
}

std::string parameter_differences(const std::vector<std::string>& want,
                                  const std::vector<std::string>& got) {
  std::string out;
  if (want.size() != got.size()) {
    out += "  expected " + std::to_string(want.size()) + " parameters, yours has " +
           std::to_string(got.size()) + "\n";
  }
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    const std::string w = i < want.size() ? want[i] : "(none)";
    const std::string g = i < got.size() ? got[i] : "(none)";
    if (w != g) {
      out += "  parameter " + std::to_string(i + 1) + ": expected `" + w + "`, yours `" + g + "`\n";
    }
  }
  return out;
}

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
  return nvcc_release(out);
}

std::string nvcc_release(const std::string& version_text) {
  // "Cuda compilation tools, release 13.0, V13.0.88"
  for (const std::string& line : split_lines(version_text)) {
    size_t r = line.find("release ");
    if (r == std::string::npos) continue;
    size_t v = line.find(", V", r);
    if (v == std::string::npos) continue;
    size_t i = v + 3, end = i;
    while (end < line.size() && (is_digit(line[end]) || line[end] == '.')) ++end;
    if (end > i) return line.substr(i, end - i);
  }
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
  // sm_ then 2 or 3 digits, the first not 0, then optionally 'a' or 'f'.
  if (!starts_with(arch, "sm_")) return false;
  size_t i = 3, digits = 0;
  while (i < arch.size() && is_digit(arch[i])) ++i, ++digits;
  if (digits < 2 || digits > 3 || arch[3] == '0') return false;
  if (i < arch.size() && (arch[i] == 'a' || arch[i] == 'f')) ++i;
  return i == arch.size();
}

bool check_nvcc_flags(const std::vector<std::string>& flags, std::string* err) {
  auto refuse = [err](const std::string& flag, const std::string& why) {
    *err = "nvcc flag '" + flag + "' refused: " + why + "; " + kAllowedFlags;
    return false;
  };
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string& f = flags[i];
    if (f == "--use_fast_math" || f == "-Xptxas=-v" || f == "--expt-relaxed-constexpr" ||
        f == "--expt-extended-lambda" || f == "-std=c++17" || f == "-std=c++20") {
      continue;
    }
    if (f == "-Xptxas") {
      if (i + 1 < flags.size() && flags[i + 1] == "-v") {
        ++i;
        continue;
      }
      return refuse(f, "only '-Xptxas -v' is allowed");
    }
    if (starts_with(f, "-maxrregcount")) {
      int64_t n = 0;
      if (!starts_with(f, "-maxrregcount=") || !parse_count(f.substr(14), &n) || n < 1 || n > 255) {
        return refuse(f, "expected -maxrregcount=N with N a whole number from 1 to 255");
      }
      continue;
    }
    if (starts_with(f, "-D") || starts_with(f, "-U")) {
      std::string body = f.substr(2);
      size_t eq = body.find('=');
      std::string name = body.substr(0, eq);
      if (!is_identifier(name)) {
        return refuse(
            f, "the macro name must be a C identifier written right after " + f.substr(0, 2));
      }
      if (eq != std::string::npos) {
        if (f[1] == 'U') return refuse(f, "-U takes a name only");
        if (!is_macro_value(body.substr(eq + 1))) {
          return refuse(f, "a macro value may hold only letters, digits and _ . + -");
        }
      }
      continue;
    }
    return refuse(f, "not on the allow-list");
  }
  return true;
}

bool check_include_dirs(const std::vector<std::string>& dirs, std::string* err) {
  static const char kBad[] = ",;\"'`$\\|&<>*?";
  for (const std::string& d : dirs) {
    for (char c : d) {
      if (std::strchr(kBad, c) != nullptr || static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
        *err = "include directory '" + d +
               "' refused: its name holds a character nvcc or a shell would interpret "
               "(, ; quotes ` $ \\ | & < > * ? blanks or control characters)";
        return false;
      }
    }
    if (d.empty() || !is_directory(d)) {
      *err = "include directory '" + d + "' is not an existing directory";
      return false;
    }
  }
  return true;
}

bool parse_make_dependencies(const std::string& text, std::vector<std::string>* files,
                             std::string* err) {
  files->clear();
  bool after_colon = false;
  bool in_word = false;
  std::string word;
  auto flush = [&]() {
    if (in_word && after_colon) files->push_back(word);
    word.clear();
    in_word = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      char n = text[i + 1];
      if (n == '\n' || (n == '\r' && i + 2 < text.size() && text[i + 2] == '\n')) {
        flush();  // a continuation: the rule goes on on the next line
        i += n == '\n' ? 1 : 2;
        continue;
      }
      if (n == ' ' || n == '#') {
        word += n;
        in_word = true;
        ++i;
        continue;
      }
    }
    if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      word += '$';
      in_word = true;
      ++i;
      continue;
    }
    if (c == '\n') {
      flush();
      if (after_colon) return true;  // the first rule ended
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      flush();
      continue;
    }
    // The target list ends at a ':' that ends a word (followed by a blank, a line end or
    // the end of the text); a ':' inside a name ("a:b") stays part of it.
    if (c == ':' && !after_colon &&
        (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\t' || text[i + 1] == '\n' ||
         text[i + 1] == '\r' || text[i + 1] == '\\')) {
      word.clear();
      in_word = false;
      after_colon = true;
      continue;
    }
    word += c;
    in_word = true;
  }
  flush();
  if (!after_colon) {
    *err = "dependency listing without a rule (no 'target:' found)";
    return false;
  }
  return true;
}

std::vector<KernelResources> parse_ptxas_report(const std::string& log) {
  std::vector<KernelResources> kernels;
  // Index into `kernels` of the entry function being reported, or -1.
  long current = -1;
  // The next indented line belongs to the function named by "Function properties for".
  bool properties_follow = false;
  for (const std::string& line : split_lines(log)) {
    if (!is_ptxas_info(line)) {
      if (properties_follow && !line.empty() && is_blank(line[0])) {
        apply_property_items(line, &kernels[static_cast<size_t>(current)]);
      }
      properties_follow = false;
      continue;
    }
    properties_follow = false;
    std::string t = info_text(line);
    if (starts_with(t, "Compiling entry function")) {
      KernelResources k;
      k.mangled_name = quoted(t, 0);
      size_t for_at = t.find(" for ", t.find('\'', t.find('\'') + 1));
      if (for_at != std::string::npos) k.arch = quoted(t, for_at);
      k.name = demangle(k.mangled_name);
      kernels.push_back(k);
      current = static_cast<long>(kernels.size()) - 1;
    } else if (starts_with(t, "Function properties for ")) {
      std::string fn = t.substr(24);
      bool mine = current >= 0 && kernels[static_cast<size_t>(current)].mangled_name == fn;
      if (!mine) current = -1;  // a device function's block: not a kernel
      properties_follow = mine;
    } else if (starts_with(t, "Used ") && current >= 0) {
      apply_property_items(t, &kernels[static_cast<size_t>(current)]);
    }
  }
  return kernels;
}

std::string strip_ptxas_info(const std::string& log) {
  std::string out;
  bool properties_follow = false;
  size_t start = 0;
  while (start < log.size()) {
    size_t nl = log.find('\n', start);
    bool has_nl = nl != std::string::npos;
    if (!has_nl) nl = log.size();
    std::string line = log.substr(start, nl - start);
    start = nl + 1;
    bool drop = false;
    if (is_ptxas_info(line)) {
      drop = true;
      properties_follow = starts_with(info_text(line), "Function properties for ");
    } else {
      // The indented "N bytes stack frame, ..." line after "Function properties".
      drop = properties_follow && !line.empty() && is_blank(line[0]) &&
             line.find("bytes stack frame") != std::string::npos;
      properties_follow = false;
    }
    if (drop) continue;
    out += line;
    if (has_nl) out += '\n';
  }
  return out;
}

std::string format_kernel_resources(const std::vector<KernelResources>& kernels) {
  if (kernels.empty()) return "  (ptxas reported no kernels)\n";
  constexpr size_t kNameWidth = 44;
  // Keep the function's own name visible: shorten the anonymous namespace, then drop the
  // parameter list, then cut the middle.
  auto shorten = [](std::string s) {
    const std::string anon = "(anonymous namespace)::";
    for (size_t p; (p = s.find(anon)) != std::string::npos;) s.replace(p, anon.size(), "(anon)::");
    if (s.size() > kNameWidth && !s.empty() && s.back() == ')') {
      int depth = 0;
      for (size_t i = s.size(); i-- > 0;) {
        depth += s[i] == ')' ? 1 : s[i] == '(' ? -1 : 0;
        if (depth == 0) {
          s = s.substr(0, i) + "(...)";
          break;
        }
      }
    }
    if (s.size() <= kNameWidth) return s;
    size_t keep = kNameWidth - 3;
    return s.substr(0, keep - keep / 3) + "..." + s.substr(s.size() - keep / 3);
  };
  auto pad = [](const std::string& s, size_t w, bool right) {
    std::string fill(s.size() < w ? w - s.size() : 0, ' ');
    return right ? fill + s : s + fill;
  };
  std::ostringstream os;
  os << "  " << pad("kernel", kNameWidth, false) << pad("regs", 6, true)
     << pad("spill st/ld B", 16, true) << pad("smem B", 10, true) << pad("stack B", 9, true)
     << "\n";
  for (const KernelResources& k : kernels) {
    os << "  " << pad(shorten(k.name), kNameWidth, false)
       << pad(std::to_string(k.registers), 6, true)
       << pad(std::to_string(k.spill_store_bytes) + "/" + std::to_string(k.spill_load_bytes), 16,
              true)
       << pad(std::to_string(k.shared_bytes), 10, true)
       << pad(std::to_string(k.stack_bytes), 9, true) << "\n";
  }
  return os.str();
}

nlohmann::json kernel_resources_json(const std::vector<KernelResources>& kernels) {
  nlohmann::json out = nlohmann::json::array();
  for (const KernelResources& k : kernels) {
    out.push_back({{"name", k.name},
                   {"mangled_name", k.mangled_name},
                   {"arch", k.arch},
                   {"registers", k.registers},
                   {"spill_store_bytes", k.spill_store_bytes},
                   {"spill_load_bytes", k.spill_load_bytes},
                   {"shared_bytes", k.shared_bytes},
                   {"stack_bytes", k.stack_bytes},
                   {"barriers", k.barriers}});
  }
  return out;
}

std::string author_of(const std::string& source) {
  static const std::string kKey = "author:";
  size_t start = 0;
  while (start < source.size()) {
    size_t nl = source.find('\n', start);
    if (nl == std::string::npos) nl = source.size();
    for (size_t c = source.find("//", start); c != std::string::npos && c < nl;
         c = source.find("//", c + 1)) {
      size_t i = c + 2;
      while (i < nl && is_blank(source[i])) ++i;
      if (source.compare(i, kKey.size(), kKey) != 0 || i + kKey.size() > nl) continue;
      i += kKey.size();
      while (i < nl && is_blank(source[i])) ++i;
      size_t end = nl;
      while (end > i && (is_blank(source[end - 1]) || source[end - 1] == '\r')) --end;
      if (end > i) return source.substr(i, end - i);
    }
    start = nl + 1;
  }
  return "";
}

std::string prototype_header(const Spec& spec) {
  std::ostringstream os;
  os << "// Generated by fp4arena from " << spec.path << "; force-included into solutions.\n"
     << "#pragma once\n#include <cstdint>\n#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n"
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

namespace {

std::string bytes_text(uint64_t bytes) {
  if (bytes % (uint64_t(1) << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  return std::to_string(bytes >> 20) + " MiB";
}

// A note naming the resource limit a failed nvcc run (output `log`, exit status `status`) ran
// into, or "". A bomb's failure otherwise reads like a compiler crash.
std::string resource_limit_note(const std::string& log, int status, const CompileOptions& opts) {
  std::string note;
  if (opts.memory_limit_bytes > 0) {
    for (const char* sign : {"out of memory", "memory exhausted", "Cannot allocate memory",
                             "bad_alloc", "Out of memory"}) {
      if (log.find(sign) == std::string::npos) continue;
      note +=
          "fp4arena: a compiler step ran out of memory: nvcc and every program it starts "
          "may use at most " +
          bytes_text(opts.memory_limit_bytes) + " of address space\n";
      break;
    }
  }
  if (opts.file_size_limit_bytes > 0 &&
      (status == 128 + SIGXFSZ || log.find("File size limit exceeded") != std::string::npos ||
       log.find("signal 25") != std::string::npos)) {
    note +=
        "fp4arena: a compiler step was stopped by the file size limit: no file it writes "
        "may exceed " +
        bytes_text(opts.file_size_limit_bytes) + "\n";
  }
  return note;
}

}  // namespace

namespace {

// The cache folder `cache` made if missing, and trusted only when nobody else can write to
// it: a folder of our own, 0700. "" when it is, else what is wrong.
std::string check_cache_dir(const std::string& cache) {
  std::string err;
  if (!make_dirs(cache, &err)) return "--cache-dir: " + err;
  struct stat st;
  if (stat(cache.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return "--cache-dir: " + cache + " is not a folder";
  }
  if (st.st_uid != geteuid()) {
    return "--cache-dir: " + cache +
           " belongs to another user; the compile cache must be a folder of your own";
  }
  if ((st.st_mode & 077) != 0 && chmod(cache.c_str(), 0700) != 0) {
    return "--cache-dir: " + cache + " is open to other users and cannot be made 0700";
  }
  return "";
}

// One compile of a solution, step by step. Each step returns std::nullopt to go on, or the
// value compile_solution returns (true: *result says what happened; false: *err).
class SolutionCompile {
 public:
  SolutionCompile(const Spec& spec, const std::string& source_path, const CompileOptions& opts,
                  CompileResult* result, std::string* err)
      : spec_(spec), source_path_(source_path), opts_(opts), result_(result), err_(err) {}

  bool run() {
    for (auto step : {&SolutionCompile::check_options, &SolutionCompile::prepare,
                      &SolutionCompile::scan_dependencies, &SolutionCompile::from_cache,
                      &SolutionCompile::compile, &SolutionCompile::store}) {
      if (std::optional<bool> done = (this->*step)()) return *done;
    }
    return true;
  }

 private:
  using Step = std::optional<bool>;

  bool usage(const std::string& why) {
    result_->usage_error = true;
    *err_ = why;
    return false;
  }
  double seconds_left() const { return opts_.timeout_seconds - seconds_since(t0_); }
  // What nvcc and every program it starts may use: the time left, memory, file sizes.
  ChildLimits limits() const {
    ChildLimits l;
    l.timeout_seconds = seconds_left();
    l.address_space_bytes = opts_.memory_limit_bytes;
    l.file_size_bytes = opts_.file_size_limit_bytes;
    return l;
  }
  // A step that ran past the time limit: `what` names it.
  Step timed_out(const std::string& diagnostics, const std::string& what) {
    result_->timed_out = true;
    result_->seconds = seconds_since(t0_);
    result_->diagnostics = diagnostics + "fp4arena: " + what +
                           " ran past the compile time limit of " +
                           seconds_text(opts_.timeout_seconds) + " s\n";
    return true;
  }

  Step check_options() {
    if (!valid_arch(opts_.arch)) {
      return usage("--arch: expected sm_XY, sm_XYa or sm_XYf (e.g. sm_90a), got '" + opts_.arch +
                   "'");
    }
    if (!check_nvcc_flags(opts_.extra_flags, err_)) return usage(*err_);
    if (!check_include_dirs(opts_.include_dirs, err_)) return usage(*err_);
    if (!(opts_.timeout_seconds > 0)) return usage("the compile time limit must be positive");
    result_->nvcc_flags = opts_.extra_flags;
    for (const std::string& d : opts_.include_dirs) result_->include_dirs.push_back(realpath_of(d));
    // A harmless name may still lead (through a link) to a harmful one: check what nvcc gets.
    if (!check_include_dirs(result_->include_dirs, err_)) return usage(*err_);
    return std::nullopt;
  }

  // The source, nvcc, the cache folder, the generated files, the flags.
  Step prepare() {
    t0_ = std::chrono::steady_clock::now();
    if (!read_file(source_path_, &source_, err_)) return false;
    result_->source_sha256 = sha256_hex(source_);
    nvcc_ = opts_.nvcc.empty() ? find_nvcc() : opts_.nvcc;
    if (nvcc_.empty() || !is_executable(nvcc_)) {
      *err_ =
          "nvcc not found: install the CUDA Toolkit, put its bin/ on PATH, or set FP4ARENA_NVCC";
      return false;
    }
    run_capture({nvcc_, "--version"}, &version_text_);
    result_->nvcc_version = nvcc_release(version_text_);
    cache_ = opts_.cache_dir.empty() ? default_cache_dir() : opts_.cache_dir;
    const std::string bad_cache = check_cache_dir(cache_);
    if (!bad_cache.empty()) return usage(bad_cache);
    // The generated files are named by their own content: the dependency scan needs the
    // prototype on disk before the cache key (which the scan decides) is known.
    proto_ = prototype_header(spec_);
    shim_ = call_shim(spec_);
    proto_path_ = cache_ + "/proto-" + sha256_hex(proto_).substr(0, 24) + ".h";
    shim_path_ = cache_ + "/shim-" + sha256_hex(shim_).substr(0, 24) + ".cu";
    if (!write_file_atomic(proto_path_, proto_, err_) ||
        !write_file_atomic(shim_path_, shim_, err_)) {
      return false;
    }
    set_flags();
    return std::nullopt;
  }

  // What reads the source (scan and compile alike) and what only links.
  void set_flags() {
    // The solution's -std, where it gives one, replaces the default (nvcc takes one).
    const bool own_std = std::any_of(opts_.extra_flags.begin(), opts_.extra_flags.end(),
                                     [](const std::string& f) { return starts_with(f, "-std="); });
    flags_ = {"-O3", "-lineinfo", "-Xcompiler", "-fPIC"};
    if (!own_std) flags_.insert(flags_.begin(), "-std=c++17");
    for (const std::string& f : gencode_flags(opts_.arch)) flags_.push_back(f);
    for (const std::string& d : result_->include_dirs) {
      flags_.push_back("-I");
      flags_.push_back(d);
    }
    flags_.insert(flags_.end(), opts_.extra_flags.begin(), opts_.extra_flags.end());
    flags_.push_back("-Xptxas");
    flags_.push_back("-v");
    link_flags_ = {"--shared", "-Xlinker", "--no-undefined"};
    const std::string stubs = dir_of(dir_of(nvcc_)) + "/lib64/stubs";
    if (access((stubs + "/libcuda.so").c_str(), R_OK) == 0) {
      link_flags_.push_back("-L" + stubs);
      link_flags_.push_back("-lcuda");
    }
  }

  // nvcc -M lists every file the preprocessor reads, host and device passes; each outside
  // the system folders is hashed into result_->headers.
  Step scan_dependencies() {
    const std::string deps_path = cache_ + "/deps-" + std::to_string(getpid()) + ".d";
    std::vector<std::string> scan = {nvcc_};
    scan.insert(scan.end(), flags_.begin(), flags_.end());
    for (const std::string& a :
         {std::string("-include"), proto_path_, std::string("-M"), std::string("-MT"),
          std::string("fp4arena_deps"), std::string("-MF"), deps_path, source_path_}) {
      scan.push_back(a);
    }
    std::string scan_log, deps_text;
    bool timed_out = false;
    const int status = run_capture_limited(scan, limits(), &scan_log, &timed_out);
    const bool have_deps = status == 0 && read_file(deps_path, &deps_text, err_);
    unlink(deps_path.c_str());
    result_->command = join_command(scan);
    result_->seconds = seconds_since(t0_);
    if (timed_out) return this->timed_out(rewrite(scan_log), "the dependency scan (nvcc -M)");
    if (status == -1 || status == 127) {
      *err_ = "could not run nvcc (" + nvcc_ + "): " + scan_log;
      return false;
    }
    if (status != 0) {
      result_->diagnostics = rewrite(scan_log) + resource_limit_note(scan_log, status, opts_);
      return true;
    }
    if (!have_deps) return false;
    return hash_dependencies(deps_text);
  }

  Step hash_dependencies(const std::string& deps_text) {
    std::vector<std::string> deps;
    if (!parse_make_dependencies(deps_text, &deps, err_)) {
      *err_ = "nvcc -M: " + *err_;
      return false;
    }
    skip_ = {realpath_of(source_path_), realpath_of(proto_path_)};
    bool dryrun_timed_out = false;
    const std::string memo =
        version_text_.empty()
            ? ""
            : cache_ + "/nvcc-includes-" +
                  sha256_hex(nvcc_ + "\n" + realpath_of(nvcc_) + "\n" + version_text_)
                      .substr(0, 24) +
                  ".txt";
    sys_dirs_ = system_dirs(nvcc_, limits(), &dryrun_timed_out, memo);
    if (dryrun_timed_out) return timed_out("", "nvcc --dryrun (asked for its include folders)");
    std::string problem;
    if (!hash_headers(deps, skip_, sys_dirs_, &result_->headers, &problem)) {
      result_->diagnostics = "fp4arena: " + problem + "\n";
      return true;
    }
    set_cache_names();
    return std::nullopt;
  }

  // The key: every byte that decides the object (sources, generated files, nvcc's version,
  // flags, headers); the cache's file names follow from it.
  void set_cache_names() {
    Sha256 key;
    for (const std::string& part : {source_, proto_, shim_, version_text_}) {
      key.update(part);
      key.update("\0", 1);
    }
    for (const auto* list : {&flags_, &link_flags_}) {
      for (const std::string& f : *list) key.update(f + "\n");
    }
    for (const HeaderHash& h : result_->headers) key.update(h.path + "\n" + h.sha256 + "\n");
    const std::string base = cache_ + "/" + key.hex_digest().substr(0, 24);
    so_ = base + ".so";
    kernels_path_ = base + ".kernels.json";
    as_record_ = base + ".as-inputs";
    so_hash_path_ = base + ".so.sha256";
    // The compile itself writes to a temporary name; the recorded command names the object.
    tmp_so_ = so_ + ".tmp." + std::to_string(getpid());
    result_->so_path = so_;
    result_->command = join_command(compile_argv(so_));
  }

  std::vector<std::string> compile_argv(const std::string& out) const {
    std::vector<std::string> argv = {nvcc_};
    argv.insert(argv.end(), flags_.begin(), flags_.end());
    argv.insert(argv.end(), link_flags_.begin(), link_flags_.end());
    if (out == tmp_so_ && !as_dir_.empty()) {
      argv.push_back("-Xcompiler");
      argv.push_back("-B" + as_dir_ + "/");
    }
    for (const std::string& a :
         {std::string("-include"), proto_path_, std::string("-o"), out, source_path_, shim_path_}) {
      argv.push_back(a);
    }
    return argv;
  }

  // A cached object is used only when it matches the hash written when it was built (an
  // object planted or changed under a cache key is never loaded) and the files its assembler
  // read are unchanged.
  Step from_cache() {
    if (!opts_.use_cache || access(so_.c_str(), R_OK) != 0 ||
        !read_kernels_file(kernels_path_, &result_->kernels)) {
      return std::nullopt;
    }
    std::string object, recorded, ignored, changed;
    std::vector<HeaderHash> embedded;
    const bool intact = read_file(so_, &object, &ignored) &&
                        read_file(so_hash_path_, &recorded, &ignored) &&
                        recorded.substr(0, 64) == sha256_hex(object);
    if (intact && assembler_inputs_unchanged(as_record_, &embedded, &changed)) {
      result_->headers.insert(result_->headers.end(), embedded.begin(), embedded.end());
      result_->ok = true;
      result_->cached = true;
      result_->seconds = seconds_since(t0_);
      return true;
    }
    rebuilt_note_ = "fp4arena: the cached object " + so_ + " " +
                    (intact ? "is stale: " + changed
                            : std::string("does not match the hash recorded when it was built")) +
                    "; rebuilt\n";
    unlink(so_.c_str());
    return std::nullopt;
  }

  Step compile() {
    as_dir_ = assembler_wrapper(cache_, err_);
    if (as_dir_.empty()) return false;
    std::string log;
    bool timed_out = false;
    const double left = seconds_left();
    const int status =
        left > 0 ? run_capture_limited(compile_argv(tmp_so_), limits(), &log, &timed_out) : 137;
    if (left <= 0) timed_out = true;
    result_->seconds = seconds_since(t0_);
    result_->kernels = parse_ptxas_report(log);
    result_->diagnostics = rebuilt_note_ + rewrite(strip_ptxas_info(log));
    if (timed_out || status != 0) {
      remove_tree(as_dir_);
      unlink(tmp_so_.c_str());
    }
    if (timed_out) {
      result_->timed_out = true;
      result_->diagnostics += "fp4arena: nvcc ran past the compile time limit of " +
                              seconds_text(opts_.timeout_seconds) + " s\n";
      return true;
    }
    if (status == 0) return std::nullopt;
    result_->diagnostics += resource_limit_note(log, status, opts_);
    if (mentions_signature_problem(log, spec_.function)) {
      result_->diagnostics +=
          "\nfp4arena: " + spec_.function +
          "() must be defined with exactly this signature:\n  expected (" + spec_.path +
          "):\n    " + c_prototype(spec_) + "\n  yours:\n    " +
          find_user_signature(source_, spec_.function, source_path_) + "\n" +
          signature_differences(c_prototype(spec_),
                                find_user_signature(source_, spec_.function, source_path_));
    }
    if (status == -1 || status == 127) {
      *err_ = "could not run nvcc (" + nvcc_ + "): " + log;
      return false;
    }
    return true;
  }

  // The files the assembler read (.incbin) join the headers; the report, the assembler's
  // inputs and the object's hash are written before the object is moved into place, so an
  // object in the cache always has all three.
  Step store() {
    std::vector<HeaderHash> embedded;
    std::string problem;
    std::vector<std::string> known = skip_;
    for (const HeaderHash& h : result_->headers) known.push_back(h.path);
    const bool listed = assembler_inputs(as_dir_, known, sys_dirs_, &embedded, &problem);
    remove_tree(as_dir_);
    if (!listed) {
      unlink(tmp_so_.c_str());
      result_->diagnostics += "fp4arena: " + problem + "\n";
      return true;
    }
    result_->headers.insert(result_->headers.end(), embedded.begin(), embedded.end());
    const nlohmann::json report = {{"version", 1},
                                   {"kernels", kernel_resources_json(result_->kernels)}};
    std::string object;
    if (!write_file_atomic(kernels_path_, report.dump(2) + "\n", err_) ||
        !write_file_atomic(as_record_, assembler_inputs_text(embedded), err_) ||
        !read_file(tmp_so_, &object, err_) ||
        !write_file_atomic(so_hash_path_, sha256_hex(object) + "\n", err_)) {
      unlink(tmp_so_.c_str());
      return false;
    }
    if (rename(tmp_so_.c_str(), so_.c_str()) != 0) {
      *err_ = so_ + ": cannot move the compiled object into the cache";
      unlink(tmp_so_.c_str());
      return false;
    }
    result_->ok = true;
    return true;
  }

  std::string rewrite(const std::string& log) const {
    return rewrite_diagnostics(log, proto_path_, shim_path_);
  }

  const Spec& spec_;
  const std::string& source_path_;
  const CompileOptions& opts_;
  CompileResult* result_;
  std::string* err_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::string source_, nvcc_, version_text_, cache_, proto_, shim_, proto_path_, shim_path_;
  std::vector<std::string> flags_, link_flags_, skip_, sys_dirs_;
  std::string so_, tmp_so_, kernels_path_, as_record_, so_hash_path_, as_dir_, rebuilt_note_;
};

}  // namespace

bool compile_solution(const Spec& spec, const std::string& source_path, const CompileOptions& opts,
                      CompileResult* result, std::string* err) {
  *result = CompileResult();
  return SolutionCompile(spec, source_path, opts, result, err).run();
}

}  // namespace fp4arena

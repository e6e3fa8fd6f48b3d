#include "harness/tools.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>

#include "harness/compile.h"
#include "harness/process.h"
#include "harness/text.h"

namespace fp4arena {
namespace {

// Splits one CSV line with double-quoted fields.
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

double to_number(const std::string& s) {
  std::string t;
  for (char c : s) {
    if (c != ',' && c != ' ') t += c;
  }
  if (t.empty() || t == "n/a") return -1;
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  return end && *end == '\0' ? v : -1;
}

}  // namespace

std::string find_tool(const std::string& name) {
  std::vector<std::string> candidates;
  std::stringstream path(std::getenv("PATH") ? std::getenv("PATH") : "");
  std::string dir;
  while (std::getline(path, dir, ':')) candidates.push_back(dir + "/" + name);
  std::string nvcc = find_nvcc();
  if (!nvcc.empty()) {
    candidates.push_back(dir_of(nvcc) + "/" + name);
    candidates.push_back(dir_of(dir_of(nvcc)) + "/" + name + "/" + name);
  }
  for (const char* root : {static_cast<const char*>(std::getenv("CUDA_HOME")), "/usr/local/cuda"}) {
    if (!root) continue;
    candidates.push_back(std::string(root) + "/bin/" + name);
    candidates.push_back(std::string(root) + "/" + name + "/" + name);
  }
  if (DIR* d = opendir("/opt/nvidia/nsight-compute")) {
    std::vector<std::string> versions;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') versions.push_back(e->d_name);
    }
    closedir(d);
    std::sort(versions.rbegin(), versions.rend());  // newest first
    for (const std::string& v : versions) {
      candidates.push_back("/opt/nvidia/nsight-compute/" + v + "/" + name);
    }
  }
  for (const std::string& c : candidates) {
    if (is_executable(c)) return c;
  }
  return "";
}

SanitizerSummary parse_sanitizer_log(const std::string& log, size_t max_findings) {
  SanitizerSummary s;
  static const std::regex kSummary(R"(ERROR SUMMARY: (\d+) error)");
  // racecheck ends with its own summary line instead: "... hazards displayed (E errors, ...".
  static const std::regex kRaceSummary(R"(RACECHECK SUMMARY: .*\((\d+) errors?,)");
  std::istringstream in(log);
  std::string line;
  const std::string prefix = "========= ";
  bool want_location = false;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, kSummary)) {
      s.found_summary = true;
      s.errors += std::stoi(m[1]);
      want_location = false;
      continue;
    }
    if (std::regex_search(line, m, kRaceSummary)) {
      if (!s.found_summary) s.errors += std::stoi(m[1]);
      s.found_summary = true;
      want_location = false;
      continue;
    }
    if (line.rfind(prefix, 0) != 0) continue;
    std::string body = line.substr(prefix.size());
    if (body.empty()) continue;
    if (body[0] == ' ') {
      // Detail lines; keep the first "at ..." location of each finding.
      size_t first = body.find_first_not_of(' ');
      if (want_location && body.compare(first, 3, "at ") == 0 && !s.findings.empty()) {
        s.findings.back() += " | " + body.substr(first);
        want_location = false;
      }
      continue;
    }
    if (body.rfind("COMPUTE-SANITIZER", 0) == 0 || body.rfind("Program hit", 0) == 0 ||
        body.rfind("Target application returned", 0) == 0) {
      continue;
    }
    if (s.findings.size() < max_findings) {
      s.findings.push_back(body);
      want_location = true;
    }
  }
  return s;
}

namespace {

// Where ncu's raw CSV keeps each figure a KernelProfile needs (-1: not reported).
struct NcuColumns {
  int name = -1, dur = -1, sm = -1, issue = -1, l2 = -1, dram = -1, conf = -1, conf_ld = -1,
      conf_st = -1;
  std::vector<int> tensor;
  std::vector<std::pair<int, std::string>> pipes, stalls;  // column, pipe or stall reason
};

NcuColumns ncu_columns(const std::vector<std::string>& header) {
  auto col = [&](const std::regex& re) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (std::regex_match(header[i], re)) return static_cast<int>(i);
    }
    return -1;
  };
  NcuColumns c;
  c.name = col(std::regex("Kernel Name"));
  c.dur = col(std::regex(R"(gpu__time_duration\.sum)"));
  c.sm = col(std::regex(R"(sm__throughput\.avg\.pct_of_peak_sustained_elapsed)"));
  c.issue = col(std::regex(R"(sm__issue_active\.avg\.pct_of_peak_sustained_elapsed)"));
  c.l2 = col(std::regex(R"(lts__throughput\.avg\.pct_of_peak_sustained_elapsed)"));
  // Named dram__throughput or gpu__dram_throughput depending on the ncu version.
  c.dram = col(std::regex(R"((gpu__)?dram_{1,2}throughput\.avg\.pct_of_peak_sustained_elapsed)"));
  c.conf = col(std::regex(R"(l1tex__data_bank_conflicts_pipe_lsu_mem_shared\.sum)"));
  c.conf_ld = col(std::regex(R"(l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld\.sum)"));
  c.conf_st = col(std::regex(R"(l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st\.sum)"));
  static const std::regex kTensor(
      R"(sm__(pipe_tensor_op_\w+_cycles_active|inst_executed_pipe_tensor_op_\w+|pipe_tensor_\w*cycles_active)\.avg\.pct_of_peak_sustained_(active|elapsed))");
  static const std::regex kPipe(
      R"(sm__inst_executed_pipe_([a-z0-9]+)\.avg\.pct_of_peak_sustained_active)");
  static const std::regex kStall(
      R"(smsp__average_warps?_issue_stalled_([a-z_]+?)_per_issue_active\.ratio)");
  for (size_t i = 0; i < header.size(); ++i) {
    std::smatch m;
    if (std::regex_match(header[i], kTensor)) {
      c.tensor.push_back(static_cast<int>(i));
    } else if (std::regex_match(header[i], m, kPipe)) {
      c.pipes.emplace_back(static_cast<int>(i), m[1].str());
    }
  }
  for (size_t i = 0; i < header.size(); ++i) {
    std::smatch m;
    if (std::regex_match(header[i], m, kStall) && m[1].str() != "selected") {
      c.stalls.emplace_back(static_cast<int>(i), m[1].str());
    }
  }
  return c;
}

// One kernel's row of figures `f` (with the header's `units`) as a KernelProfile.
KernelProfile ncu_kernel(const NcuColumns& c, const std::vector<std::string>& f,
                         const std::vector<std::string>& units) {
  auto at = [&](int col) { return col >= 0 ? to_number(f[col]) : -1.0; };
  KernelProfile k;
  k.name = c.name >= 0 ? f[c.name] : "?";
  k.duration_us = at(c.dur);
  if (k.duration_us >= 0 && c.dur < static_cast<int>(units.size())) {
    const std::string& u = units[c.dur];
    if (u == "nsecond" || u == "ns") k.duration_us /= 1000;
    if (u == "msecond" || u == "ms") k.duration_us *= 1000;
    if (u == "second" || u == "s") k.duration_us *= 1e6;
  }
  k.sm_pct = at(c.sm);
  k.issue_pct = at(c.issue);
  k.l2_pct = at(c.l2);
  k.dram_pct = at(c.dram);
  for (int col : c.tensor) k.tensor_pct = std::max(k.tensor_pct, at(col));
  for (const auto& [col, pipe] : c.pipes) {
    if (at(col) > k.busiest_pipe_pct) {
      k.busiest_pipe_pct = at(col);
      k.busiest_pipe = pipe;
    }
  }
  for (const auto& [col, reason] : c.stalls) {
    if (at(col) > 0) k.top_stalls.emplace_back(reason, at(col));
  }
  std::sort(k.top_stalls.begin(), k.top_stalls.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  if (k.top_stalls.size() > 2) k.top_stalls.resize(2);
  if (c.conf >= 0) {
    k.bank_conflicts = at(c.conf);
  } else if (c.conf_ld >= 0 || c.conf_st >= 0) {
    k.bank_conflicts = std::max(0.0, at(c.conf_ld)) + std::max(0.0, at(c.conf_st));
  }
  return k;
}

}  // namespace

bool parse_ncu_raw_csv(const std::string& text, std::vector<KernelProfile>* out, std::string* err) {
  out->clear();
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    if (line.rfind("\"ID\"", 0) == 0) {
      header = split_csv(line);
      break;
    }
  }
  if (header.empty()) {
    *err = "no CSV header (\"ID\",...) in ncu's output";
    return false;
  }
  std::getline(in, line);
  const std::vector<std::string> units = split_csv(line);
  const NcuColumns columns = ncu_columns(header);
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '"') continue;
    std::vector<std::string> f = split_csv(line);
    if (f.size() != header.size()) continue;
    out->push_back(ncu_kernel(columns, f, units));
  }
  if (out->empty()) {
    *err = "ncu reported no kernel";
    return false;
  }
  return true;
}

}  // namespace fp4arena

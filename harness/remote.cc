#include "harness/remote.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "harness/judge.h"
#include "harness/process.h"
#include "harness/record.h"
#include "harness/text.h"

namespace fp4arena {
namespace {

constexpr int kSshFailed = 255;              // what ssh exits with when it could not connect
constexpr size_t kMaxHeaderFiles = 64;       // headers sent beside the solution, at most
constexpr size_t kMaxBundleBytes = 8 << 20;  // and their bytes with the solution's

// Text that goes into the remote shell's command line between single quotes: letters,
// digits and `@ . _ : / = + , -`, not starting with '-' (an option to ssh or the judge).
bool safe(const std::string& s) {
  if (s.empty() || s[0] == '-') return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr("@._:/=+,-", c)) return false;
  }
  return true;
}

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

// Runs `ssh HOST COMMAND` with stdin from `in` and stdout into `out` ("": inherited, and
// /dev/null for stdin); stderr is inherited. The exit status, 255 where ssh failed.
int ssh(const RemoteOptions& o, const std::string& command, const std::string& in = "",
        const std::string& out = "") {
  const pid_t pid = fork();
  if (pid < 0) return kSshFailed;
  if (pid == 0) {
    const int ifd = open(in.empty() ? "/dev/null" : in.c_str(), O_RDONLY);
    if (ifd < 0 || dup2(ifd, 0) < 0) _exit(kSshFailed);
    if (!out.empty()) {
      const int ofd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (ofd < 0 || dup2(ofd, 1) < 0) _exit(kSshFailed);
    }
    execlp(o.ssh.c_str(), o.ssh.c_str(), "--", o.host.c_str(), command.c_str(), nullptr);
    dprintf(2, "cannot run %s: %s\n", o.ssh.c_str(), std::strerror(errno));
    _exit(kSshFailed);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : kSshFailed;
}

// The solution and the headers in its folder (*.h, *.cuh, *.hpp, *.inl): what a solution may
// include by a relative name. False with *err when there are too many or too much.
bool bundle(const std::string& solution, std::vector<std::string>* files, std::string* err) {
  files->push_back(solution);
  const std::string dir = dir_of(solution);
  DIR* d = opendir(dir.c_str());
  if (!d) {
    *err = "cannot read the solution's folder " + dir;
    return false;
  }
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    const size_t dot = name.rfind('.');
    const std::string ext = dot == std::string::npos ? "" : name.substr(dot);
    if (ext == ".h" || ext == ".cuh" || ext == ".hpp" || ext == ".inl") {
      files->push_back(dir + "/" + name);
    }
  }
  closedir(d);
  size_t bytes = 0;
  for (const std::string& f : *files) {
    struct stat st;
    if (stat(f.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      *err = f + ": cannot read it";
      return false;
    }
    bytes += static_cast<size_t>(st.st_size);
  }
  if (files->size() > kMaxHeaderFiles + 1 || bytes > kMaxBundleBytes) {
    *err = "the solution and the headers beside it are " + std::to_string(files->size()) +
           " files of " + std::to_string(bytes) + " bytes; at most " +
           std::to_string(kMaxHeaderFiles) + " headers and " +
           std::to_string(kMaxBundleBytes >> 20) + " MiB go over";
    return false;
  }
  return true;
}

// Every option that goes into the remote command line, checked; "" when all are safe.
std::string unsafe_option(const RemoteOptions& o) {
  if (!safe(o.host)) return "--remote: '" + o.host + "'";
  for (const std::string* s : {&o.dir, &o.judge, &o.challenge_dir}) {
    if (!safe(*s)) return "'" + *s + "'";
  }
  for (const std::string& a : o.judge_args) {
    if (!safe(a) && !(a.size() > 2 && a[0] == '-' && a[1] == '-' && safe(a.substr(2)))) {
      return "'" + a + "'";
    }
  }
  return "";
}

// The submit's record, fetched into a local file, saying where it ran, with the local path of
// the solution; then written where a local submit would have put it.
int bring_record(const RemoteOptions& o, const std::string& remote_record, std::ostream& log) {
  std::string err;
  const std::string tmp = make_private_dir("/tmp", "fp4arena-remote-", &err);
  if (tmp.empty()) {
    log << "fp4arena: --remote: " << err << "\n";
    return int(ExitCode::kInternal);
  }
  std::string text;
  const bool fetched = ssh(o, "cat " + quoted(remote_record), "", tmp + "/record.json") == 0 &&
                       read_file(tmp + "/record.json", &text, &err);
  remove_tree(tmp);
  nlohmann::json record = nlohmann::json::parse(text, nullptr, false);
  if (!fetched || !record.is_object() || !record.contains("device") ||
      !record.contains("solution")) {
    log << "fp4arena: --remote: could not fetch the record " << remote_record << " from " << o.host
        << "\n";
    return int(ExitCode::kInternal);
  }
  record["remote"] = {{"host", o.host}, {"dir", o.dir}};
  record["solution"]["path"] = o.solution_path;
  std::string path = o.output_path;
  if (path.empty()) {
    path = record_path(o.results_dir, record["challenge"].value("name", "unknown"),
                       record["device"].value("name", ""), o.solution_path,
                       record["solution"].value("sha256", std::string(64, '0')));
  }
  if (!make_dirs(path.substr(0, path.rfind('/') + 1), &err) ||
      !write_file_atomic(path, record.dump(2) + "\n", &err)) {
    log << "fp4arena: --remote: " << err << "\n";
    return int(ExitCode::kInternal);
  }
  log << "record   " << path << " (judged on " << o.host << ")\n";
  return 0;
}

}  // namespace

int run_remote(const RemoteOptions& o, std::ostream& log) {
  const std::string bad = unsafe_option(o);
  if (!bad.empty()) {
    log << "fp4arena: --remote: " << bad
        << " cannot go into the remote command line: use letters, digits and @ . _ : / = + , -"
        << "\n";
    return int(ExitCode::kUsage);
  }
  std::vector<std::string> files;
  std::string err;
  if (!bundle(o.solution_path, &files, &err)) {
    log << "fp4arena: --remote: " << err << "\n";
    return int(ExitCode::kUsage);
  }
  unsigned long long r = 0;
  if (getrandom(&r, sizeof r, 0) != sizeof r) r = static_cast<unsigned long long>(getpid());
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", r);
  const std::string place = ".fp4arena-remote/" + std::string(id);
  const std::string remote = o.dir + "/" + place;
  for (const std::string& f : files) {
    const std::string command =
        "mkdir -p " + quoted(remote) + " && cat > " + quoted(remote + "/" + base_name(f));
    if (!safe(base_name(f)) || ssh(o, command, f) != 0) {
      log << "fp4arena: --remote: could not send " << f << " to " << o.host << ":" << remote
          << "\n";
      ssh(o, "rm -rf " + quoted(remote));
      return int(ExitCode::kInternal);
    }
  }
  std::string command = "cd " + quoted(o.dir) + " && " + quoted(o.judge) + " " +
                        quoted(o.challenge_dir) + " --solution " +
                        quoted(place + "/" + base_name(o.solution_path)) + " --action " +
                        quoted(o.action);
  for (const std::string& a : o.judge_args) command += " " + quoted(a);
  if (o.action == "submit") command += " --output " + quoted(place + "/record.json");
  log << "remote   " << o.host << ":" << o.dir << " (" << files.size() << " file"
      << (files.size() == 1 ? "" : "s") << " sent)\n";
  int rc = ssh(o, command);
  if (rc == kSshFailed) {
    log << "fp4arena: --remote: ssh to " << o.host << " failed (exit 255)\n";
    rc = int(ExitCode::kInternal);
  } else if (o.action == "submit" && (rc == 0 || rc == int(ExitCode::kFailed))) {
    const int brought = bring_record(o, remote + "/record.json", log);
    if (brought != 0) rc = brought;
  }
  ssh(o, "rm -rf " + quoted(remote));
  return rc;
}

}  // namespace fp4arena

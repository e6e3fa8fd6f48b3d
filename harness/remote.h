// --remote HOST: a GPU action judged on another machine reached by ssh, where the project is
// checked out. The solution (and the headers beside it) go over, the judge runs there with
// its output shown here, a submit's record comes back into the local results folder, and the
// files sent are removed.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace fp4arena {

struct RemoteOptions {
  std::string host;              ///< what ssh is given: HOST or USER@HOST
  std::string dir = "fp4arena";  ///< the project's folder there (relative: to the home)
  std::string judge = "scripts/run_challenge";  ///< the judge there, relative to `dir`
  std::string ssh = "ssh";                      ///< the ssh program ($FP4ARENA_SSH)
  std::string challenge_dir;                    ///< as the remote judge is to see it (under `dir`)
  std::string solution_path;                    ///< here
  std::string action;                           ///< test, run, submit, sanitize, profile or sweep
  std::vector<std::string> judge_args;          ///< the other options, passed on as they are
  std::string results_dir = "results";          ///< submit: where the record comes back to, here
  std::string output_path;                      ///< submit: the record's path here instead
};

/// Judges as `options` say on the remote machine; returns the remote judge's exit code (an
/// ExitCode), or kUsage/kInternal with a message on `log` when an option cannot be passed on
/// safely (HOST, DIR and every argument must be made of letters, digits and `@ . _ : / = + , -`,
/// not starting with '-') or ssh fails.
int run_remote(const RemoteOptions& options, std::ostream& log);

}  // namespace fp4arena

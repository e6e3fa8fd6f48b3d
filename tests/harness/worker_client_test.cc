// A worker that misbehaves at its first request, after a proper hello: whatever it does
// (garbage, an absurd length, a non-object, a wrong type, a fatal word, half a header, closing
// its channel, stopping, crashing, exiting) the judge's call returns in time with the outcome
// that names it, the worker is gone, and the judge goes on. Stand-in workers are python3
// scripts; no GPU is needed.
#include "harness/worker_client.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <string>

#include "harness/process.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using testing_util::binary_dir;

// The stand-in: a proper hello, then it reads one request and does `behaviour` (Python).
std::string stand_in(const std::string& behaviour) {
  return "exec python3 - <<'PY'\n"
         "import json, os, signal, socket, struct, sys, time\n"
         "s = socket.socket(fileno=3)\n"
         "def send(obj=None, raw=None):\n"
         "    body = raw if raw is not None else json.dumps(obj).encode()\n"
         "    s.sendall(struct.pack('<I', len(body)) + body)\n"
         "def read(n):\n"
         "    data = b''\n"
         "    while len(data) < n:\n"
         "        chunk = s.recv(n - len(data))\n"
         "        if not chunk: sys.exit(9)\n"
         "        data += chunk\n"
         "    return data\n"
         "send({'op': 'hello', 'pid': os.getpid(), 'pinned': False, 'sandbox': 'stand-in'})\n"
         "read(struct.unpack('<I', read(4))[0])\n" +
         behaviour +
         "\n"
         "time.sleep(60)\n"
         "PY\n";
}

struct Case {
  const char* name;
  const char* behaviour;
  CallOutcome outcome;
  const char* detail;  // a part of CallReply::detail
};

TEST(MisbehavingWorker, EveryMisdeedEndsTheCallInTimeWithItsName) {
  std::string out;
  if (run_capture({"python3", "-c", "pass"}, &out) != 0)
    GTEST_SKIP() << "python3 is not installed (scripts/setup installs it)";
  const Case cases[] = {
      {"answers", "send({'ok': True, 'x': 1})", CallOutcome::kOk, ""},
      {"garbage", "send(raw=b'{{{{{')", CallOutcome::kWorkerError, "broken channel"},
      {"absurd length", "s.sendall(struct.pack('<I', 0xFFFFFFF0))", CallOutcome::kWorkerError,
       "message too large"},
      {"not an object", "send([1, 2])", CallOutcome::kWorkerError, "not a JSON object"},
      {"ok not a boolean", "send({'ok': 'yes'})", CallOutcome::kWorkerError, "no boolean 'ok'"},
      {"fatal word", "send({'op': 'fatal', 'error': 'stand-in gave up'})",
       CallOutcome::kWorkerError, "stand-in gave up"},
      {"half a header", "s.sendall(b'\\x10\\x00')", CallOutcome::kTimeout, "no answer within"},
      {"closes, keeps running", "s.close()", CallOutcome::kWorkerError,
       "closed its channel to the judge but kept running"},
      {"stops", "os.kill(os.getpid(), signal.SIGSTOP)", CallOutcome::kTimeout, "(killed)"},
      {"crashes", "os.kill(os.getpid(), signal.SIGSEGV)", CallOutcome::kCrashed,
       "killed by signal 11"},
      {"exits 0", "sys.exit(0)", CallOutcome::kEarlyExit, "status 0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string err;
    const std::string dir = make_private_dir(binary_dir(), "misbehaving-worker-", &err);
    ASSERT_FALSE(dir.empty()) << err;
    ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
    ASSERT_TRUE(write_file_atomic(dir + "/worker", "#!/bin/sh\n" + stand_in(c.behaviour), &err))
        << err;
    ASSERT_EQ(chmod((dir + "/worker").c_str(), 0755), 0);
    WorkerOptions opts;
    opts.worker_path = dir + "/worker";
    opts.so_path = dir + "/solution.so";  // staged beside the worker, never loaded
    ASSERT_TRUE(write_file_atomic(opts.so_path, "not an object", &err)) << err;
    opts.shm_bytes = 4096;
    opts.start_timeout_seconds = 30;
    std::unique_ptr<WorkerProcess> w = WorkerProcess::start(opts, &err);
    ASSERT_NE(w, nullptr) << err;
    const auto t0 = std::chrono::steady_clock::now();
    CallReply r = w->call({{"op", "prepare"}}, 2.0);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(int(r.outcome), int(c.outcome)) << r.detail;
    EXPECT_NE(r.detail.find(c.detail), std::string::npos) << r.detail;
    EXPECT_LT(seconds, 8.0) << "the call took " << seconds << " s";
    if (c.outcome != CallOutcome::kOk) {
      // The worker is gone: a next call says so at once, with no signal to the judge.
      CallReply again = w->call({{"op", "prepare"}}, 2.0);
      EXPECT_EQ(int(again.outcome), int(CallOutcome::kWorkerError));
      EXPECT_EQ(again.detail, "worker is not running");
    }
    w.reset();
    EXPECT_TRUE(remove_tree(dir));
  }
}

}  // namespace
}  // namespace fp4arena

// The call protocol (harness/worker_calls.h) without a GPU: under a tool there is no judge's
// window, so a stand-in worker (python3) that speaks the protocol over shared memory can play
// the solution. What the worker does to the buffers during "go" must come back as the
// integrity failure that names it (an input changed, a canary broken before or after a
// buffer), its reply's word must be read or named malformed, the outputs must be read back as
// written, and a load that fails must be the solution's failure.
#include "harness/worker_calls.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "harness/process.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace judging {
namespace {

using testing_util::binary_dir;
using testing_util::challenge_dir;

// The stand-in worker. At "go" it runs `on_go` (Python: `shm` is the shared memory, `bufs` the
// prepare request's buffers, `word` the reply it will send), at "load" `on_load`.
std::string stand_in(const std::string& on_go, const std::string& on_load = "") {
  return "#!/bin/sh\nexec python3 - \"$@\" <<'PY'\n"
         "import json, mmap, os, socket, struct, sys\n"
         "s = socket.socket(fileno=3)\n"
         "size = int(sys.argv[sys.argv.index('--shm-bytes') + 1])\n"
         "shm = mmap.mmap(4, size)\n"
         "def send(obj):\n"
         "    body = json.dumps(obj).encode()\n"
         "    s.sendall(struct.pack('<I', len(body)) + body)\n"
         "def read(n):\n"
         "    data = b''\n"
         "    while len(data) < n:\n"
         "        chunk = s.recv(n - len(data))\n"
         "        if not chunk: sys.exit(0)\n"
         "        data += chunk\n"
         "    return data\n"
         "send({'op': 'hello', 'pid': os.getpid(), 'pinned': False, 'sandbox': 'stand-in'})\n"
         "bufs = []\n"
         "while True:\n"
         "    req = json.loads(read(struct.unpack('<I', read(4))[0]))\n"
         "    op = req.get('op')\n"
         "    if op == 'quit': sys.exit(0)\n"
         "    if op == 'load':\n"
         "        pass\n" +
         (on_load.empty() ? "" : "        " + on_load + "\n") +
         "        send({'ok': True})\n"
         "    elif op == 'prepare':\n"
         "        bufs = req['buffers']\n"
         "        send({'ok': True, 'handles': [], 'sync': ''})\n"
         "    elif op == 'go':\n"
         "        word = {'ok': True, 'event_ms': 0.5, 'host_call_ms': 0.25, 'busy_after_us': "
         "0.0,\n"
         "                'threads_before': 3, 'threads_after': 3}\n"
         "        " +
         (on_go.empty() ? "pass" : on_go) +
         "\n"
         "        send(word)\n"
         "    else:\n"
         "        send({'ok': True})\n"
         "PY\n";
}

class WorkerCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string out;
    if (run_capture({"python3", "-c", "import mmap"}, &out) != 0)
      GTEST_SKIP() << "python3 is not installed (scripts/setup installs it)";
    std::string err;
    ASSERT_TRUE(load_spec(challenge_dir(), &spec_, &err)) << err;
    dir_ = make_private_dir(binary_dir(), "worker-calls-", &err);
    ASSERT_FALSE(dir_.empty()) << err;
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    compiled_.so_path = dir_ + "/solution.so";  // never loaded by the stand-in
    ASSERT_TRUE(write_file_atomic(compiled_.so_path, "not an object", &err)) << err;
    opts_.worker_path = dir_ + "/worker";
    opts_.call_timeout_seconds = 10;
    // The example case's inputs: fixed bytes, so that a changed byte is the worker's doing.
    c_ = spec_.find_case("example");
    ASSERT_NE(c_, nullptr);
    ins_.resize(1);
    ins_[0].dims = c_->dims;
    for (const ParamSpec& p : spec_.params) {
      if (p.is_buffer() && p.role == "in") {
        ins_[0].buffers[p.name].assign(buffer_bytes(p, c_->dims), uint8_t(0x5A));
      } else if (!p.is_buffer() && p.role != "dim") {
        ins_[0].scalars[p.name] = 1.0;
      }
    }
    layout_ = layout_for(spec_, c_->dims);
    poisons_.resize(spec_.outputs().size());
  }
  void TearDown() override {
    if (!dir_.empty()) {
      EXPECT_TRUE(remove_tree(dir_));
    }
  }

  // One window of the example's call through a stand-in doing `on_go`.
  RawWindow window(const std::string& on_go, WorkerCalls* calls) {
    std::string err;
    EXPECT_TRUE(write_file_atomic(opts_.worker_path, stand_in(on_go), &err)) << err;
    EXPECT_EQ(chmod(opts_.worker_path.c_str(), 0755), 0);
    calls->use_tool({{"/usr/bin/env"}, 1, 2});
    calls->need_shared_bytes(layout_.total);
    bool load_failed = false;
    CallFacts facts;
    EXPECT_TRUE(calls->start(&err, &load_failed, &facts)) << err;
    if (!calls->running()) return RawWindow{};
    return calls->send_window(*c_, ins_, layout_, poisons_);
  }

  // Buffer `name`'s slot: its payload starts kCanaryBytes after its offset in shared memory.
  const Slot& slot(const std::string& name) const {
    for (const Slot& s : layout_.slots)
      if (s.param->name == name) return s;
    ADD_FAILURE() << "no buffer " << name;
    return layout_.slots.front();
  }

  JudgeOptions opts_;
  Spec spec_;
  CompileResult compiled_;
  std::string dir_;
  const CaseSpec* c_ = nullptr;
  std::vector<ProblemData> ins_;
  Layout layout_;
  std::vector<Poison> poisons_;
};

TEST_F(WorkerCallsTest, AnHonestCallIsCleanAndItsOutputsAreReadBack) {
  WorkerCalls calls(opts_, spec_, compiled_);
  // The worker writes 0x3C into every byte of c.
  const RawWindow raw = window(
      "o = bufs[-1]; shm[o['offset'] + o['canary']:o['offset'] + o['canary'] + o['size']] = "
      "b'\\x3c' * o['size']",
      &calls);
  EXPECT_EQ(int(raw.facts.end), int(CallEnd::kOk)) << raw.facts.end_detail;
  EXPECT_EQ(raw.failed_set, -1);
  EXPECT_TRUE(raw.facts.canary_broken.empty()) << raw.facts.canary_broken;
  EXPECT_TRUE(raw.facts.input_changed.empty()) << raw.facts.input_changed;
  EXPECT_TRUE(raw.facts.under_tool);
  EXPECT_DOUBLE_EQ(raw.worker_event_ms, 0.5);
  EXPECT_DOUBLE_EQ(raw.host_call_ms, 0.25);
  EXPECT_EQ(raw.facts.threads_after, 3);
  EXPECT_FALSE(calls.timed()) << "under a tool there is no judge's window";
  const std::vector<std::vector<uint8_t>> out = calls.outputs_of(layout_, 0);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_FALSE(out[0].empty());
  EXPECT_EQ(out[0], std::vector<uint8_t>(out[0].size(), 0x3C));
}

TEST_F(WorkerCallsTest, WhatTheWorkerDidToTheBuffersIsNamed) {
  const size_t a = slot("a").offset + kCanaryBytes, a_bytes = slot("a").payload;
  const size_t c_end = slot("c").offset + kCanaryBytes + slot("c").payload;
  const struct {
    const char* name;
    std::string on_go;
    std::string CallFacts::*field;
    std::string want;
  } cases[] = {
      {"an input changed", "shm[" + std::to_string(a + 5) + "] ^= 1", &CallFacts::input_changed,
       "'a' (first changed byte at 5 of " + std::to_string(a_bytes) + ")"},
      {"a write past the end", "shm[" + std::to_string(c_end) + "] ^= 1", &CallFacts::canary_broken,
       "past the end of 'c'"},
      {"a write before the start", "shm[" + std::to_string(a - 1) + "] ^= 1",
       &CallFacts::canary_broken, "before the start of 'a'"},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.name);
    WorkerCalls calls(opts_, spec_, compiled_);
    const RawWindow raw = window(k.on_go, &calls);
    EXPECT_EQ(int(raw.facts.end), int(CallEnd::kOk)) << raw.facts.end_detail;
    EXPECT_EQ(raw.failed_set, 0);
    EXPECT_NE((raw.facts.*k.field).find(k.want), std::string::npos) << raw.facts.*k.field;
    EXPECT_NE(decide_verdict(raw.facts).verdict, Verdict::kPassed);
  }
}

TEST_F(WorkerCallsTest, AMalformedWordIsTheWorkersFailure) {
  WorkerCalls calls(opts_, spec_, compiled_);
  const RawWindow raw = window("del word['event_ms']", &calls);
  EXPECT_EQ(int(raw.facts.end), int(CallEnd::kWorkerError));
  EXPECT_NE(raw.facts.end_detail.find("field 'event_ms' missing or not a finite number"),
            std::string::npos)
      << raw.facts.end_detail;
  WorkerCalls again(opts_, spec_, compiled_);
  const RawWindow nan = window("word['threads_after'] = 'many'", &again);
  EXPECT_EQ(int(nan.facts.end), int(CallEnd::kWorkerError));
  EXPECT_NE(nan.facts.end_detail.find("'threads_after'"), std::string::npos)
      << nan.facts.end_detail;
}

TEST_F(WorkerCallsTest, ALoadThatFailsIsTheSolutionsFailure) {
  std::string err;
  ASSERT_TRUE(write_file_atomic(opts_.worker_path, stand_in("", "sys.exit(7)"), &err)) << err;
  ASSERT_EQ(chmod(opts_.worker_path.c_str(), 0755), 0);
  WorkerCalls calls(opts_, spec_, compiled_);
  calls.use_tool({{"/usr/bin/env"}, 1, 2});
  calls.need_shared_bytes(layout_.total);
  bool load_failed = false;
  CallFacts facts;
  EXPECT_FALSE(calls.start(&err, &load_failed, &facts));
  EXPECT_TRUE(load_failed);
  EXPECT_EQ(int(facts.end), int(CallEnd::kEarlyExit));
  EXPECT_NE(facts.end_detail.find("while loading the solution"), std::string::npos)
      << facts.end_detail;
  EXPECT_FALSE(calls.running());
}

}  // namespace
}  // namespace judging
}  // namespace fp4arena

// The pieces every window's copy kernel takes, and the judge's second window method
// (harness/verdict.h, WindowMethod::kV2) where it needs no GPU: a window's copies refill every
// output with its poison after the inputs, its calls stay within the largest model window's
// delivery, and no record or sweep is made with it. Its models are tested in verdict_test.cc;
// its GPU side in gpu_stream_read_test.cc.
#include <gtest/gtest.h>

#include <sstream>

#include "harness/call_window.h"
#include "harness/judge.h"
#include "harness/worker_calls.h"
#include "tests/test_util.h"

namespace fp4arena {
namespace {

using judging::window_calls;
constexpr size_t kMiB = size_t(1) << 20;

uint8_t* at(uintptr_t a) {
  return reinterpret_cast<uint8_t*>(a);
}

// The copy kernel's table: each segment cut, in order, into pieces of kCopyPieceBytes and a
// shorter last one, each piece's source and destination as far into its segment as it is; a
// fill (no source) stays a fill of the same byte; an empty segment gives no piece.
TEST(CopyPieces, EachSegmentInOrderInPiecesOfAtMostThePieceSize) {
  const size_t p = kCopyPieceBytes;
  const std::vector<CopySegment> segs = {{at(0x100000), at(0x200000), 2 * p + 48},
                                         {nullptr, at(0x400000), 16, 0x5C},
                                         {at(0x500000), at(0x600000), 0},
                                         {at(0x700000), at(0x800000), p}};
  const std::vector<CopySegment> pieces = copy_pieces(segs);
  ASSERT_EQ(pieces.size(), 5u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(pieces[i].src, at(0x100000 + i * p)) << i;
    EXPECT_EQ(pieces[i].dst, at(0x200000 + i * p)) << i;
    EXPECT_EQ(pieces[i].bytes, i < 2 ? p : 48u) << i;
  }
  EXPECT_EQ(pieces[3].src, nullptr);
  EXPECT_EQ(pieces[3].dst, at(0x400000));
  EXPECT_EQ(pieces[3].bytes, 16u);
  EXPECT_EQ(pieces[3].fill, 0x5C);
  EXPECT_EQ(pieces[4].src, at(0x700000));
  EXPECT_EQ(pieces[4].bytes, p);
  EXPECT_TRUE(copy_pieces({}).empty());
}

// Two sets of an input, an output and an empty input: each input's payload is copied from its
// own 256-aligned piece of the judge's staged memory into the worker's buffer past its canary,
// each output whole into its own piece of the snapshot memory; an empty input delivers nothing.
// Under kV2 (refill) every output's payload is filled with its poison, after all the inputs.
TEST(CopyPlan, InputsThenRefilledOutputsEachInItsOwnPiece) {
  WindowBuffer in{100, 4096, false, 0}, out{64, 4096, true, 0x33}, empty{0, 4096, false, 0};
  const std::vector<WindowBuffer> buffers = {in, out, empty};
  const std::vector<uint8_t*> worker = {at(0x10000), at(0x20000), at(0x30000),
                                        at(0x40000), at(0x50000), at(0x60000)};
  for (bool refill : {false, true}) {
    CopyPlan p = plan_copies(buffers, 2, worker, at(0x900000), at(0xA00000), refill);
    ASSERT_EQ(p.delivery.size(), refill ? 4u : 2u);
    EXPECT_EQ(p.delivery[0].src, at(0x900000));
    EXPECT_EQ(p.delivery[0].dst, at(0x10000 + 4096));
    EXPECT_EQ(p.delivery[0].bytes, 100u);
    // Set 1's input follows set 0's input and empty input, each in a 256-byte piece.
    EXPECT_EQ(p.delivery[1].src, at(0x900000 + 256 + 0));
    EXPECT_EQ(p.delivery[1].dst, at(0x40000 + 4096));
    ASSERT_EQ(p.staged_at.size(), 4u);  // every input has a place, the empty ones too
    EXPECT_EQ(p.staged_at[1], at(0x900000 + 256));
    EXPECT_EQ(p.staged_at[2], at(0x900000 + 256));
    if (refill) {
      for (int s = 0; s < 2; ++s) {
        const CopySegment& f = p.delivery[2 + s];
        EXPECT_EQ(f.src, nullptr);
        EXPECT_EQ(f.dst, worker[size_t(3 * s + 1)] + 4096);
        EXPECT_EQ(f.bytes, 64u);
        EXPECT_EQ(f.fill, 0x33);
      }
    }
    ASSERT_EQ(p.snapshot.size(), 2u);
    EXPECT_EQ(p.snapshot[0].src, at(0x20000));
    EXPECT_EQ(p.snapshot[0].dst, at(0xA00000));
    EXPECT_EQ(p.snapshot[0].bytes, 64u + 2 * 4096);
    EXPECT_EQ(p.snapshot[1].dst, at(0xA00000 + 8448));  // 8256 rounded up to 256
  }
}

TEST(WindowCalls, EnoughForTheTargetWithinMemoryAndTheCallCap) {
  // 1 ms of 20 us calls: 50, within 24 GiB of memory and 512 calls.
  EXPECT_EQ(window_calls(0.020, 1.0, 14 * kMiB, 24 * 1024 * kMiB, 14 * kMiB, 0), 50);
  // Memory: 1 GiB holds 4 sets of 128 MiB taken twice.
  EXPECT_EQ(window_calls(0.020, 1.0, 128 * kMiB, 1024 * kMiB, 128 * kMiB, 0), 4);
  // Very short calls stop at kMaxWindowCalls; a call longer than the target is one.
  EXPECT_EQ(window_calls(1e-4, 1.0, 4096, 24 * 1024 * kMiB, 4096, 0), kMaxWindowCalls);
  EXPECT_EQ(window_calls(5.0, 1.0, 4096, 24 * 1024 * kMiB, 4096, 0), 1);
  // Even when not one set fits the budget, a window makes one call.
  EXPECT_EQ(window_calls(0.020, 1.0, 1024 * kMiB, 64 * kMiB, 1024 * kMiB, 0), 1);
}

// Under kV2 no window delivers more than the largest model window did (2 GiB): a 138 MiB
// read of 40 us a call makes 14 calls, not the 25 its target and memory allow.
TEST(WindowCalls, UnderV2NoWindowDeliversMoreThanTheModelsDid) {
  const size_t cap = 2048 * kMiB;
  EXPECT_EQ(window_calls(0.040, 1.0, 138 * kMiB, 24 * 1024 * kMiB, 138 * kMiB, 0), 25);
  EXPECT_EQ(window_calls(0.040, 1.0, 138 * kMiB, 24 * 1024 * kMiB, 138 * kMiB, cap), 14);
  // Outputs count: they are filled inside the window.
  EXPECT_EQ(window_calls(0.040, 1.0, 200 * kMiB, 24 * 1024 * kMiB, 2 * 138 * kMiB, cap), 7);
  // A set larger than the cap still makes one call.
  EXPECT_EQ(window_calls(0.040, 1.0, 4096 * kMiB, 48 * 1024 * kMiB, 4096 * kMiB, cap), 1);
}

// Records and sweeps are made with the judge's method only (kJudgeWindowMethod): the other is
// a usage error before anything is compiled.
TEST(WindowMethod, SubmitAndSweepRefuseAnyButTheJudges) {
  const WindowMethod other =
      kJudgeWindowMethod == WindowMethod::kV1 ? WindowMethod::kV2 : WindowMethod::kV1;
  for (Action a : {Action::kSubmit, Action::kSweep}) {
    JudgeOptions o;
    EXPECT_EQ(o.window_method, kJudgeWindowMethod);
    o.challenge_dir = testing_util::challenge_dir();
    o.solution_path = testing_util::source_dir() + "/solutions/nvfp4_matmul/naive.cu";
    o.action = a;
    o.progress = false;
    o.sweep_dir = testing_util::binary_dir() + "/window-method-sweep";
    o.window_method = other;
    std::ostringstream log;
    JudgeOutcome r = judge(o, log);
    EXPECT_EQ(r.code, ExitCode::kUsage) << action_name(a) << "\n" << log.str();
    const std::string want = std::string("window method ") + window_method_name(other) +
                             ": records and sweeps are made with " + kTimingMethod + " only";
    EXPECT_NE(log.str().find(want), std::string::npos) << log.str();
  }
}

}  // namespace
}  // namespace fp4arena

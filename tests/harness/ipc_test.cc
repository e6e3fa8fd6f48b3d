#include "harness/ipc.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

namespace fp4arena {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Pair {
  int fd[2] = {-1, -1};
  Pair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd), 0); }
  ~Pair() {
    for (int f : fd) close(f);
  }
};

// A message sent while the receiver spins, one sent after the spin ended (it blocks then),
// and one that never comes: each gets its status, and the timeout holds through the spin.
TEST(Channel, SpinningThenBlockingReceivesEveryMessageAndKeepsTheTimeout) {
  Pair p;
  std::string err;
  nlohmann::json got;
  std::thread early([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    send_message(p.fd[1], {{"op", "early"}}, &err);
  });
  ASSERT_EQ(recv_message(p.fd[0], 2000, &got, &err, 50), RecvStatus::kOk) << err;
  early.join();
  EXPECT_EQ(got.value("op", ""), "early");

  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(80));
    send_message(p.fd[1], {{"op", "late"}}, &err);
  });
  ASSERT_EQ(recv_message(p.fd[0], 2000, &got, &err, 20), RecvStatus::kOk) << err;
  late.join();
  EXPECT_EQ(got.value("op", ""), "late");

  auto t0 = Clock::now();
  EXPECT_EQ(recv_message(p.fd[0], 30, &got, &err, 1000), RecvStatus::kTimeout);
  EXPECT_LT(ms_since(t0), 500) << "the spin outlasted the timeout";
  t0 = Clock::now();
  EXPECT_EQ(recv_message(p.fd[0], 0, &got, &err, 50), RecvStatus::kTimeout);
  EXPECT_LT(ms_since(t0), 40);
}

TEST(Channel, APeerThatClosesWhileTheReceiverSpinsIsReportedClosed) {
  Pair p;
  std::string err;
  nlohmann::json got;
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    close(p.fd[1]);
    p.fd[1] = -1;
  });
  EXPECT_EQ(recv_message(p.fd[0], 2000, &got, &err, 50), RecvStatus::kClosed);
  closer.join();
}

// A worker that shut its end of the channel down (shutdown(3, SHUT_RD) from inside solve())
// or closed it: the judge's next message fails with an error instead of raising SIGPIPE,
// which would end this process (the judge) with no record.
TEST(Channel, SendingToAPeerThatShutItsEndFailsWithoutSigpipe) {
  for (bool close_it : {false, true}) {
    Pair p;
    if (close_it) {
      close(p.fd[1]);
      p.fd[1] = -1;
    } else {
      ASSERT_EQ(shutdown(p.fd[1], SHUT_RD), 0);
    }
    std::string err;
    EXPECT_FALSE(send_message(p.fd[0], {{"op", "settle"}}, &err));
    EXPECT_NE(err.find("Broken pipe"), std::string::npos) << err;
  }
}

// A peer that stops reading (a stopped worker): once the channel's buffer is full, a send
// with a timeout fails after it instead of blocking the judge forever.
TEST(Channel, SendingToAPeerThatStoppedReadingTimesOut) {
  Pair p;
  std::string err;
  const nlohmann::json big = {{"op", "prepare"}, {"blob", std::string(8 << 20, 'x')}};
  const auto t0 = Clock::now();
  EXPECT_FALSE(send_message(p.fd[0], big, &err, 200));
  EXPECT_LT(ms_since(t0), 5000);
  EXPECT_EQ(err.rfind("the peer stopped reading", 0), 0u) << err;
}

// CUDA IPC handles travel as hex text in the worker's prepare reply; the judge parses what
// a possibly hostile worker sent.
TEST(Hex, RoundTripsEveryByteValue) {
  unsigned char bytes[256];
  for (int i = 0; i < 256; ++i) bytes[i] = static_cast<unsigned char>(i);
  const std::string hex = hex_of_bytes(bytes, sizeof bytes);
  ASSERT_EQ(hex.size(), 512u);
  EXPECT_EQ(hex.substr(0, 8), "00010203");
  EXPECT_EQ(hex.substr(504), "fcfdfeff");
  unsigned char back[256] = {};
  ASSERT_TRUE(bytes_of_hex(hex, back, sizeof back));
  EXPECT_EQ(std::memcmp(bytes, back, sizeof bytes), 0);
  unsigned char upper[2];
  ASSERT_TRUE(bytes_of_hex("ABcd", upper, 2));
  EXPECT_EQ(upper[0], 0xAB);
  EXPECT_EQ(upper[1], 0xCD);
}

TEST(Hex, RefusesAnythingButExactlyTwoDigitsPerByte) {
  unsigned char out[2];
  EXPECT_FALSE(bytes_of_hex("abc", out, 2));                    // short
  EXPECT_FALSE(bytes_of_hex("abcdef", out, 2));                 // long
  EXPECT_FALSE(bytes_of_hex("abcg", out, 2));                   // not a hex digit
  EXPECT_FALSE(bytes_of_hex("ab c", out, 2));                   // space
  EXPECT_FALSE(bytes_of_hex(std::string("ab\0d", 4), out, 2));  // NUL
  EXPECT_FALSE(bytes_of_hex("", out, 2));
  EXPECT_TRUE(bytes_of_hex("", out, 0));
}

}  // namespace
}  // namespace fp4arena

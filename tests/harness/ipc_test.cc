#include "harness/ipc.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
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

}  // namespace
}  // namespace fp4arena

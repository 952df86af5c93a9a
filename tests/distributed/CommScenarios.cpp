// CommScenarios.cpp -- netc_comm_scenarios: runs one scenario of the
// communicator on every rank of a job it is started in (`mpirun -np 2
// netc_comm_scenarios NAME`), printing "rank R: ok NAME" on success and the
// failure otherwise. comm_test.py starts the jobs and checks each rank's
// lines: the operations (all-reduce of every type, split all-reduces,
// broadcast, all-gather, send and receive, neighbours' started sends and
// receives in both directions at once, barrier, the agreement), the
// hand-out of a device transport's job id over MPI (the NCCL id of
// `mpirun ... netc train --device cuda`, here through a test transport:
// every rank joins with rank 0's id, and rank 0's failure to make one
// reaches every rank) and the faults (a silent rank and ranks in different
// operations are found at the timeout and named; a rank that waits in
// another communicator split from the job answers from there, in turn, and
// is not called silent). Exit status 0 only when
// the scenario's checks hold.
#include "runtime/comm/Agreement.h"
#include "runtime/comm/OpenCommunicator.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace netc;
using namespace netc::comm;

namespace {

int gRank = 0;

[[noreturn]] void die(const std::string &why) {
  std::fprintf(stderr, "rank %d: FAILED: %s\n", gRank, why.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

void check(bool ok, const std::string &what) {
  if (!ok)
    die(what);
}

void must(const Status &s) {
  if (!s)
    die(s.message());
}

/// The operations, each checked against what the sums must be.
void operations(Communicator &c) {
  const int r = c.rank(), n = c.size();
  std::vector<float> f = {float(r + 1), 0.5f};
  must(c.allReduce(std::span<float>(f), ReduceOp::Sum, "float all-reduce"));
  check(f[0] == float(n * (n + 1) / 2) && f[1] == 0.5f * float(n), "float sum");
  std::vector<double> d = {double(r) + 0.25};
  must(c.allReduce(std::span<double>(d), ReduceOp::Max, "double max"));
  check(d[0] == double(n - 1) + 0.25, "double max");
  std::vector<int64_t> i = {int64_t{1} << 40, r};
  must(c.allReduce(std::span<int64_t>(i), ReduceOp::Sum, "int64 all-reduce"));
  check(i[0] == (int64_t{1} << 40) * n && i[1] == int64_t(n) * (n - 1) / 2, "int64 sum");
  // Above the 16 MiB piece: split into several MPI all-reduces.
  std::vector<float> big(size_t{5} << 20);
  for (size_t k = 0; k < big.size(); ++k)
    big[k] = float(k % 1000) * float(r + 1);
  must(c.allReduce(std::span<float>(big), ReduceOp::Sum, "large all-reduce"));
  for (size_t k = 0; k < big.size(); k += 4099)
    check(big[k] == float(k % 1000) * float(n * (n + 1) / 2), fmt::format("large sum at {}", k));
  // Two at once, waited for in reverse order.
  std::vector<float> a(1000, float(r)), b(3, 1.0f);
  auto ra = c.startAllReduce(a.data(), 1000, DataType::F32, ReduceOp::Sum, "first of two");
  auto rb = c.startAllReduce(b.data(), 3, DataType::F32, ReduceOp::Sum, "second of two");
  check(ra && rb, "start two all-reduces");
  must(c.wait(*rb));
  must(c.wait(*ra));
  check(a[999] == float(n * (n - 1) / 2) && b[2] == float(n), "two all-reduces");
  // Broadcast from the last rank.
  std::vector<char> bytes(100, char(r));
  must(c.broadcast(bytes.data(), 100, n - 1, "broadcast"));
  check(bytes[0] == char(n - 1) && bytes[99] == char(n - 1), "broadcast");
  // All-gather.
  std::vector<int32_t> all(static_cast<size_t>(n), -1);
  const int32_t mine = r * 10;
  must(c.allGather(&mine, 4, all.data(), "all-gather"));
  for (int k = 0; k < n; ++k)
    check(all[static_cast<size_t>(k)] == k * 10, "all-gather");
  auto texts = allGatherMessages(c, std::string(size_t(r) * 3, 'x'), "messages");
  check(texts && texts->size() == size_t(n) && (*texts)[size_t(n - 1)].size() == size_t(n - 1) * 3,
        "all-gather messages");
  // A ring of sends and receives.
  if (n > 1) {
    int64_t token = r;
    const int next = (r + 1) % n, previous = (r + n - 1) % n;
    if (r == 0) {
      must(c.send(&token, 8, next, "ring send"));
      must(c.receive(&token, 8, previous, "ring receive"));
      check(token == previous, "ring");
    } else {
      int64_t got = -1;
      must(c.receive(&got, 8, previous, "ring receive"));
      check(got == previous, "ring");
      must(c.send(&token, 8, next, "ring send"));
    }
  }
  // Pipeline neighbours (rank r and r + 1) exchange at once, as 1F1B's
  // values forward and gradients back do: both start a send of 8 MiB (far
  // beyond MPI's eager limit) before either receives. Blocking sends would
  // wait for each other; started ones complete once both receive.
  if (n > 1) {
    const int64_t count = int64_t{2} << 20;
    std::vector<float> in(static_cast<size_t>(count), -1.0f);
    std::vector<std::vector<float>> outs; // one per send: unchanged until its wait
    outs.reserve(2);
    std::vector<int64_t> sends;
    for (int peer : {r - 1, r + 1}) {
      if (peer < 0 || peer >= n)
        continue;
      std::vector<float> &out = outs.emplace_back(static_cast<size_t>(count));
      std::iota(out.begin(), out.end(), float(r * 1000));
      auto sent = c.startSend(out.data(), count * 4, peer, "send of the values of 'Hid3'");
      check(sent.ok(), "starting a send: " + (sent ? std::string() : sent.message()));
      sends.push_back(*sent);
    }
    for (int peer : {r - 1, r + 1}) {
      if (peer < 0 || peer >= n)
        continue;
      auto received = c.startReceive(in.data(), count * 4, peer, "receive of the values of 'Hid3'");
      check(received.ok(), "starting a receive: " + (received ? std::string() : received.message()));
      must(c.wait(*received));
      check(in.front() == float(peer * 1000) && in[1000] == float(peer * 1000 + 1000),
            "the neighbour's values arrive whole");
    }
    for (int64_t request : sends)
      must(c.wait(request));
  }
  must(c.barrier("barrier"));
}

void agreement(Communicator &c) {
  Outcome same;
  same.fingerprint.add("network", "mnist.net");
  same.value = c.rank() == 0 ? 42 : 7;
  auto v = agree(c, same, "agreement");
  check(v && v->ok && v->value == 42, "agreement takes rank 0's value");
  Outcome differs = same;
  if (c.rank() == c.size() - 1)
    differs.fingerprint.fields[0].second = "lenet5.net";
  v = agree(c, differs, "agreement");
  check(v && !v->ok && v->rank == c.size() - 1 &&
            v->message.find("network is lenet5.net, rank 0's is mnist.net") != std::string::npos,
        "a differing fingerprint is named: " + (v ? v->message : v.message()));
  Outcome failed = same;
  if (c.rank() == 1) {
    failed.ok = false;
    failed.kind = 3;
    failed.message = "cannot read data/x";
  }
  v = agree(c, failed, "agreement");
  check(v && !v->ok && v->kind == 3 &&
            v->message == fmt::format("rank 1 of {}: cannot read data/x", c.size()),
        "a rank's failure reaches every rank: " + (v ? v->message : v.message()));
}

/// A device transport for the test: its id names the process that made it;
/// joining checks over the host communicator that every rank got the same.
void registerTestTransport(bool failToMakeId) {
  DeviceTransport t;
  t.name = "test-device";
  t.newJobId = [failToMakeId]() -> Expected<std::string> {
    if (failToMakeId)
      return fail("no devices here");
    return fmt::format("id made by pid {}", ::getpid());
  };
  t.deviceCount = []() -> Expected<int> { return 0; };
  t.join = [](const LaunchInfo &launch, const std::string &id, int device, const CommOptions &,
              std::shared_ptr<Communicator> bootstrap) -> Expected<std::shared_ptr<Communicator>> {
    check(bootstrap != nullptr, "the host communicator that carried the id");
    check(device == 7, "the device asked for");
    check(id.starts_with("id made by pid "), "an id: '" + id + "'");
    auto all = allGatherMessages(*bootstrap, id, "comparing ids");
    check(all.ok(), "gathering the ids");
    for (const std::string &other : *all)
      check(other == id,
            "rank " + std::to_string(launch.rank) + " got '" + id + "', another '" + other + "'");
    return bootstrap;
  };
  registerDeviceTransport(std::move(t));
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: netc_comm_scenarios "
        "operations|agreement|silent|disagree|in-turn|finish|device-id|device-id-refused [TIMEOUT]\n");
    return 2;
  }
  const std::string scenario = argv[1];
  CommOptions options;
  options.timeoutSeconds = argc > 2 ? std::atof(argv[2]) : 60;
  auto launch = parseLaunchEnvironment(processEnvironment());
  if (!launch)
    die(launch.message());
  gRank = launch->rank;
  if (scenario == "device-id" || scenario == "device-id-refused") {
    registerTestTransport(scenario == "device-id-refused");
    auto joined = openDeviceCommunicator(*launch, options, "test-device", 7);
    if (scenario == "device-id")
      check(joined.ok(), "joining: " + (joined ? std::string() : joined.message()));
    else
      check(!joined && joined.message() == "rank 0 could not start test-device: no devices here",
            "rank 0's failure on every rank: " + (joined ? std::string("joined") : joined.message()));
    std::fprintf(stderr, "rank %d: ok %s\n", launch->rank, scenario.c_str());
    return 0;
  }
  auto comm = openCommunicator(*launch, options);
  if (!comm)
    die(comm.message());
  Communicator &c = **comm;
  check(c.rank() == launch->rank && c.size() == launch->size, "the rank and size of the environment");
  if (scenario == "operations")
    operations(c);
  else if (scenario == "agreement")
    agreement(c);
  else if (scenario == "silent") {
    // Rank 1 sleeps outside MPI (it never answers); rank 0 times out in the
    // all-reduce and must name rank 1. Then both stop without finalising.
    std::vector<float> v(4, 1.0f);
    if (c.rank() == 1) {
      std::fprintf(stderr, "rank 1: ok silent\n"); // its part: to say nothing
      std::fflush(stderr);
      std::this_thread::sleep_for(std::chrono::duration<double>(options.timeoutSeconds * 3));
      std::_Exit(0);
    }
    c.setPosition(12, 2);
    Status s = c.allReduce(std::span<float>(v), ReduceOp::Sum, "all-reduce of gradient bucket 0");
    check(!s, "the all-reduce with a silent rank completed");
    std::fprintf(stderr, "rank %d: message: %s\n", c.rank(), s.message().c_str());
    check(s.message().find("rank 1 did not answer") != std::string::npos &&
              s.message().find("all-reduce of gradient bucket 0 at step 12 (epoch 2)") != std::string::npos,
          "the message names rank 1, the operation and the step");
    Status again = c.barrier("barrier");
    check(!again && again.message() == s.message(), "a failed communicator stays failed");
    std::fprintf(stderr, "rank 0: ok silent\n");
    std::fflush(stderr);
    std::_Exit(0);
  } else if (scenario == "disagree") {
    // Rank 0 waits in a barrier while the others wait to receive from it:
    // every rank answers, from another operation, and the messages say which.
    int64_t token = 0;
    Status s = c.rank() == 0 ? c.barrier("barrier before the first step")
                             : c.receive(&token, 8, 0, "receive of the initial weights");
    check(!s, "operations that cannot complete completed");
    std::fprintf(stderr, "rank %d: message: %s\n", c.rank(), s.message().c_str());
    const std::string expected = c.rank() == 0
                                     ? (c.size() == 2 ? "rank 1 is" : "ranks 1 and 2 are") +
                                           std::string(" waiting in the receive of the initial weights")
                                     : "rank 0 is waiting in the barrier before the first step";
    check(s.message().find(expected) != std::string::npos, "the message names the other operation");
    std::fprintf(stderr, "rank %d: ok disagree\n", c.rank());
    std::fflush(stderr);
    // The first rank to leave makes mpirun end the others: let them print first.
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::_Exit(0);
  } else if (scenario == "in-turn") {
    // A pipeline's wait across communicators split from the job: rank 0
    // stops answering; rank 1 waits to receive from it (communicator {0,
    // 1}); rank 2 waits in an all-reduce with rank 1 (communicator {1, 2}).
    // Rank 1 names rank 0; rank 2 hears from rank 1, waiting in turn in its
    // receive, and must not call it silent.
    auto pipeline = c.split(c.rank() < 2 ? 0 : 1, c.rank(), "split into pipelines");
    auto copies = c.split(c.rank() > 0 ? 0 : 1, c.rank(), "split into copies");
    check(pipeline.ok() && copies.ok(), "splitting the job");
    if (c.rank() == 0) {
      std::fprintf(stderr, "rank 0: ok in-turn\n"); // its part: to say nothing
      std::fflush(stderr);
      std::this_thread::sleep_for(std::chrono::duration<double>(options.timeoutSeconds * 3));
      std::_Exit(0);
    }
    (*pipeline)->setPosition(7, 1);
    (*copies)->setPosition(7, 1);
    std::vector<float> v(4, 1.0f);
    Status s =
        c.rank() == 1
            ? (*pipeline)->receive(v.data(), 16, 0, "receive of the values of 'Hid3' from stage 0")
            : (*copies)->allReduce(std::span<float>(v), ReduceOp::Sum, "all-reduce of gradient bucket 0");
    check(!s, "operations that cannot complete completed");
    std::fprintf(stderr, "rank %d: message: %s\n", c.rank(), s.message().c_str());
    const std::string expected =
        c.rank() == 1
            ? "rank 0 did not answer"
            : "rank 1 is waiting in turn, in the receive of the values of 'Hid3' from stage 0 (at step 7, "
              "epoch 1) (see its own message)";
    check(s.message().find(expected) != std::string::npos, "the message says: " + expected);
    check(c.rank() == 1 || s.message().find("did not answer") == std::string::npos,
          "rank 2 does not call rank 1 silent");
    std::fprintf(stderr, "rank %d: ok in-turn\n", c.rank());
    std::fflush(stderr);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::_Exit(0);
  } else if (scenario == "finish") {
    // Every rank finishes; the others exit at once while rank 0 goes on
    // alone, and anything it asks of the job after that is refused.
    std::vector<float> v(4, 1.0f);
    check(c.allReduce(std::span<float>(v), ReduceOp::Sum, "all-reduce before finishing").ok() &&
              v[0] == float(c.size()),
          "an all-reduce before finishing");
    Status s = c.finish("end of the job");
    check(s.ok(), "finishing: " + s.message());
    if (c.rank() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200)); // alone now
      Status after = c.barrier("barrier after finishing");
      check(!after && after.message().find("finished its part") != std::string::npos,
            "an operation after finish is refused: " + after.message());
    }
  } else
    die("unknown scenario " + scenario);
  std::fprintf(stderr, "rank %d: ok %s\n", c.rank(), scenario.c_str());
  return 0;
}

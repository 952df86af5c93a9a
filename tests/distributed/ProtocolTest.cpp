// ProtocolTest.cpp -- the messages ranks exchange: check-ins (encoded,
// decoded strictly, cut to size), the verdict of a stalled wait (who did
// not answer, who waits elsewhere, a rank that was itself stopped), the
// all-gathered texts (lengths a peer cannot make us allocate), and the
// agreement before training (the first failure, the first difference).
#include "FakeCommunicator.h"
#include "runtime/comm/Agreement.h"
#include "runtime/comm/CheckIn.h"

#include <gtest/gtest.h>

namespace netc::comm {
namespace {

using testing::FakeCommunicator;
using testing::framed;

TEST(CheckIn, RoundTrips) {
  const CheckIn ask{false, 5, 42, 1200, 3, "all-reduce of gradient bucket 0 (127,808 values)"};
  const std::string bytes = encodeCheckIn(ask);
  EXPECT_EQ(bytes, "netc-check-in 2 ask 5 42 1200 3 all-reduce of gradient bucket 0 (127,808 values)");
  auto back = decodeCheckIn(bytes);
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(*back, ask);
  const CheckIn reply{true, 5, 41, 1199, 3, "broadcast"};
  EXPECT_EQ(encodeCheckIn(reply), "netc-check-in 2 reply 5 41 1199 3 broadcast");
  EXPECT_EQ(*decodeCheckIn(encodeCheckIn(reply)), reply);
  // A reply from a wait in another communicator of the job.
  CheckIn turn{true, 5, 2, 1199, 3, "receive of the values of 'Hid3' from stage 0"};
  turn.inTurn = true;
  EXPECT_EQ(encodeCheckIn(turn),
            "netc-check-in 2 turn 5 2 1199 3 receive of the values of 'Hid3' from stage 0");
  EXPECT_EQ(*decodeCheckIn(encodeCheckIn(turn)), turn);
}

TEST(CheckIn, LongNamesAreCutToTheLimit) {
  const std::string bytes = encodeCheckIn({false, 1, 1, 2, 3, std::string(5000, 'x')});
  EXPECT_EQ(bytes.size(), kMaxCheckInBytes);
  EXPECT_TRUE(decodeCheckIn(bytes));
}

TEST(CheckIn, AnythingElseIsRefused) {
  const std::vector<std::string> bad = {"",
                                        "netc-check-in 1 1 2 3 x",
                                        "netc-check-in 2 ask 1 1 2 x",
                                        "netc-check-in 2 tell 1 1 2 3 x",
                                        "netc-check-in 2 reply 1 -1 2 3 x",
                                        "netc-check-in 2 ask 1 1 2 3 ",
                                        "netc-check-in 2 ask 1 1 2 3",
                                        "hello",
                                        "netc-check-in 2 ask 1 99999999999999999999 2 3 x",
                                        std::string(600, 'n')};
  for (const std::string &text : bad) {
    auto c = decodeCheckIn(text);
    ASSERT_FALSE(c) << "accepted '" << text << "'";
    EXPECT_NE(c.message().find("not netc's"), std::string::npos) << c.message();
  }
  // Control bytes in the name are made printable.
  auto c = decodeCheckIn("netc-check-in 2 ask 1 1 2 3 a\x1b[2Jb\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->what, "a?[2Jb?");
}

StallReport report(int rank, int size, std::vector<std::optional<CheckIn>> heard, int peer = -1) {
  StallReport r;
  r.rank = rank;
  r.size = size;
  r.what = "all-reduce of gradient bucket 0";
  r.position = "at step 120 (epoch 3)";
  r.timeoutSeconds = 5;
  r.sequence = 7;
  r.peer = peer;
  r.heard = std::move(heard);
  return r;
}

TEST(Stall, NamesTheRanksThatDidNotAnswer) {
  const CheckIn same{true, 1, 7, 120, 3, "all-reduce of gradient bucket 0"};
  EXPECT_EQ(
      stallMessage(report(1, 4, {std::nullopt, std::nullopt, same, std::nullopt})),
      "rank 1 of 4: the all-reduce of gradient bucket 0 at step 120 (epoch 3) did not complete within "
      "--comm-timeout 5 s: ranks 0 and 3 did not answer. They are stopped (SIGSTOP or a debugger), hung, "
      "busy for longer than the timeout, or on a machine or network that is down; raise --comm-timeout if a "
      "rank may pause that long; rank 2 was waiting in it too");
}

TEST(Stall, NamesRanksWaitingElsewhere) {
  const CheckIn other{true, 1, 3, 0, 0, "broadcast of rank 0's parameters"};
  const std::string message = stallMessage(report(0, 3, {std::nullopt, other, other}));
  EXPECT_NE(
      message.find(": ranks 1 and 2 are waiting in the broadcast of rank 0's parameters (before the first "
                   "training step) instead: the ranks do not run the same steps"),
      std::string::npos)
      << message;
}

TEST(Stall, EveryRankAnsweredFromTheSameOperation) {
  const CheckIn same{true, 1, 7, 120, 3, "all-reduce of gradient bucket 0"};
  EXPECT_NE(
      stallMessage(report(0, 2, {std::nullopt, same})).find("every rank answered from it, so the transport"),
      std::string::npos);
}

TEST(Stall, APeerOfASendIsTheOneNamed) {
  const CheckIn same{true, 1, 7, 120, 3, "all-reduce of gradient bucket 0"};
  // Rank 2 did not answer, but only rank 1 matters to a receive from rank 1.
  EXPECT_NE(stallMessage(report(0, 3, {std::nullopt, same, std::nullopt}, 1)).find("rank 1 answered, but"),
            std::string::npos);
  EXPECT_NE(stallMessage(report(0, 3, {std::nullopt, std::nullopt, same}, 1)).find(": rank 1 did not answer"),
            std::string::npos);
}

TEST(Stall, ARankThatWasItselfStoppedSaysSo) {
  StallReport r = report(1, 2, {std::nullopt, std::nullopt});
  r.absentSeconds = 31.5;
  EXPECT_NE(stallMessage(r).find("this rank itself did not run for 31.5 s of it"), std::string::npos);
}

TEST(Stall, ASplitCommunicatorNamesTheJobsRanksAndWhatTheyDo) {
  // Ranks 0 and 1 of a pipeline's communicator are ranks 2 and 3 of the job
  // (its second pipeline): the message gives the job's numbers and the stages.
  StallReport r = report(0, 2, {std::nullopt, std::nullopt}, 1);
  r.jobRanks = {2, 3};
  r.jobSize = 4;
  r.roles = {"stage 0 of pipeline 0", "stage 1 of pipeline 0", "stage 0 of pipeline 1",
             "stage 1 of pipeline 1"};
  const std::string message = stallMessage(r);
  EXPECT_EQ(message.rfind("rank 2 of 4 (stage 0 of pipeline 1): the ", 0), 0u) << message;
  EXPECT_NE(message.find(": rank 3 (stage 1 of pipeline 1) did not answer"), std::string::npos) << message;
}

TEST(Stall, ARankWaitingInTurnElsewhereInTheJobIsNotCalledSilent) {
  // Rank 1 answered from its wait in another communicator (same sequence
  // number by chance): alive, waiting in turn, not in another step.
  CheckIn turn{true, 1, 7, 120, 3, "receive of the values of 'Hid3' from stage 0"};
  turn.inTurn = true;
  const std::string message = stallMessage(report(2, 3, {std::nullopt, turn, std::nullopt}, 1));
  EXPECT_NE(
      message.find(": rank 1 is waiting in turn, in the receive of the values of 'Hid3' from stage 0 (at "
                   "step 120, epoch 3) (see its own message)"),
      std::string::npos)
      << message;
  EXPECT_EQ(message.find("did not answer"), std::string::npos) << message;
  EXPECT_EQ(message.find("do not run the same steps"), std::string::npos) << message;
  EXPECT_EQ(message.find("answered, but"), std::string::npos) << message;
  // Beside a silent rank, in a collective.
  const std::string both = stallMessage(report(0, 3, {std::nullopt, std::nullopt, turn}));
  EXPECT_NE(both.find(": rank 1 did not answer."), std::string::npos) << both;
  EXPECT_NE(both.find("; rank 2 is waiting in turn, in the receive"), std::string::npos) << both;
}

TEST(Messages, AllGatheredTextsComeBackInRankOrder) {
  FakeCommunicator comm(1, 3);
  comm.maximum = 5;
  comm.peers = {framed("zero"), framed("two!!")};
  auto texts = allGatherMessages(comm, "one", "test exchange");
  ASSERT_TRUE(texts) << texts.message();
  EXPECT_EQ(*texts, (std::vector<std::string>{"zero", "one", "two!!"}));
}

TEST(Messages, HostileLengthsAreRefusedNotAllocated) {
  FakeCommunicator comm(0, 2);
  comm.maximum = int64_t{1} << 40; // a peer claims a terabyte
  auto texts = allGatherMessages(comm, "mine", "test exchange");
  ASSERT_FALSE(texts);
  EXPECT_NE(
      texts.message().find("a rank has 1099511627776 bytes to share in the test exchange, where at most "
                           "1048576 are expected"),
      std::string::npos)
      << texts.message();
  comm.maximum = 4;
  for (int64_t length : {int64_t{-1}, int64_t{5}, int64_t{1} << 62}) {
    comm.peers = {framed("abcd", length)};
    texts = allGatherMessages(comm, "mine", "test exchange");
    ASSERT_FALSE(texts) << length;
    EXPECT_NE(texts.message().find("rank 1 of 2 shared a text of"), std::string::npos) << texts.message();
  }
}

Outcome withFields(std::vector<std::pair<std::string, std::string>> fields, uint64_t value = 0) {
  Outcome o;
  o.fingerprint.fields = std::move(fields);
  o.value = value;
  return o;
}

TEST(Agreement, SameFingerprintsTakeRankZerosValue) {
  const Verdict v = decide({encodeOutcome(withFields({{"--lr", "0.1"}}, 18446744073709551615ull)),
                            encodeOutcome(withFields({{"--lr", "0.1"}}, 7))});
  EXPECT_TRUE(v.ok);
  EXPECT_EQ(v.value, 18446744073709551615ull);
}

TEST(Agreement, TheFirstFailureReachesEveryRank) {
  Outcome failed;
  failed.ok = false;
  failed.kind = 2;
  failed.message = "cannot read data/x";
  Outcome later = failed;
  later.message = "something else";
  const Verdict v = decide({encodeOutcome(withFields({})), encodeOutcome(failed), encodeOutcome(later)});
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.rank, 1);
  EXPECT_EQ(v.kind, 2);
  EXPECT_EQ(v.message, "rank 1 of 3: cannot read data/x");
  // One process keeps its message as it is.
  EXPECT_EQ(decide({encodeOutcome(failed)}).message, "cannot read data/x");
}

TEST(Agreement, TheFirstDifferenceIsNamed) {
  const Verdict v = decide({encodeOutcome(withFields({{"--epochs", "2"}, {"--lr", "0.1"}})),
                            encodeOutcome(withFields({{"--epochs", "2"}, {"--lr", "0.1"}})),
                            encodeOutcome(withFields({{"--epochs", "2"}, {"--lr", "0.05"}}))});
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.kind, kMismatchKind);
  EXPECT_EQ(v.message, "rank 2 of 3 differs from rank 0: its --lr is 0.05, rank 0's is 0.1; start every rank "
                       "with the same netc, command, network file, data and checkpoint");
  const Verdict fewer =
      decide({encodeOutcome(withFields({{"a", "1"}, {"b", "2"}})), encodeOutcome(withFields({{"a", "1"}}))});
  EXPECT_NE(fewer.message.find("it has nothing where rank 0 has 'b'"), std::string::npos) << fewer.message;
}

TEST(Agreement, AnUnreadableOutcomeIsNamed) {
  const std::vector<std::string> unreadable = {
      "",
      "{",
      "[]",
      R"({"ok": true})",
      R"({"ok":1,"kind":0,"message":"","fields":[],"value":"0"})",
      R"({"ok":true,"kind":0,"message":"","fields":[["a"]],"value":"0"})",
      R"({"ok":true,"kind":0,"message":"","fields":[],"value":"-3"})",
      R"({"ok":true,"kind":0,"message":"","fields":[],"value":"99999999999999999999999"})"};
  for (const std::string &bad : unreadable) {
    const Verdict v = decide({encodeOutcome(withFields({})), bad});
    EXPECT_FALSE(v.ok) << bad;
    EXPECT_EQ(v.rank, 1) << bad;
    EXPECT_NE(v.message.find("rank 1 of 2 sent "), std::string::npos) << v.message;
  }
}

TEST(Agreement, OverTheInterface) {
  FakeCommunicator comm(0, 2);
  comm.maximum = 1 << 10;
  comm.peers = {framed(encodeOutcome(withFields({{"data", "b"}})))};
  auto v = agree(comm, withFields({{"data", "a"}}), "agreement");
  ASSERT_TRUE(v) << v.message();
  EXPECT_EQ(v->message,
            "rank 1 of 2 differs from rank 0: its data is b, rank 0's is a; start every rank with the "
            "same netc, command, network file, data and checkpoint");
}

TEST(Agreement, HashesAreStableAndSensitive) {
  const std::string a = "netc data parallel";
  EXPECT_EQ(hashBytes(a.data(), a.size()), hashBytes(a.data(), a.size()));
  EXPECT_EQ(hashBytes(a.data(), a.size()).size(), 16u);
  std::string b = a;
  b[3] ^= 1;
  EXPECT_NE(hashBytes(a.data(), a.size()), hashBytes(b.data(), b.size()));
  EXPECT_NE(hashBytes(a.data(), a.size() - 1), hashBytes(a.data(), a.size()));
}

} // namespace
} // namespace netc::comm

// CommMutationTest.cpp -- seeded mutants of everything a rank reads from
// its peers or its launcher (docs/architecture.md §Error policy): check-in messages, agreement
// outcomes, all-gathered frames and launch environments (mpirun's, srun's and
// a netc parent's for --gpus). Each mutant must be
// read or refused with a message -- never crash, hang or allocate without
// bound (the suite runs under ASan and UBSan in CI) -- and whatever is
// accepted must be consistent (a launch's rank lies inside its job).
#include "FakeCommunicator.h"
#include "runtime/comm/Agreement.h"
#include "runtime/comm/CheckIn.h"
#include "runtime/comm/Launch.h"

#include <gtest/gtest.h>

#include <array>
#include <random>

namespace netc::comm {
namespace {

using testing::FakeCommunicator;
using testing::framed;

constexpr int kMutants = 3000;

/// One to four random edits: flip, replace, insert, delete, truncate or duplicate.
std::string mutate(std::string text, std::mt19937_64 &rng) {
  const int edits = 1 + int(rng() % 4);
  static const std::string interesting = std::string("0123456789-:,()x{}[]\"\\ ") + '\0' + '\xff';
  for (int e = 0; e < edits; ++e) {
    const size_t at = text.empty() ? 0 : rng() % text.size();
    switch (rng() % 6) {
    case 0:
      if (!text.empty())
        text[at] = static_cast<char>(text[at] ^ (1 << (rng() % 8)));
      break;
    case 1:
      if (!text.empty())
        text[at] = interesting[rng() % interesting.size()];
      break;
    case 2: text.insert(at, 1, interesting[rng() % interesting.size()]); break;
    case 3:
      if (!text.empty())
        text.erase(at, 1 + rng() % 8);
      break;
    case 4: text.resize(at); break;
    case 5: text += text.substr(at, 64); break;
    }
  }
  return text;
}

TEST(CommMutation, CheckIns) {
  std::mt19937_64 rng(12);
  // A reply, and a reply in turn (from a wait in another communicator).
  CheckIn turn{true, 4, 2, 3999, 9, "receive of the values of 'Hid3' from stage 0"};
  turn.inTurn = true;
  const std::array<std::string, 2> seeds = {
      encodeCheckIn({true, 3, 17, 4000, 9, "all-reduce of gradient bucket 2 (1,024 values)"}),
      encodeCheckIn(turn)};
  int accepted = 0;
  for (int i = 0; i < kMutants; ++i) {
    const std::string mutant = mutate(seeds[static_cast<size_t>(i) % seeds.size()], rng);
    auto c = decodeCheckIn(mutant);
    if (c) {
      ++accepted;
      EXPECT_GE(c->sequence, 0);
      EXPECT_FALSE(c->what.empty());
      EXPECT_TRUE(decodeCheckIn(encodeCheckIn(*c))) << mutant;
    } else {
      EXPECT_NE(c.message().find("not netc's"), std::string::npos) << c.message();
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, kMutants);
}

TEST(CommMutation, AgreementOutcomes) {
  std::mt19937_64 rng(34);
  Outcome o;
  o.fingerprint.add("--lr", "0.1");
  o.fingerprint.add("training data", "500 samples of 784 features (contents 0123456789abcdef)");
  o.value = 12345;
  const std::string good = encodeOutcome(o);
  for (int i = 0; i < kMutants; ++i) {
    const std::string mutant = mutate(good, rng);
    const Verdict v = decide({good, mutant});
    if (!v.ok) {
      EXPECT_EQ(v.rank, 1) << mutant;
      EXPECT_FALSE(v.message.empty());
    } else {
      EXPECT_EQ(v.value, 12345u);
    }
  }
}

TEST(CommMutation, AllGatheredFrames) {
  std::mt19937_64 rng(56);
  for (int i = 0; i < kMutants; ++i) {
    FakeCommunicator comm(0, 3);
    comm.maximum = int64_t(rng() % 64);
    comm.peers = {mutate(framed("fingerprint"), rng), mutate(framed("other"), rng)};
    auto texts = allGatherMessages(comm, "mine", "mutation test");
    if (texts) {
      ASSERT_EQ(texts->size(), 3u);
      for (const std::string &t : *texts)
        EXPECT_LE(int64_t(t.size()), std::max<int64_t>(comm.maximum, 4));
    } else {
      EXPECT_NE(texts.message().find("mutation test"), std::string::npos) << texts.message();
    }
  }
}

TEST(CommMutation, LaunchEnvironments) {
  std::mt19937_64 rng(78);
  const Environment seeds[] = {{{"OMPI_COMM_WORLD_SIZE", "4"},
                                {"OMPI_COMM_WORLD_RANK", "3"},
                                {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}},
                               {{"SLURM_STEP_NUM_TASKS", "5"},
                                {"SLURM_PROCID", "4"},
                                {"SLURM_NODEID", "1"},
                                {"SLURM_LOCALID", "1"},
                                {"SLURM_STEP_TASKS_PER_NODE", "3(x1),2"},
                                {"PMIX_RANK", "4"}},
                               {{"NETC_RANK", "1"},
                                {"NETC_SIZE", "2"},
                                {"NETC_LOCAL_RANK", "1"},
                                {"NETC_LOCAL_SIZE", "2"},
                                {"NETC_NCCL_ID", std::string(256, 'a')}}};
  constexpr int kSeeds = static_cast<int>(std::size(seeds));
  for (int i = 0; i < kMutants; ++i) {
    Environment env = seeds[i % kSeeds];
    auto entry = env.begin();
    std::advance(entry, static_cast<long>(rng() % env.size()));
    if (rng() % 8 == 0)
      env.erase(entry);
    else
      entry->second = mutate(entry->second, rng);
    auto info = parseLaunchEnvironment(env);
    if (!info) {
      EXPECT_FALSE(info.message().empty());
      continue;
    }
    EXPECT_GE(info->size, 1);
    EXPECT_LE(info->size, kMaxRanks);
    EXPECT_GE(info->rank, 0);
    EXPECT_LT(info->rank, info->size);
    EXPECT_GE(info->localRank, 0);
    EXPECT_LT(info->localRank, info->localSize);
    EXPECT_LE(info->localSize, info->size);
    EXPECT_LE(info->jobId.size(), kMaxJobIdLength);
    EXPECT_EQ(info->launcher == "netc", !info->jobId.empty());
  }
}

} // namespace
} // namespace netc::comm

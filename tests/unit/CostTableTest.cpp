// CostTableTest.cpp -- the cost tables of codegen/CostTable.h: writing and
// reading back a table exactly, the built-in tables, choosing a profile and
// a link, the link formulas, loading by name or path, and corrupt or
// unreadable tables refused with a message that names the file and the
// field (or line) at fault.
#include "codegen/CostTable.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

namespace {

using namespace netc::cost;
using netc::plan::OpKind;
using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr OpKind kAllKinds[] = {
#define OP(Id, Name, Role, Backward) OpKind::Id,
#include "codegen/Ops.def"
#undef OP
};

/// A table with awkward values: doubles that print long, a unicode device.
CostTable sampleTable() {
  CostTable table;
  table.backend = "cpu";
  table.device = "host \"avx2\" \xC3\xA9, 4 cores";
  table.source = "made by CostTableTest";
  table.memoryBytes = 25769803776;
  table.devicesPerNode = 4;
  for (int threads : {1, 2, 4}) {
    ComputeProfile profile;
    profile.threads = threads;
    profile.stepOverheadUs = 1.0 / 3.0 * threads;
    profile.sampleOverheadUs = 0.1;
    int i = 0;
    for (OpKind kind : kAllKinds)
      if (hasRate(kind))
        profile.ops[kind] = OpRate{0.1 * ++i, 1.234567890123e10 * threads + i / 7.0};
    table.profiles.push_back(profile);
  }
  table.links[std::string(kIntraNode)] = Link{3.0, 4.1e9, "measured", {{1024, 2, 9.0}, {1 << 20, 2, 200.0}}};
  table.links[std::string(kInterNode)] = Link{30.000000000000004, 1.2e9, "assumed: 10 Gb/s Ethernet", {}};
  table.machine = MachineDescription{
      "AMD EPYC 9B14 96-Core Processor", "avx2", "netc avx2", "0.1.0", 4, 1.0 / 3.0 * 100, 41.5, 2};
  return table;
}

/// The sample table as JSON, changed by `edit`, parsed as "t.json": the message.
std::string refusal(const std::function<void(Json &)> &edit) {
  Json json = Json::parse(costTableJson(sampleTable()));
  edit(json);
  netc::Expected<CostTable> table = parseCostTable(json.dump(2), "t.json");
  EXPECT_FALSE(table.ok());
  return table.ok() ? std::string() : table.message();
}

fs::path tempPath(const std::string &name) {
  return fs::path(::testing::TempDir()) / ("netc-cost-table-" + name);
}

TEST(CostTable, RoundTripsThroughJson) {
  const CostTable table = sampleTable();
  const std::string text = costTableJson(table);
  netc::Expected<CostTable> back = parseCostTable(text, "t.json");
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->backend, table.backend);
  EXPECT_EQ(back->device, table.device);
  EXPECT_EQ(back->source, table.source);
  EXPECT_EQ(back->memoryBytes, table.memoryBytes);
  EXPECT_EQ(back->devicesPerNode, table.devicesPerNode);
  ASSERT_EQ(back->profiles.size(), table.profiles.size());
  for (size_t p = 0; p < table.profiles.size(); ++p) {
    const ComputeProfile &a = table.profiles[p], &b = back->profiles[p];
    EXPECT_EQ(a.threads, b.threads);
    EXPECT_EQ(a.stepOverheadUs, b.stepOverheadUs);
    EXPECT_EQ(a.sampleOverheadUs, b.sampleOverheadUs);
    ASSERT_EQ(a.ops.size(), b.ops.size());
    for (const auto &[kind, rate] : a.ops) {
      ASSERT_TRUE(b.ops.count(kind)) << netc::plan::opName(kind);
      EXPECT_EQ(rate.overheadUs, b.ops.at(kind).overheadUs);
      EXPECT_EQ(rate.rate, b.ops.at(kind).rate);
    }
  }
  ASSERT_EQ(back->links.size(), 2u);
  for (const auto &[name, link] : table.links) {
    const Link &other = back->links.at(name);
    EXPECT_EQ(link.alphaUs, other.alphaUs);
    EXPECT_EQ(link.bytesPerSecond, other.bytesPerSecond);
    EXPECT_EQ(link.source, other.source);
    ASSERT_EQ(link.allReduces.size(), other.allReduces.size()) << name;
    for (size_t i = 0; i < link.allReduces.size(); ++i) {
      EXPECT_EQ(link.allReduces[i].bytes, other.allReduces[i].bytes);
      EXPECT_EQ(link.allReduces[i].ranks, other.allReduces[i].ranks);
      EXPECT_EQ(link.allReduces[i].us, other.allReduces[i].us);
    }
  }
  EXPECT_EQ(back->links.at(std::string(kIntraNode)).allReduces.size(), 2u);
  ASSERT_TRUE(back->machine.has_value());
  EXPECT_EQ(back->machine->cpu, table.machine->cpu);
  EXPECT_EQ(back->machine->isa, table.machine->isa);
  EXPECT_EQ(back->machine->dense, table.machine->dense);
  EXPECT_EQ(back->machine->netc, table.machine->netc);
  EXPECT_EQ(back->machine->cores, table.machine->cores);
  EXPECT_EQ(back->machine->peakGflopsPerCore, table.machine->peakGflopsPerCore);
  EXPECT_EQ(back->machine->peakCopyGbPerSecond, table.machine->peakCopyGbPerSecond);
  EXPECT_EQ(back->machine->busyTasks, 2);
  EXPECT_EQ(costTableJson(*back), text);
  // The layout the format documents: the version first, 2-space indent, ops in Ops.def order.
  EXPECT_EQ(text.rfind("{\n  \"netc_cost_table\": 1,\n  \"backend\": \"cpu\",", 0), 0u) << text;
  EXPECT_LT(text.find("\"slice-input\""), text.find("\"dense\""));
  EXPECT_LT(text.find("\"dense\""), text.find("\"update\""));
  EXPECT_EQ(text.find("\"all-reduce\""), std::string::npos);
}

TEST(CostTable, ProfilesAreSortedByThreads) {
  Json json = Json::parse(costTableJson(sampleTable()));
  std::swap(json["profiles"][0], json["profiles"][2]);
  netc::Expected<CostTable> table = parseCostTable(json.dump(), "t.json");
  ASSERT_TRUE(table.ok()) << table.message();
  ASSERT_EQ(table->profiles.size(), 3u);
  EXPECT_EQ(table->profiles[0].threads, 1);
  EXPECT_EQ(table->profiles[1].threads, 2);
  EXPECT_EQ(table->profiles[2].threads, 4);
}

TEST(CostTable, BuiltinTablesParseAndHaveEveryOp) {
  EXPECT_EQ(builtinCostTableNames(), (std::vector<std::string>{"cpu", "h100"}));
  for (const std::string &name : builtinCostTableNames()) {
    std::optional<CostTable> table = builtinCostTable(name);
    ASSERT_TRUE(table.has_value()) << name;
    ASSERT_FALSE(table->profiles.empty()) << name;
    for (const ComputeProfile &profile : table->profiles)
      for (OpKind kind : kAllKinds)
        EXPECT_EQ(profile.ops.count(kind), hasRate(kind) ? 1u : 0u)
            << name << " " << netc::plan::opName(kind);
    EXPECT_TRUE(table->links.count(std::string(kIntraNode))) << name;
    EXPECT_TRUE(table->links.count(std::string(kInterNode))) << name;
    // What netc writes reads back to the same table.
    netc::Expected<CostTable> again = parseCostTable(costTableJson(*table), name);
    ASSERT_TRUE(again.ok()) << again.message();
    EXPECT_EQ(costTableJson(*again), costTableJson(*table));
  }
  const std::optional<CostTable> h100 = builtinCostTable("h100");
  ASSERT_TRUE(h100.has_value());
  EXPECT_EQ(h100->backend, "cuda");
  EXPECT_EQ(h100->devicesPerNode, 8);
  ASSERT_EQ(h100->profiles.size(), 1u);
  EXPECT_EQ(h100->profiles[0].threads, 0);
  EXPECT_NE(h100->source.find("not measured"), std::string::npos);
  EXPECT_EQ(builtinCostTable("cpu")->backend, "cpu");
  EXPECT_FALSE(builtinCostTable("a100").has_value());
  EXPECT_FALSE(builtinCostTable("").has_value());
}

TEST(CostTable, ProfileForPicksExactNearestBelowOrSmallest) {
  CostTable table = sampleTable();
  table.profiles.erase(table.profiles.begin()); // threads 2 and 4
  std::string note = "stale";
  EXPECT_EQ(table.profileFor(2, &note).threads, 2);
  EXPECT_EQ(note, "");
  EXPECT_EQ(table.profileFor(4, &note).threads, 4);
  EXPECT_EQ(note, "");
  EXPECT_EQ(table.profileFor(3, &note).threads, 2);
  EXPECT_EQ(note, "the cost table has no 3-thread profile; using its 2-thread one");
  EXPECT_EQ(table.profileFor(64, &note).threads, 4);
  EXPECT_EQ(note, "the cost table has no 64-thread profile; using its 4-thread one");
  EXPECT_EQ(table.profileFor(1, &note).threads, 2);
  EXPECT_EQ(note, "the cost table has no 1-thread profile; using its 2-thread one");
  EXPECT_EQ(table.profileFor(3).threads, 2); // no note wanted
  // 0: the machine's cores.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int expected = cores >= 4 ? 4 : 2;
  EXPECT_EQ(table.profileFor(0, &note).threads, expected);
  EXPECT_EQ(note.empty(), cores == expected) << note;
}

// Profiles measured with several ranks computing at once serve jobs of that
// many ranks on the machine; jobs of another count fall back to those measured
// alone, and say so. They read back, and a (threads, ranks) pair is unique.
TEST(CostTable, ProfilesOfRanksComputingAtOnce) {
  CostTable table = sampleTable(); // threads 1, 2, 4 alone
  ComputeProfile busy = table.profiles[0];
  busy.ranks = 2;
  busy.stepOverheadUs = 99;
  table.profiles.push_back(busy); // 1 thread with 2 ranks at once
  std::string note = "stale";
  EXPECT_EQ(table.profileFor(1, &note, 2).stepOverheadUs, 99);
  EXPECT_EQ(note, "");
  EXPECT_EQ(table.profileFor(1, &note, 1).ranks, 1);
  EXPECT_EQ(note, "");
  // 2 threads with 2 ranks: none measured so; the nearest below among them.
  EXPECT_EQ(table.profileFor(2, &note, 2).stepOverheadUs, 99);
  EXPECT_EQ(note, "the cost table has no 2-thread profile; using its 1-thread one");
  // 4 ranks at once: none measured so; the 1-thread profile measured alone.
  const ComputeProfile &alone = table.profileFor(1, &note, 4);
  EXPECT_EQ(alone.ranks, 1);
  EXPECT_EQ(alone.threads, 1);
  EXPECT_EQ(note, "the cost table's 1-thread profile (measured alone: none with 4 ranks computing at once)");
  auto back = parseCostTable(costTableJson(table), "t.json");
  ASSERT_TRUE(back.ok()) << back.message();
  ASSERT_EQ(back->profiles.size(), 4u);
  EXPECT_EQ(back->profiles.back().ranks, 2); // sorted by ranks, then threads
  EXPECT_EQ(costTableJson(*back), costTableJson(*parseCostTable(costTableJson(*back), "t.json")));
  table.profiles.push_back(busy);
  auto twice = parseCostTable(costTableJson(table), "t.json");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.message(),
            "t.json: profiles[4].threads: 1 with 2 ranks again (profiles[3] has them too); a thread "
            "count has one profile per rank count");
}

TEST(CostTable, ADeviceProfileMatchesAnyThreads) {
  const std::optional<CostTable> h100 = builtinCostTable("h100");
  ASSERT_TRUE(h100.has_value());
  for (int threads : {0, 1, 7, 1024}) {
    std::string note = "stale";
    EXPECT_EQ(h100->profileFor(threads, &note).threads, 0);
    EXPECT_EQ(note, "");
  }
}

TEST(CostTable, LinkForSplitsAtDevicesPerNode) {
  const CostTable table = sampleTable(); // 4 devices per node
  EXPECT_EQ(&table.linkFor(1), &table.links.at(std::string(kIntraNode)));
  EXPECT_EQ(&table.linkFor(4), &table.links.at(std::string(kIntraNode)));
  EXPECT_EQ(&table.linkFor(5), &table.links.at(std::string(kInterNode)));
  EXPECT_EQ(&table.linkFor(64), &table.links.at(std::string(kInterNode)));
}

TEST(CostTable, LinkTimesFollowAlphaBeta) {
  const Link link{10, 1e9, "", {}};
  EXPECT_DOUBLE_EQ(link.sendUs(0), 10);
  EXPECT_DOUBLE_EQ(link.sendUs(1e6), 1010);
  EXPECT_EQ(link.allReduceUs(1e6, 1), 0);
  EXPECT_EQ(link.allReduceUs(1e6, 0), 0);
  EXPECT_DOUBLE_EQ(link.allReduceUs(1e6, 2), 2 * 10 + 1000); // 2(N-1)α + 2(N-1)/N·n/β
  EXPECT_DOUBLE_EQ(link.allReduceUs(1e6, 4), 6 * 10 + 1.5 * 1000);
  EXPECT_DOUBLE_EQ(link.allReduceUs(4e6, 8), 14 * 10 + 1.75 * 4000);
}

TEST(CostTable, MeasuredAllReducesCorrectTheLine) {
  // The line gives 2·10 + 1000 = 1020 us for 1 MB over 2 ranks; measured: 510
  // (ratio 1/2). At 4 MB the line gives 4020, measured 8040 (ratio 2).
  const Link link{10, 1e9, "", {{1e6, 2, 510}, {4e6, 2, 8040}}};
  EXPECT_DOUBLE_EQ(link.ringAllReduceUs(1e6, 2), 1020);
  EXPECT_DOUBLE_EQ(link.allReduceUs(1e6, 2), 510); // at a point: the point
  EXPECT_DOUBLE_EQ(link.allReduceUs(4e6, 2), 8040);
  // Between the points the ratio goes linearly in log(bytes): at 2 MB, halfway.
  EXPECT_DOUBLE_EQ(link.allReduceUs(2e6, 2), link.ringAllReduceUs(2e6, 2) * 1.25);
  // Beyond the ends the end's ratio holds.
  EXPECT_DOUBLE_EQ(link.allReduceUs(1e3, 2), link.ringAllReduceUs(1e3, 2) * 0.5);
  EXPECT_DOUBLE_EQ(link.allReduceUs(1e9, 2), link.ringAllReduceUs(1e9, 2) * 2);
  // Other rank counts: the line at that count, corrected by the same ratio.
  EXPECT_DOUBLE_EQ(link.allReduceUs(1e6, 8), link.ringAllReduceUs(1e6, 8) * 0.5);
  EXPECT_EQ(link.allReduceUs(1e6, 1), 0);
  // The ratio moves monotonically between two points.
  double before = 0;
  for (double bytes = 1e6; bytes <= 4e6; bytes *= 1.1) {
    const double ratio = link.allReduceUs(bytes, 2) / link.ringAllReduceUs(bytes, 2);
    EXPECT_GE(ratio, before - 1e-12) << bytes;
    before = ratio;
  }
}

TEST(CostTable, SyntaxErrorNamesLineAndColumn) {
  netc::Expected<CostTable> table =
      parseCostTable("{\n  \"netc_cost_table\": 1,\n  \"backend\" \"cpu\"\n}", "t.json");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.message().rfind("t.json: line 3, column ", 0), 0u) << table.message();
  EXPECT_NE(table.message().find("not valid JSON: "), std::string::npos) << table.message();
  EXPECT_EQ(table.message().find("json.exception"), std::string::npos) << table.message();

  table = parseCostTable("", "t.json");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.message().rfind("t.json: line 1, column 1: not valid JSON", 0), 0u) << table.message();

  table = parseCostTable("{\"a\": 1e999}", "t.json");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.message().rfind("t.json: ", 0), 0u) << table.message();

  table = parseCostTable(std::string(100, '['), "t.json");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.message(), "t.json: line 1, column 33: nested more than 32 deep; not a cost table");
}

TEST(CostTable, RefusesCorruptTablesNamingTheField) {
  EXPECT_EQ(refusal([](Json &j) { j["profiles"][0]["ops"].erase("sparse"); }),
            "t.json: profiles[0].ops: no entry for op 'sparse'");
  EXPECT_EQ(refusal([](Json &j) { j["profiles"][1]["ops"]["dense"]["rate"] = -3; }),
            "t.json: profiles[1].ops.dense.rate: must be a positive number, got -3");
  EXPECT_EQ(refusal([](Json &j) { j["profiles"][1]["ops"]["dense"]["rate"] = 0.0; }),
            "t.json: profiles[1].ops.dense.rate: must be a positive number, got 0.0");
  EXPECT_EQ(refusal([](Json &j) { j["profiles"][0]["ops"]["activate"]["rate"] = 2e18; }),
            "t.json: profiles[0].ops.activate.rate: must be at most 1e18, got 2e+18");
  EXPECT_EQ(refusal([](Json &j) { j["profiles"][0]["ops"]["activate"]["overhead_us"] = "fast"; }),
            "t.json: profiles[0].ops.activate.overhead_us: must be a number, got a string");
  EXPECT_EQ(refusal([](Json &j) { j["profiles"][0]["step_overhead_us"] = -1; }),
            "t.json: profiles[0].step_overhead_us: must be zero or more, got -1");
  EXPECT_EQ(refusal([](Json &j) { j["profiles"][0]["ops"]["dense"].erase("rate"); }),
            "t.json: profiles[0].ops.dense.rate: missing");
  EXPECT_EQ(refusal([](Json &j) { j["profiles"][0]["ops"]["dens"] = j["profiles"][0]["ops"]["dense"]; }),
            "t.json: profiles[0].ops: unknown op 'dens'; did you mean 'dense'?");
  EXPECT_EQ(
      refusal([](Json &j) { j["profiles"][0]["ops"]["all-reduce"] = j["profiles"][0]["ops"]["dense"]; }),
      "t.json: profiles[0].ops: 'all-reduce' is a communication op, whose time the links give; it has "
      "no entry here");
  EXPECT_EQ(refusal([](Json &j) { j["devices_per_nod"] = 2; }),
            "t.json: unknown key 'devices_per_nod' at the top level; did you mean 'devices_per_node'?");
  EXPECT_EQ(refusal([](Json &j) { j["profiles"][0]["thread"] = 2; }),
            "t.json: profiles[0]: unknown key 'thread'; did you mean 'threads'?");
  EXPECT_EQ(refusal([](Json &j) { j["netc_cost_table"] = 2; }),
            "t.json: netc_cost_table: format 2 is not one this netc reads (it reads format 1); measure the "
            "table again with this netc's `netc calibrate`");
  EXPECT_EQ(refusal([](Json &j) { j.erase("netc_cost_table"); }).rfind("t.json: not a netc cost table", 0),
            0u);
  EXPECT_EQ(refusal([](Json &j) { j["profiles"][2]["threads"] = 1; }),
            "t.json: profiles[2].threads: 1 again (profiles[0] has it too); a thread count has one profile");
  EXPECT_EQ(refusal([](Json &j) { j["profiles"] = Json::array(); }),
            "t.json: profiles: must hold at least one profile");
  EXPECT_EQ(refusal([](Json &j) { j["profiles"][0]["threads"] = 2000; }),
            "t.json: profiles[0].threads: must be an integer from 0 (a device) to 1024, got 2000");
  EXPECT_EQ(refusal([](Json &j) { j["profiles"][0]["threads"] = 1.5; }),
            "t.json: profiles[0].threads: must be an integer from 0 (a device) to 1024, got 1.5");
  EXPECT_EQ(refusal([](Json &j) { j["memory_bytes"] = 0; }),
            "t.json: memory_bytes: must be a positive integer of bytes up to 2^60, got 0");
  EXPECT_EQ(refusal([](Json &j) { j["devices_per_node"] = true; }),
            "t.json: devices_per_node: must be an integer from 1 to 65536, got true");
  EXPECT_EQ(refusal([](Json &j) { j["backend"] = "tpu"; }),
            "t.json: backend: must be \"cpu\" or \"cuda\", got 'tpu'");
  EXPECT_EQ(refusal([](Json &j) { j["device"] = ""; }),
            "t.json: device: must be a non-empty string, got an empty one");
  EXPECT_EQ(refusal([](Json &j) { j.erase("source"); }), "t.json: source: missing");
  EXPECT_EQ(refusal([](Json &j) { j["links"].erase("inter-node"); }), "t.json: links.inter-node: missing");
  EXPECT_EQ(refusal([](Json &j) { j["links"]["intra-node"]["bytes_per_second"] = 1e16; }),
            "t.json: links.intra-node.bytes_per_second: must be at most 1e15 (1 PB/s), got 1e+16");
  EXPECT_EQ(refusal([](Json &j) { j["links"]["intra-node"]["alpha_us"] = nullptr; }),
            "t.json: links.intra-node.alpha_us: must be a number, got null");
  EXPECT_EQ(refusal([](Json &j) { j["links"]["intra-node"]["all_reduce"] = 3; }),
            "t.json: links.intra-node.all_reduce: must be an array of measured all-reduces ({\"bytes\", "
            "\"ranks\", \"us\"} each), got 3");
  EXPECT_EQ(
      refusal([](Json &j) { j["links"]["intra-node"]["all_reduce"][1]["bytes"] = 1024; }),
      "t.json: links.intra-node.all_reduce[1].bytes: must be more than the point before (1024 bytes): the "
      "points go by increasing size");
  EXPECT_EQ(refusal([](Json &j) { j["links"]["intra-node"]["all_reduce"][0]["ranks"] = 1; }),
            "t.json: links.intra-node.all_reduce[0].ranks: must be an integer from 2 to 65536, got 1");
  EXPECT_EQ(refusal([](Json &j) { j["links"]["intra-node"]["all_reduce"][0]["us"] = 0; }),
            "t.json: links.intra-node.all_reduce[0].us: must be a positive number of microseconds, got 0");
  EXPECT_EQ(refusal([](Json &j) { j["links"]["intra-node"]["all_reduce"][0]["byte"] = 1; }),
            "t.json: links.intra-node.all_reduce[0]: unknown key 'byte'; did you mean 'bytes'?");
  EXPECT_EQ(refusal([](Json &j) {
              Json &points = j["links"]["intra-node"]["all_reduce"];
              points = Json::array();
              for (int i = 1; i <= 65; ++i)
                points.push_back({{"bytes", i}, {"ranks", 2}, {"us", 1.0}});
            }),
            "t.json: links.intra-node.all_reduce: holds 65 points; a link has at most 64");
  EXPECT_EQ(refusal([](Json &j) { j = Json::array(); }),
            "t.json: must be a JSON object (a netc cost table), got an array");
  // 80e9 is an integer written as a float: accepted.
  Json json = Json::parse(costTableJson(sampleTable()));
  json["memory_bytes"] = 80e9;
  netc::Expected<CostTable> table = parseCostTable(json.dump(), "t.json");
  ASSERT_TRUE(table.ok()) << table.message();
  EXPECT_EQ(table->memoryBytes, 80000000000u);
}

TEST(CostTable, TheMachineIsOptionalAndChecked) {
  Json json = Json::parse(costTableJson(sampleTable()));
  json.erase("machine");
  netc::Expected<CostTable> without = parseCostTable(json.dump(2), "t.json");
  ASSERT_TRUE(without.ok()) << without.message();
  EXPECT_FALSE(without->machine.has_value());
  EXPECT_EQ(costTableJson(*without).find("\"machine\""), std::string::npos);
  EXPECT_EQ(refusal([](Json &j) { j["machine"]["cpu"] = ""; }),
            "t.json: machine.cpu: must be a non-empty string, got an empty one");
  EXPECT_EQ(refusal([](Json &j) { j["machine"].erase("netc"); }), "t.json: machine.netc: missing");
  EXPECT_EQ(refusal([](Json &j) { j["machine"]["cores"] = 0; }),
            "t.json: machine.cores: must be an integer from 1 to 1024, got 0");
  EXPECT_EQ(refusal([](Json &j) { j["machine"]["peak_gflops_per_core"] = -1; }),
            "t.json: machine.peak_gflops_per_core: must be zero or more, got -1");
  EXPECT_EQ(refusal([](Json &j) { j["machine"]["isa"] = 512; }),
            "t.json: machine.isa: must be a string, got 512");
  EXPECT_EQ(refusal([](Json &j) { j["machine"]["densee"] = "x"; }).rfind("t.json: machine: unknown key", 0),
            0u);
  EXPECT_EQ(refusal([](Json &j) { j["machine"] = "AMD"; }),
            "t.json: machine: must be an object, got a string");
  // busy_tasks is optional (tables written before it have none: 0) and checked.
  json = Json::parse(costTableJson(sampleTable()));
  json["machine"].erase("busy_tasks");
  netc::Expected<CostTable> older = parseCostTable(json.dump(2), "t.json");
  ASSERT_TRUE(older.ok()) << older.message();
  EXPECT_EQ(older->machine->busyTasks, 0);
  EXPECT_EQ(refusal([](Json &j) { j["machine"]["busy_tasks"] = -1; }),
            "t.json: machine.busy_tasks: must be an integer from 0 to 1048576, got -1");
  EXPECT_EQ(
      refusal([](Json &j) { j["machine"]["busy_tasks"] = "2"; }).rfind("t.json: machine.busy_tasks: ", 0),
      0u);
}

TEST(CostTable, TheBuiltinCpuTableNamesItsMachine) {
  const std::optional<CostTable> table = builtinCostTable("cpu");
  ASSERT_TRUE(table.has_value());
  ASSERT_TRUE(table->machine.has_value()) << "codegen/cost/cpu.json: measure it again with netc calibrate";
  EXPECT_FALSE(table->machine->cpu.empty());
  EXPECT_GT(table->machine->peakGflopsPerCore, 0);
}

TEST(CostTable, RefusesADuplicateKey) {
  std::string text = costTableJson(sampleTable());
  const std::string rate = "\"rate\": ";
  text.insert(text.find(rate), "\"rate\": 5,\n");
  netc::Expected<CostTable> table = parseCostTable(text, "t.json");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.message(),
            "t.json: profiles[0].ops.slice-input.rate: appears twice; each key is written once");
}

TEST(CostTable, ReadsFilesOfAtMostOneMebibyte) {
  const fs::path good = tempPath("good.json");
  {
    std::ofstream out(good, std::ios::binary);
    out << costTableJson(sampleTable());
  }
  netc::Expected<CostTable> table = readCostTable(good.string());
  ASSERT_TRUE(table.ok()) << table.message();
  EXPECT_EQ(table->profiles.size(), 3u);

  const fs::path big = tempPath("big.json");
  {
    std::ofstream out(big, std::ios::binary);
    out << costTableJson(sampleTable()) << std::string((1 << 20) + 10, ' ');
  }
  table = readCostTable(big.string());
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.message().rfind(big.string() + ": ", 0), 0u) << table.message();
  EXPECT_NE(table.message().find("bytes; a cost table is at most 1 MiB"), std::string::npos)
      << table.message();

  const fs::path missing = tempPath("no-such-table.json");
  table = readCostTable(missing.string());
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.message().rfind(missing.string() + ": cannot open the cost table: No such file", 0), 0u)
      << table.message();

  table = readCostTable(::testing::TempDir());
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.message().rfind(::testing::TempDir(), 0), 0u) << table.message();
  fs::remove(good);
  fs::remove(big);
}

TEST(CostTable, LoadsABuiltinTableOrAFile) {
  netc::Expected<CostTable> table = loadCostTable("h100");
  ASSERT_TRUE(table.ok()) << table.message();
  EXPECT_EQ(table->backend, "cuda");
  const fs::path file = tempPath("load.json");
  {
    std::ofstream out(file, std::ios::binary);
    out << costTableJson(sampleTable());
  }
  table = loadCostTable(file.string());
  ASSERT_TRUE(table.ok()) << table.message();
  EXPECT_EQ(table->devicesPerNode, 4);
  fs::remove(file);
  table = loadCostTable("h10");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.message(),
            "'h10': no such cost table: the built-in ones are 'cpu' and 'h100', and there is "
            "no file of that name (a table that `netc calibrate` wrote); did you mean 'h100'?");
  table = loadCostTable("missing/table.json");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.message().rfind("missing/table.json: cannot open the cost table: ", 0), 0u)
      << table.message();
}

} // namespace

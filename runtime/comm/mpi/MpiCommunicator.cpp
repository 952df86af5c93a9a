// MpiCommunicator.cpp -- the "mpi" communicator, built as the plugin
// libnetc-comm-mpi.so (runtime/comm/Plugin.h), the only part of netc that
// links libmpi. Every operation is MPI's non-blocking form completed by one
// watched wait: it tests the request, and while it waits it replies to the
// other ranks' asks and asks them itself, on a duplicate of the world
// communicator (the side channel, CheckIn.h), so that at --comm-timeout the
// ranks that did not answer are named. A wait spins for 50 µs, then yields until 5 ms (the
// other rank is usually a step's jitter away; a nap then would add its own
// delay to every exchange of the all-reduce), then sleeps in short naps, so
// ranks that share cores (--oversubscribe) do not starve each other.
// All-reduces above 16 MiB are split: on this machine kind Open MPI's
// all-reduce takes 40x longer from 32 MiB on (docs/performance.md,
// "Gradient buckets"); those of at most 4 KiB are an all-gather reduced in
// rank order; the others take a ring (see create()). MPI is initialised
// once per process (FUNNELED: only the training thread calls it) and
// finalised at exit -- unless a wait failed, since finalising then would
// wait for the missing rank.
#include "runtime/comm/CheckIn.h"
#include "runtime/comm/Communicator.h"
#include "runtime/comm/Plugin.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sched.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace netc::comm {

namespace {

using Clock = std::chrono::steady_clock;

/// The largest piece of one all-reduce.
constexpr int64_t kMaxPieceBytes = int64_t{16} << 20;
/// All-reduces up to this size (the loss sums, evaluation counts, stop
/// requests) are latency-bound: an all-gather of every rank's values,
/// reduced here in rank order -- which also makes their result independent
/// of any reduction order.
constexpr int64_t kGatherBytes = 4096;
/// The largest piece of a broadcast or a message (MPI counts are int).
constexpr int64_t kMaxTransferBytes = int64_t{1} << 30;
constexpr int kCheckInTag = 7;

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return fmt::format("MPI error {}", code);
  return std::string(text, static_cast<size_t>(length));
}

MPI_Datatype mpiType(DataType type) {
  switch (type) {
  case DataType::F32: return MPI_FLOAT;
  case DataType::F64: return MPI_DOUBLE;
  case DataType::I64: return MPI_INT64_T;
  case DataType::U8: return MPI_UINT8_T;
  }
  return MPI_BYTE;
}

/// Set once any communicator of the process has failed: finalising MPI
/// would then wait for the rank that is missing.
bool gJobFailed = false;

class MpiCommunicator final : public Communicator {
public:
  /// `jobRanks`: for a communicator split from the job's, each of its ranks'
  /// rank in the job of `jobSize` (empty: the job's own communicator).
  MpiCommunicator(const CommOptions &options, int rank, int size, int localRank, int localSize, MPI_Comm data,
                  MPI_Comm side, std::vector<int> jobRanks = {}, int jobSize = 0)
      : Communicator(options), rank_(rank), size_(size), localRank_(localRank), localSize_(localSize),
        data_(data), side_(side), heard_(static_cast<size_t>(size)), jobRanks_(std::move(jobRanks)),
        jobSize_(jobRanks_.empty() ? size : jobSize) {
    if (jobRanks_.empty())
      for (int r = 0; r < size; ++r)
        jobRanks_.push_back(r);
    liveCommunicators().push_back(this);
  }
  ~MpiCommunicator() override {
    auto &live = liveCommunicators();
    live.erase(std::remove(live.begin(), live.end(), this), live.end());
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (split_ && !finalized && !gJobFailed) {
      MPI_Comm_free(&data_);
      MPI_Comm_free(&side_);
    }
  }
  MpiCommunicator(const MpiCommunicator &) = delete;
  MpiCommunicator &operator=(const MpiCommunicator &) = delete;

  std::string_view kind() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localRank() const override { return localRank_; }
  int localSize() const override { return localSize_; }
  bool failed() const override { return !failure_.empty(); }

  Expected<std::shared_ptr<Communicator>> split(int color, int key, std::string_view what) override {
    if (failed())
      return fail(failure_);
    // Every rank's colour and key through a watched all-gather first:
    // MPI_Comm_split cannot time out, so it starts only once every rank has
    // come this far.
    const std::array<int64_t, 2> mine = {color, key};
    std::vector<int64_t> all(static_cast<size_t>(2 * size_));
    if (Status s = allGather(mine.data(), sizeof mine, all.data(), what); !s)
      return Error{s.message()};
    std::vector<std::pair<int64_t, int>> members; // (key, rank) of the ranks of this colour
    for (int r = 0; r < size_; ++r)
      if (all[static_cast<size_t>(2 * r)] == color)
        members.push_back({all[static_cast<size_t>(2 * r + 1)], r});
    std::sort(members.begin(), members.end());
    std::vector<int> jobRanks;
    for (const auto &member : members)
      jobRanks.push_back(jobRanks_[static_cast<size_t>(member.second)]);
    MPI_Comm data = MPI_COMM_NULL, side = MPI_COMM_NULL;
    if (int code = MPI_Comm_split(data_, color, key, &data); code != MPI_SUCCESS)
      return fail(broken(what, code));
    if (int code = MPI_Comm_split(side_, color, key, &side); code != MPI_SUCCESS)
      return fail(broken(what, code));
    MPI_Comm_set_errhandler(data, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(side, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(data, &rank);
    MPI_Comm_size(data, &size);
    auto part = std::make_shared<MpiCommunicator>(options(), rank, size, localRank_, localSize_, data, side,
                                                  std::move(jobRanks), jobSize_);
    part->split_ = true;
    part->setRankRoles(rankRoles());
    return std::shared_ptr<Communicator>(std::move(part));
  }

  Expected<int64_t> startAllReduce(void *data, int64_t count, DataType type, ReduceOp op,
                                   std::string_view what) override {
    if (failed())
      return fail(failure_);
    Pending pending;
    pending.what = what;
    pending.sequence = ++sequence_;
    const int64_t element = static_cast<int64_t>(dataTypeSize(type));
    if (count * element <= kGatherBytes) {
      pending.gathered.resize(static_cast<size_t>(count * element * size_));
      pending.target = data;
      pending.count = count;
      pending.type = type;
      pending.op = op;
      MPI_Request request = MPI_REQUEST_NULL;
      const int bytes = static_cast<int>(count * element);
      if (int code = MPI_Iallgather(data, bytes, MPI_BYTE, pending.gathered.data(), bytes, MPI_BYTE, data_,
                                    &request);
          code != MPI_SUCCESS)
        return fail(broken(what, code));
      pending.requests.push_back(request);
      return remember(std::move(pending));
    }
    const int64_t piece = std::max<int64_t>(1, kMaxPieceBytes / element);
    auto *bytes = static_cast<char *>(data);
    for (int64_t first = 0; first < count; first += piece) {
      MPI_Request request = MPI_REQUEST_NULL;
      const int n = static_cast<int>(std::min(piece, count - first));
      if (int code = MPI_Iallreduce(MPI_IN_PLACE, bytes + first * element, n, mpiType(type),
                                    op == ReduceOp::Sum ? MPI_SUM : MPI_MAX, data_, &request);
          code != MPI_SUCCESS)
        return fail(broken(what, code));
      pending.requests.push_back(request);
    }
    return remember(std::move(pending));
  }

  Status wait(int64_t id) override {
    if (failed())
      return fail(failure_);
    auto it = pending_.find(id);
    if (it == pending_.end())
      return fail(fmt::format("{}: no operation {} was started (a bug in netc)", me(), id));
    Pending pending = std::move(it->second);
    pending_.erase(it);
    if (Status s = complete(pending.requests, pending.what, pending.sequence, pending.peer); !s)
      return s;
    if (!pending.gathered.empty())
      reduceGathered(pending);
    return Status::success();
  }

  void progress() override {
    // MPI_Testall completes what it can and leaves the rest started; the
    // completed requests become MPI_REQUEST_NULL, which wait() takes as done.
    for (auto &[id, pending] : pending_) {
      int done = 0;
      MPI_Testall(static_cast<int>(pending.requests.size()), pending.requests.data(), &done,
                  MPI_STATUSES_IGNORE);
    }
  }

  Status broadcast(void *data, int64_t bytes, int root, std::string_view what) override {
    if (failed())
      return fail(failure_);
    const int64_t sequence = ++sequence_;
    std::vector<MPI_Request> requests;
    for (int64_t first = 0; first < bytes; first += kMaxTransferBytes) {
      MPI_Request request = MPI_REQUEST_NULL;
      const int n = static_cast<int>(std::min(kMaxTransferBytes, bytes - first));
      if (int code = MPI_Ibcast(static_cast<char *>(data) + first, n, MPI_BYTE, root, data_, &request);
          code != MPI_SUCCESS)
        return fail(broken(what, code));
      requests.push_back(request);
    }
    return complete(requests, what, sequence, -1);
  }

  Status allGather(const void *mine, int64_t bytes, void *all, std::string_view what) override {
    if (failed())
      return fail(failure_);
    const int64_t sequence = ++sequence_;
    if (bytes > kMaxTransferBytes)
      return fail(fmt::format("{}: the {} gathers {} bytes per rank, more than the {} one MPI call moves",
                              me(), what, bytes, kMaxTransferBytes));
    std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
    if (int code = MPI_Iallgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes),
                                  MPI_BYTE, data_, &requests[0]);
        code != MPI_SUCCESS)
      return fail(broken(what, code));
    return complete(requests, what, sequence, -1);
  }

  Status send(const void *data, int64_t bytes, int peer, std::string_view what) override {
    auto request = startTransfer(const_cast<void *>(data), bytes, peer, what, true);
    return request ? wait(*request) : request.status();
  }
  Status receive(void *data, int64_t bytes, int peer, std::string_view what) override {
    auto request = startTransfer(data, bytes, peer, what, false);
    return request ? wait(*request) : request.status();
  }
  Expected<int64_t> startSend(const void *data, int64_t bytes, int peer, std::string_view what) override {
    return startTransfer(const_cast<void *>(data), bytes, peer, what, true);
  }
  Expected<int64_t> startReceive(void *data, int64_t bytes, int peer, std::string_view what) override {
    return startTransfer(data, bytes, peer, what, false);
  }

  Status barrier(std::string_view what) override {
    if (failed())
      return fail(failure_);
    const int64_t sequence = ++sequence_;
    std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
    if (int code = MPI_Ibarrier(data_, &requests[0]); code != MPI_SUCCESS)
      return fail(broken(what, code));
    return complete(requests, what, sequence, -1);
  }

  Status finish(std::string_view what) override {
    if (Status st = barrier(what); !st)
      return st;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Finalize();
    failure_ = "this rank has finished its part in the MPI job: no operation may follow";
    return Status::success();
  }

private:
  struct Pending {
    std::vector<MPI_Request> requests;
    std::string_view what;
    int64_t sequence = 0;
    int peer = -1; // a send or receive: the rank at the other end
    // A small all-reduce: every rank's values, to reduce into `target`.
    std::vector<char> gathered;
    void *target = nullptr;
    int64_t count = 0;
    DataType type = DataType::F32;
    ReduceOp op = ReduceOp::Sum;
  };

  /// This rank as messages name it: its place in the job.
  std::string me() const { return rankName(jobRanks_[static_cast<size_t>(rank_)], jobSize_); }

  /// Keeps a started all-reduce until its wait; returns its request.
  int64_t remember(Pending pending) {
    const int64_t id = nextRequest_++;
    pending_.emplace(id, std::move(pending));
    return id;
  }

  template <class T> void reduceInRankOrder(const Pending &p) {
    auto *out = static_cast<T *>(p.target);
    const auto *all = reinterpret_cast<const T *>(p.gathered.data());
    for (int64_t i = 0; i < p.count; ++i) {
      T value = all[i];
      for (int r = 1; r < size_; ++r) {
        const T next = all[static_cast<int64_t>(r) * p.count + i];
        value = p.op == ReduceOp::Sum ? T(value + next) : std::max(value, next);
      }
      out[i] = value;
    }
  }

  void reduceGathered(const Pending &p) {
    switch (p.type) {
    case DataType::F32: return reduceInRankOrder<float>(p);
    case DataType::F64: return reduceInRankOrder<double>(p);
    case DataType::I64: return reduceInRankOrder<int64_t>(p);
    case DataType::U8: return reduceInRankOrder<uint8_t>(p);
    }
  }

  std::string broken(std::string_view what, int code) {
    gJobFailed = true;
    failure_ = fmt::format("{}: MPI failed in the {} {}: {}", me(), what, position(), mpiError(code));
    return failure_;
  }

  /// Starts a send or receive of `bytes` bytes, in pieces MPI's int counts
  /// can carry; wait() completes it.
  Expected<int64_t> startTransfer(void *data, int64_t bytes, int peer, std::string_view what, bool sending) {
    if (failed())
      return fail(failure_);
    if (peer < 0 || peer >= size_ || peer == rank_)
      return fail(fmt::format("{}: the {} names rank {} (a bug in netc)", me(), what, peer));
    Pending pending;
    pending.what = what;
    // A send or receive belongs to the phase after the last collective (its
    // check-ins carry that collective's number).
    pending.sequence = sequence_;
    pending.peer = peer;
    for (int64_t first = 0; first < bytes; first += kMaxTransferBytes) {
      MPI_Request request = MPI_REQUEST_NULL;
      const int n = static_cast<int>(std::min(kMaxTransferBytes, bytes - first));
      char *at = static_cast<char *>(data) + first;
      const int code = sending ? MPI_Isend(at, n, MPI_BYTE, peer, 0, data_, &request)
                               : MPI_Irecv(at, n, MPI_BYTE, peer, 0, data_, &request);
      if (code != MPI_SUCCESS)
        return fail(broken(what, code));
      pending.requests.push_back(request);
    }
    return remember(std::move(pending));
  }

  /// Waits for `requests`, watching: check-ins are answered, sent at half
  /// the timeout, and at the timeout the verdict is the error.
  Status complete(std::vector<MPI_Request> &requests, std::string_view what, int64_t sequence, int peer) {
    const auto start = Clock::now();
    const auto timeout =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options().timeoutSeconds));
    const auto askAt = start + timeout / 2, deadline = start + timeout;
    const CheckIn here{false, ++waits_, sequence, step(), epoch(), std::string(what)};
    for (auto &entry : heard_)
      entry.reset();
    bool asked = false;
    // The longest time this rank itself did not run between two polls
    // (stopped, or starved of CPU): a stall it caused, not the others.
    auto previous = start;
    Clock::duration absent{};
    for (int64_t round = 0;; ++round) {
      int done = 0;
      if (int code =
              MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
          code != MPI_SUCCESS)
        return fail(broken(what, code));
      if (done)
        return Status::success();
      // The first rounds only spin: most waits end within microseconds.
      if (round < 64)
        continue;
      const auto now = Clock::now();
      absent = std::max(absent, now - previous);
      previous = now;
      // The job's other communicators (a pipeline's stages, a stage's
      // copies): their ranks' asks are answered from this wait, in turn.
      for (MpiCommunicator *other : liveCommunicators())
        if (other != this)
          other->listen(here, /*inTurn=*/true);
      if (bool someoneAsks = listen(here); (someoneAsks || now >= askAt) && !asked) {
        send(here, -1);
        asked = true;
      }
      if (now >= deadline) {
        listen(here);
        StallReport report{rank_, size_, what, position(), options().timeoutSeconds, sequence, peer, heard_};
        report.absentSeconds = std::chrono::duration<double>(absent).count();
        report.jobRanks = jobRanks_;
        report.jobSize = jobSize_;
        report.roles = rankRoles();
        gJobFailed = true;
        failure_ = stallMessage(report);
        return fail(failure_);
      }
      // Then yield, then nap: a rank waiting for one that shares its core
      // (--oversubscribe, or other work on the machine) must let it run.
      const auto waited = now - start;
      if (waited < std::chrono::microseconds(50))
        continue;
      if (waited < std::chrono::microseconds(5000))
        sched_yield();
      else
        std::this_thread::sleep_for(
            std::chrono::microseconds(waited < std::chrono::milliseconds(50) ? 20 : 200));
    }
  }

  /// Takes every message of the side channel: an ask is replied to at once
  /// (this rank waits in `here`), a reply to this wait's ask is recorded
  /// (one to an earlier wait is late and dropped). True when someone asked.
  /// `inTurn`: `here` is a wait of another communicator of the job, said so
  /// in the replies; this one waits for nothing, so every reply is late.
  bool listen(const CheckIn &here, bool inTurn = false) {
    bool asked = false;
    while (!(inTurn && failed())) {
      int arrived = 0;
      MPI_Status status;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kCheckInTag, side_, &arrived, &status) != MPI_SUCCESS || !arrived)
        break;
      int length = 0;
      MPI_Get_count(&status, MPI_CHAR, &length);
      std::string bytes(static_cast<size_t>(std::max(length, 0)), '\0');
      MPI_Recv(bytes.data(), length, MPI_CHAR, status.MPI_SOURCE, kCheckInTag, side_, MPI_STATUS_IGNORE);
      const int from = status.MPI_SOURCE;
      auto message = decodeCheckIn(bytes);
      if (!message || from < 0 || from >= size_ || from == rank_)
        continue;
      if (!message->reply) {
        CheckIn reply = here;
        reply.reply = true;
        reply.inTurn = inTurn;
        reply.wait = message->wait;
        send(reply, from);
        asked = true;
      } else if (!inTurn && message->wait == here.wait) {
        heard_[static_cast<size_t>(from)] = std::move(*message);
      }
    }
    return asked;
  }

  /// The process's communicators (the job's and those split from it).
  static std::vector<MpiCommunicator *> &liveCommunicators() {
    static std::vector<MpiCommunicator *> live;
    return live;
  }

  /// Sends `message` to rank `to` (-1: every other rank). Sent eagerly
  /// (small) and never waited for: the receiver may be the missing rank.
  /// The requests are freed; MPI completes them on its own.
  void send(const CheckIn &message, int to) {
    auto bytes = std::make_shared<std::string>(encodeCheckIn(message));
    // Kept while MPI may still read them; a wait long enough to check in is
    // rare, so the oldest are dropped only past a generous bound.
    if (sent_.size() >= 256)
      sent_.erase(sent_.begin());
    sent_.push_back(bytes);
    for (int p = 0; p < size_; ++p)
      if (p != rank_ && (to < 0 || p == to)) {
        MPI_Request request = MPI_REQUEST_NULL;
        if (MPI_Isend(bytes->data(), static_cast<int>(bytes->size()), MPI_CHAR, p, kCheckInTag, side_,
                      &request) == MPI_SUCCESS)
          MPI_Request_free(&request);
      }
  }

  int rank_, size_, localRank_, localSize_;
  MPI_Comm data_, side_;
  std::map<int64_t, Pending> pending_;
  int64_t nextRequest_ = 1;
  int64_t sequence_ = 0;
  int64_t waits_ = 0; // waits begun: names this rank's asks
  std::vector<std::optional<CheckIn>> heard_;
  std::vector<std::shared_ptr<std::string>> sent_; // check-in buffers MPI may still read
  std::string failure_;
  std::vector<int> jobRanks_; // each rank's rank in the job
  int jobSize_ = 0;
  bool split_ = false; // made by split(): its MPI communicators are its own to free
};

MpiCommunicator *gCommunicator = nullptr;

void finalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && !gJobFailed)
    MPI_Finalize();
}

/// Under srun without PMIx, what to do (Debian's Open MPI joins a Slurm
/// job only through PMIx); empty otherwise.
std::string pmixHint(const LaunchInfo &launch) {
  return launch.launcher == "srun" && !launch.pmix
             ? "srun started this task without PMIx (PMIX_RANK is not set), and Debian's Open MPI joins a "
               "Slurm job only through it: run srun --mpi=pmix"
             : "";
}

/// Ends the process when MPI_Init has not returned within the timeout: it
/// waits for every rank of the job to start MPI, and a rank that exited
/// before (a wrapper that exits 0, `netc check` started as a rank) would make
/// it wait forever. Nothing can interrupt MPI_Init, so the watchdog says why
/// and exits.
class JoinWatchdog {
public:
  JoinWatchdog(const LaunchInfo &launch, double seconds) {
    message_ = fmt::format(
        "netc: error: {}: joining the job (MPI_Init) did not complete within --comm-timeout {:g} s: a rank "
        "did not start netc train's MPI (it exited first, or runs another program); start every rank with "
        "the same netc command{}{}\n",
        rankName(launch.rank, launch.size), seconds, pmixHint(launch).empty() ? "" : "; ", pmixHint(launch));
    thread_ = std::thread([this, seconds] {
      std::unique_lock lock(mutex_);
      if (!done_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return joined_; })) {
        [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, message_.data(), message_.size());
        std::_Exit(1);
      }
    });
  }
  ~JoinWatchdog() {
    {
      std::lock_guard lock(mutex_);
      joined_ = true;
    }
    done_.notify_all();
    thread_.join();
  }

private:
  std::string message_;
  std::mutex mutex_;
  std::condition_variable done_;
  bool joined_ = false;
  std::thread thread_;
};

Communicator *create(const LaunchInfo &launch, const CommOptions &options, std::string &error) {
  if (gCommunicator)
    return gCommunicator;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Open MPI's non-blocking all-reduce (libnbc) takes a binomial tree below
    // 4 ranks, whatever the size: measured here, 247 KB between 2 ranks took
    // 2x as long as the blocking all-reduce, and a ring as long. A ring up to
    // 8 ranks (one machine), recursive halving and doubling (Rabenseifner)
    // beyond; the user's own choice wins. Small all-reduces do not use it.
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", launch.size <= 8 ? "1" : "3", /*overwrite=*/0);
    int provided = 0;
    int code = MPI_SUCCESS;
    {
      JoinWatchdog watchdog(launch, options.timeoutSeconds);
      code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    }
    if (code != MPI_SUCCESS) {
      error =
          "MPI_Init failed: " + mpiError(code) + (pmixHint(launch).empty() ? "" : "; " + pmixHint(launch));
      return nullptr;
    }
    std::atexit(finalizeAtExit);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != launch.rank || size != launch.size) {
    error =
        fmt::format("MPI says this process is rank {} of {}, but its environment said {} ({}): {}", rank,
                    size, rankName(launch.rank, launch.size), launch.launcher,
                    pmixHint(launch).empty() ? "is netc's MPI the launcher's (Open MPI)?" : pmixHint(launch));
    return nullptr;
  }
  MPI_Comm data = MPI_COMM_NULL, side = MPI_COMM_NULL, node = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &data);
  MPI_Comm_dup(MPI_COMM_WORLD, &side);
  MPI_Comm_set_errhandler(data, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(side, MPI_ERRORS_RETURN);
  int localRank = launch.localRank, localSize = launch.localSize;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_rank(node, &localRank);
    MPI_Comm_size(node, &localSize);
    MPI_Comm_free(&node);
  }
  gCommunicator = new MpiCommunicator(options, rank, size, localRank, localSize, data, side);
  return gCommunicator;
}

} // namespace

} // namespace netc::comm

extern "C" __attribute__((visibility("default"))) int netc_comm_plugin_abi() {
  return netc::comm::kCommPluginAbi;
}

extern "C" __attribute__((visibility("default"))) netc::comm::Communicator *
netc_comm_plugin_create(const netc::comm::LaunchInfo *launch, const netc::comm::CommOptions *options,
                        std::string *error) {
  return netc::comm::create(*launch, *options, *error);
}

// DataParallel.h -- the steps of trainNetwork that make one process a rank
// of a data-parallel job (docs/architecture.md §Data parallelism): joining the job's communicator (the
// local one for a single process, which needs no MPI), settling the batch of
// each rank (a resumed run keeps its global batch), the agreements that
// every rank prepared the same run (each side's failure or fingerprint:
// netc version, settings, data, checkpoint, network) and the seed rank 0
// chose, and the run header's line about the job.
#pragma once

#include "api/TrainingSteps.h"
#include "runtime/comm/Agreement.h"
#include "runtime/comm/Communicator.h"

#include <memory>
#include <optional>
#include <string>

namespace netc::training {

/// Whether a job's data goes through a device transport (NCCL): a rank a
/// netc parent started (--gpus), or one of several on `--device cuda`.
bool usesDeviceTransport(const Launch &launch, std::string_view device, std::string_view backend);

/// The communicator of `launch`: local for one process, the MPI plugin for
/// a CPU job of several (an error saying what is missing when it cannot be
/// loaded), NCCL on the rank's GPU where usesDeviceTransport says so (its
/// id from the netc parent, or made by rank 0 and carried over MPI) unless
/// a pipeline's ranks share GPUs on any of the job's machines (sharedGpus,
/// agreed over the host communicator: then every rank keeps the host's).
Expected<std::shared_ptr<comm::Communicator>> joinCommunicator(const Launch &launch, std::string_view device,
                                                               std::string_view backend, double commTimeout,
                                                               bool pipeline = false);

/// The GPUs a pipeline's ranks share (0: a GPU each). Under a launcher
/// (mpirun, srun), a pipeline on --device cuda[:N] with more ranks on this
/// machine than it has GPUs from N on runs local rank r on GPU N + (r mod
/// that count), and the job's data goes through the host (MPI) on every
/// machine (joinCommunicator), since NCCL cannot join two ranks on one GPU.
/// A job netc starts itself with a GPU for each rank (its job id set) never
/// shares.
int sharedGpus(const Launch &launch, std::string_view device, std::string_view backend, bool pipeline);
/// sharedGpus's rule: `localRanks` ranks on a machine of `deviceCount` GPUs
/// from GPU `firstGpu` on share them when they outnumber them.
int gpusToShare(int localRanks, int firstGpu, int deviceCount);

/// joinCommunicator for a training run.
Step<std::shared_ptr<comm::Communicator>> joinJob(const TrainSettings &s);

/// Each rank's --batch: the one given; else for a resumed run the global
/// batch its checkpoint records divided among this run's ranks (refused,
/// with the rank counts that divide it, when they do not); else 1.
Step<int64_t> settleBatch(const TrainSettings &s, const StartPoint &start);

/// Host threads per rank: --threads, or by default this machine's cores
/// shared among its ranks (0, all cores, for one process).
int threadsPerRank(int threads, const Launch &launch);

/// What every rank must share before the data is split and the network built:
/// netc's version, every setting that changes the steps, the data sets'
/// contents and the checkpoint's.
comm::Fingerprint runFingerprint(const TrainSettings &s, const RunSettings &run, const StartPoint &start,
                                 const TrainingData &data);
/// ... and after: the network's text, what was compiled from it, and the
/// pipeline's layout (pipelineFingerprint; "" for none).
comm::Fingerprint networkFingerprint(const CompiledNetwork &network, const TrainingPlan &plan,
                                     const Normalizing &normalizing, const std::string &pipeline = {});

/// Every rank brings `mine` (its refusal, if any) and `fingerprint`; all
/// get the first refusal, or a refusal naming the first difference from rank
/// 0, or nothing -- and `seed` becomes rank 0's. One process: `mine` as is.
/// `errorOnEveryRank` is set when the refusal is an agreed one.
std::optional<Refusal> agreeAcrossRanks(comm::Communicator &comm, std::optional<Refusal> mine,
                                        const comm::Fingerprint &fingerprint, uint64_t &seed,
                                        std::string_view what, bool &errorOnEveryRank);

/// The run header's line about the job (empty for one process).
std::string jobLine(const TrainSettings &s, const comm::Communicator &comm, const plan::Plan &plan);

} // namespace netc::training

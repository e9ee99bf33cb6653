//===- StepLog.h - a program's write-ahead log between checkpoints -*- C++
//-*-===//
//
// With --checkpoint DIR, rank 0 appends one record per step to DIR/wal.log
// (rtxrt/checkpoint/Wal.h): the step, the data position, the RNG counter, the loss
// scale and, with --deterministic, the hash of the whole state (every
// rank's blocks, summed). It is fsynced every --wal-sync-every records.
// A committed checkpoint covers the records up to the oldest checkpoint
// kept; they are cut.
//
// Resume = the newest checkpoint + the log. With --deterministic, the steps
// after the checkpoint that the log holds are replayed and each step's state
// hash must equal the logged one: a mismatch is an error naming the step, on
// every rank (each reads the log, and each knows the summed hash). Without
// it, or when the checkpoint was written under a plan that cuts the state
// into other blocks (its hashes do not compare), those records are dropped
// and written again as the steps are redone.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_STEPLOG_H
#define RTXRT_LIB_PROGRAM_STEPLOG_H

#include "Flags.h"

#include "rtxrt/checkpoint/Wal.h"

#include <map>
#include <memory>
#include <string>

namespace rtxrt::program {

/// A hash as the log's messages and the checkpoints' metadata show it
/// (0x and 16 hex digits).
std::string hexHash(uint64_t value);

/// How the plan behind a checkpoint's `metadata` differs from this run's
/// (`mesh`, and `layout`: the summed rankLayoutHash), in words; empty when
/// it is the same. Another mesh sums the gradients in another order, and
/// another layout cuts the state into other blocks: either way the state
/// hashes of the two runs do not compare.
std::string planDifference(const std::map<std::string, std::string> &metadata,
                           const std::string &mesh, const std::string &layout);

class StepLog {
public:
  /// The path of the log under a checkpoint directory.
  static std::string pathIn(const std::string &checkpointDir);

  /// `resumedStep`: the step of the checkpoint the run starts from (0:
  /// none); `otherPlan`: how the plan that wrote it differs from this one
  /// (planDifference; empty: the same).
  StepLog(const CheckpointFlags &flags, int64_t rank, int64_t resumedStep,
          const std::string &otherPlan);
  ~StepLog();
  StepLog(const StepLog &) = delete;
  StepLog &operator=(const StepLog &) = delete;

  /// Whether each step needs the state hash (--deterministic).
  bool hashesState() const { return deterministic_; }
  /// After step `stepsDone` (the --data batches read so far equal it), with
  /// the summed state hash (0 without --deterministic). Compares it with
  /// the logged record while replaying, else appends (rank 0).
  void afterStep(int64_t stepsDone, uint64_t stateHash);
  /// A checkpoint was committed: the records up to `oldestKept` (the oldest
  /// committed checkpoint left) are covered and cut (rank 0).
  void covered(int64_t oldestKept);
  /// Makes every record durable (the end of the run).
  void sync();

private:
  int64_t rank_;
  bool deterministic_;
  std::string path_;
  std::unique_ptr<wal::Writer> writer_; ///< rank 0 only
  /// The logged records to compare with while replaying, by step.
  std::map<int64_t, wal::Record> replay_;
  int64_t replayedFirst_ = -1, replayedLast_ = -1;
};

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_STEPLOG_H

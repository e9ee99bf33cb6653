//===- FileTier.h - offloaded values in files (SSD/NVMe) --------*- C++ -*-===//
//
// One file per key in a directory: DIR/KEY.buf for keys made of letters,
// digits, '.', '_' and '-' (not starting with '.'); other keys are sanitised
// and get a hash of the key. The constructor probes O_DIRECT with
// DIR/rtx-offload-probe.tmp; with it, bytes move through an aligned staging
// buffer, since tensors are neither 4096-aligned nor sized in blocks.
// fetch()'s and store()'s transfers go through io_uring (UringQueue), or,
// where it is refused or not tried, through pread/pwrite on a worker thread.
//
// No fsync anywhere: the files are working storage for one run, not
// checkpoints, and the destructor removes them.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_OFFLOAD_FILETIER_H
#define RTXRT_OFFLOAD_FILETIER_H

#include "Tier.h"

#include <map>

namespace rtxrt::offload {

class FileTier final : public Tier {
public:
  /// Throws Error for a directory that is missing from `options` or cannot
  /// hold files.
  FileTier(const OffloadOptions &options, Done done);
  /// Removes the files, and the directory if it made it.
  ~FileTier() override;

  void place(const std::string &key, Entry &e) override;
  void stage(Transfer &t) override;
  int moveNow(Transfer &t) override;
  int start(Transfer &t) override;
  std::string where(const Entry &e) const override;
  void describe(OffloadStats &stats) const override;

private:
  void note(const std::string &line) const {
    if (log_)
      log_(line);
  }
  bool probeDirect() const;
  void startThread(bool tryUring);
  /// Moves an open file's bytes with pread/pwrite; 0 or an error.
  static int moveOpen(Transfer &t);
  int open(Transfer &t, int flags);
  /// Done on the thread: closes the file and hands a read's bytes over.
  void finish(Transfer *t, int error);

  std::string directory_;
  std::function<void(const std::string &)> log_;
  Done done_;
  bool createdDirectory_ = false;
  bool direct_ = false;
  std::map<std::string, std::string> owners_; // file name -> key
  bool uring_ = false;
  /// Completes transfers: a UringQueue, or a WorkerThread running
  /// pread/pwrite. Last: destroyed first, while what it uses is alive.
  std::unique_ptr<TransferThread> thread_;
};

} // namespace rtxrt::offload

#endif // RTXRT_OFFLOAD_FILETIER_H

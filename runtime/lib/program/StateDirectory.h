//===- StateDirectory.h - a directory replaced all at once ------*- C++ -*-===//
//
// A --save-state directory changes all at once, so that a save that fails
// half-way (a full disk, a crash) never leaves a mix of old and new files:
//
//   1. the new state is written into the sibling DIR.new, every file
//      fsynced, steps_done last, then DIR.new itself;
//   2. the old DIR is renamed to DIR.old (rename(2) cannot replace a
//      non-empty directory), DIR.new to DIR, the parent fsynced after each;
//   3. DIR.old is removed.
//
// At any point one whole state is findable: DIR when it has steps_done;
// else DIR.new when it has steps_done (a crash between the renames: the new
// state, complete); else DIR.old (the old one). committedStateDir says
// which, and the next save clears what a crash left.
//
// Test hook: RTX_FAULT_FAIL_WRITE_AFTER_BYTES=N makes the writer fail with
// ENOSPC once a save has written N bytes, as a full disk would.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_STATEDIRECTORY_H
#define RTXRT_LIB_PROGRAM_STATEDIRECTORY_H

#include "checkpoint/DurableFiles.h"

#include <cstdint>
#include <string>

namespace rtxrt::program {

/// Writes the files of a new state beside `dir`, then puts them in its
/// place. Every error throws rtxrt::Error naming the file and strerror.
class StateDirectoryWriter {
public:
  /// Clears what an interrupted save left and creates DIR.new. Refuses a
  /// `dir` that exists, is not empty and has no steps_done: it is not a
  /// state directory, and replacing it would delete someone's files.
  explicit StateDirectoryWriter(const std::string &dir);
  /// Removes DIR.new unless commit() succeeded.
  ~StateDirectoryWriter();
  StateDirectoryWriter(const StateDirectoryWriter &) = delete;
  StateDirectoryWriter &operator=(const StateDirectoryWriter &) = delete;
  /// Writes DIR.new/NAME durably (written, fsynced, closed).
  void write(const std::string &name, const std::string &bytes);
  /// fsyncs DIR.new and puts it in the place of DIR (steps 2 and 3).
  void commit();

private:
  std::string dir_, fresh_, old_;
  durable::WriteBudget budget_;
  bool committed_ = false;
};

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_STATEDIRECTORY_H

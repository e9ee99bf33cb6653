//===- DurableFiles.h - files that survive a crash once written -*- C++ -*-===//
//
// The POSIX steps that make a write durable, shared by --save-state
// directories (program/StateDirectory.h) and checkpoints (rtxrt/checkpoint/Checkpoint.h):
// write everything, fsync the file, rename it into place, fsync the
// directory that holds the name. A failed fsync is fatal, never retried
// (design.md, section 4): after one, the kernel may have dropped the dirty
// pages, and a second fsync that succeeds proves nothing.
//
// Test hook: the fault switch RTX_FAULT_FAIL_WRITE_AFTER_BYTES=N makes a
// DurableWriteBudget fail with ENOSPC once N bytes were written through it,
// as a full disk would.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_CHECKPOINT_DURABLEFILES_H
#define RTXRT_LIB_CHECKPOINT_DURABLEFILES_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace rtxrt::durable {

/// Throws rtxrt::Error "WHAT PATH: strerror(error)".
[[noreturn]] void fail(const std::string &what, const std::string &path,
                       int error);

/// The bytes written so far by one save, and where the test hook
/// RTX_FAULT_FAIL_WRITE_AFTER_BYTES makes it fail (-1: never).
struct WriteBudget {
  WriteBudget();
  int64_t written = 0, failAfter = -1;
};

/// Writes all of `size` bytes to `fd` (named `path` in errors), counting
/// them against `budget` when given.
void writeAll(int fd, const void *data, size_t size, const std::string &path,
              WriteBudget *budget = nullptr);
/// fsync(fd), or close it and throw naming `path`.
void syncFile(int fd, const std::string &path);
/// fsync of a directory: makes the names created, renamed or removed in it
/// durable.
void syncDirectory(const std::string &dir);
/// Called between the steps of writeFileAtomically (the checkpoint's
/// failpoints); either may be empty.
struct AtomicWriteHooks {
  std::function<void()> beforeRename, beforeDirectorySync;
};
/// Writes `path` durably: into PATH.tmp, fsynced, renamed to PATH, the
/// directory fsynced. A reader sees the old file or the whole new one.
void writeFileAtomically(const std::string &path, const std::string &bytes,
                         WriteBudget *budget = nullptr,
                         const AtomicWriteHooks &hooks = {});
/// Reads a whole file; throws naming it.
std::string readFile(const std::string &path);

bool exists(const std::string &path);
/// `dir` without trailing slashes.
std::string normalized(std::string dir);
/// The directory that holds `path` ("." for a bare name).
std::string parentOf(const std::string &path);
/// rm -r; nothing when `path` does not exist.
void removeTree(const std::string &path);
/// mkdir, accepting one that exists.
void makeDirectory(const std::string &dir);

} // namespace rtxrt::durable

#endif // RTXRT_LIB_CHECKPOINT_DURABLEFILES_H

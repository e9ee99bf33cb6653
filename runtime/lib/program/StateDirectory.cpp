//===- StateDirectory.cpp - a directory replaced all at once --------------===//

#include "StateDirectory.h"

#include "checkpoint/DurableFiles.h"

#include "rtxrt/program/Arguments.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::program;

using durable::exists;
using durable::fail;
using durable::normalized;
using durable::parentOf;
using durable::removeTree;
using durable::syncDirectory;

namespace {

bool hasStepsDone(const std::string &dir) {
  return exists(dir + "/steps_done");
}

bool isEmptyDirectory(const std::string &dir) {
  DIR *d = opendir(dir.c_str());
  if (!d)
    return false;
  bool empty = true;
  while (dirent *entry = readdir(d))
    if (std::strcmp(entry->d_name, ".") && std::strcmp(entry->d_name, ".."))
      empty = false;
  closedir(d);
  return empty;
}

bool holdsNpyFiles(const std::string &dir) {
  DIR *d = opendir(dir.c_str());
  if (!d)
    return false;
  bool found = false;
  while (dirent *entry = readdir(d)) {
    size_t length = std::strlen(entry->d_name);
    found = found ||
            (length > 4 && !std::strcmp(entry->d_name + length - 4, ".npy"));
  }
  closedir(d);
  return found;
}

void renameOrFail(const std::string &from, const std::string &to) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    fail("cannot rename " + from + " to", to, errno);
}

} // namespace

std::string rtxrt::committedStateDir(const std::string &dir, bool say) {
  std::string base = normalized(dir);
  if (hasStepsDone(base))
    return base;
  // A save that stopped between its renames (StateDirectory.h).
  for (const char *suffix : {".new", ".old"}) {
    std::string other = base + suffix;
    if (!hasStepsDone(other))
      continue;
    if (say)
      std::fprintf(stderr,
                   "note: --state %s: reading %s, the whole state that an "
                   "interrupted --save-state left there\n",
                   dir.c_str(), other.c_str());
    return other;
  }
  // .npy files without steps_done are no state a save committed (it writes
  // steps_done last): refused here, where the programs and rtx-run both
  // read a --state. A folder with none is left to the reader, which names
  // the first file it lacks.
  if (holdsNpyFiles(base))
    throw Error("--state " + dir +
                " lacks a valid steps_done (written by --save-state, last): "
                "its .npy files are not a whole saved state");
  return base;
}

StateDirectoryWriter::StateDirectoryWriter(const std::string &dir)
    : dir_(normalized(dir)), fresh_(dir_ + ".new"), old_(dir_ + ".old") {
  std::string parent = parentOf(dir_);
  // Finish or undo what an interrupted save left (StateDirectory.h).
  if (!exists(dir_)) {
    if (hasStepsDone(fresh_))
      renameOrFail(fresh_, dir_);
    else if (exists(old_))
      renameOrFail(old_, dir_);
    syncDirectory(parent);
  }
  removeTree(old_);
  removeTree(fresh_);

  struct stat info;
  if (lstat(dir_.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode))
      throw Error("--save-state " + dir_ + " exists and is not a directory");
    if (!hasStepsDone(dir_) && !isEmptyDirectory(dir_))
      throw Error("--save-state " + dir_ +
                  " is not empty and holds no state (no steps_done); it "
                  "would be replaced as a whole: choose another directory");
  }
  if (mkdir(fresh_.c_str(), 0755) != 0)
    fail("cannot create", fresh_, errno);
}

StateDirectoryWriter::~StateDirectoryWriter() {
  // A failed save frees what it wrote (a full disk needs the space); the
  // old state was never touched.
  if (!committed_) {
    try {
      removeTree(fresh_);
    } catch (const Error &) {
      // A destructor must not throw; the next save clears DIR.new.
    }
  }
}

void StateDirectoryWriter::write(const std::string &name,
                                 const std::string &bytes) {
  std::string path = fresh_ + "/" + name;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail("cannot write", path, errno);
  durable::writeAll(fd, bytes.data(), bytes.size(), path, &budget_);
  durable::syncFile(fd, path);
  if (close(fd) != 0)
    fail("cannot write", path, errno);
}

void StateDirectoryWriter::commit() {
  std::string parent = parentOf(dir_);
  syncDirectory(fresh_);
  bool hadOld = exists(dir_);
  if (hadOld) {
    renameOrFail(dir_, old_);
    syncDirectory(parent);
  }
  if (std::rename(fresh_.c_str(), dir_.c_str()) != 0) {
    int error = errno;
    if (hadOld) // put the old state back where a reader looks first
      std::rename(old_.c_str(), dir_.c_str());
    fail("cannot rename " + fresh_ + " to", dir_, error);
  }
  syncDirectory(parent);
  committed_ = true;
  if (hadOld) {
    removeTree(old_);
    syncDirectory(parent);
  }
}

//===- StateDirectory.cpp - a directory replaced all at once --------------===//

#include "StateDirectory.h"

#include "rtxrt/Arguments.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::program;

namespace {

[[noreturn]] void fail(const std::string &what, const std::string &path,
                       int error) {
  throw Error(what + " " + path + ": " + std::strerror(error));
}

/// `dir` without trailing slashes, so that DIR.new is a sibling of DIR.
std::string normalized(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  return dir;
}

std::string parentOf(const std::string &dir) {
  auto slash = dir.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : dir.substr(0, slash);
}

bool exists(const std::string &path) {
  struct stat info;
  return lstat(path.c_str(), &info) == 0;
}

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

/// fsync of a directory: makes the names created, renamed or removed in it
/// durable.
void syncDirectory(const std::string &dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    fail("cannot open", dir, errno);
  // A failed fsync is fatal, never retried (design.md, section 4).
  if (fsync(fd) != 0) {
    int error = errno;
    close(fd);
    fail("cannot fsync", dir, error);
  }
  close(fd);
}

int removeEntry(const char *path, const struct stat *, int, struct FTW *) {
  return std::remove(path);
}

void removeTree(const std::string &dir) {
  if (exists(dir) &&
      nftw(dir.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    fail("cannot remove", dir, errno);
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

  if (const char *hook = std::getenv("RTXRT_FAIL_WRITE_AFTER_BYTES"))
    failAfter_ = std::atoll(hook);
}

StateDirectoryWriter::~StateDirectoryWriter() {
  // A failed save frees what it wrote (a full disk needs the space); the
  // old state was never touched.
  if (!committed_) {
    struct stat info;
    if (lstat(fresh_.c_str(), &info) == 0)
      nftw(fresh_.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS);
  }
}

void StateDirectoryWriter::write(const std::string &name,
                                 const std::string &bytes) {
  std::string path = fresh_ + "/" + name;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail("cannot write", path, errno);
  size_t done = 0;
  while (done < bytes.size()) {
    size_t chunk = bytes.size() - done;
    bool injected = false;
    if (failAfter_ >= 0 &&
        written_ + static_cast<int64_t>(chunk) > failAfter_) {
      chunk = static_cast<size_t>(std::max<int64_t>(0, failAfter_ - written_));
      injected = chunk == 0;
    }
    ssize_t n = injected ? -1 : ::write(fd, bytes.data() + done, chunk);
    if (injected)
      errno = ENOSPC; // the test hook: a disk that is full from here on
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int error = n == 0 ? EIO : errno;
      close(fd);
      fail("cannot write", path, error);
    }
    done += static_cast<size_t>(n);
    written_ += n;
  }
  if (fsync(fd) != 0) {
    int error = errno;
    close(fd);
    fail("cannot fsync", path, error);
  }
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

//===- DurableFiles.cpp - files that survive a crash once written ---------===//

#include "DurableFiles.h"

#include "rtxrt/core/Tensor.h"
#include "rtxrt/core/FaultSwitches.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace rtxrt;

void durable::fail(const std::string &what, const std::string &path,
                   int error) {
  throw Error(what + " " + path + ": " + std::strerror(error));
}

durable::WriteBudget::WriteBudget() {
  failAfter = faultCount(FaultSwitch::FailWriteAfterBytes);
}

void durable::writeAll(int fd, const void *data, size_t size,
                       const std::string &path, WriteBudget *budget) {
  const char *bytes = static_cast<const char *>(data);
  size_t done = 0;
  while (done < size) {
    size_t chunk = size - done;
    bool injected = false;
    if (budget && budget->failAfter >= 0 &&
        budget->written + static_cast<int64_t>(chunk) > budget->failAfter) {
      chunk = static_cast<size_t>(
          std::max<int64_t>(0, budget->failAfter - budget->written));
      injected = chunk == 0;
    }
    ssize_t n = injected ? -1 : ::write(fd, bytes + done, chunk);
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
    if (budget)
      budget->written += n;
  }
}

void durable::syncFile(int fd, const std::string &path) {
  if (fsync(fd) != 0) {
    int error = errno;
    close(fd);
    fail("cannot fsync", path, error);
  }
}

void durable::syncDirectory(const std::string &dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    fail("cannot open", dir, errno);
  syncFile(fd, dir);
  close(fd);
}

void durable::writeFileAtomically(const std::string &path,
                                  const std::string &bytes, WriteBudget *budget,
                                  const AtomicWriteHooks &hooks) {
  std::string aside = path + ".tmp";
  int fd = open(aside.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail("cannot write", aside, errno);
  writeAll(fd, bytes.data(), bytes.size(), aside, budget);
  syncFile(fd, aside);
  if (close(fd) != 0)
    fail("cannot write", aside, errno);
  if (hooks.beforeRename)
    hooks.beforeRename();
  if (std::rename(aside.c_str(), path.c_str()) != 0)
    fail("cannot rename " + aside + " to", path, errno);
  if (hooks.beforeDirectorySync)
    hooks.beforeDirectorySync();
  syncDirectory(parentOf(path));
}

std::string durable::readFile(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    fail("cannot read", path, errno);
  std::string bytes;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0)
    bytes.append(buffer, n);
  bool bad = std::ferror(f);
  std::fclose(f);
  if (bad)
    fail("cannot read", path, EIO);
  return bytes;
}

bool durable::exists(const std::string &path) {
  struct stat info;
  return lstat(path.c_str(), &info) == 0;
}

std::string durable::normalized(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  return dir;
}

std::string durable::parentOf(const std::string &path) {
  std::string clean = normalized(path);
  auto slash = clean.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : clean.substr(0, slash);
}

namespace {
int removeEntry(const char *path, const struct stat *, int, struct FTW *) {
  return std::remove(path);
}
} // namespace

void durable::removeTree(const std::string &path) {
  if (exists(path) &&
      nftw(path.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    fail("cannot remove", path, errno);
}

void durable::makeDirectory(const std::string &dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    fail("cannot create", dir, errno);
}

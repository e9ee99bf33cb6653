//===- Children.cpp - the ranks rtx-launch supervises ---------------------===//

#include "Children.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace rtxlaunch;

/// Prints complete lines of `buffer` prefixed with the rank.
void rtxlaunch::flushLines(std::string &buffer, int rank, FILE *stream,
                           bool all) {
  size_t start = 0, newline;
  while ((newline = buffer.find('\n', start)) != std::string::npos) {
    std::fprintf(stream, "[rank %d] %.*s\n", rank,
                 static_cast<int>(newline - start), buffer.data() + start);
    start = newline + 1;
  }
  buffer.erase(0, start);
  if (all && !buffer.empty()) {
    std::fprintf(stream, "[rank %d] %s\n", rank, buffer.c_str());
    buffer.clear();
  }
  std::fflush(stream);
}

/// Whether process `pid` is stopped (SIGSTOP, a debugger): it cannot
/// answer anything until continued.
bool rtxlaunch::isStopped(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  FILE *file = std::fopen(path.c_str(), "r");
  if (!file)
    return false;
  char text[512] = {0};
  size_t n = std::fread(text, 1, sizeof text - 1, file);
  std::fclose(file);
  // "PID (COMMAND) STATE ...": the command may hold spaces and parentheses.
  const char *close = std::strrchr(text, ')');
  return n > 0 && close && close[1] == ' ' &&
         (close[2] == 'T' || close[2] == 't');
}

/// Stops ranks started before a launch failed: SIGTERM to each one's
/// process group, SIGKILL after `graceSeconds`, and reaps them, so that no
/// rank outlives its launcher (it would wait for the missing ones, holding
/// a port and the store, until its timeout).
void rtxlaunch::stopStarted(std::vector<Child> &children, double graceSeconds) {
  for (Child &c : children) {
    kill(-c.pid, SIGTERM);
    for (int fd : {c.out, c.err})
      if (fd >= 0)
        close(fd);
  }
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(graceSeconds * 1000));
  size_t left = children.size();
  bool killed = false;
  while (left > 0) {
    for (Child &c : children)
      if (!c.exited && waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.exited = true;
        --left;
      }
    if (!killed && std::chrono::steady_clock::now() > deadline) {
      for (Child &c : children)
        if (!c.exited)
          kill(-c.pid, SIGKILL);
      killed = true;
    }
    if (left > 0)
      usleep(20000);
  }
}

/// Moves the traces and per-rank metrics a round left in DIR
/// (rank-R.trace.json, rank-R.metrics.jsonl) into DIR/round-K, so that the
/// next round does not overwrite them: the failed round's traces say when
/// the failure was found, the next round's when training resumed.
void rtxlaunch::archiveRoundTraces(const std::string &dir, int round) {
  std::string into = dir + "/round-" + std::to_string(round);
  if (mkdir(into.c_str(), 0755) != 0 && errno != EEXIST)
    return;
  DIR *listing = opendir(dir.c_str());
  if (!listing)
    return;
  auto endsWith = [](const std::string &s, const std::string &end) {
    return s.size() >= end.size() &&
           s.compare(s.size() - end.size(), end.size(), end) == 0;
  };
  while (dirent *entry = readdir(listing)) {
    std::string name = entry->d_name;
    if (name.rfind("rank-", 0) == 0 &&
        (endsWith(name, ".trace.json") || endsWith(name, ".metrics.jsonl")))
      rename((dir + "/" + name).c_str(), (into + "/" + name).c_str());
  }
  closedir(listing);
}

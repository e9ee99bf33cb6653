//===- Retention.cpp - keeping the newest K whole checkpoints -------------===//

#include "DurableFiles.h"
#include "Manifest.h"

#include <algorithm>

using namespace rtxrt;
using namespace rtxrt::checkpoint;

Retention::Retention(const std::string &root, int64_t keep)
    : root_(durable::normalized(root)), keep_(std::max<int64_t>(keep, 1)) {}

void Retention::committedHere(int64_t step) {
  known_[root_ + "/" + checkpointDirName(step)] = true;
}

void Retention::knownCorrupt(const std::string &dir, const std::string &why) {
  std::string path = durable::normalized(dir);
  known_[path] = false;
  unsaid_[path] =
      "checkpoint " + path + " is corrupt, not counted among those kept: " + why;
}

bool Retention::whole(const std::string &dir,
                      std::vector<std::string> *warnings) {
  auto it = known_.find(dir);
  if (it != known_.end()) {
    if (auto said = unsaid_.find(dir); said != unsaid_.end()) {
      if (warnings)
        warnings->push_back(said->second);
      unsaid_.erase(said);
    }
    return it->second;
  }
  bool good = true;
  try {
    CheckpointReader(dir).verifyChunks();
  } catch (const Error &e) {
    good = false;
    if (warnings)
      warnings->push_back(
          "checkpoint " + dir +
          " is corrupt, not counted among those kept: " + e.what());
  }
  known_[dir] = good;
  return good;
}

std::vector<std::string> Retention::apply(std::vector<std::string> *warnings) {
  std::vector<CheckpointRef> committed =
      findCommitted(root_, Verify::Manifest, nullptr);
  std::vector<std::string> removed;
  if (committed.empty())
    return removed;
  // The oldest of the newest keep_ whole ones, from the newest down.
  int64_t oldestKept = -1, kept = 0;
  for (auto it = committed.rbegin(); it != committed.rend() && kept < keep_;
       ++it)
    if (whole(it->dir, warnings)) {
      oldestKept = it->step;
      ++kept;
    }
  // None known whole: the older ones may be all that a --resume can use.
  if (oldestKept < 0)
    return removed;
  int64_t newest = committed.back().step;
  for (const auto &[step, dir] : stepDirectories(root_)) {
    bool done = std::any_of(
        committed.begin(), committed.end(),
        [step = step](const CheckpointRef &c) { return c.step == step; });
    // Older than what is kept, or an uncommitted save older than the
    // newest committed one (one newer may still be in flight).
    if ((done && step < oldestKept) || (!done && step < newest)) {
      durable::removeTree(dir);
      known_.erase(dir);
      removed.push_back(dir);
    }
  }
  if (!removed.empty())
    durable::syncDirectory(root_);
  return removed;
}

std::vector<std::string> checkpoint::retainNewest(const std::string &root,
                                                  int64_t keep) {
  return Retention(root, keep).apply();
}

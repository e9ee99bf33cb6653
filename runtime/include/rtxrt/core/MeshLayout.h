//===- MeshLayout.h - ranks, coordinates and groups of a mesh ---*- C++ -*-===//
//
// The arithmetic of a named device mesh, shared by rtx-run's simulated ranks
// and by emitted programs: a rank's coordinates (the last axis varies
// fastest), the group of ranks a collective over some axes spans, and a
// rank's index within that group.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_MESHLAYOUT_H
#define RTXRT_MESHLAYOUT_H

#include "rtxrt/core/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rtxrt {

class MeshLayout {
public:
  MeshLayout() = default;
  MeshLayout(std::vector<std::string> axisNames, std::vector<int64_t> sizes)
      : names_(std::move(axisNames)), sizes_(std::move(sizes)) {
    if (names_.size() != sizes_.size())
      throw Error("mesh: axis names and sizes differ in number");
  }

  int64_t numRanks() const {
    int64_t n = 1;
    for (int64_t s : sizes_)
      n *= s;
    return n;
  }
  const std::vector<std::string> &axisNames() const { return names_; }
  const std::vector<int64_t> &axisSizes() const { return sizes_; }
  /// "dp:2,tp:2", as rtx-distribute's mesh option spells it (the label of
  /// traces and metrics).
  std::string spec() const {
    std::string text;
    for (size_t i = 0; i < names_.size(); ++i)
      text += (i ? "," : "") + names_[i] + ":" + std::to_string(sizes_[i]);
    return text;
  }

  /// Index of axis `name`; throws when the mesh has no such axis.
  size_t axisIndex(const std::string &name) const {
    for (size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name)
        return i;
    throw Error("mesh has no axis \"" + name + "\"");
  }
  int64_t axisSize(const std::string &name) const {
    return sizes_[axisIndex(name)];
  }

  /// Coordinates of `rank`, one per axis; the last axis varies fastest.
  std::vector<int64_t> coordinates(int64_t rank) const {
    std::vector<int64_t> coords(sizes_.size());
    for (size_t i = sizes_.size(); i-- > 0;) {
      coords[i] = rank % sizes_[i];
      rank /= sizes_[i];
    }
    return coords;
  }
  int64_t rankOf(const std::vector<int64_t> &coords) const {
    int64_t rank = 0;
    for (size_t i = 0; i < sizes_.size(); ++i)
      rank = rank * sizes_[i] + coords[i];
    return rank;
  }

  /// Product of the sizes of `axes`.
  int64_t groupSize(const std::vector<std::string> &axes) const {
    int64_t n = 1;
    for (const std::string &axis : axes)
      n *= axisSize(axis);
    return n;
  }
  /// The index of `rank` within its group over `axes`: its coordinates along
  /// those axes, linearised in the listed order (first = most significant).
  int64_t indexInGroup(int64_t rank,
                       const std::vector<std::string> &axes) const {
    std::vector<int64_t> coords = coordinates(rank);
    int64_t index = 0;
    for (const std::string &axis : axes) {
      size_t a = axisIndex(axis);
      index = index * sizes_[a] + coords[a];
    }
    return index;
  }
  /// The ranks of `rank`'s group over `axes`, ordered by index in group.
  std::vector<int64_t> group(int64_t rank,
                             const std::vector<std::string> &axes) const {
    std::vector<int64_t> base = coordinates(rank);
    int64_t n = groupSize(axes);
    std::vector<int64_t> ranks(n);
    for (int64_t index = 0; index < n; ++index) {
      std::vector<int64_t> coords = base;
      int64_t rest = index;
      for (size_t k = axes.size(); k-- > 0;) {
        size_t a = axisIndex(axes[k]);
        coords[a] = rest % sizes_[a];
        rest /= sizes_[a];
      }
      ranks[index] = rankOf(coords);
    }
    return ranks;
  }

private:
  std::vector<std::string> names_;
  std::vector<int64_t> sizes_;
};

} // namespace rtxrt

#endif // RTXRT_MESHLAYOUT_H

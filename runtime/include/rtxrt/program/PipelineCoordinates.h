//===- PipelineCoordinates.h - ranks along a pipeline's axis ----*- C++ -*-===//
//
// In a pipelined program (rtx-pipeline) a rank's coordinate on the pipeline
// axis picks the stage it runs. A stage's values are sharded over the other
// axes only, so with that coordinate set to 0 a rank names the place its
// blocks have in a value's sharding. runProgram's groups and rtx-run's
// executor both place ranks with this.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_PROGRAM_PIPELINECOORDINATES_H
#define RTXRT_PROGRAM_PIPELINECOORDINATES_H

#include "rtxrt/core/MeshLayout.h"

#include <string>

namespace rtxrt {

class PipelineCoordinates {
public:
  /// No pipeline: every rank is at coordinate 0, in its own place.
  PipelineCoordinates() = default;
  /// Along `axis` of `mesh`, which must outlive this; throws Error when the
  /// mesh has no such axis.
  PipelineCoordinates(const MeshLayout &mesh, const std::string &axis)
      : mesh_(&mesh), axis_(mesh.axisIndex(axis)) {}

  bool pipelined() const { return mesh_ != nullptr; }
  /// `rank`'s coordinate on the pipeline axis (0 without a pipeline).
  int64_t coordinateOf(int64_t rank) const {
    return mesh_ ? mesh_->coordinates(rank)[axis_] : 0;
  }
  /// The rank with `rank`'s coordinates but `c` on the pipeline axis.
  int64_t withCoordinate(int64_t rank, int64_t c) const {
    if (!mesh_)
      return rank;
    std::vector<int64_t> coords = mesh_->coordinates(rank);
    coords[axis_] = c;
    return mesh_->rankOf(coords);
  }
  /// The place of `rank`'s block of a value that coordinate `owner` holds,
  /// or -1 when `rank` is at another coordinate; `rank` itself when
  /// `owner` < 0 (every rank holds the value) or without a pipeline.
  int64_t placeOf(int64_t rank, int64_t owner) const {
    if (owner < 0 || !mesh_)
      return rank;
    return coordinateOf(rank) == owner ? withCoordinate(rank, 0) : -1;
  }

private:
  const MeshLayout *mesh_ = nullptr;
  size_t axis_ = 0;
};

} // namespace rtxrt

#endif // RTXRT_PROGRAM_PIPELINECOORDINATES_H

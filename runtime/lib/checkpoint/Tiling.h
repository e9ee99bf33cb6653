//===- Tiling.h - a manifest's chunks tile its tensors -----------*- C++
//-*-===//
//
// The one check of a manifest's chunks against its tensors, made by the
// commit (a save that does not tile is never committed) and by the reader (a
// manifest that a bad disk, a stray write or a hand edit changed while its
// CRC32C still matches is refused, and the checkpoint skipped like any other
// malformed one): a tensor missing a chunk would otherwise load as zeros,
// and a chunk at a negative offset as elements of its neighbour.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_CHECKPOINT_TILING_H
#define RTXRT_LIB_CHECKPOINT_TILING_H

#include "rtxrt/checkpoint/Checkpoint.h"

#include <string>

namespace rtxrt::checkpoint {

/// Throws an Error starting with `where` and naming the chunk at fault
/// (its tensor, offsets and file) unless every chunk belongs to a tensor of
/// the manifest, has its rank, lies inside it, says its bytes at a
/// non-negative offset and in the number its shape and type make, and the
/// chunks of every tensor tile it exactly: no two overlapping, no element
/// left out.
void checkTiling(const Manifest &manifest, const std::string &where);

} // namespace rtxrt::checkpoint

#endif // RTXRT_LIB_CHECKPOINT_TILING_H

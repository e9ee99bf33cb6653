//===- Reassembly.cpp - the ranks' results as global tensors --------------===//

#include "Reassembly.h"

#include "Distribution.h"

#include "rtxrt/core/FlatBuffer.h"

using namespace mlir;
using namespace mlir::rtx;
using rtxrt::Error;
using rtxrt::Shape;
using rtxrt::Tensor;

static Shape shapeOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return Shape(tensor.getShape().begin(), tensor.getShape().end());
}

/// The runtime's view of a flat result's layout.
static rtxrt::FlatLayout flatLayoutOf(const ProgramResult &result) {
  rtxrt::FlatLayout layout;
  layout.axis = result.flatAxis;
  layout.length = result.flatLength;
  layout.offsets = result.offsets;
  for (const ProgramResult &member : result.members)
    layout.shapes.push_back(shapeOf(member.type));
  return layout;
}

/// The canonical replica holding the same block as `rank`.
static int64_t canonicalReplicaOf(ShardingAttr sharding,
                                  const rtxrt::MeshLayout &mesh, int64_t rank) {
  std::vector<int64_t> coords = mesh.coordinates(rank);
  for (int64_t candidate = 0; candidate < mesh.numRanks(); ++candidate) {
    if (!isCanonicalReplica(sharding, mesh, candidate))
      continue;
    std::vector<int64_t> other = mesh.coordinates(candidate);
    bool same = true;
    for (size_t a = 0; a < coords.size() && same; ++a) {
      const std::string &axis = mesh.axisNames()[a];
      bool used = false;
      if (sharding) {
        for (int64_t d = 0; d < sharding.getRank() && !used; ++d)
          used = llvm::is_contained(sharding.getDimAxes(d), axis);
        used = used || llvm::is_contained(sharding.getPartialAxes(), axis);
      }
      same = !used || coords[a] == other[a];
    }
    if (same)
      return candidate;
  }
  return 0;
}

/// Replicas computed by different ranks agree up to rounding.
static bool sameValues(const Tensor &a, const Tensor &b) {
  double diff2 = 0, ref2 = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.getAsDouble(i), y = b.getAsDouble(i);
    diff2 += (x - y) * (x - y);
    ref2 += y * y;
  }
  return diff2 <= 1e-12 * std::max(ref2, 1e-30);
}

double Reassembly::globalScalar(const StepPrograms &step,
                                const std::vector<double> &local, int64_t owner,
                                ShardingAttr sharding) {
  double value = 0;
  for (int64_t rank = 0; rank < int64_t(local.size()); ++rank)
    if (step.coordinateOf(rank) == owner &&
        isCanonicalReplica(sharding, step.mesh(), step.withCoordinate(rank, 0)))
      value += local[rank];
  return value;
}

std::vector<Tensor> Reassembly::results() const {
  std::vector<Tensor> results;
  for (int64_t i = 0; i < step_.numStepResults(); ++i)
    results.push_back(step_.isFlatMember(i) ? Tensor() // filled below
                                            : assemble(i));
  assembleFlat(results);
  return results;
}

void Reassembly::checkOtherStage(int64_t i, int64_t rank, int64_t c0,
                                 int64_t j0) const {
  const RankProgram &p = step_.of(rank);
  auto it = llvm::find(p.stepResult, i);
  if (it == p.stepResult.end())
    return;
  int64_t other = step_.withCoordinate(rank, c0);
  if (!sameValues(rankResults_[rank][it - p.stepResult.begin()],
                  rankResults_[other][j0]))
    throw Error("result " + std::to_string(i) + ": pipeline ranks " +
                std::to_string(rank) + " and " + std::to_string(other) +
                " hold different values for a tensor both stages keep "
                "(a tied weight's copies diverged)");
}

Tensor Reassembly::assemble(int64_t i) const {
  const rtxrt::MeshLayout &mesh = step_.mesh();
  auto [c0, j0] = step_.ownerOf(i);
  const ProgramResult &result = step_.programs()[c0].program.results[j0];
  ShardingAttr sharding = result.sharding;
  Shape local = shapeOf(result.type);
  Tensor global(getLocalBlock(sharding, local, mesh, 0).globalShape,
                rankResults_[step_.withCoordinate(0, c0)][j0].dtype());
  for (int64_t rank = 0; rank < int64_t(rankResults_.size()); ++rank) {
    if (step_.coordinateOf(rank) != c0) {
      checkOtherStage(i, rank, c0, j0);
      continue;
    }
    int64_t place = step_.withCoordinate(rank, 0);
    if (!isCanonicalReplica(sharding, mesh, place)) {
      int64_t canonical =
          step_.withCoordinate(canonicalReplicaOf(sharding, mesh, place), c0);
      if (!sameValues(rankResults_[rank][j0], rankResults_[canonical][j0]))
        throw Error("result " + std::to_string(i) + ": rank " +
                    std::to_string(rank) + " and rank " +
                    std::to_string(canonical) +
                    " hold different values for the same block, but its "
                    "sharding says they are replicas");
      continue;
    }
    LocalBlock block = getLocalBlock(sharding, local, mesh, place);
    accumulateBlock(global, rankResults_[rank][j0], block.offsets);
  }
  return global;
}

void Reassembly::assembleFlat(std::vector<Tensor> &results) const {
  // Each member from the shards of the ranks of its pipeline coordinate
  // (all ranks without pipelines). A member two stages keep (a tied weight)
  // must come out the same from both.
  int64_t numRanks = static_cast<int64_t>(rankResults_.size());
  for (auto [c, p] : llvm::enumerate(step_.programs()))
    for (auto [j, r] : llvm::enumerate(p.program.results)) {
      if (r.members.empty())
        continue;
      rtxrt::FlatLayout layout = flatLayoutOf(r);
      std::vector<Tensor> shards(numRanks);
      for (int64_t rank = 0; rank < numRanks; ++rank)
        if (step_.coordinateOf(rank) == int64_t(c))
          shards[rank] = rankResults_[rank][j];
      auto placeOf = [&, stage = int64_t(c)](int64_t rank) {
        return step_.pipeline().placeOf(rank, stage);
      };
      for (auto [m, member] : llvm::enumerate(r.members)) {
        Tensor global = rtxrt::assembleFlatMember(
            layout, shards, step_.mesh(), m, toRuntimeSharding(member.sharding),
            shapeOf(member.type), shards[step_.withCoordinate(0, c)].dtype(),
            placeOf);
        Tensor &slot = results[member.index];
        if (slot.defined() && !sameValues(slot, global))
          throw Error("result " + std::to_string(member.index) +
                      ": pipeline stages hold different values for a tensor "
                      "both keep (a tied weight's copies diverged)");
        slot = global;
      }
    }
}

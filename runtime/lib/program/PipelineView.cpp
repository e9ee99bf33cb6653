//===- PipelineView.cpp - one rank's part of a pipelined program ----------===//

#include "PipelineView.h"

#include "rtxrt/program/PipelineCoordinates.h"

#include <algorithm>

using namespace rtxrt;

ProgramSpec rtxrt::program::pipelineView(const ProgramSpec &spec,
                                         int64_t rank) {
  if (spec.stages.empty())
    return spec;
  const std::vector<std::string> &axes = spec.mesh.axisNames();
  if (std::find(axes.begin(), axes.end(), spec.pipelineAxis) == axes.end() ||
      spec.mesh.axisSize(spec.pipelineAxis) != int64_t(spec.stages.size()))
    throw Error("the program has " + std::to_string(spec.stages.size()) +
                " pipeline stages, but its mesh " + spec.mesh.spec() +
                " has no axis \"" + spec.pipelineAxis + "\" of that size");
  int64_t c =
      PipelineCoordinates(spec.mesh, spec.pipelineAxis).coordinateOf(rank);
  const PipelineStage &stage = spec.stages[c];
  ProgramSpec view = spec;
  view.stage = c;
  view.stepResults = spec.results;
  view.stepLossResult = spec.lossResult;
  view.args = stage.args;
  view.results = stage.results;
  view.lossResult = stage.lossResult;
  view.step = stage.step;
  view.offloadSlots = stage.offloadSlots;
  if (spec.lossResult >= 0)
    view.stepLossOwner = spec.ownerOf(spec.lossResult);
  return view;
}

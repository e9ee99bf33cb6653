//===- RTXDialect.cpp - the rtx dialect -----------------------------------===//
//
// Registration, and verification of the `rtx.sharding` attribute wherever it
// is attached (ops, function arguments, function results).
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rtx;

#include "rtx/Dialect/RTX/IR/RTXDialect.cpp.inc"

void RTXDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "rtx/Dialect/RTX/IR/RTXOps.cpp.inc"
      >();
}

/// Checks `sharding` against the mesh it names and the type of the value it
/// describes; `what` names the value in diagnostics ("result 0", "argument 2").
static LogicalResult verifyShardingOfValue(Operation *anchor,
                                           ShardingAttr sharding, Type type,
                                           const Twine &what) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    return anchor->emitError()
           << "sharding of " << what << " describes a value of non-tensor type "
           << type;
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
      anchor, sharding.getMesh().getAttr());
  if (!mesh)
    return anchor->emitError()
           << "sharding of " << what << " refers to unknown mesh "
           << sharding.getMesh();
  if (sharding.getRank() != tensorType.getRank())
    return anchor->emitError()
           << "sharding of " << what << " has rank " << sharding.getRank()
           << " but the value " << tensorType << " has rank "
           << tensorType.getRank();
  auto checkAxis = [&](StringRef axis) -> LogicalResult {
    if (mesh.getAxisSize(axis))
      return success();
    return anchor->emitError()
           << "sharding of " << what << " uses axis \"" << axis
           << "\" which mesh " << sharding.getMesh() << " does not have";
  };
  for (int64_t d = 0; d < sharding.getRank(); ++d)
    for (StringRef axis : sharding.getDimAxes(d))
      if (failed(checkAxis(axis)))
        return failure();
  for (StringRef axis : sharding.getPartialAxes())
    if (failed(checkAxis(axis)))
      return failure();
  return success();
}

/// `rtx.part_of`: {name = string, dim = integer, offset = integer} with dim
/// a dimension of `type` and offset non-negative, and optionally the size
/// of that dimension in the user's tensor (`size`, which initial values
/// need), which the block must fit in.
static LogicalResult verifyPartOf(Operation *op, Attribute value, Type type,
                                  const Twine &what) {
  auto part = dyn_cast<DictionaryAttr>(value);
  auto name = part ? part.getAs<StringAttr>("name") : StringAttr();
  auto dim = part ? part.getAs<IntegerAttr>("dim") : IntegerAttr();
  auto offset = part ? part.getAs<IntegerAttr>("offset") : IntegerAttr();
  auto size = part ? part.getAs<IntegerAttr>("size") : IntegerAttr();
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!name || name.getValue().empty() || !dim || !offset || !tensor ||
      part.size() != (size ? 4u : 3u))
    return op->emitError() << "'rtx.part_of' on " << what
                           << " must be {name = \"USER NAME\", dim = D, "
                              "offset = O[, size = S]} of a ranked tensor, "
                              "got "
                           << value;
  if (dim.getInt() < 0 || dim.getInt() >= tensor.getRank() ||
      offset.getInt() < 0)
    return op->emitError() << "'rtx.part_of' on " << what << ": dim "
                           << dim.getInt() << " is not a dimension of " << type
                           << " or offset " << offset.getInt()
                           << " is negative";
  if (size && offset.getInt() + tensor.getDimSize(dim.getInt()) > size.getInt())
    return op->emitError() << "'rtx.part_of' on " << what << " (" << type
                           << ") lies outside dimension " << dim.getInt()
                           << " of size " << size.getInt() << " of \""
                           << name.getValue() << "\" (offset "
                           << offset.getInt() << ")";
  return success();
}

LogicalResult RTXDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  // A parameter that is a block of a user's tensor.
  if (attr.getName() == getPartOfAttrName()) {
    if (!isa<ParamOp>(op))
      return op->emitError() << "'rtx.part_of' belongs on rtx.param ops and "
                                "parameter arguments";
    return verifyPartOf(op, attr.getValue(), op->getResult(0).getType(),
                        "rtx.param");
  }
  // Marks a function that rtx-optimizer made into a whole training step.
  if (attr.getName() == getTrainStepAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<FunctionOpInterface>(op))
      return op->emitError() << "'rtx.train_step' is a unit attribute of "
                                "functions";
    return success();
  }
  // Where propagation took a sharding from (rtx-propagate-sharding
  // debug-origin).
  if (attr.getName() == getShardingOriginAttrName())
    return success(isa<StringAttr>(attr.getValue()));
  // Whether a module's types are global (logical) or per-rank.
  if (attr.getName() == getPhaseAttrName()) {
    auto phase = dyn_cast<StringAttr>(attr.getValue());
    if (!phase || (phase.getValue() != "global" && phase.getValue() != "local"))
      return op->emitError() << "'rtx.phase' must be \"global\" or \"local\"";
    return success();
  }
  // A function's pipeline schedule, one 'rank R: ACTIONS' string per rank,
  // and its virtual stages per rank (rtx-verify-pipeline-schedule,
  // docs/pipeline.md). Their contents are the simulator's to check.
  if (attr.getName() == "rtx.pipeline_schedule") {
    auto ranks = dyn_cast<ArrayAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !ranks ||
        !llvm::all_of(ranks, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitError() << "'rtx.pipeline_schedule' is an array of "
                                "strings of functions, one 'rank R: ACTIONS' "
                                "per rank";
    return success();
  }
  if (attr.getName() == "rtx.virtual_stages") {
    auto count = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !count || count.getInt() < 1)
      return op->emitError() << "'rtx.virtual_stages' is a positive integer "
                                "of functions";
    return success();
  }
  if (attr.getName() == getStageAttrName()) {
    auto stage = dyn_cast<IntegerAttr>(attr.getValue());
    if (!stage || stage.getInt() < 0)
      return op->emitError() << "'rtx.stage' is a non-negative integer, got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == getBackwardAttrName() ||
      attr.getName() == getGradNormAttrName())
    return success(isa<UnitAttr>(attr.getValue()));
  if (attr.getName() == getPipelineRankAttrName()) {
    auto rank = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !rank || rank.getInt() < 0)
      return op->emitError() << "'rtx.pipeline_rank' is a non-negative "
                                "integer of functions";
    return success();
  }
  if (attr.getName() == getActionAttrName())
    return success(isa<StringAttr>(attr.getValue()));
  if (attr.getName() == getPlanAttrName()) {
    auto plan = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !plan || !plan.getAs<StringAttr>("distribute"))
      return op->emitError() << "'rtx.plan' is a dictionary on a module with "
                                "a string 'distribute' (rtx-auto-partition)";
    return success();
  }
  if (attr.getName() == getPipelineAxisAttrName()) {
    if (!isa<FunctionOpInterface>(op) || !isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'rtx.pipeline_axis' is a string of "
                                "functions";
    return success();
  }
  if (attr.getName() != getShardingAttrName())
    return op->emitError() << "unknown rtx attribute '"
                           << attr.getName().getValue() << "'";
  if (auto sharding = dyn_cast<ShardingAttr>(attr.getValue())) {
    if (op->getNumResults() != 1)
      return op->emitError()
             << "a single 'rtx.sharding' needs an op with one result, this "
                "op has "
             << op->getNumResults() << "; give an array with one per result";
    return verifyShardingOfValue(op, sharding, op->getResult(0).getType(),
                                 "result 0");
  }
  auto array = dyn_cast<ArrayAttr>(attr.getValue());
  if (!array)
    return op->emitError() << "'rtx.sharding' must be a #rtx.sharding or an "
                              "array of them, got "
                           << attr.getValue();
  if (array.size() != op->getNumResults())
    return op->emitError() << "'rtx.sharding' has " << array.size()
                           << " shardings for " << op->getNumResults()
                           << " results";
  for (auto [index, element] : llvm::enumerate(array)) {
    auto sharding = dyn_cast<ShardingAttr>(element);
    if (!sharding)
      return op->emitError() << "'rtx.sharding' element " << index
                             << " is not a #rtx.sharding: " << element;
    if (failed(verifyShardingOfValue(op, sharding,
                                     op->getResult(index).getType(),
                                     "result " + Twine(index))))
      return failure();
  }
  return success();
}

/// An `rtx.flat` layout: a 1-D value whose members are described by
/// dictionaries with the fields that ProgramDescription reads.
static LogicalResult verifyFlatLayout(Operation *op, Attribute value, Type type,
                                      const Twine &what) {
  auto error = [&]() {
    return op->emitError() << "'rtx.flat' on " << what << ": ";
  };
  auto layout = dyn_cast<DictionaryAttr>(value);
  if (!layout)
    return error() << "must be a dictionary, got " << value;
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() != 1)
    return error() << "the value must be a 1-D tensor, got " << type;
  if (!layout.getAs<StringAttr>("axis") || !layout.getAs<IntegerAttr>("length"))
    return error() << "needs 'axis' (a string) and 'length' (an integer)";
  auto members = layout.getAs<ArrayAttr>("members");
  if (!members || members.empty())
    return error() << "needs a non-empty 'members' array";
  for (auto [i, element] : llvm::enumerate(members)) {
    auto member = dyn_cast<DictionaryAttr>(element);
    if (!member || !member.getAs<StringAttr>("state") ||
        !member.getAs<IntegerAttr>("offset") || !member.getAs<TypeAttr>("type"))
      return error() << "member " << i
                     << " needs 'state', 'offset' and 'type', got " << element;
  }
  return success();
}

/// Shared by argument and result attributes. Besides `rtx.sharding`, the
/// training-step passes mark values: `rtx.grad_of` (the parameter a gradient
/// belongs to), `rtx.state` (the key that links a piece of state before and
/// after a step), and, on parameter arguments, `rtx.param`, `rtx.init`,
/// `rtx.seed` and `rtx.part_of`.
static LogicalResult verifyValueAttribute(Operation *op, NamedAttribute attr,
                                          Type type, const Twine &what) {
  StringRef name = attr.getName().getValue();
  auto expect = [&](bool ok, StringRef kind) -> LogicalResult {
    if (ok)
      return success();
    return op->emitError() << "'" << name << "' on " << what << " must be "
                           << kind << ", got " << attr.getValue();
  };
  if (name == RTXDialect::getGradOfAttrName() ||
      name == RTXDialect::getStateAttrName() ||
      name == RTXDialect::getParamAttrName())
    return expect(isa<StringAttr>(attr.getValue()), "a string");
  if (name == RTXDialect::getInitAttrName())
    return expect(isa<InitAttr>(attr.getValue()), "a #rtx.init");
  if (name == RTXDialect::getFlatAttrName())
    return verifyFlatLayout(op, attr.getValue(), type, what);
  if (name == RTXDialect::getPartOfAttrName())
    return verifyPartOf(op, attr.getValue(), type, what);
  if (name == RTXDialect::getOffloadAttrName()) {
    auto tier = dyn_cast<StringAttr>(attr.getValue());
    return expect(tier &&
                      (tier.getValue() == "cpu" || tier.getValue() == "nvme"),
                  "\"cpu\" or \"nvme\"");
  }
  if (name == RTXDialect::getSeedAttrName() ||
      name == RTXDialect::getStepResultAttrName())
    return expect(isa<IntegerAttr>(attr.getValue()), "an integer");
  if (attr.getName() != RTXDialect::getShardingAttrName())
    return op->emitError() << "unknown rtx attribute '"
                           << attr.getName().getValue() << "' on " << what;
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  if (!sharding)
    return op->emitError() << "'rtx.sharding' on " << what
                           << " must be a #rtx.sharding, got "
                           << attr.getValue();
  return verifyShardingOfValue(op, sharding, type, what);
}

LogicalResult RTXDialect::verifyRegionArgAttribute(Operation *op,
                                                   unsigned regionIndex,
                                                   unsigned argIndex,
                                                   NamedAttribute attr) {
  // Through the function interface, so declarations (no body) are checked
  // too.
  Type type;
  if (auto function = dyn_cast<FunctionOpInterface>(op)) {
    if (argIndex < function.getArgumentTypes().size())
      type = function.getArgumentTypes()[argIndex];
  } else {
    Region &region = op->getRegion(regionIndex);
    if (!region.empty() && argIndex < region.front().getNumArguments())
      type = region.front().getArgument(argIndex).getType();
  }
  if (!type)
    return success();
  // The entry block may have fewer arguments than the function's type: the
  // function's own verifier, which runs after this, reports that (found by
  // rtx-parse-fuzzer).
  Region *body = op->getNumRegions() > regionIndex
                     ? &op->getRegion(regionIndex)
                     : nullptr;
  if (attr.getName() == RTXDialect::getOffloadAttrName() && body &&
      !body->empty() && argIndex < body->front().getNumArguments()) {
    // A reference to storage in the tier: nothing reads it directly.
    BlockArgument arg = body->front().getArgument(argIndex);
    for (Operation *user : arg.getUsers())
      if (!isa<OffloadFetchStartOp, OffloadStoreOp>(user))
        return user->emitOpError()
               << "uses offloaded argument " << argIndex
               << " directly; read it with rtx.offload_fetch_start";
  }
  return verifyValueAttribute(op, attr, type, "argument " + Twine(argIndex));
}

LogicalResult RTXDialect::verifyRegionResultAttribute(Operation *op,
                                                      unsigned regionIndex,
                                                      unsigned resultIndex,
                                                      NamedAttribute attr) {
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function || resultIndex >= function.getResultTypes().size())
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' is only valid on function results";
  return verifyValueAttribute(op, attr, function.getResultTypes()[resultIndex],
                              "function result " + Twine(resultIndex));
}

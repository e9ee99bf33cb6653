//===- RTXAttrs.cpp - rtx attributes and enums ----------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rtx;

#include "rtx/Dialect/RTX/IR/RTXEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "rtx/Dialect/RTX/IR/RTXAttrs.cpp.inc"

void RTXDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "rtx/Dialect/RTX/IR/RTXAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

static SmallVector<StringRef> toStrings(ArrayAttr array) {
  SmallVector<StringRef> result;
  for (Attribute attr : array)
    result.push_back(cast<StringAttr>(attr).getValue());
  return result;
}

static ArrayAttr toArrayAttr(MLIRContext *ctx, ArrayRef<StringRef> axes) {
  SmallVector<Attribute> attrs;
  for (StringRef axis : axes)
    attrs.push_back(StringAttr::get(ctx, axis));
  return ArrayAttr::get(ctx, attrs);
}

SmallVector<StringRef> ShardingAttr::getDimAxes(int64_t dim) const {
  return toStrings(cast<ArrayAttr>(getDims()[dim]));
}

SmallVector<StringRef> ShardingAttr::getPartialAxes() const {
  return toStrings(getPartial());
}

bool ShardingAttr::isFullyReplicated() const {
  if (!getPartial().empty())
    return false;
  return llvm::all_of(getDims(), [](Attribute dim) {
    return cast<ArrayAttr>(dim).empty();
  });
}

ShardingAttr ShardingAttr::get(MLIRContext *ctx, StringRef mesh,
                               ArrayRef<SmallVector<StringRef>> dims,
                               ArrayRef<StringRef> partial) {
  SmallVector<Attribute> dimAttrs;
  for (const auto &axes : dims)
    dimAttrs.push_back(toArrayAttr(ctx, axes));
  return get(ctx, FlatSymbolRefAttr::get(ctx, mesh),
             ArrayAttr::get(ctx, dimAttrs), toArrayAttr(ctx, partial));
}

LogicalResult
ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     FlatSymbolRefAttr mesh, ArrayAttr dims,
                     ArrayAttr partial) {
  llvm::StringSet<> seen;
  auto checkAxis = [&](Attribute attr) -> LogicalResult {
    auto axis = dyn_cast<StringAttr>(attr);
    if (!axis)
      return emitError() << "sharding axes must be strings, got " << attr;
    if (axis.getValue().empty())
      return emitError() << "sharding axis names must not be empty";
    if (!seen.insert(axis.getValue()).second)
      return emitError() << "axis \"" << axis.getValue()
                         << "\" appears twice in sharding on mesh " << mesh;
    return success();
  };
  for (Attribute dim : dims) {
    auto axes = dyn_cast<ArrayAttr>(dim);
    if (!axes)
      return emitError() << "each sharded dimension must be an array of axes";
    for (Attribute axis : axes)
      if (failed(checkAxis(axis)))
        return failure();
  }
  for (Attribute axis : partial)
    if (failed(checkAxis(axis)))
      return failure();
  return success();
}

/// Parses `["a", "b"]` into string attributes.
static ParseResult parseAxisList(AsmParser &parser,
                                 SmallVectorImpl<Attribute> &axes) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        std::string axis;
        if (parser.parseString(&axis))
          return failure();
        axes.push_back(StringAttr::get(parser.getContext(), axis));
        return success();
      });
}

Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  SMLoc loc = parser.getCurrentLocation();
  FlatSymbolRefAttr mesh;
  SmallVector<Attribute> dims, partial;
  if (parser.parseLess() || parser.parseAttribute(mesh) || parser.parseComma())
    return {};
  if (parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square, [&]() -> ParseResult {
            SmallVector<Attribute> axes;
            if (parseAxisList(parser, axes))
              return failure();
            dims.push_back(ArrayAttr::get(ctx, axes));
            return success();
          }))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("partial") || parser.parseEqual() ||
        parseAxisList(parser, partial))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<ShardingAttr>(loc, ctx, mesh,
                                         ArrayAttr::get(ctx, dims),
                                         ArrayAttr::get(ctx, partial));
}

static void printAxisList(AsmPrinter &printer, ArrayAttr axes) {
  printer << '[';
  llvm::interleaveComma(axes, printer, [&](Attribute axis) {
    printer << '"' << cast<StringAttr>(axis).getValue() << '"';
  });
  printer << ']';
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << '<' << getMesh() << ", [";
  llvm::interleaveComma(getDims(), printer, [&](Attribute dim) {
    printAxisList(printer, cast<ArrayAttr>(dim));
  });
  printer << ']';
  if (!getPartial().empty()) {
    printer << ", partial = ";
    printAxisList(printer, getPartial());
  }
  printer << '>';
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

InitAttr InitAttr::get(MLIRContext *ctx, InitKind kind, double a, double b) {
  return get(ctx, kind, llvm::APFloat(a), llvm::APFloat(b));
}

unsigned InitAttr::getNumArgs(InitKind kind) {
  switch (kind) {
  case InitKind::Zeros:
  case InitKind::Ones:
    return 0;
  case InitKind::Constant:
    return 1;
  case InitKind::Normal:
  case InitKind::Uniform:
    return 2;
  }
  llvm_unreachable("unknown InitKind");
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, llvm::APFloat a,
                               llvm::APFloat b) {
  if (kind == InitKind::Normal && !(b.convertToDouble() > 0.0))
    return emitError() << "normal initializer needs a positive standard "
                          "deviation, got "
                       << b.convertToDouble();
  if (kind == InitKind::Uniform && !(a.convertToDouble() < b.convertToDouble()))
    return emitError() << "uniform initializer needs low < high, got ("
                       << a.convertToDouble() << ", " << b.convertToDouble()
                       << ")";
  return success();
}

InitAttr InitAttr::parseBody(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(loc) << "unknown initializer '" << keyword
                          << "'; expected zeros, ones, constant(v), "
                             "normal(mean, std) or uniform(low, high)";
    return {};
  }
  unsigned numArgs = getNumArgs(*kind);
  double args[2] = {0.0, 0.0};
  if (numArgs > 0) {
    if (parser.parseLParen())
      return {};
    for (unsigned i = 0; i < numArgs; ++i)
      if ((i > 0 && parser.parseComma()) || parser.parseFloat(args[i]))
        return {};
    if (parser.parseRParen())
      return {};
  }
  return parser.getChecked<InitAttr>(loc, parser.getContext(), *kind,
                                     llvm::APFloat(args[0]),
                                     llvm::APFloat(args[1]));
}

void InitAttr::printBody(AsmPrinter &printer) const {
  printer << stringifyInitKind(getKind());
  unsigned numArgs = getNumArgs(getKind());
  if (numArgs == 0)
    return;
  printer << '(';
  printer.printFloat(getA());
  if (numArgs == 2) {
    printer << ", ";
    printer.printFloat(getB());
  }
  printer << ')';
}

Attribute InitAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  InitAttr attr = parseBody(parser);
  if (!attr || parser.parseGreater())
    return {};
  return attr;
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << '<';
  printBody(printer);
  printer << '>';
}

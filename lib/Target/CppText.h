//===- CppText.h - C++ source text of rtx values ----------------*- C++ -*-===//
//
// How the emitter spells shapes, dtypes, shardings, numbers and enumerators
// in the C++ it writes (the runtime's types: rtxrt::Shape, DType, Sharding,
// the kernel API's enums).
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_TARGET_CPPTEXT_H
#define RTX_LIB_TARGET_CPPTEXT_H

#include "rtx/Dialect/RTX/IR/RTXDialect.h"
#include "rtxrt/core/KernelEnums.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace mlir::rtx::cpp {

/// A C++ string literal.
inline std::string quoted(StringRef text) {
  std::string s = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      s += '\\';
    s += c;
  }
  return s + "\"";
}

/// `{1, 2, 3}`.
inline std::string ints(ArrayRef<int64_t> values) {
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "}";
}

/// `{"a", "b"}`.
inline std::string strings(ArrayRef<StringRef> values) {
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + quoted(values[i]);
  return s + "}";
}
inline std::string strings(ArrayRef<std::string> values) {
  return strings(llvm::to_vector(llvm::map_range(
      values, [](const std::string &v) { return StringRef(v); })));
}

/// Mesh axes, an array of strings such as a collective's `axes`:
/// `{"dp", "tp"}`.
inline std::string axes(ArrayAttr names) {
  return strings(llvm::to_vector(llvm::map_range(
      names, [](Attribute n) { return cast<StringAttr>(n).getValue(); })));
}

/// A double that reads back exactly.
inline std::string number(double v) {
  if (std::isinf(v))
    return v < 0 ? "-INFINITY" : "INFINITY";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

/// The shape of a ranked tensor type.
inline std::string shape(Type type) {
  return ints(cast<RankedTensorType>(type).getShape());
}

/// The element type of a ranked tensor type as an rtxrt::DType.
inline std::string dtype(Type type) {
  Type e = cast<RankedTensorType>(type).getElementType();
  if (e.isF32())
    return "DType::F32";
  if (e.isF64())
    return "DType::F64";
  if (e.isBF16())
    return "DType::BF16";
  if (e.isF16())
    return "DType::F16";
  if (e.isInteger(1))
    return "DType::I1";
  if (e.isInteger(32))
    return "DType::I32";
  return "DType::I64";
}

/// An rtxrt::Sharding; a null attribute is a replicated value.
inline std::string sharding(ShardingAttr attr) {
  if (!attr)
    return "Sharding{}";
  std::string s = "Sharding{{";
  for (int64_t d = 0; d < attr.getRank(); ++d)
    s += (d ? ", " : "") + strings(attr.getDimAxes(d));
  return s + "}, " + strings(attr.getPartialAxes()) + "}";
}

/// An enumerator of the kernel API (rtxrt/core/KernelEnums.h) as C++ names it,
/// `InitKind::Normal`; a dialect enum reaches it through toRuntime.
template <typename Enum> std::string enumerator(Enum value) {
  return std::string(rtxrt::enumName(value)) +
         "::" + rtxrt::enumeratorName(value);
}

} // namespace mlir::rtx::cpp

#endif // RTX_LIB_TARGET_CPPTEXT_H

//===- RTXOps.td - all rtx ops -----------------------------*- tablegen -*-===//

#ifndef RTX_DIALECT_RTX_IR_RTXOPS_TD
#define RTX_DIALECT_RTX_IR_RTXOPS_TD

include "rtx/Dialect/RTX/IR/RTXModelOps.td"
include "rtx/Dialect/RTX/IR/RTXGradientOps.td"
include "rtx/Dialect/RTX/IR/RTXDistributionOps.td"
include "rtx/Dialect/RTX/IR/RTXOffloadOps.td"
include "rtx/Dialect/RTX/IR/RTXFusedOps.td"

#endif // RTX_DIALECT_RTX_IR_RTXOPS_TD

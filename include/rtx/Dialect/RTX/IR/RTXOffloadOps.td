//===- RTXOffloadOps.td - state that lives outside the device -*- tablegen -*-===//
//
// ZeRO-Offload: rtx-shard-state{offload=cpu|nvme} keeps flat buffers of
// optimizer state (and, at stage 3, parameter shards) in an offload tier
// between steps. Such a buffer is a function argument and a result marked
// `rtx.offload`: a reference to storage in the tier, not a value in device
// memory. The step reads it with `rtx.offload_fetch_start` + `rtx.wait` and
// writes its new value back with `rtx.offload_store` (docs/fsdp.md).
//
//===----------------------------------------------------------------------===//

#ifndef RTX_DIALECT_RTX_IR_RTXOFFLOADOPS_TD
#define RTX_DIALECT_RTX_IR_RTXOFFLOADOPS_TD

include "rtx/Dialect/RTX/IR/RTXBase.td"
include "rtx/Dialect/RTX/IR/RTXTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def RTX_OffloadFetchStartOp : RTX_Op<"offload_fetch_start",
    [MemoryEffects<[MemRead]>]> {
  let summary = "starts reading an offloaded buffer into device memory";
  let description = [{
    `buffer` is a function argument marked `rtx.offload` ("cpu": host
    memory; "nvme": a file in the run's offload directory). The read runs
    in the background; `rtx.wait` on the token yields the buffer's current
    value as an ordinary tensor, which lives until its last use like any
    computed tensor. A buffer may be fetched several times in one step (a
    ZeRO-3 parameter shard before the forward and the backward gathers and
    its update); every fetch sees the value the step started with.

    The runtime keeps at most a fixed number of fetched buffers and writes
    in flight: a fetch waits for a slot when they are all taken
    (backpressure), so a slow disk slows the step instead of growing memory.

    Example:

    ```mlir
    %t = rtx.offload_fetch_start %exp_avg
        : tensor<1024xf32> -> !rtx.token<tensor<1024xf32>>
    %m = rtx.wait %t : !rtx.token<tensor<1024xf32>> -> tensor<1024xf32>
    ```
  }];
  let arguments = (ins RTX_Tensor:$buffer);
  let results = (outs RTX_TokenType:$token);
  let assemblyFormat = [{
    $buffer attr-dict `:` type($buffer) `->` qualified(type($token))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The buffer's name in the tier: its argument's `rtx.state` key.
    ::llvm::StringRef getBufferKey();
  }];
}

def RTX_OffloadStoreOp : RTX_Op<"offload_store",
    [MemoryEffects<[MemWrite]>, AllTypesMatch<["value", "buffer", "result"]>]> {
  let summary = "writes an offloaded buffer's new value back to its tier";
  let description = [{
    Starts writing `value` as the new value of the offloaded argument
    `buffer`; the result is the reference to it that the step returns (at a
    result marked `rtx.offload` with the argument's `rtx.state`), which
    becomes the argument of the next step. The write runs in the background
    on a copy, so `value` may be released right after; the step ends when
    every write has finished, and a failed write (a full disk) fails the
    step with the file and the reason.

    Example:

    ```mlir
    %new = rtx.offload_store %m2 into %exp_avg : tensor<1024xf32>
    return %new : tensor<1024xf32>
    ```
  }];
  let arguments = (ins RTX_Tensor:$value, RTX_Tensor:$buffer);
  let results = (outs RTX_Tensor:$result);
  let assemblyFormat = [{
    $value `into` $buffer attr-dict `:` type($value)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The buffer's name in the tier: its argument's `rtx.state` key.
    ::llvm::StringRef getBufferKey();
  }];
}

#endif // RTX_DIALECT_RTX_IR_RTXOFFLOADOPS_TD

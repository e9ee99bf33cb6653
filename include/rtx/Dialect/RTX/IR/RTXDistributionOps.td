//===- RTXDistributionOps.td - meshes and collectives ------*- tablegen -*-===//

#ifndef RTX_DIALECT_RTX_IR_RTXDISTRIBUTIONOPS_TD
#define RTX_DIALECT_RTX_IR_RTXDISTRIBUTIONOPS_TD

include "rtx/Dialect/RTX/IR/RTXBase.td"

def RTX_MeshOp : RTX_Op<"mesh", [Symbol]> {
  let summary = "a named device mesh with named axes";
  let description = [{
    A logical grid of ranks: an ordered list of named axes with their sizes
    (the last axis varies fastest in the rank order). Shardings and
    collectives refer to it by symbol. Axis names are unique and non-empty;
    sizes are at least 1. Name meshes by their shape, as in `@mesh_dp2_tp4`.

    Example:

    ```mlir
    rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]
    rtx.mesh @mesh_single []
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axis_names,
                       DenseI64ArrayAttr:$axis_sizes);
  let assemblyFormat = [{
    $sym_name ` ` `[` custom<MeshAxes>($axis_names, $axis_sizes) `]` attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The size of axis `name`, or nullopt when the mesh has no such axis.
    std::optional<int64_t> getAxisSize(::llvm::StringRef name);
    /// Number of ranks: the product of all axis sizes.
    int64_t getNumRanks();
  }];
}

//===----------------------------------------------------------------------===//
// Collectives: a synchronous op and an async start op per kind
//===----------------------------------------------------------------------===//

// Defines `<name>Op` (synchronous) and `<name>StartOp` (async, returns a
// token that `rtx.wait` turns into the result). Both share operands,
// attributes, format and verifier (lib/Dialect/RTX/IR/RTXCollectives.cpp).
multiclass RTX_Collective<string mnemonic, string kind, dag extraArgs,
                          string extraFormat,
                          string opSummary, string opDescription,
                          string syncExample, string startExample> {
  def Op : RTX_Op<mnemonic,
      [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
       RTX_CollectiveOpInterface]> {
    let summary = opSummary;
    let description = opDescription # [{

      Example:

      ```mlir
    }] # syncExample # [{
      ```
    }];
    let arguments = !con((ins RTX_Tensor:$input, FlatSymbolRefAttr:$mesh,
                              StrArrayAttr:$axes), extraArgs);
    let results = (outs RTX_Tensor:$result);
    let assemblyFormat = "$input `on` $mesh $axes " # extraFormat #
        " attr-dict `:` type($input) `->` type($result)";
    let extraClassDeclaration = [{
      static ::mlir::rtx::CollectiveKind getCollectiveKind() {
        return ::mlir::rtx::CollectiveKind::}] # kind # [{;
      }
      static bool isAsync() { return false; }
    }];
    let extraClassDefinition = [{
      ::llvm::LogicalResult $cppClass::verifySymbolUses(
          ::mlir::SymbolTableCollection &symbolTable) {
        return ::mlir::rtx::verifyCollective(getOperation(), symbolTable);
      }
    }];
  }
  def StartOp : RTX_Op<mnemonic # "_start",
      [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
       RTX_CollectiveOpInterface]> {
    let summary = "starts `rtx." # mnemonic # "` asynchronously";
    let description = "The async form of `rtx." # mnemonic # "`: the same "
      # "operands, attributes and checks; it returns a token whose value "
      # "type is the synchronous op's result type, and `rtx.wait` on the "
      # "token yields that result. Compute placed between the two overlaps "
      # "the communication." # [{

      Example:

      ```mlir
    }] # startExample # [{
      ```
    }];
    let arguments = !con((ins RTX_Tensor:$input, FlatSymbolRefAttr:$mesh,
                              StrArrayAttr:$axes), extraArgs);
    let results = (outs RTX_TokenType:$token);
    let assemblyFormat = "$input `on` $mesh $axes " # extraFormat #
        " attr-dict `:` type($input) `->` qualified(type($token))";
    let extraClassDeclaration = [{
      static ::mlir::rtx::CollectiveKind getCollectiveKind() {
        return ::mlir::rtx::CollectiveKind::}] # kind # [{;
      }
      static bool isAsync() { return true; }
    }];
    let extraClassDefinition = [{
      ::llvm::LogicalResult $cppClass::verifySymbolUses(
          ::mlir::SymbolTableCollection &symbolTable) {
        return ::mlir::rtx::verifyCollective(getOperation(), symbolTable);
      }
    }];
  }
}

defm RTX_AllReduce : RTX_Collective<"all_reduce", "AllReduce",
  (ins RTX_ReductionKindAttr:$kind), "$kind",
  "combines a tensor across the ranks of mesh axes",
  [{
    Every rank in a group (the ranks that differ only in the coordinates of
    `axes`) receives the elementwise `sum`, `mean`, `max` or `min` of the group's
    inputs. Shapes are unchanged.
  }],
  [{%y = rtx.all_reduce %x on @mesh_dp2_tp4 ["tp"] sum
        : tensor<4x8xf32> -> tensor<4x8xf32>}],
  [{%t = rtx.all_reduce_start %x on @mesh_dp2_tp4 ["tp"] sum
        : tensor<4x8xf32> -> !rtx.token<tensor<4x8xf32>>}]>;

defm RTX_AllGather : RTX_Collective<"all_gather", "AllGather",
  (ins I64Attr:$gather_dim), "`dim` $gather_dim",
  "concatenates the shards of a tensor across mesh axes",
  [{
    Every rank of a group receives the group's inputs concatenated along
    `gather_dim` in group-rank order (the listed axes, major to minor): the
    result's `gather_dim` is the input's times the group size.
  }],
  [{%y = rtx.all_gather %x on @mesh_dp2_tp4 ["tp"] dim 1
        : tensor<4x2xf32> -> tensor<4x8xf32>}],
  [{%t = rtx.all_gather_start %x on @mesh_dp2_tp4 ["tp"] dim 1
        : tensor<4x2xf32> -> !rtx.token<tensor<4x8xf32>>}]>;

defm RTX_ReduceScatter : RTX_Collective<"reduce_scatter", "ReduceScatter",
  (ins RTX_ReductionKindAttr:$kind, I64Attr:$scatter_dim),
  "$kind `dim` $scatter_dim",
  "combines a tensor across mesh axes and keeps one shard per rank",
  [{
    Combines the group's inputs like `rtx.all_reduce`, then rank `i` of the
    group keeps the `i`-th of `n` equal pieces along `scatter_dim`, which the
    group size `n` must divide.
  }],
  [{%y = rtx.reduce_scatter %x on @mesh_dp2_tp4 ["tp"] sum dim 0
        : tensor<8x8xf32> -> tensor<2x8xf32>}],
  [{%t = rtx.reduce_scatter_start %x on @mesh_dp2_tp4 ["tp"] sum dim 0
        : tensor<8x8xf32> -> !rtx.token<tensor<2x8xf32>>}]>;

defm RTX_AllToAll : RTX_Collective<"all_to_all", "AllToAll",
  (ins I64Attr:$split_dim, I64Attr:$concat_dim),
  "`split` $split_dim `concat` $concat_dim",
  "exchanges pieces of a tensor between all ranks of a group",
  [{
    Each rank splits its input into `n` pieces along `split_dim` (the group
    size must divide it), sends piece `j` to group rank `j`, and concatenates
    what it receives along `concat_dim` in group-rank order. With
    `split_dim != concat_dim` this moves a sharding from one dimension to
    another (the DeepSpeed-Ulysses sequence <-> heads exchange).
  }],
  [{%y = rtx.all_to_all %x on @mesh_sp4 ["sp"] split 1 concat 2
        : tensor<2x8x4x16xf32> -> tensor<2x2x16x16xf32>}],
  [{%t = rtx.all_to_all_start %x on @mesh_sp4 ["sp"] split 1 concat 2
        : tensor<2x8x4x16xf32> -> !rtx.token<tensor<2x2x16x16xf32>>}]>;

defm RTX_BroadcastFrom : RTX_Collective<"broadcast_from", "BroadcastFrom",
  (ins I64Attr:$root), "`root` $root",
  "copies one rank's tensor to every rank of a group",
  [{
    Every rank of a group receives the input of group rank `root`, which lies
    in `[0, group size)`. Shapes are unchanged. (Named `broadcast_from` because
    `rtx.broadcast` is the shape broadcast.)
  }],
  [{%y = rtx.broadcast_from %x on @mesh_dp2_tp4 ["dp"] root 0
        : tensor<4x8xf32> -> tensor<4x8xf32>}],
  [{%t = rtx.broadcast_from_start %x on @mesh_dp2_tp4 ["dp"] root 0
        : tensor<4x8xf32> -> !rtx.token<tensor<4x8xf32>>}]>;

defm RTX_Permute : RTX_Collective<"permute", "Permute",
  (ins DenseI64ArrayAttr:$pairs), "` ` `[` custom<SourceTargetPairs>($pairs) `]`",
  "sends a tensor along source -> target pairs within a group",
  [{
    A collective permutation within each group: for each pair `s -> t`, group
    rank `t` receives group rank `s`'s input; a rank that is no target receives
    zeros. Each source and each target appears at most once. Pipelines (stage
    `i -> i+1`) and ring attention (`i -> (i+1) mod n`) use it.
  }],
  [{%y = rtx.permute %x on @mesh_pp4 ["pp"] [0 -> 1, 1 -> 2, 2 -> 3]
        : tensor<4x8xf32> -> tensor<4x8xf32>}],
  [{%t = rtx.permute_start %x on @mesh_pp4 ["pp"] [0 -> 1, 1 -> 2, 2 -> 3]
        : tensor<4x8xf32> -> !rtx.token<tensor<4x8xf32>>}]>;

def RTX_MeshSliceOp : RTX_Op<"mesh_slice", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "keeps this rank's piece of a replicated tensor";
  let description = [{
    The inverse of `rtx.all_gather` without communication: each rank of a
    group over `axes` keeps piece `i` of `n` equal pieces along `dim`, `i`
    being its index in the group. The partitioner emits it where a replicated
    value must become split.

    Example:

    ```mlir
    %y = rtx.mesh_slice %x on @mesh_dp2_tp4 ["tp"] dim 1
        : tensor<4x8xf32> -> tensor<4x2xf32>
    ```
  }];
  let arguments = (ins RTX_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs RTX_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh $axes `dim` $dim attr-dict `:` type($input) `->`
    type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Point-to-point
//===----------------------------------------------------------------------===//

def RTX_SendOp : RTX_Op<"send",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "sends a tensor to one rank of a group";
  let description = [{
    Sends the input to group rank `peer` of the calling rank's group over
    `axes` (the ranks that differ only in those coordinates). It pairs with an
    `rtx.recv` of the same `tag` on the peer. Used in programs specialised per
    pipeline stage.

    Example:

    ```mlir
    rtx.send %x to @mesh_pp4 ["pp"] peer 1 tag 0 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins RTX_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$peer,
                       DefaultValuedAttr<I64Attr, "0">:$tag);
  let assemblyFormat = [{
    $input `to` $mesh $axes `peer` $peer `tag` $tag attr-dict `:` type($input)
  }];
}

def RTX_RecvOp : RTX_Op<"recv",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "receives a tensor from one rank of a group";
  let description = [{
    Receives a tensor of the result type from group rank `peer`, sent by an
    `rtx.send` with the same `tag`.

    Example:

    ```mlir
    %x = rtx.recv from @mesh_pp4 ["pp"] peer 0 tag 0 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       I64Attr:$peer, DefaultValuedAttr<I64Attr, "0">:$tag);
  let results = (outs RTX_Tensor:$result);
  let assemblyFormat = [{
    `from` $mesh $axes `peer` $peer `tag` $tag attr-dict `:` type($result)
  }];
}

def RTX_SendStartOp : RTX_Op<"send_start",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "starts `rtx.send` asynchronously";
  let description = [{
    The async form of `rtx.send`; the returned token carries no value and its
    `rtx.wait` completes when the input may be reused.

    Example:

    ```mlir
    %t = rtx.send_start %x to @mesh_pp4 ["pp"] peer 1 tag 0
        : tensor<4x8xf32> -> !rtx.token
    rtx.wait %t : !rtx.token
    ```
  }];
  let arguments = (ins RTX_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$peer,
                       DefaultValuedAttr<I64Attr, "0">:$tag);
  let results = (outs RTX_TokenType:$token);
  let assemblyFormat = [{
    $input `to` $mesh $axes `peer` $peer `tag` $tag attr-dict `:` type($input)
    `->` qualified(type($token))
  }];
}

def RTX_RecvStartOp : RTX_Op<"recv_start",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "starts `rtx.recv` asynchronously";
  let description = [{
    The async form of `rtx.recv`; `rtx.wait` on the token yields the tensor.

    Example:

    ```mlir
    %t = rtx.recv_start from @mesh_pp4 ["pp"] peer 0 tag 0
        -> !rtx.token<tensor<4x8xf32>>
    %x = rtx.wait %t : !rtx.token<tensor<4x8xf32>> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       I64Attr:$peer, DefaultValuedAttr<I64Attr, "0">:$tag);
  let results = (outs RTX_TokenType:$token);
  let assemblyFormat = [{
    `from` $mesh $axes `peer` $peer `tag` $tag attr-dict `->`
    qualified(type($token))
  }];
}

def RTX_WaitOp : RTX_Op<"wait"> {
  let summary = "waits for an async collective and yields its result";
  let description = [{
    Completes the async op that produced the token. When the token carries a
    value type the wait yields a tensor of that type; otherwise it yields
    nothing. Each token is waited on exactly once.

    Example:

    ```mlir
    %y = rtx.wait %t : !rtx.token<tensor<4x8xf32>> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins RTX_TokenType:$token);
  let results = (outs Optional<RTX_Tensor>:$result);
  let assemblyFormat = [{
    $token attr-dict `:` qualified(type($token)) (`->` type($result)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Vocab-parallel cross-entropy (Megatron): the local pieces rtx-partition
// composes with collectives when the logits' vocabulary is split
//===----------------------------------------------------------------------===//

def RTX_VocabLogitStatsOp : RTX_Op<"vocab_logit_stats", [Pure, RTX_Kernel,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    AllTypesMatch<["max", "label_logit"]>]> {
  let summary = "per-token maximum and label logit of a vocabulary shard";
  let description = [{
    The logits `[..., V]` are rank `i`'s shard of a vocabulary of `n * V`
    split over `axes` (`n` ranks): classes `[i * V, (i + 1) * V)`. For each
    token `t`, `max[t]` is the shard's largest logit and `label_logit[t]` is
    `logits[t, labels[t] - i * V]` when the shard owns the label, else 0
    (also 0 for `ignore_index`). An `rtx.all_reduce` `max` of the first and
    `sum` of the second over `axes` gives the global maximum and the label's
    logit without gathering the logits. Labels outside `[0, n * V)` are an
    error at run time.

    Example:

    ```mlir
    %max, %label = rtx.vocab_logit_stats %logits, %labels on @mesh_tp4 ["tp"]
        : tensor<8x128x12566xf32>, tensor<8x128xi32>
        -> tensor<8x128xf32>, tensor<8x128xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$logits, RTX_IndexTensor:$labels,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs RTX_FloatTensor:$max, RTX_FloatTensor:$label_logit);
  let assemblyFormat = [{
    $logits `,` $labels `on` $mesh $axes (`ignore_index` $ignore_index^)?
    attr-dict `:` type($logits) `,` type($labels) `->` type($max) `,`
    type($label_logit)
  }];
  let hasVerifier = 1;
}

def RTX_VocabCrossEntropyOp : RTX_Op<"vocab_cross_entropy", [Pure, RTX_Kernel,
    AllTypesMatch<["max", "sum_exp", "label_logit"]>]> {
  let summary = "cross-entropy from global per-token softmax statistics";
  let description = [{
    `mean over tokens t with labels[t] != ignore_index of
    (max[t] + log(sum_exp[t]) - label_logit[t])` (0 when every label is
    ignored): `rtx.cross_entropy` once the vocabulary-wide maximum, sum of
    `exp(logit - max)` and label logit of each token are known, as
    `rtx-partition` computes them for split logits. The statistics have the
    labels' shape.

    Example:

    ```mlir
    %loss = rtx.vocab_cross_entropy %max, %sum_exp, %label_logit, %labels
        : tensor<8x128xf32>, tensor<8x128xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$max, RTX_FloatTensor:$sum_exp,
                       RTX_FloatTensor:$label_logit, RTX_IndexTensor:$labels,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs 0DTensorOf<[F32, F64]>:$result);
  let assemblyFormat = [{
    $max `,` $sum_exp `,` $label_logit `,` $labels
    (`ignore_index` $ignore_index^)? attr-dict `:` type($max) `,`
    type($labels) `->` type($result)
  }];
  let hasVerifier = 1;
}

def RTX_VocabCrossEntropyGradOp : RTX_Op<"vocab_cross_entropy_grad", [Pure, RTX_Kernel,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    AllTypesMatch<["logits", "logits_grad"]>,
    AllTypesMatch<["max", "sum_exp"]>]> {
  let summary = "rtx.cross_entropy_grad on a vocabulary shard";
  let description = [{
    The columns of `rtx.cross_entropy_grad` that rank `i`'s vocabulary shard
    of the logits holds (classes `[i * V, (i + 1) * V)` of `n * V` over
    `axes`, as in `rtx.vocab_logit_stats`): `dloss * (exp(logits[t, v] -
    max[t]) / sum_exp[t] - onehot) / n` for the `n` tokens whose label is
    not `ignore_index`, with the global per-token `max` and `sum_exp`.

    Example:

    ```mlir
    %dlogits = rtx.vocab_cross_entropy_grad %logits, %labels, %dloss, %max,
        %sum_exp on @mesh_tp4 ["tp"]
        : tensor<8x12566xf32>, tensor<8xi32>, tensor<f32>, tensor<8xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$logits, RTX_IndexTensor:$labels,
                       0DTensorOf<[F32, F64]>:$loss_grad,
                       RTX_FloatTensor:$max, RTX_FloatTensor:$sum_exp,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs RTX_FloatTensor:$logits_grad);
  let assemblyFormat = [{
    $logits `,` $labels `,` $loss_grad `,` $max `,` $sum_exp `on` $mesh $axes
    (`ignore_index` $ignore_index^)? attr-dict `:` type($logits) `,`
    type($labels) `,` type($loss_grad) `,` type($max)
  }];
  let hasVerifier = 1;
}

#endif // RTX_DIALECT_RTX_IR_RTXDISTRIBUTIONOPS_TD

// The generic-form round trip of enum-attrs.mlir (whose CHECK lines it uses).
//
// Regression test (fixed): RTXEnums.td gives #rtx.reduction and #rtx.predicate the
// assemblyFormat "`` $value", so their full form prints as
// `#rtx.reductionsum` / `#rtx.predicateeq`, which the dialect's attribute
// parser reads as an unknown mnemonic ("unknown attribute `reductionsum` in
// dialect `rtx`"). Every op with such an attribute (rtx.compare, rtx.reduce,
// rtx.all_reduce(_start), rtx.reduce_scatter(_start)) fails the generic round
// trip. When it is fixed this test passes unexpectedly: drop the XFAIL.
//
// RUN: rtx-opt %S/enum-attrs.mlir -split-input-file -mlir-print-op-generic | rtx-opt -split-input-file | FileCheck %S/enum-attrs.mlir

// RUN: rtx-opt %s -split-input-file -rtx-propagate-sharding -verify-diagnostics

// expected-error @below {{rtx-propagate-sharding needs exactly one rtx.mesh in the module, found 0}}
module {
  func.func @no_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

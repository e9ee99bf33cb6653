// RUN: rtx-opt %s -split-input-file -verify-diagnostics -rtx-verify-pipeline-schedule | FileCheck %s

// A sound schedule (1F1B on two ranks, two micro-batches) is left as it is.
// CHECK-LABEL: func.func @sound
// CHECK-SAME: rtx.pipeline_schedule
func.func @sound() attributes {rtx.pipeline_schedule = [
    "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1 0REDUCE_GRAD OPTIMIZER",
    "rank 1: 1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1 1REDUCE_GRAD OPTIMIZER"]} {
  return
}

// -----

// A missing send: rank 0 never sends its activation.
// expected-error @below {{rank 1, action 0: '1RECV_F0': no rank sends it (expected '0SEND_F0' on rank 0)}}
func.func @missing_send() attributes {rtx.pipeline_schedule = [
    "rank 0: 0F0 0RECV_B0 0B0",
    "rank 1: 1RECV_F0 1F0 1B0 1SEND_B0"]} {
  return
}

// -----

// A backward before its forward.
// expected-error @below {{rank 1, action 4: '1B1': the backward of micro-batch 1 comes before its forward '1F1'}}
func.func @backward_first() attributes {rtx.pipeline_schedule = [
    "rank 0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1",
    "rank 1: 1RECV_F0 1F0 1B0 1SEND_B0 1B1 1RECV_F1 1F1 1SEND_B1"]} {
  return
}

// -----

// A cycle between two ranks: each waits for what the other sends later.
// expected-error @below {{rank 0, action 1: '0RECV_B0' waits forever for '1SEND_B0' of rank 1, which itself waits at action 0 '1RECV_F0'}}
// expected-error @below {{rank 1, action 0: '1RECV_F0' waits forever for '0SEND_F0' of rank 0, which itself waits at action 1 '0RECV_B0'}}
func.func @cycle() attributes {rtx.pipeline_schedule = [
    "rank 0: 0F0 0RECV_B0 0SEND_F0 0B0",
    "rank 1: 1RECV_F0 1F0 1B0 1SEND_B0"]} {
  return
}

// -----

// Interleaved stages: with two virtual stages, stage 2 is rank 0's.
// expected-error @below {{rank 1, action 0: '2F0': stage 2 runs on rank 0, not here}}
func.func @wrong_rank() attributes {rtx.virtual_stages = 2 : i64,
    rtx.pipeline_schedule = ["rank 0: 0F0", "rank 1: 2F0"]} {
  return
}

// -----

// A malformed action names the line and the token.
// expected-error @below {{line 1: '0Q0' is not an action}}
func.func @bad_token() attributes {rtx.pipeline_schedule = ["rank 0: 0F0 0Q0 0B0"]} {
  return
}

// -----

// The dialect's verifier checks the attributes' shapes.
// expected-error @below {{'rtx.pipeline_schedule' is an array of strings of functions, one 'rank R: ACTIONS' per rank}}
func.func @not_strings() attributes {rtx.pipeline_schedule = [1, 2]} {
  return
}

// -----

// expected-error @below {{'rtx.virtual_stages' is a positive integer of functions}}
func.func @no_stages() attributes {rtx.virtual_stages = 0 : i64, rtx.pipeline_schedule = ["rank 0: 0F0 0B0"]} {
  return
}

#!/usr/bin/env bash
# Runs a program as two "machines": two network namespaces joined by a veth
# pair (10.77.0.1/24 and 10.77.0.2/24; nothing else is reachable from them),
# a redis-server bound to node A's address as the store, and one rtx-launch
# per node with --nnodes 2 --node-rank I and RANKS ranks each. Node A finds
# its address from RTX_SOCKET_IFNAME, node B from $NODE_B_ENV (by default
# GLOO_SOCKET_IFNAME, PyTorch's variable). Prints node A's output, then
# node B's. Namespaces, links and processes are removed on any exit.
#   two-nodes.sh WORKDIR RANKS PROGRAM ARGS...
# Exits 77 (skip) where namespaces cannot be made: not root, no `ip`.
set -euo pipefail
work=$1 ranks=$2
shift 2
mkdir -p "$work"
if [ "$(id -u)" != 0 ] || ! command -v ip > /dev/null || ! command -v redis-server > /dev/null; then
  echo "two-nodes.sh: skipped: needs root, ip (iproute2) and redis-server" >&2
  exit 77
fi
id=$$
a=rtxa$id b=rtxb$id
cleanup() {
  # Processes inside the namespaces first, then the namespaces (which takes
  # the veth pair with them).
  for ns in "$a" "$b"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
  done
  sleep 0.2
  for ns in "$a" "$b"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns delete "$ns" 2>/dev/null || true
  done
}
trap cleanup EXIT
ip netns add "$a"
ip netns add "$b"
ip link add "va$id" netns "$a" type veth peer name "vb$id" netns "$b"
ip -n "$a" addr add 10.77.0.1/24 dev "va$id"
ip -n "$b" addr add 10.77.0.2/24 dev "vb$id"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "va$id" up
ip -n "$b" link set "vb$id" up

# The store: redis on node A's address (a fresh namespace has every port free).
port=6390
ip netns exec "$a" redis-server --bind 10.77.0.1 --port "$port" --protected-mode no --save "" \
  --appendonly no --dir "$work" > "$work/redis.log" 2>&1 &
for _ in $(seq 100); do
  ip netns exec "$b" redis-cli -h 10.77.0.1 -p "$port" ping > /dev/null 2>&1 && break
  sleep 0.1
done
store="redis://10.77.0.1:$port"

# One rtx-launch per machine; the run id is the same on both.
ip netns exec "$a" env RTX_SOCKET_IFNAME="va$id" \
  rtx-launch --nnodes 2 --node-rank 0 -n "$ranks" --store "$store" --run-id "test-$id" \
  -- "$@" > "$work/node0.log" 2>&1 &
node0=$!
status1=0
ip netns exec "$b" env ${NODE_B_ENV:-GLOO_SOCKET_IFNAME=vb$id} \
  rtx-launch --nnodes 2 --node-rank 1 -n "$ranks" --store "$store" --run-id "test-$id" \
  -- "$@" > "$work/node1.log" 2>&1 || status1=$?
status0=0
wait "$node0" || status0=$?
cat "$work/node0.log" "$work/node1.log"
echo "node 0 exit $status0, node 1 exit $status1"

#!/usr/bin/env bash
# Runs a command with a real redis-server on a free loopback port, whose
# address is passed as $RTX_REDIS (redis://127.0.0.1:PORT); stops the server
# afterwards.   with-redis.sh WORKDIR COMMAND...
set -euo pipefail
work=$1
shift
mkdir -p "$work"
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
  --dir "$work" > "$work/redis.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  redis-cli -p "$port" ping > /dev/null 2>&1 && break
  sleep 0.1
done
RTX_REDIS="redis://127.0.0.1:$port" "$@"

#!/usr/bin/env bash
# A 3-node ZeptoDB cluster on this machine: one Kafka broker (tests/kafka/broker.sh) and three
# `zeptodb serve --cluster` nodes (docs/cluster.md). `make cluster` runs `start`.
#
#   tests/kafka/cluster.sh start   broker on 127.0.0.1:9092, nodes on 127.0.0.1:8124-8126
#   tests/kafka/cluster.sh stop
#
# State lives under $ZEPTO_CLUSTER_DIR (default /tmp/zepto-cluster): the broker's log and each
# node's data directory and log. Needs the release binary (make build) and the broker's jars
# (make kafka).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$HERE/../../target/release/zeptodb
DIR=${ZEPTO_CLUSTER_DIR:-/tmp/zepto-cluster}
NODES=(a b c)

case "${1:-}" in
  start)
    mkdir -p "$DIR"
    KAFKA_PARTITIONS=6 "$HERE/broker.sh" start "$DIR/kafka" 9092
    for i in 0 1 2; do
      n=${NODES[$i]}; port=$((8124 + i))
      nohup "$BIN" serve --data-dir "$DIR/$n" --http "127.0.0.1:$port" --cluster 127.0.0.1:9092 \
        --node-id "$n" > "$DIR/$n.log" 2>&1 &
      echo $! > "$DIR/$n.pid"
    done
    for i in 0 1 2; do
      port=$((8124 + i))
      for _ in $(seq 1 100); do curl -sf "127.0.0.1:$port/ready" > /dev/null && break; sleep 0.1; done
    done
    sleep 2
    echo "nodes a, b, c on 127.0.0.1:8124, 8125, 8126 (logs in $DIR); the group as node a sees it:"
    curl -s 127.0.0.1:8124/cluster; echo
    echo "try: curl -s 127.0.0.1:8125/write --data-binary 'trades,sym=A price=1.5' && curl -s 127.0.0.1:8124/cluster"
    ;;
  stop)
    for n in "${NODES[@]}"; do
      [ -f "$DIR/$n.pid" ] && { kill "$(cat "$DIR/$n.pid")" 2>/dev/null || true; rm -f "$DIR/$n.pid"; }
    done
    "$HERE/broker.sh" stop "$DIR/kafka"
    ;;
  *) echo "usage: $0 start | stop" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# `make install` into a scratch prefix (the debug binary), then: the installed unit passes
# `systemd-analyze verify`, and the installed binary serves with the installed example config
# (data directory and ports moved aside), stops on SIGTERM with exit 0 and no panic.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD/target/deploy-check
rm -rf "$root"
make --no-print-directory install BIN=target/debug/zeptodb PREFIX="$root" CONFDIR="$root/etc" UNITDIR="$root/units"
unit=$root/units/zeptodb.service
grep -q "^ExecStart=$root/bin/zeptodb serve --config $root/etc/zeptodb.json$" "$unit"
# verify exits 0 on an unknown key or a bad value ("ignoring"): any word from it is a failure.
out=$(systemd-analyze verify "$unit" 2>&1) || { echo "$out"; exit 1; }
[ -z "$out" ] || { echo "$out"; echo "systemd-analyze verify: $unit has problems"; exit 1; }
echo "systemd-analyze verify: $unit passes, with nothing to say"
log=$root/serve.log
"$root/bin/zeptodb" serve --config "$root/etc/zeptodb.json" --data-dir "$root/data" \
  --http 127.0.0.1:0 --pg 127.0.0.1:0 2> "$log" &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
grep -q "listening on" "$log" || { cat "$log"; echo "the installed server did not start"; exit 1; }
kill -TERM $pid
code=0
wait $pid || code=$?
if [ $code != 0 ] || grep -q "panicked" "$log"; then
  cat "$log"
  echo "the installed server did not stop cleanly (exit $code)"
  exit 1
fi
echo "the installed server served with the installed config and stopped cleanly"

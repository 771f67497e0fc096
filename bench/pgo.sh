#!/usr/bin/env bash
# A profile-guided build of the server and the in-process benchmarks (make pgo): build them
# instrumented, run a training load (the demo's queries, a wide-row ILP ingest, and the
# benchmark queries when DATA names a directory of bench/harness/gen_data.py's Parquet files),
# merge the profiles, and build again with them, into target/pgo/release. bench/README.md
# ("Profile-guided build") has the measurement that decides whether releases use it.
#
#   bench/pgo.sh                       # or: make pgo
#   DATA=/path/to/1000000 bench/pgo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-}
CARGO=${CARGO:-cargo}
rustup component add llvm-tools >/dev/null 2>&1 || true
sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
[ -x "$profdata" ] || { echo "pgo: llvm-profdata not found (rustup component add llvm-tools)" >&2; exit 1; }
prof="$PWD/target/pgo-profiles"
rm -rf "$prof"
mkdir -p "$prof"

echo "== pgo 1/4: instrumented build (target/pgo-gen)"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$prof" $CARGO build --release --target-dir target/pgo-gen -p zepto-cli -p zepto-bench
gen=target/pgo-gen/release

echo "== pgo 2/4: training"
echo "   the demo's queries"
"$gen/zeptodb" demo >/dev/null
echo "   wide-row ILP ingest, 400 series x 2 h, two clients"
"$gen/ilp_ingest" 400 2 10000 1 2 >/dev/null
if [ -n "$DATA" ]; then
  echo "   the benchmark queries over $DATA"
  "$gen/zepto-bench" --data "$DATA" --queries Q1,Q2,Q3a,Q3b,Q4,Q5,Q6,Q7 --iters 5 >/dev/null
fi

echo "== pgo 3/4: merging $(find "$prof" -name '*.profraw' | wc -l) profiles"
"$profdata" merge -o "$prof/merged.profdata" "$prof"
# Named by its content: the flags change with the profile, so cargo rebuilds every crate
# (it does not look at the file a flag names).
merged="$prof/merged-$(sha256sum "$prof/merged.profdata" | cut -c1-16).profdata"
mv "$prof/merged.profdata" "$merged"

echo "== pgo 4/4: optimized build (target/pgo)"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$merged -Cllvm-args=-pgo-warn-missing-function=false" \
  $CARGO build --release --target-dir target/pgo -p zepto-cli -p zepto-bench
echo "built target/pgo/release/zeptodb (and zepto-bench, ilp_ingest)"

#!/usr/bin/env bash
# Short cargo-fuzz runs of every target (seconds each: $1, default 30), seeded with the SQL corpus.
# Needs a nightly toolchain (rustup) and cargo-fuzz (installed from crates.io if missing).
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-30}
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz-smoke: no nightly toolchain; installing one with rustup" >&2
  rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz-smoke: installing cargo-fuzz" >&2
  cargo install cargo-fuzz --locked --quiet
fi
# Seed corpus: every SQL statement of the golden files, one per file.
mkdir -p corpus/sql corpus/csv corpus/ingest corpus/fix
if [ -z "$(ls -A corpus/sql)" ]; then
  awk 'BEGIN{n=0} /^(statement|query)/{getline; n++; f=sprintf("corpus/sql/slt%05d", n); print > f; close(f)}' ../tests/slt/*.slt
  printf 'ts,sym,px,n,s,b\n2024-01-02 09:30:00,A,1.5,3,"x,y",true\n,,,,"",\n' > corpus/csv/seed1
fi
if [ -z "$(ls -A corpus/ingest)" ]; then
  printf 'cpu,host=a usage=0.5,idle=99i,ok=t,name="x y" 1700000000000000000\nmem free=12u\n' > corpus/ingest/ilp1
  cp corpus/csv/seed1 corpus/ingest/csv1
  printf '{"ts":"2024-01-02 09:30:00","sym":"A","px":1.5,"n":3,"s":"x","b":true}\n' > corpus/ingest/jsonl1
fi
if [ -z "$(ls -A corpus/fix)" ]; then
  printf '8=FIX.4.4\0019=126\00135=W\00149=F\00156=Z\00134=2\00152=20240102-09:30:00.123\00155=A\001268=2\001269=0\001270=1.5\001271=100\001273=09:30:00.1\001269=2\001270=1.6\001271=5\001272=20240102\00110=093\001' > corpus/fix/w1
fi
for t in sql csv ingest fix; do
  echo "== fuzz $t for ${secs}s"
  cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=4096 2>&1 | tail -n 4
done

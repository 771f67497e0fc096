#!/usr/bin/env bash
# Long cargo-fuzz runs of every target (or those named after the seconds): `make fuzz`.
# usage: fuzz/run.sh SECONDS_PER_TARGET [TARGET ...]
# Needs a nightly toolchain and cargo-fuzz: installed with rustup and cargo when missing (the
# stable `cargo test -p zepto-fuzz` in `make test` needs neither). The working corpus grows in
# fuzz/corpus/<target> (not committed), seeded by zepto-fuzz-seeds; what a run finds lands in
# fuzz/artifacts/<target> (its log in fuzz/logs/<target>.log): fix it, then keep the input in
# fuzz/regressions/<target>, which `make test` replays.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-300}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(sql csv ingest pgcopy fix wal changes table_file manifest http)
fi
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz: installing a nightly toolchain with rustup" >&2
  rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz" >&2
  cargo install cargo-fuzz --locked --quiet
fi
cargo run --quiet --manifest-path ../Cargo.toml -p zepto-fuzz --bin zepto-fuzz-seeds -- corpus
if ! ls corpus/sql | grep -q '^slt'; then
  # The golden SQL files, one statement (its lines up to the next blank line) per seed.
  awk 'BEGIN{n=0; f=""} /^(statement|query)/{n++; f=sprintf("corpus/sql/slt%05d", n); next}
       /^----$/ || /^$/{if (f != "") close(f); f=""; next} f != ""{print > f}' ../tests/slt/*.slt
fi
mkdir -p logs
failed=0
for t in "${targets[@]}"; do
  mkdir -p "regressions/$t"
  echo "== fuzz $t for ${secs}s ($(date +%T))"
  if cargo +nightly fuzz run "$t" "corpus/$t" "regressions/$t" -- \
      -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=4096 > "logs/$t.log" 2>&1; then
    grep -E "^#[0-9]+.*DONE" "logs/$t.log" | tail -n 1
  else
    failed=1
    echo "fuzz $t FAILED; the end of logs/$t.log:"
    tail -n 40 "logs/$t.log"
  fi
done
exit $failed

#!/usr/bin/env bash
# Benchmark ZeptoDB beside DuckDB and Polars on the benchmark market-data set (ROWS, default 1M);
# with --growth, ZeptoDB alone on growing rows and symbols (bench/growth.py).
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-1000000}
VENV=${VENV:-.venv-bench}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r bench/requirements.txt
fi
cargo build --release -p zepto-bench
if [ "${1:-}" = "--growth" ]; then
  shift
  exec "$VENV/bin/python" bench/growth.py "$@"
fi
"$VENV/bin/python" bench/compare.py --rows "$ROWS" "$@"

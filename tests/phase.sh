#!/usr/bin/env bash
# `tests/phase.sh NAME COMMAND...`: run COMMAND, and append NAME and its seconds to
# $ZEPTO_PHASES when set (tab-separated; `.ci/run` prints them as its phase table).
set -uo pipefail
name=$1
shift
t0=$(date +%s)
"$@"
code=$?
if [ -n "${ZEPTO_PHASES:-}" ]; then
  printf '%s\t%s\n' "$name" "$(($(date +%s) - t0))" >> "$ZEPTO_PHASES"
fi
exit $code

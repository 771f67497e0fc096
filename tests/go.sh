#!/usr/bin/env bash
# Prints the `go` that builds tests/s3 (the in-memory S3 server of `make s3`): the one on
# PATH when it is as new as tests/s3/go.mod asks, else a toolchain fetched once from the Go
# module proxy (the golang.org/toolchain module, the way `go` upgrades itself) into
# target/tools/go. No root needed; Debian's own golang-go (1.19 in bookworm) is too old.
set -euo pipefail
cd "$(dirname "$0")/.."
have() { command -v "$1" > /dev/null 2>&1; }
# Go: the version tests/s3/go.mod asks for, or newer.
want=$(sed -n 's/^go \([0-9.]*\)$/\1/p' tests/s3/go.mod)
# `newer A B`: A >= B as dotted versions.
newer() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$2" ]; }
go_ok() { have "$1" && newer "$("$1" env GOVERSION 2> /dev/null | sed 's/^go//')" "$want"; }
GO=go
if ! go_ok go; then
  GO=$PWD/target/tools/go/bin/go
  if ! go_ok "$GO"; then
    full=$want
    [ "$(echo "$want" | tr -cd . | wc -c)" -ge 2 ] || full=$want.0
    url="https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go$full.linux-$(dpkg --print-architecture 2> /dev/null || echo amd64).zip"
    echo "== Go $full from the Go module proxy into target/tools/go ($url)" >&2
    rm -rf target/tools/go target/tools/go.zip target/tools/unpack
    mkdir -p target/tools/unpack
    curl -sSfL -o target/tools/go.zip "$url"
    unzip -q target/tools/go.zip -d target/tools/unpack
    mv target/tools/unpack/golang.org/toolchain@*/ target/tools/go
    chmod +x target/tools/go/bin/* target/tools/go/pkg/tool/*/*
    rm -rf target/tools/go.zip target/tools/unpack
  fi
fi
echo "$GO"

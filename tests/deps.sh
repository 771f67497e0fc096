#!/usr/bin/env bash
# What `make test` needs beyond Rust and Python, installed when missing, so that on a fresh
# Debian or Ubuntu machine the README's test command is the only set-up step:
#   - Debian packages: a JDK (17+) and Maven (the FIX door's QuickFIX/J counterparty, a real
#     Kafka broker, pgjdbc), psql (postgresql-client), iproute2 (network namespaces),
#     Chromium and its driver (the console's browser tests), a C/C++ compiler and make
#     (librdkafka and usearch build from source), python3-venv (the test venv).
#     Installed with apt as root; otherwise this stops at once with the exact command.
#   - root itself: the cluster's fault test runs its hosts in network namespaces.
# Go, for the in-memory S3 server, is tests/go.sh's (no root needed).
set -euo pipefail
cd "$(dirname "$0")/.."

# `have CMD` is true when CMD runs here.
have() { command -v "$1" > /dev/null 2>&1; }

java_ok() {
  have java || return 1
  local v
  v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  [ "${v:-0}" -ge 17 ]
}

missing=()
java_ok || missing+=("$( (apt-cache show openjdk-17-jdk-headless > /dev/null 2>&1 && echo openjdk-17-jdk-headless) || echo default-jdk-headless)")
have mvn || missing+=(maven)
psql --version > /dev/null 2>&1 || missing+=(postgresql-client)
have ip || missing+=(iproute2)
{ [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; } || missing+=(chromium chromium-driver)
have cc || missing+=(gcc)
have c++ || missing+=(g++)
have make || missing+=(make)
have curl || missing+=(curl)
have unzip || missing+=(unzip)
have systemd-analyze || missing+=(systemd)
python3 -c 'import ensurepip, venv' 2> /dev/null || missing+=(python3-venv)

if [ "$(id -u)" != 0 ]; then
  if [ ${#missing[@]} -gt 0 ]; then
    echo "make test needs Debian packages that are not installed: ${missing[*]}" >&2
    echo "install them with:  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  fi
  echo "make test needs root: the cluster's fault test runs its hosts in network namespaces" >&2
  echo "(crates/zepto-cli/tests/cluster_netns.rs). Run it as root, e.g. in a container or VM." >&2
  exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing with apt: ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
fi

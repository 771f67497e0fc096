# One entry point; CI (.ci/run) calls `make check` and `make test`.
#   make demo   build and run the demo (generated market data + example queries)
#   make serve  HTTP server on 127.0.0.1:8123 with the demo data loaded
#   make sql    SQL shell on the demo data
#   make test   everything CI tests: unit + DuckDB-oracle .slt corpus + randomized differential
#               test against DuckDB + every decoder fuzzed on stable + the Python package's tests
#               (with QuickFIX/J from Maven Central as the FIX door's counterparty: make fix-engine)
#   make python install the Python package (`zeptodb`) into the current Python (release build)
#   make check  cargo fmt --check, clippy -D warnings, no import cycles between modules,
#               dependency licenses and bans (cargo deny's checks, offline), cargo doc without warnings
#   make msrv   cargo check of the libraries and binaries with the declared minimum Rust
#               (rust-version in Cargo.toml)
#   make fuzz   long cargo-fuzz runs of every decoder (nightly; FUZZ_SECS per target)
#   make bench  benchmark runner beside DuckDB and Polars (see bench/README.md)
#   make pgo    a profile-guided build of the server and the benchmarks into target/pgo/release
#               (bench/pgo.sh; DATA=dir of the peer harness's Parquet files adds its queries)
#   make soak   many rounds of the cluster's fault test (3 hosts in network namespaces, root)

CARGO ?= cargo
VENV  ?= .venv
PY    := $(VENV)/bin/python
SEED  ?= $(shell date +%s)

.PHONY: demo serve sql build test check msrv venv difftest fuzz python python-test bench bench-growth pgo clean fix-engine pg-driver kafka s3 cluster soak deps setup install console-vendor questdb

build:
	$(CARGO) build --release -p zepto-cli

demo: build
	./target/release/zeptodb demo

serve: build
	./target/release/zeptodb serve --demo

sql: build
	./target/release/zeptodb sql --demo

$(VENV)/.ok: tests/gen/requirements.txt python/requirements-test.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/gen/requirements.txt -r python/requirements-test.txt
	touch $@

venv: $(VENV)/.ok

# Set up what the tests need, build once (`cargo build --workspace`: the binaries and the
# Python module; the runner then builds the test targets), and run every test binary, the
# difftest and the Python tests side by side (tests/run_tests.py: `cargo test` would run the
# binaries one after another, and the slow ones mostly wait). With ZEPTO_PHASES set (.ci/run
# does), each step's seconds are recorded for the phase table.
QUESTDB_VERSION := 9.3.4
REQUIRE := ZEPTO_REQUIRE_FIX_ENGINE=1 ZEPTO_REQUIRE_KAFKA=1 ZEPTO_REQUIRE_NETNS=1 ZEPTO_REQUIRE_S3=1 \
  ZEPTO_REQUIRE_PG_CLIENTS=1 ZEPTO_REQUIRE_BROWSER=1 ZEPTO_REQUIRE_QUESTDB=1 QUESTDB_VERSION=$(QUESTDB_VERSION)
test:
	tests/phase.sh "set-up: packages, venv, Maven, Kafka, Go" $(MAKE) --no-print-directory setup
	tests/phase.sh "cargo build --workspace" $(CARGO) build --workspace
	$(REQUIRE) tests/run_tests.py --with "$(MAKE) --no-print-directory difftest" --with "$(MAKE) --no-print-directory python-test" \
	  --with tests/deploy_check.sh

# (`cargo build --workspace`, not `-p zepto-slt -p zepto-cli`: the same features as `cargo test
# --workspace`, so nothing is compiled twice.)
# Random tables and queries from a small grammar (and random ASOF joins and window queries),
# answered by DuckDB (and Polars for ema), replayed on ZeptoDB.
difftest: venv
	$(CARGO) build --workspace
	mkdir -p target/difftest
	$(PY) tests/gen/random_diff.py --seed $(SEED) --count 300 --out target/difftest/random.slt
	$(PY) tests/gen/asof_diff.py --seed $(SEED) --cases 40 --out target/difftest/asof.slt
	$(PY) tests/gen/window_diff.py --seed $(SEED) --cases 40 --out target/difftest/window.slt
	$(PY) tests/gen/dml_diff.py --seed $(SEED) --cases 40 --out target/difftest/dml.slt
	$(PY) tests/gen/vector_diff.py --seed $(SEED) --cases 30 --out target/difftest/vector.slt
	$(PY) tests/gen/dedup_diff.py --seed $(SEED) --cases 30 --out target/difftest/dedup.slt
	$(PY) tests/gen/partition_diff.py --seed $(SEED) --cases 4 --out target/difftest/partition.slt
	./target/debug/zepto-slt target/difftest/random.slt target/difftest/asof.slt target/difftest/window.slt target/difftest/dml.slt target/difftest/vector.slt target/difftest/dedup.slt target/difftest/partition.slt
	# Not dedup.slt: deduplication compares rows in memory only, and --tier moves half to history.
	./target/debug/zepto-slt --tier target/difftest/random.slt target/difftest/asof.slt target/difftest/window.slt target/difftest/dml.slt target/difftest/vector.slt target/difftest/partition.slt
	# The same expectations on 3 in-process cluster nodes (each query gathered from every owner).
	./target/debug/zepto-slt --cluster 3 target/difftest/random.slt target/difftest/asof.slt target/difftest/window.slt target/difftest/dml.slt target/difftest/vector.slt target/difftest/dedup.slt target/difftest/partition.slt tests/slt/*.slt
	$(PY) tests/gen/history_roundtrip.py --seed $(SEED) --bin target/debug/zeptodb

# QuickFIX/J (Maven Central, into ~/.m2), the real FIX engine of the FIX door's test
# (crates/zepto-cli/tests/fix_quickfixj.rs), which `make test` requires; a plain `cargo test`
# without Maven says that test is skipped.
fix-engine:
	mvn -q -B dependency:get -Dartifact=org.quickfixj:quickfixj-core:2.3.1 \
	  && mvn -q -B dependency:get -Dartifact=org.quickfixj:quickfixj-messages-fix44:2.3.1

# The PostgreSQL JDBC driver (Maven Central, into ~/.m2) for the PostgreSQL door's JDBC test
# (crates/zepto-cli/tests/pg.rs), which `make test` requires.
pg-driver:
	mvn -q -B dependency:get -Dartifact=org.postgresql:postgresql:42.7.8

# QuestDB (Maven Central, into ~/.m2): the oracle for its SQL dialect and the peer of the
# HTTP /exec door in python/tests/test_questdb_sql.py, which `make test` requires
# (QUESTDB_VERSION is set above REQUIRE, which passes it to the tests).
questdb:
	mvn -q -B dependency:get -Dartifact=org.questdb:questdb:$(QUESTDB_VERSION)

# Everything `make test` installs or fetches before it builds (quick once done: .ci/run
# starts it in the background while `make check` compiles).
setup: deps venv fix-engine pg-driver kafka s3 questdb

# `make install`: the release binary, the systemd unit (deploy/zeptodb.service.in with the
# paths filled in) and the example config, unless one is there already. DESTDIR for packaging;
# BIN to install another build. Then: systemctl daemon-reload && systemctl enable --now zeptodb.
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
CONFDIR ?= /etc/zeptodb
UNITDIR ?= /etc/systemd/system
BIN     ?= target/release/zeptodb
install:
	@[ -x $(BIN) ] || $(MAKE) build
	install -D -m 755 $(BIN) $(DESTDIR)$(BINDIR)/zeptodb
	install -d $(DESTDIR)$(CONFDIR) $(DESTDIR)$(UNITDIR)
	[ -e $(DESTDIR)$(CONFDIR)/zeptodb.json ] || install -m 644 deploy/zeptodb.json $(DESTDIR)$(CONFDIR)/zeptodb.json
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@CONFDIR@|$(CONFDIR)|g' deploy/zeptodb.service.in > $(DESTDIR)$(UNITDIR)/zeptodb.service

# What `make test` needs beyond Rust and Python (a JDK and Maven, psql, iproute2, Chromium
# and its driver, a C++ compiler, python3-venv), installed with apt when missing (as root;
# otherwise it stops at once and prints the command), and root itself (network namespaces).
deps:
	tests/deps.sh

# Rebuild the console's prebuilt editor and chart bundle (CodeMirror 6 and uPlot, exact
# versions in crates/zepto-server/console/vendor/package.json) with npm and esbuild; the
# output is committed, so building the server needs neither.
console-vendor:
	crates/zepto-server/console/vendor/build.sh

# A real Apache Kafka broker's jars (Maven Central, into target/kafka/lib) for the cluster
# tests (crates/zepto-cli/tests/cluster_kafka.rs), which `make test` requires; a plain
# `cargo test` without them says those tests are skipped. tests/kafka/broker.sh runs them.
kafka:
	tests/kafka/broker.sh install

# An in-memory S3-compatible server (gofakes3, from the Go module proxy; Go 1.24+, fetched by
# tests/go.sh when missing) for the
# shared-history tests over S3: target/s3/fakes3.
s3:
	GO=$$(tests/go.sh) && cd tests/s3 && $$GO build -o ../../target/s3/fakes3 .

# The 3-host fault test (crates/zepto-cli/tests/cluster_netns.rs: nodes in network
# namespaces, kill -9 and network cuts; needs root and iproute2) for ROUNDS rounds.
ROUNDS ?= 20
soak: kafka
	ZEPTO_SOAK_ROUNDS=$(ROUNDS) ZEPTO_REQUIRE_NETNS=1 ZEPTO_REQUIRE_KAFKA=1 \
	  $(CARGO) test -p zepto-cli --test cluster_netns -- --nocapture

# A 3-node cluster on this machine (a Kafka broker and three nodes; docs/cluster.md):
# `tests/kafka/cluster.sh stop` ends it.
cluster: build kafka
	tests/kafka/cluster.sh start

# The Python package's tests (they also start `zeptodb serve` for the remote mode), on the
# extension module that `cargo build --workspace` links (dev profile), placed where an editable
# install puts it. One build for every step: a build of some packages only (`-p`, or `maturin
# develop`, which builds the Python crate alone) resolves the dependencies' features for those
# packages only, and so compiles Arrow, tokio and the whole engine a second time.
python-test: venv
	$(CARGO) build --workspace
	cp $(or $(CARGO_TARGET_DIR),target)/debug/lib_native.so python/zeptodb/_native.abi3.so
	PYTHONPATH=$(abspath python) $(PY) -m pytest -q python/tests

python:
	python3 -m pip install ./python

# Long libFuzzer runs of every decoder (FUZZ_SECS per target; FUZZ_TARGETS to pick some).
# Needs nightly and cargo-fuzz (installed when missing). `make test` runs the same targets on
# stable, over their seeds, kept regressions and mutations (crates/zepto-fuzz/tests/).
FUZZ_SECS ?= 300
fuzz:
	./fuzz/run.sh $(FUZZ_SECS) $(FUZZ_TARGETS)

check:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	python3 tests/arch/cycles.py
	python3 tests/arch/deps.py
	python3 tests/arch/profiles.py
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --quiet

# The declared minimum Rust version builds what a user builds: every library and the
# `zeptodb` binary (its own target dir: no thrashing of the stable build). Test targets are
# left to the stable toolchain: checking them again proved nothing a user needs and cost a
# second check of every dev-dependency. Installs that toolchain with rustup if missing.
MSRV := $(shell sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
msrv:
	rustup toolchain list | grep -q '^$(MSRV)' || rustup toolchain install $(MSRV) --profile minimal
	CARGO_TARGET_DIR=target/msrv $(CARGO) +$(MSRV) check --workspace --lib --bins

bench:
	./bench/run.sh

pgo:
	./bench/pgo.sh

# How cost grows with rows (1M, 10M, 100M) and symbols (10 to 100k): bench/growth.py.
bench-growth:
	./bench/run.sh --growth

clean:
	$(CARGO) clean
	rm -rf $(VENV)

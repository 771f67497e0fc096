#!/usr/bin/env python3
"""Licenses and banned crates of every dependency: what `cargo deny check licenses bans` checks,
offline and without a tool to install (`make check` runs it).

- Licenses: each package's SPDX expression (from `cargo metadata`, so the lock file's whole
  graph, dev and build dependencies included) must be satisfiable with the licenses in ALLOWED:
  `A OR B` needs one side, `A AND B` both, `A WITH exception` is judged by A. The legacy `A/B`
  spelling means OR. A package with no SPDX expression fails unless listed in NO_SPDX.
- Bans: crates we must not link, with the reason (BANNED). DataFusion, DuckDB and Polars are
  the peers we measure against and the test oracles, never part of the engine; OpenSSL is
  replaced by rustls everywhere.

Exit status 1 with one line per offence; 0 with a one-line summary.
"""

import json
import re
import subprocess
import sys

# Permissive licenses compatible with distributing ZeptoDB under Apache-2.0.
ALLOWED = {
    "Apache-2.0", "MIT", "BSD-2-Clause", "BSD-3-Clause", "ISC", "Zlib", "0BSD", "CC0-1.0",
    "Unlicense", "BSL-1.0", "Unicode-3.0", "Unicode-DFS-2016", "MIT-0",
    # The Community Data License Agreement (permissive): Mozilla's root certificates as data
    # (webpki-root-certs, behind the S3 client's certificate verifier).
    "CDLA-Permissive-2.0",
    # Mozilla Public License 2.0: file-level copyleft, fine to link unmodified (x509-certificate,
    # behind pgwire's TLS support).
    "MPL-2.0",
}

# Crate name prefix -> why it must not be a dependency.
BANNED = {
    "datafusion": "a peer and test oracle, not part of the engine",
    "duckdb": "a peer and test oracle, not part of the engine",
    "libduckdb-sys": "a peer and test oracle, not part of the engine",
    "polars": "a peer and test oracle, not part of the engine",
    "openssl": "TLS is rustls",
    "openssl-sys": "TLS is rustls",
    "native-tls": "TLS is rustls",
}

# Crates a ban's prefix would catch that are not what it bans: name -> why they are fine.
NOT_BANNED = {
    "openssl-probe": "finds the system's CA certificate files for rustls; links nothing of OpenSSL",
}

# Packages whose license is given only as a file, checked by hand: name -> license read.
NO_SPDX = {}


def tokens(expr):
    return re.findall(r"\(|\)|[A-Za-z0-9.+-]+", expr.replace("/", " OR "))


def satisfiable(expr):
    """Whether an SPDX expression can be met with ALLOWED licenses (AND binds tighter than OR)."""
    toks = tokens(expr)
    pos = 0

    def peek():
        return toks[pos] if pos < len(toks) else None

    def take():
        nonlocal pos
        pos += 1
        return toks[pos - 1]

    def primary():
        if peek() == "(":
            take()
            v = disjunction()
            if take() != ")":
                raise ValueError(f"unbalanced parentheses in '{expr}'")
            return v
        lic = take()
        if peek() == "WITH":
            take()
            take()  # the exception never narrows what the base license allows
        return lic.rstrip("+") in ALLOWED

    def conjunction():
        v = primary()
        while peek() == "AND":
            take()
            v = primary() and v
        return v

    def disjunction():
        v = conjunction()
        while peek() == "OR":
            take()
            v = conjunction() or v
        return v

    v = disjunction()
    if pos != len(toks):
        raise ValueError(f"cannot read '{expr}'")
    return v


def selftest():
    """The reader itself, on expressions whose answer is known (a broken reader would pass all)."""
    cases = {
        "MIT OR GPL-3.0": True, "MIT AND GPL-3.0": False, "GPL-3.0": False, "MIT/Apache-2.0": True,
        "(MIT OR Apache-2.0) AND Unicode-3.0": True, "Apache-2.0 WITH LLVM-exception": True,
        "LGPL-2.1-or-later": False, "MIT OR Apache-2.0 OR LGPL-2.1-or-later": True,
        "(GPL-2.0 OR MIT) AND AGPL-3.0": False,
    }
    for expr, want in cases.items():
        assert satisfiable(expr) == want, f"reads '{expr}' wrongly"


def main():
    selftest()
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked"],
            check=True, capture_output=True, text=True,
        ).stdout
    )
    bad = []
    for p in meta["packages"]:
        name, lic = p["name"], p.get("license")
        for prefix, why in BANNED.items():
            if (name == prefix or name.startswith(prefix + "-")) and name not in NOT_BANNED:
                bad.append(f"{name} {p['version']}: banned ({why})")
        if lic is None:
            if name not in NO_SPDX:
                bad.append(f"{name} {p['version']}: no SPDX license expression (add it to NO_SPDX once read)")
            continue
        try:
            if not satisfiable(lic):
                bad.append(f"{name} {p['version']}: license '{lic}' is not in the allowed set")
        except ValueError as e:
            bad.append(f"{name} {p['version']}: {e}")
    for line in bad:
        print(line)
    if bad:
        sys.exit(1)
    print(f"{len(meta['packages'])} packages: licenses allowed, none banned")


if __name__ == "__main__":
    main()

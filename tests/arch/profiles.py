#!/usr/bin/env python3
"""Every workspace crate has its own dev-profile block in the root Cargo.toml (`make check`).

Dependencies build at opt-level 2 and build scripts and proc macros at 0 (see the comments
there); the workspace's crates are named one by one at opt-level 1 with line tables, since a
`package."*"` override for the dependencies would outrank build-override. A new crate without
its block would silently build at opt-level 2 without line tables: this says so.

Exit status 1 with one line per crate missing its block; 0 with a one-line summary.
"""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
WANT = {"opt-level": 1, "debug": "line-tables-only"}


def main() -> int:
    meta = subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1"],
        cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True,
    )
    names = sorted(p["name"] for p in json.loads(meta.stdout)["packages"])
    profiles = tomllib.loads((ROOT / "Cargo.toml").read_text()).get("profile", {})
    blocks = profiles.get("dev", {}).get("package", {})
    bad = [n for n in names if blocks.get(n) != WANT]
    for n in bad:
        print(f"Cargo.toml: [profile.dev.package.{n}] must be {WANT} (got {blocks.get(n)})")
    if not bad:
        print(f"profiles: {len(names)} workspace crates, each with its dev-profile block")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

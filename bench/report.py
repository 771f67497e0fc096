"""Report output for the benchmarks: the lines of a fixed-width table, a Markdown table, the
`--json` file.

Why one module: each script printed its tables with its own f-strings, naming every column's
width twice (header and rows) and writing the Markdown pipes and the `--json` dump out again.
Here each is written once; a script still formats its own numbers (these take strings, or
anything `str()` gives the text of) and prints its own sentences. Standard library only.
"""
import json


class Columns:
    """A fixed-width table's layout: each column's width and alignment ('<' or '>'; '<' where
    `align` is shorter) and the text between columns. `line(cells)` pads each cell to its
    column's width (a longer cell is left whole; a column past `widths`, or of width 0, is not
    padded). The header is a `line` too, so the widths are named once."""

    def __init__(self, widths=(), align="", sep=" "):
        self.widths, self.align, self.sep = list(widths), align, sep

    def line(self, cells):
        out = []
        for i, c in enumerate(cells):
            w = self.widths[i] if i < len(self.widths) else 0
            right = i < len(self.align) and self.align[i] == ">"
            out.append(str(c).rjust(w) if right else str(c).ljust(w))
        return self.sep.join(out)


def md_row(cells):
    """One row of a Markdown table: `| a | b |`."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def md_rule(align):
    """The line under a Markdown table's header, a column per character of `align`: `---|` for
    '<' (the default, left), `---:|` for '>'."""
    return "|" + "".join("---:|" if a == ">" else "---|" for a in align)


def md_table(headers, rows, align=""):
    """Print a Markdown table: the header, its rule (`align` as in `md_rule`, '<' where it is
    shorter than the header), the rows."""
    print(md_row(headers))
    print(md_rule(align.ljust(len(headers), "<")))
    for r in rows:
        print(md_row(r))


def write_json(path, obj):
    """The `--json` file: `obj` as JSON, indented by 1, when a path was given; else nothing."""
    if path:
        with open(path, "w") as f:
            json.dump(obj, f, indent=1)


def run_children(script, engines, flags):
    """`script` run once per engine as `python script --child ENGINE FLAGS...` (each engine in
    a process of its own, so its peak RSS is its own); each child's last stdout line is its
    JSON result. Returns {engine: result}, in `engines`' order."""
    import subprocess
    import sys

    out = {}
    for e in engines:
        cmd = [sys.executable, script, "--child", e, *flags]
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
        out[e] = json.loads(done.stdout.strip().splitlines()[-1])
    return out

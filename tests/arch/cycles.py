#!/usr/bin/env python3
"""No import cycles between modules: for every crate, a module may use its siblings only in one
direction. Module `a::b` using `a::c::d` is an edge b -> c among the children of `a` (a module
and its own submodules are not compared: a parent declares its children and they use its
items). Edges come from `use crate::…`, `crate::…` paths, and `super::…` paths, in each
file's code (comments and strings aside). Prints every cycle and exits 1 if there is one
that KNOWN does not list.

Usage: tests/arch/cycles.py [repo root]
"""
import os
import re
import sys

# Cycles that remain, each with the issue that removes it. Empty is the goal, and it is
# reached: the last one, plan <-> exec, went when bound expressions and their evaluator moved
# below both (crate::expr, crate::eval) and the binder got the executor handed in.
KNOWN = set()

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*)\};", re.S)


def strip(src):
    """Code without comments, string literals (their text must not count as paths) and unit
    test modules (`#[cfg(test)] mod …`, which may use anything)."""
    cut = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", src)
    if cut:
        src = src[: cut.start()]
    src = re.sub(r"//[^\n]*", "", src)
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', src)


def modules(src_dir):
    """Module path (tuple) of every .rs file under a crate's src/."""
    out = {}
    for root, _, files in os.walk(src_dir):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, f), src_dir)[:-3].split(os.sep)
            if rel[-1] in ("lib", "main", "mod"):
                rel = rel[:-1]
            out[os.path.join(root, f)] = tuple(rel)
    return out


def resolve(mod, head, tail, known):
    """The module a path refers to: its longest prefix that is a module."""
    if head == "crate":
        base = ()
    elif head == "super":
        base = mod[:-1]
    else:
        base = mod
    parts = list(tail)
    while parts and parts[0] == "super":
        base = base[:-1]
        parts = parts[1:]
    full = base + tuple(parts)
    for n in range(len(full), -1, -1):
        if full[:n] in known:
            return full[:n]
    return base


def edges(files):
    known = set(files.values())
    out = set()
    for path, mod in files.items():
        code = strip(open(path, encoding="utf-8").read())
        refs = []
        for m in USE_GROUP.finditer(code):
            for item in re.split(r",", m.group(3)):
                item = item.strip().split(" as ")[0].strip()
                if item and item not in ("self", "*") and re.match(r"^[A-Za-z_][\w:]*$", item):
                    refs.append((m.group(1), m.group(2).strip(":").split("::") + item.split("::")))
        for m in PATH.finditer(code):
            refs.append((m.group(1), m.group(2).strip(":").split("::")))
        for head, tail in refs:
            tail = [t for t in tail if t]
            target = resolve(mod, head, tail, known)
            out.add((mod, target))
    return out


def sibling_cycles(edge_set):
    """Cycles among the children of each module, as sets of child names."""
    graph = {}
    for a, b in edge_set:
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        if n == len(a) or n == len(b):
            continue  # ancestor and descendant
        parent, x, y = a[:n], a[n], b[n]
        graph.setdefault(parent, {}).setdefault(x, set()).add(y)
    cycles = []
    for parent, g in graph.items():
        for comp in scc(g):
            if len(comp) > 1:
                cycles.append((parent, frozenset(comp)))
    return cycles


def scc(g):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    nodes = set(g) | {y for ys in g.values() for y in ys}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    bad = 0
    crates = [(c, os.path.join(root, "crates", c, "src")) for c in sorted(os.listdir(os.path.join(root, "crates")))]
    crates.append(("zeptodb-python", os.path.join(root, "python", "src")))
    for crate, src in crates:
        if not os.path.isdir(src):
            continue
        for parent, comp in sibling_cycles(edges(modules(src))):
            where = "::".join(("crate",) + parent)
            known = (crate, where, comp) in KNOWN
            print(f"{'known' if known else 'CYCLE'}: {crate} {where}: {' <-> '.join(sorted(comp))}")
            bad += not known
    if bad:
        print(f"{bad} import cycle(s) between modules; see tests/arch/cycles.py")
        sys.exit(1)
    print("no import cycles between modules")


if __name__ == "__main__":
    main()

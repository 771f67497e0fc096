//! A sqllogictest runner for the `.slt` dialect our DuckDB-driven generators (`tests/gen/`)
//! write: the golden `tests/slt/` corpus and `make difftest`'s files, with DuckDB's answers.
//!
//! ```text
//! statement ok|error [text]      query <I|R|T|F per column> [rowsort|nosort] [scale=X]
//! SQL...                         SQL...
//!                                ----
//!                                cell<TAB>cell
//! ```
//!
//! # What it owns
//!
//! * [`parse`] — a file as [`Record`]s (`query error` is a statement that must fail); an unknown
//!   record or mode fails the file, naming its line.
//! * [`cell`], [`result_lines`], [`py_float`] — results spelled as the generators spell DuckDB's:
//!   `NULL`, `(empty)` for '', Python's float `repr`, timestamps with nine fraction digits.
//! * [`run_file_in`] in a [`Mode`] (and [`run_file`], [`run_file_with`]) — one file on fresh
//!   engines, into a [`Report`]; [`tiering_engine`] — an engine that can tier to Parquet history.
//! * [`explain_mismatch`]; the binary `zepto-slt [--tier | --cluster N] FILE...` (`src/main.rs`).
//!
//! # Entry points
//!
//! `tests/corpus.rs` runs `tests/slt/*.slt` plain and tiered ([`run_file_with`]); `make difftest`
//! runs the binary plain, with `--tier` and with `--cluster 3`. Two tests use [`tiering_engine`].
//!
//! # Invariants
//!
//! * Floats match within 1e-9 relative; `F` columns within 1e-5 of the column's largest magnitude
//!   (or `scale=`). Other cells match as text. `rowsort` sorts both sides alike.
//! * A SELECT or WITH passes only if, besides its rows, `EXPLAIN` and `EXPLAIN ANALYZE` print the
//!   same operators and every one ran ([`explain_mismatch`]).
//! * [`Mode::Tier`] moves the older half of each table to the history before every query, except
//!   tables the file DELETEs from or UPDATEs, and sends partition work of any size to helpers.
//! * [`Mode::Cluster`] runs each statement on every engine alone and query `i` on engine `i % n`
//!   as a member of an 8-partition cluster, so every row must count once.
//!
//! # When you change …
//!
//! * A record kind or option: [`parse`], [`Record`], the checks in `run_on_one`, `run_on_cluster`;
//!   its writer in `tests/gen/` (`slt_statement`, `slt_query` in `common.py`; `vector_diff.py` for
//!   `F` and `scale=`); the `awk` in `fuzz/run.sh` that takes SQL seeds from `statement`/`query`.
//! * A column type: [`cell`], and `format_column` and `type_letter` in `tests/gen/common.py`.
//! * A mode: [`Mode`], [`run_file_in`], its flag in `src/main.rs`, the `Makefile`'s `difftest`.
//! * The `EXPLAIN` text (zepto-sql): [`explain_mismatch`] takes a line's first word as its
//!   operator and wants `(rows=` or `(fused into its parent)` on every node.
#![warn(missing_docs)]

use std::fmt::Write as _;
use zepto_sql::{Engine, QueryResult};
use zepto_storage::{time, Column, ColumnData};

/// One record of an `.slt` file.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// `statement ok|error [text]` (and `query error`): run the SQL, expect success or an error.
    Statement {
        /// 1-based line of the record's header in the file.
        line: usize,
        /// The statement text (lines joined with `\n`).
        sql: String,
        /// `None` expects success; `Some(text)` an error whose code and message contain `text`
        /// (ignoring case; empty matches any error).
        expect_error: Option<String>,
    },
    /// `query <types> [rowsort|nosort]`: run the SQL and compare its rows with `expected`.
    Query {
        /// 1-based line of the record's header in the file.
        line: usize,
        /// The query text (lines joined with `\n`).
        sql: String,
        /// One type letter per result column (empty skips the width check): `I` integer, `R`
        /// float, `T` text, `F` a REAL-precision float (vector distances: DuckDB computes them
        /// in `f32`, we accumulate in another order), compared with a relative tolerance of 1e-5.
        types: String,
        /// `rowsort`: compare rows as sorted multisets instead of in order.
        sort: bool,
        /// `scale=X` after the sort mode: the magnitude `F` tolerances are relative to, when
        /// larger than the column's own (a sum of f32 products that cancels carries the rounding
        /// of its terms: the generator gives the largest sum of their magnitudes).
        scale: f64,
        /// Expected rows, cells tab-separated, as [`result_lines`] prints them.
        expected: Vec<String>,
    },
}

/// The records of an `.slt` file's text; an unknown record or mode is an error naming its line.
pub fn parse(text: &str) -> Result<Vec<Record>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim_end();
        if l.trim().is_empty() || l.starts_with('#') {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut words = l.split_whitespace();
        match words.next() {
            Some("statement") => {
                let kind = words.next().unwrap_or("");
                let rest: Vec<&str> = words.collect();
                let expect_error = match kind {
                    "ok" => None,
                    "error" => Some(rest.join(" ")),
                    k => return Err(format!("line {start}: unknown statement kind '{k}'")),
                };
                i += 1;
                let mut sql = Vec::new();
                while i < lines.len() && !lines[i].trim().is_empty() {
                    sql.push(lines[i]);
                    i += 1;
                }
                out.push(Record::Statement { line: start, sql: sql.join("\n"), expect_error });
            }
            Some("query") => {
                let types = words.next().unwrap_or("");
                if types == "error" {
                    i += 1;
                    let mut sql = Vec::new();
                    while i < lines.len() && !lines[i].trim().is_empty() {
                        sql.push(lines[i]);
                        i += 1;
                    }
                    out.push(Record::Statement { line: start, sql: sql.join("\n"), expect_error: Some(String::new()) });
                    continue;
                }
                let sort = match words.next() {
                    None | Some("nosort") => false,
                    Some("rowsort") => true,
                    Some(m) => return Err(format!("line {start}: unsupported sort mode '{m}'")),
                };
                let scale = match words.next() {
                    None => 0.0,
                    Some(w) => w
                        .strip_prefix("scale=")
                        .and_then(|x| x.parse::<f64>().ok())
                        .filter(|x| x.is_finite() && *x >= 0.0)
                        .ok_or_else(|| format!("line {start}: expected scale=<number>, got '{w}'"))?,
                };
                i += 1;
                let mut sql = Vec::new();
                while i < lines.len() && lines[i].trim_end() != "----" && !lines[i].trim().is_empty() {
                    sql.push(lines[i]);
                    i += 1;
                }
                let mut expected = Vec::new();
                if i < lines.len() && lines[i].trim_end() == "----" {
                    i += 1;
                    while i < lines.len() && !lines[i].is_empty() {
                        expected.push(lines[i].to_string());
                        i += 1;
                    }
                }
                out.push(Record::Query {
                    line: start,
                    sql: sql.join("\n"),
                    types: types.to_string(),
                    sort,
                    scale,
                    expected,
                });
            }
            Some(w) => return Err(format!("line {start}: unknown record '{w}'")),
            None => i += 1,
        }
    }
    Ok(out)
}

/// Python's `repr(float)`, so our cells read like the oracle's.
pub fn py_float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    let e = format!("{v:e}"); // shortest digits, e.g. 1.5e-5
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..16).contains(&exp) {
        return format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    let s = format!("{v}");
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
}

fn escape(s: &str) -> String {
    if s.is_empty() {
        return "(empty)".into();
    }
    s.replace('\\', "\\\\").replace('\t', "\\t").replace('\n', "\\n")
}

/// Row `i` of `c` as an `.slt` cell: `NULL`, Python float spelling, timestamps with nine
/// fraction digits, strings escaped (`(empty)` for '').
pub fn cell(c: &Column, i: usize) -> String {
    if !c.is_valid(i) {
        return "NULL".into();
    }
    match &c.data() {
        ColumnData::Bool(v) => v[i].to_string(),
        ColumnData::Int32(v) => v[i].to_string(),
        ColumnData::Int64(v) => v[i].to_string(),
        ColumnData::Int128(v) => v[i].to_string(),
        ColumnData::Float32(v) => py_float(v[i] as f64),
        ColumnData::Float64(v) => py_float(v[i]),
        ColumnData::Timestamp(v) => time::format_timestamp(v[i]),
        ColumnData::Date(v) => time::format_date(v[i]),
        ColumnData::Interval(v) => time::format_interval(v[i]),
        ColumnData::Varchar(_) | ColumnData::Symbol { .. } => escape(c.str_at(i).unwrap_or("")),
        ColumnData::Vector { .. } => {
            let v = c.vector_at(i).unwrap_or(&[]);
            format!("[{}]", v.iter().map(|&x| py_float(x as f64)).collect::<Vec<_>>().join(", "))
        }
        ColumnData::Null(_) => "NULL".into(),
    }
}

/// A result's rows as `.slt` lines: cells joined by tabs, batch by batch in result order.
pub fn result_lines(r: &QueryResult) -> Vec<String> {
    // Batch by batch, as the query produced them (a result's batches are never concatenated
    // here, so the corpus checks them as they are).
    r.chunks()
        .iter()
        .flat_map(|b| (0..b.rows).map(move |i| b.columns.iter().map(|c| cell(c, i)).collect::<Vec<_>>().join("\t")))
        .collect()
}

/// Two cells alike: equal text, or floats within `(rel, abs)` of each other (relative, with an
/// absolute floor for values near zero).
fn cells_match(a: &str, b: &str, (rel, abs): (f64, f64)) -> bool {
    if a == b {
        return true;
    }
    // Vectors element by element (two spellings of one float may differ in the 17th digit).
    if let (Some(x), Some(y)) = (a.strip_prefix('['), b.strip_prefix('[')) {
        let (x, y): (Vec<&str>, Vec<&str>) =
            (x.trim_end_matches(']').split(", ").collect(), y.trim_end_matches(']').split(", ").collect());
        return x.len() == y.len() && x.iter().zip(&y).all(|(p, q)| cells_match(p, q, (rel, abs)));
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => {
            if x.is_nan() && y.is_nan() {
                return true;
            }
            let tol = rel * x.abs().max(y.abs());
            (x - y).abs() <= tol.max(abs) || x == y
        }
        _ => false,
    }
}

/// The relative and absolute tolerance of column `col` by its type letter. `F` (REAL
/// precision: sums of f32 products whose order differs) is 1e-5 relative to the largest
/// magnitude in the expected column, since a sum that cancels to near zero carries the
/// rounding of its large terms.
fn tolerance(types: &[u8], col: usize, scale: &[f64]) -> (f64, f64) {
    if types.get(col) == Some(&b'F') {
        (1e-5, 1e-6f64.max(1e-5 * scale.get(col).copied().unwrap_or(0.0)))
    } else {
        (1e-9, 1e-12)
    }
}

/// The largest finite magnitude of each column of `lines` (for `F` tolerances).
fn column_scales(lines: &[String]) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for l in lines {
        for (k, c) in l.split('\t').enumerate() {
            let v = c.parse::<f64>().ok().filter(|v| v.is_finite()).map_or(0.0, f64::abs);
            match out.get_mut(k) {
                Some(m) => *m = m.max(v),
                None => out.push(v),
            }
        }
    }
    out
}

fn lines_match(a: &str, b: &str, types: &[u8], scale: &[f64]) -> bool {
    let (x, y): (Vec<&str>, Vec<&str>) = (a.split('\t').collect(), b.split('\t').collect());
    x.len() == y.len() && x.iter().zip(&y).enumerate().all(|(k, (p, q))| cells_match(p, q, tolerance(types, k, scale)))
}

/// Sort key that makes float spellings agree (so rowsort orders both sides alike). The two
/// zeros match as cells, so they sort alike too (`v + 0.0` is +0.0 for either).
fn sort_key(line: &str) -> String {
    line.split('\t')
        .map(|c| match c.parse::<f64>() {
            Ok(v) if c.contains(['.', 'e', 'n', 'N']) => format!("{:.9e}", v + 0.0),
            _ => c.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\t")
}

/// Outcome of one file.
#[derive(Debug, Default)]
pub struct Report {
    /// Records whose outcome matched.
    pub passed: usize,
    /// Records whose outcome did not.
    pub failed: usize,
    /// One `path:line: why` paragraph per failed record, with its SQL.
    pub failures: String,
    /// Tiering mode: queries that ran with some rows in history.
    pub over_history: usize,
    /// Cluster mode: queries whose plan gathered rows from other nodes (an Exchange).
    pub exchanged: usize,
}

impl Report {
    /// Count one record's outcome (`line` 0: the file as a whole).
    fn count(&mut self, path: &str, line: usize, outcome: Result<(), String>) {
        match (outcome, line) {
            (Ok(()), _) => self.passed += 1,
            (Err(why), 0) => {
                self.failed += 1;
                let _ = writeln!(self.failures, "{path}: {why}");
            }
            (Err(why), _) => {
                self.failed += 1;
                let _ = writeln!(self.failures, "{path}:{line}: {why}");
            }
        }
    }
}

/// Run one file (`path` only names it in failures) against a fresh in-memory engine.
pub fn run_file(path: &str, text: &str) -> Report {
    run_file_with(path, text, false)
}

/// A database whose tables can move rows to a Parquet history (all storage in memory).
pub fn tiering_engine() -> Result<Engine, String> {
    let catalog = std::sync::Arc::new(zepto_storage::Catalog::new());
    let mem = || -> std::sync::Arc<dyn zepto_wal::Storage> { std::sync::Arc::new(zepto_wal::MemStorage::new()) };
    let opts = zepto_durable::Options { sync: zepto_wal::SyncMode::None, checkpoint_bytes: 0, ..Default::default() };
    zepto_durable::Durable::open(mem(), mem(), mem(), &catalog, opts, |_| {}).map_err(|e| e.to_string())?;
    Ok(Engine::with_catalog(catalog))
}

/// Tables a file's DELETE and UPDATE statements change (their rows must stay in memory).
fn dml_targets(records: &[Record]) -> Vec<String> {
    let mut out = Vec::new();
    for r in records {
        if let Record::Statement { sql, .. } = r {
            let words: Vec<String> = sql.split_whitespace().take(3).map(|w| w.to_ascii_lowercase()).collect();
            match words.as_slice() {
                [d, f, t, ..] if d == "delete" && f == "from" => out.push(t.trim_end_matches(';').to_string()),
                [u, t, ..] if u == "update" => out.push(t.clone()),
                _ => {}
            }
        }
    }
    out
}

/// Before a query in tiering mode: move the older half of every table's in-memory rows (by
/// designated timestamp) to its Parquet history, so the query reads both tiers.
fn tier_half(engine: &Engine, skip: &[String]) -> Result<(), String> {
    let cat = engine.catalog();
    for name in cat.table_names() {
        if skip.iter().any(|s| s.eq_ignore_ascii_case(&name)) {
            continue;
        }
        let t = cat.snapshot(&name).map_err(|e| e.to_string())?;
        let Some(tc) = t.ts_col() else { continue };
        let mut ts: Vec<i64> = t
            .partitions()
            .iter()
            .flat_map(|p| {
                let c = &p.columns()[tc];
                let v = c.as_i64_slice().unwrap_or(&[]);
                (0..p.len()).filter(|&i| c.is_valid(i)).map(|i| v[i]).collect::<Vec<_>>()
            })
            .collect();
        if ts.len() < 2 {
            continue;
        }
        ts.sort_unstable();
        let cut = ts[ts.len() / 2];
        drop(t);
        cat.tier(&name, cut).map_err(|e| format!("tiering '{name}' before {cut}: {e}"))?;
    }
    Ok(())
}

/// How a file runs: on one engine, with half of every table tiered to the Parquet history
/// before each query, or on an in-process cluster of `n` engines (see [`Mode::Cluster`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One in-memory engine.
    Plain,
    /// One engine; before each query the older half of every table moves to the history.
    Tier,
    /// `n` engines in an in-process cluster (`zepto_sql::local_cluster::LocalCluster`) of 8 Kafka
    /// partitions dealt round-robin. Statements run on every engine alone, so each holds every
    /// row (as a node keeps rows of partitions a rebalance took away); query `i` runs on
    /// engine `i % n` as a member, which gathers each partition's rows from its one owner:
    /// every row must count once for the expectations to hold.
    Cluster(usize),
}

/// Run one file; with `tier`, every query first moves the older half of each table's rows to
/// the Parquet history (tables the file corrects with DELETE/UPDATE stay in memory), so the
/// same expectations check queries across both tiers. `tier` also sends partition-wise work of
/// any size to helper threads (normally only inputs of 100K rows and more), so the parallel
/// paths meet the same expectations (`Engine::with_parallel_min_rows`).
pub fn run_file_with(path: &str, text: &str, tier: bool) -> Report {
    run_file_in(path, text, if tier { Mode::Tier } else { Mode::Plain })
}

/// Run one file in `mode` (see [`Mode`]).
pub fn run_file_in(path: &str, text: &str, mode: Mode) -> Report {
    let records = match parse(text) {
        Ok(r) => r,
        Err(e) => {
            let mut rep = Report::default();
            rep.count(path, 0, Err(e));
            return rep;
        }
    };
    match mode {
        Mode::Cluster(n) => run_on_cluster(path, records, n),
        Mode::Plain | Mode::Tier => run_on_one(path, records, mode == Mode::Tier),
    }
}

/// [`Mode::Plain`] and [`Mode::Tier`]: one engine.
fn run_on_one(path: &str, records: Vec<Record>, tier: bool) -> Report {
    let mut rep = Report::default();
    let engine = if tier {
        match tiering_engine() {
            Ok(e) => e.with_parallel_min_rows(0),
            Err(e) => {
                rep.failed += 1;
                let _ = writeln!(rep.failures, "{path}: {e}");
                return rep;
            }
        }
    } else {
        Engine::new()
    };
    let skip = dml_targets(&records);
    for rec in records {
        if let (true, Record::Query { line, .. }) = (tier, &rec) {
            if let Err(e) = tier_half(&engine, &skip) {
                rep.failed += 1;
                let _ = writeln!(rep.failures, "{path}:{line}: {e}\n");
                continue;
            }
            let cat = engine.catalog();
            if cat.table_names().iter().any(|n| cat.snapshot(n).is_ok_and(|t| !t.history().files.is_empty())) {
                rep.over_history += 1;
            }
        }
        let (line, outcome) = match rec {
            Record::Statement { line, sql, expect_error } => (line, check_statement(&engine, &sql, expect_error)),
            Record::Query { line, sql, types, sort, scale, expected } => {
                (line, check_query(&engine, &sql, &types, (sort, scale), expected))
            }
        };
        rep.count(path, line, outcome);
    }
    rep
}

/// Partitions of the in-process cluster's topic.
const CLUSTER_PARTITIONS: i32 = 8;

/// [`Mode::Cluster`]: `n` (at least 1) engines of one in-process cluster.
fn run_on_cluster(path: &str, records: Vec<Record>, n: usize) -> Report {
    let mut rep = Report::default();
    let n = n.max(1);
    let cluster = zepto_sql::local_cluster::LocalCluster::new(CLUSTER_PARTITIONS, |_| true);
    // Statements change each node's own copy, as each node applies the same log (a DELETE
    // whose subquery reads its own table must see the rows as they were, not a cluster-wide
    // view half the nodes already changed); queries run on the nodes as members.
    let own: Vec<Engine> = (0..n).map(|_| Engine::new()).collect();
    let engines: Vec<Engine> = own
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mine: Vec<i32> = (0..CLUSTER_PARTITIONS).filter(|p| *p as usize % n == i).collect();
            cluster.join(&format!("node{i}"), e, &mine)
        })
        .collect();
    let mut queries = 0usize;
    for rec in records {
        let (line, outcome) = match rec {
            Record::Statement { line, sql, expect_error } => {
                let all: Vec<Result<(), String>> =
                    own.iter().map(|e| check_statement(e, &sql, expect_error.clone())).collect();
                (line, all.into_iter().collect::<Result<Vec<()>, String>>().map(|_| ()))
            }
            Record::Query { line, sql, types, sort, scale, expected } => {
                queries += 1;
                let on = &engines[queries % n];
                if plans_exchange(on, &sql) {
                    rep.exchanged += 1;
                }
                (
                    line,
                    check_query(on, &sql, &types, (sort, scale), expected)
                        .map_err(|e| format!("node{}: {e}", queries % n)),
                )
            }
        };
        rep.count(path, line, outcome);
    }
    rep
}

/// Whether `sql` (a SELECT) plans an Exchange on `engine`.
fn plans_exchange(engine: &Engine, sql: &str) -> bool {
    let select = sql.trim_start().get(..6).is_some_and(|w| w.eq_ignore_ascii_case("select"));
    select
        && engine
            .execute(&format!("EXPLAIN {sql}"))
            .is_ok_and(|r| result_lines(&r).iter().any(|l| l.trim_start().starts_with("Exchange")))
}

/// One `statement` record: `Err` says how its outcome differs from the expected one (with its SQL).
fn check_statement(engine: &Engine, sql: &str, expect_error: Option<String>) -> Result<(), String> {
    match (engine.execute(sql), expect_error) {
        (Ok(_), None) => Ok(()),
        (Err(e), Some(want)) => {
            let msg = format!("{} {}", e.code(), e).to_lowercase();
            if want.is_empty() || msg.contains(&want.to_lowercase()) {
                Ok(())
            } else {
                Err(format!("error '{e}' does not contain '{want}'\n  {sql}\n"))
            }
        }
        (Ok(_), Some(_)) => Err(format!("expected an error, statement succeeded\n  {sql}\n")),
        (Err(e), None) => Err(format!("[{}] {e}\n  {sql}\n", e.code())),
    }
}

/// One `query` record: `Err` says how its rows differ from `expected`, or where EXPLAIN and
/// EXPLAIN ANALYZE disagree when they are the same (with its SQL).
fn check_query(
    engine: &Engine,
    sql: &str,
    types: &str,
    (sort, at_least): (bool, f64),
    expected: Vec<String>,
) -> Result<(), String> {
    let columns = types.len();
    let types = types.as_bytes();
    let r = engine.execute(sql).map_err(|e| format!("[{}] {e}\n  {sql}\n", e.code()))?;
    let mut got = result_lines(&r);
    let mut exp = expected;
    if sort {
        got.sort_by_key(|l| sort_key(l));
        exp.sort_by_key(|l| sort_key(l));
    }
    let width_ok = r.fields.len() == columns || columns == 0;
    let scale: Vec<f64> = column_scales(&exp).into_iter().map(|s| s.max(at_least)).collect();
    let same =
        width_ok && got.len() == exp.len() && got.iter().zip(&exp).all(|(a, b)| lines_match(a, b, types, &scale));
    if !same {
        let first = got
            .iter()
            .zip(&exp)
            .position(|(a, b)| !lines_match(a, b, types, &scale))
            .unwrap_or(got.len().min(exp.len()));
        return Err(format!(
            "wrong result ({} rows, expected {}; {} columns, expected {columns})\n  {sql}\n  first difference at row {first}:\n    got:      {}\n    expected: {}\n",
            got.len(),
            exp.len(),
            r.fields.len(),
            got.get(first).map_or("<none>", String::as_str),
            exp.get(first).map_or("<none>", String::as_str),
        ));
    }
    match explain_mismatch(engine, sql) {
        Some(why) => Err(format!("EXPLAIN and the run disagree: {why}\n  {sql}\n")),
        None => Ok(()),
    }
}

/// For a SELECT: where EXPLAIN and EXPLAIN ANALYZE disagree, if they do. The two must print
/// the same tree of operators (what the physical planner chose, and what the executor reports
/// it ran), and every node must have run (or run fused into its parent).
pub fn explain_mismatch(engine: &Engine, sql: &str) -> Option<String> {
    let head = sql.trim_start().to_ascii_lowercase();
    if !head.starts_with("select") && !head.starts_with("with") {
        return None;
    }
    let lines = |q: String| -> Result<Vec<String>, String> {
        let r = engine.execute(&q).map_err(|e| format!("{q}: {e}"))?;
        let c = r.batch().columns.first().cloned().ok_or("no plan column")?;
        Ok((0..c.len()).map(|i| cell(&c, i)).collect())
    };
    let (plan, ran) = match (lines(format!("EXPLAIN {sql}")), lines(format!("EXPLAIN ANALYZE {sql}"))) {
        (Ok(p), Ok(r)) => (p, r),
        (Err(e), _) | (_, Err(e)) => return Some(e),
    };
    // The indentation and the operator's name: the first word of a node's line.
    let op = |l: &str| l.find(|c: char| c != ' ').map(|i| (i, l[i..].split(' ').next().unwrap_or("").to_string()));
    if plan.len() != ran.len() {
        return Some(format!("{} plan lines, {} ran", plan.len(), ran.len()));
    }
    for (p, r) in plan.iter().zip(&ran).skip(1) {
        if op(p) != op(r) {
            return Some(format!("planned `{p}`, ran `{r}`"));
        }
        if !r.contains("(rows=") && !r.ends_with("(fused into its parent)") {
            return Some(format!("node did not run: `{r}`"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_float_repr() {
        assert_eq!(py_float(1.0), "1.0");
        assert_eq!(py_float(0.1), "0.1");
        assert_eq!(py_float(1e-5), "1e-05");
        assert_eq!(py_float(1.5e16), "1.5e+16");
        assert_eq!(py_float(123456.789), "123456.789");
        assert_eq!(py_float(-2.5), "-2.5");
    }

    #[test]
    fn zeros_sort_alike() {
        // -0.0 and 0.0 match as cells, so rowsort must not part them (a seeded `make difftest`
        // once failed on rows sorted apart by the zero's sign alone).
        assert_eq!(sort_key("-0.0\t1"), sort_key("0.0\t1"));
        assert!(sort_key("-0.5") < sort_key("0.0"), "negative numbers still sort first in text order");
        assert!(cells_match("-0.0", "0.0", (1e-9, 1e-12)));
    }

    #[test]
    fn runs_a_small_file() {
        let text = "statement ok\nCREATE TABLE t (a INT, s VARCHAR)\n\nstatement ok\nINSERT INTO t VALUES (1, 'x'), (2, ''), (NULL, NULL)\n\nquery IT rowsort\nSELECT a, s FROM t\n----\n1\tx\n2\t(empty)\nNULL\tNULL\n\nquery R nosort\nSELECT 0.1 + 0.2\n----\n0.3\n\nstatement error does not exist\nSELECT * FROM nope\n";
        let r = run_file("inline", text);
        assert_eq!((r.passed, r.failed), (5, 0), "{}", r.failures);
        let bad = run_file("inline", "query I nosort\nSELECT 1\n----\n2\n");
        assert_eq!(bad.failed, 1);
    }
}

//! The `zeptodb` binary as a user runs it (SPEC §1): one-shot SQL, formats, exit codes, errors.

use std::process::Command;

fn zeptodb(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zeptodb")).args(args).output().expect("run zeptodb");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

const SETUP: &str = "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, note VARCHAR); \
    INSERT INTO t VALUES ('2024-01-02 09:30:00', 'A', 1.5, 'x,y'), ('2024-01-02 09:30:00.000000001', 'B', NULL, ''), (NULL, 'A', 2.0, NULL);";

#[test]
fn csv_output_follows_the_http_csv_rules() {
    let (code, out, err) = zeptodb(&[
        "sql",
        "--format",
        "csv",
        "-c",
        &format!("{SETUP} SELECT ts, sym, px, note FROM t ORDER BY px NULLS FIRST"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "ts,sym,px,note\n2024-01-02T09:30:00.000000001Z,B,,\"\"\n2024-01-02T09:30:00.000000000Z,A,1.5,\"x,y\"\n,A,2.0,\n"
    );
}

#[test]
fn json_output_has_the_spec_shape() {
    let (code, out, _) = zeptodb(&[
        "sql",
        "--format",
        "json",
        "-c",
        &format!("{SETUP} SELECT sym, count(*) AS n FROM t GROUP BY sym ORDER BY sym"),
    ]);
    assert_eq!(code, 0);
    assert!(out.starts_with(r#"{"columns":[{"name":"sym","type":"SYMBOL"},{"name":"n","type":"BIGINT"}],"data":[["A",2],["B",1]],"rows":2,"elapsed_us":"#), "{out}");
}

#[test]
fn table_output_and_meta_statements() {
    let (code, out, _) = zeptodb(&["sql", "-c", &format!("{SETUP} DESCRIBE t")]);
    assert_eq!(code, 0);
    assert!(out.contains("partition key") && out.contains("designated timestamp") && out.contains("(4 rows)"), "{out}");
    let (_, out, _) = zeptodb(&["sql", "-c", &format!("{SETUP} SHOW TABLES")]);
    assert!(out.contains("│ t "), "{out}");
}

#[test]
fn errors_exit_non_zero_with_one_line_naming_the_place() {
    let (code, out, err) = zeptodb(&["sql", "-c", "SELECT 1,\n  FROM"]);
    assert_ne!(code, 0);
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("SQL_PARSE") && err.contains("line 2"), "{err}");
    let (code, _, err) = zeptodb(&["sql", "-c", "SELECT * FROM missing"]);
    assert_ne!(code, 0);
    assert!(err.contains("TABLE_NOT_FOUND") && err.contains("column 15"), "{err}");
}

#[test]
fn file_scripts_and_timing() {
    let dir = std::env::temp_dir().join(format!("zepto-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let f = dir.join("s.sql");
    std::fs::write(&f, format!("{SETUP}\nSELECT count(*) FROM t;\n")).expect("write");
    let (code, out, err) = zeptodb(&["sql", "--timing", "--format", "csv", "-f", f.to_str().expect("utf-8 path")]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "count_star(),\n3\n".replace("count_star(),", "count(*)"));
    assert!(err.starts_with("Time: "), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A CPU affinity plan naming a core this process may not use, or no role, stops `serve`
/// before it listens, with one line saying which.
#[test]
fn serve_refuses_a_cpu_affinity_plan_it_cannot_keep() {
    for (plan, says) in [
        ("query=1000", "cpu-affinity: query: core 1000 is not one this process may run on"),
        ("reader=0", "cpu-affinity: 'reader' is not a role (query, ingest, fix, wal)"),
        ("fix=0 fix=0", "cpu-affinity: fix: given twice"),
    ] {
        let (code, _, err) =
            zeptodb(&["serve", "--in-memory", "--http", "127.0.0.1:0", "--pg", "off", "--cpu-affinity", plan]);
        assert_ne!(code, 0, "{plan}");
        assert!(err.contains(says) && err.lines().count() == 1, "{plan}: {err}");
    }
}

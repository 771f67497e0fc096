//! Time zones: `to_timezone` / `to_utc` and SAMPLE BY `ALIGN TO CALENDAR TIME ZONE` on
//! hand-checked points around a daylight-saving change (the answers over random data are
//! checked against a running QuestDB in python/tests/test_questdb_sql.py), and what is refused,
//! by name.

mod common;

use common::{lines, refused};
use zepto_sql::Engine;

fn engine() -> Engine {
    let e = Engine::new();
    lines(&e, "CREATE TABLE t (ts TIMESTAMP, v BIGINT) TIMESTAMP(ts)");
    // Half-hourly from 2024-03-30 20:00 UTC: Berlin springs forward at 2024-03-31 01:00 UTC.
    let rows: Vec<String> =
        (0..60).map(|k| format!("('2024-03-30 20:00:00'::TIMESTAMP + INTERVAL '{} minutes', {k})", k * 30)).collect();
    lines(&e, &format!("INSERT INTO t VALUES {}", rows.join(", ")));
    e
}

#[test]
fn days_and_hours_on_a_zones_wall_clock() {
    let e = engine();
    // Local days: 2024-03-31 has 23 hours (46 half-hours).
    assert_eq!(
        lines(&e, "SELECT ts, count() FROM t SAMPLE BY 1d ALIGN TO CALENDAR TIME ZONE 'Europe/Berlin'"),
        ["2024-03-29 23:00:00.000000000\t6", "2024-03-30 23:00:00.000000000\t46", "2024-03-31 22:00:00.000000000\t8"]
    );
    // Local 00:00-06:00 on the change's night is five hours long.
    let six = lines(&e, "SELECT ts, count() FROM t SAMPLE BY 6h ALIGN TO CALENDAR TIME ZONE 'Europe/Berlin'");
    assert_eq!(six[..2], ["2024-03-30 17:00:00.000000000\t6", "2024-03-30 23:00:00.000000000\t10"]);
    assert_eq!(
        lines(
            &e,
            "SELECT to_timezone(ts, 'Europe/Berlin'), to_utc(to_timezone(ts, 'Europe/Berlin'), 'Europe/Berlin'), \
             to_timezone(ts, '+05:30') FROM t WHERE v IN (9, 10)"
        ),
        [
            "2024-03-31 01:30:00.000000000\t2024-03-31 00:30:00.000000000\t2024-03-31 06:00:00.000000000",
            "2024-03-31 03:00:00.000000000\t2024-03-31 01:00:00.000000000\t2024-03-31 06:30:00.000000000"
        ]
    );
}

#[test]
fn what_a_zone_cannot_do_is_refused_by_name() {
    let e = engine();
    for (sql, want) in [
        ("SELECT ts, count() FROM t SAMPLE BY 1h FILL(PREV) ALIGN TO CALENDAR TIME ZONE 'Europe/Berlin'", "FILL"),
        (
            "SELECT ts, count() FROM t SAMPLE BY 1h FROM '2024-03-30' TO '2024-04-01' ALIGN TO CALENDAR TIME ZONE 'UTC'",
            "FROM/TO",
        ),
        ("SELECT ts, count() FROM t SAMPLE BY 1h ALIGN TO CALENDAR TIME ZONE 'Mars/Olympus'", "unknown time zone"),
        ("SELECT to_timezone(ts, 'Nowhere') FROM t", "unknown time zone"),
        ("SELECT to_utc(ts, CAST(v AS VARCHAR)) FROM t", "must be a constant"),
    ] {
        let err = refused(&e, sql);
        assert!(err.contains(want), "{sql}: {err}");
    }
}

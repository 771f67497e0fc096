//! Time zones: `to_timezone` / `to_utc` and SAMPLE BY `ALIGN TO CALENDAR TIME ZONE` on
//! hand-checked points around a daylight-saving change (the answers over random data are
//! checked against a running QuestDB in python/tests/test_questdb_sql.py), and what is refused,
//! by name.

use crate::common;

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

/// FILL steps on the zone's wall clock: the filled buckets start at local midnights (and
/// local month starts) whatever the offset, and a half-hour the zone skips gets no row.
#[test]
fn fills_step_on_the_wall_clock() {
    let e = engine();
    let halves = lines(
        &e,
        "SELECT ts, count() FROM t WHERE v % 3 <> 1 SAMPLE BY 30m FILL(NULL) ALIGN TO CALENDAR TIME ZONE 'Europe/Berlin'",
    );
    // Every row's half-hour once, the missing ones filled, none twice, none in the skipped hour:
    // 60 half-hours of UTC time are 60 wall-clock ones (the gap is not a bucket).
    assert_eq!(halves.len(), 60, "{halves:?}");
    let mut stamps: Vec<&str> = halves.iter().map(|l| l.split('\t').next().unwrap_or("")).collect();
    stamps.dedup();
    assert_eq!(stamps.len(), 60);
    // Rows 1, 4, 7, ... are filtered out and filled; local 01:30 (00:30 UTC) is followed by
    // local 03:00 (01:00 UTC), filled: no bucket for 02:00 or 02:30, which Berlin skips.
    assert_eq!(halves[1], "2024-03-30 20:30:00.000000000\tNULL");
    assert_eq!(halves[9..11], ["2024-03-31 00:30:00.000000000\t1", "2024-03-31 01:00:00.000000000\tNULL"]);
    lines(&e, "CREATE TABLE d (ts TIMESTAMP, v BIGINT) TIMESTAMP(ts)");
    lines(
        &e,
        "INSERT INTO d VALUES ('2024-01-15 12:00:00', 1), ('2024-03-29 12:00:00', 2), ('2024-04-02 12:00:00', 3), \
         ('2024-05-10 12:00:00', 4)",
    );
    let days = lines(
        &e,
        "SELECT ts, sum(v) FROM d WHERE ts >= '2024-03-01' SAMPLE BY 1d FILL(NULL) ALIGN TO CALENDAR TIME ZONE 'Europe/Berlin'",
    );
    assert_eq!(
        days[..5],
        [
            "2024-03-28 23:00:00.000000000\t2",
            "2024-03-29 23:00:00.000000000\tNULL",
            "2024-03-30 23:00:00.000000000\tNULL",
            "2024-03-31 22:00:00.000000000\tNULL",
            "2024-04-01 22:00:00.000000000\t3"
        ]
    );
    let months = lines(&e, "SELECT ts, sum(v) FROM d SAMPLE BY 1M FILL(0) ALIGN TO CALENDAR TIME ZONE 'Europe/Berlin'");
    assert_eq!(
        months,
        [
            "2023-12-31 23:00:00.000000000\t1",
            "2024-01-31 23:00:00.000000000\t0",
            "2024-02-29 23:00:00.000000000\t2",
            "2024-03-31 22:00:00.000000000\t3",
            "2024-04-30 22:00:00.000000000\t4"
        ]
    );
}

/// FROM and TO are times on the zone's wall clock, as the buckets are: they bound the rows
/// (from the instant of FROM's wall-clock time to TO's) and the buckets FILL makes.
#[test]
fn from_and_to_are_read_on_the_zones_clock() {
    let e = engine();
    // Berlin 00:00 (CET) is 23:00 UTC, 05:00 (CEST) is 03:00 UTC; local 02:00 does not exist.
    assert_eq!(
        lines(
            &e,
            "SELECT ts, count(), min(v) FROM t WHERE v NOT IN (12, 13) SAMPLE BY 1h FROM '2024-03-31' \
             TO '2024-03-31 05:00' FILL(0) ALIGN TO CALENDAR TIME ZONE 'Europe/Berlin'"
        ),
        [
            "2024-03-30 23:00:00.000000000\t2\t6",
            "2024-03-31 00:00:00.000000000\t2\t8",
            "2024-03-31 01:00:00.000000000\t2\t10",
            "2024-03-31 02:00:00.000000000\t0\t0"
        ]
    );
    // Local days of +05:30: the rows (20:00 UTC on 2024-03-30 to 01:30 two days later) lie on
    // 2024-03-31 and 04-01 there.
    assert_eq!(
        lines(
            &e,
            "SELECT ts, count() FROM t SAMPLE BY 1d FROM '2024-03-30' TO '2024-04-02' FILL(NULL) \
             ALIGN TO CALENDAR TIME ZONE '+05:30'"
        ),
        [
            "2024-03-29 18:30:00.000000000\tNULL",
            "2024-03-30 18:30:00.000000000\t45",
            "2024-03-31 18:30:00.000000000\t15"
        ]
    );
    // Days from local 03:00 (01:00 UTC) up to local midnight (22:00 UTC): 21 hours of rows.
    assert_eq!(
        lines(
            &e,
            "SELECT ts, count() FROM t SAMPLE BY 1d FROM '2024-03-31 03:00' TO '2024-04-01' \
             ALIGN TO CALENDAR TIME ZONE 'Europe/Berlin'"
        ),
        ["2024-03-31 01:00:00.000000000\t42"]
    );
}

#[test]
fn what_a_zone_cannot_do_is_refused_by_name() {
    let e = engine();
    for (sql, want) in [
        ("SELECT ts, count() FROM t SAMPLE BY 1h ALIGN TO CALENDAR TIME ZONE 'Mars/Olympus'", "unknown time zone"),
        ("SELECT to_timezone(ts, 'Nowhere') FROM t", "unknown time zone"),
        ("SELECT to_utc(ts, CAST(v AS VARCHAR)) FROM t", "must be a constant"),
    ] {
        let err = refused(&e, sql);
        assert!(err.contains(want), "{sql}: {err}");
    }
}

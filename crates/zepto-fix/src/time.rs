//! FIX times as nanoseconds since the Unix epoch (UTC): UTCTimestamp
//! (`YYYYMMDD-HH:MM:SS[.fff[fff[fff]]]`), UTCDateOnly (`YYYYMMDD`) and UTCTimeOnly
//! (`HH:MM:SS[.fff…]`), and the UTCTimestamp ZeptoDB writes in SendingTime.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

const NS_PER_SEC: i64 = 1_000_000_000;
const NS_PER_DAY: i64 = 86_400 * NS_PER_SEC;

fn digits(v: &[u8]) -> Option<i64> {
    v.iter().try_fold(0i64, |n, &b| b.is_ascii_digit().then(|| n * 10 + i64::from(b - b'0')))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { yoe + era * 400 + 1 } else { yoe + era * 400 }, m, d)
}

/// A UTCDateOnly (`YYYYMMDD`) as nanoseconds at its midnight.
pub fn parse_date(v: &[u8]) -> Option<i64> {
    if v.len() != 8 {
        return None;
    }
    let (y, m, d) = (digits(v.get(0..4)?)?, digits(v.get(4..6)?)?, digits(v.get(6..8)?)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    // Years past 2262 do not fit nanoseconds in an i64.
    days_from_civil(y, m, d).checked_mul(NS_PER_DAY)
}

/// A UTCTimeOnly (`HH:MM:SS` with up to 9 fraction digits) as nanoseconds since midnight.
pub fn parse_time(v: &[u8]) -> Option<i64> {
    if v.len() < 8 || v.get(2) != Some(&b':') || v.get(5) != Some(&b':') {
        return None;
    }
    let (h, m, s) = (digits(v.get(0..2)?)?, digits(v.get(3..5)?)?, digits(v.get(6..8)?)?);
    if h > 23 || m > 59 || s > 60 {
        return None;
    }
    let frac = match v.get(8..) {
        Some([]) | None => 0,
        Some([b'.', f @ ..]) if (1..=9).contains(&f.len()) => digits(f)? * 10i64.pow(9 - f.len() as u32),
        _ => return None,
    };
    Some(((h * 60 + m) * 60 + s) * NS_PER_SEC + frac)
}

/// A UTCTimestamp (`YYYYMMDD-HH:MM:SS[.f…]`) as nanoseconds since the epoch.
pub fn parse_timestamp(v: &[u8]) -> Option<i64> {
    if v.get(8) != Some(&b'-') {
        return None;
    }
    parse_date(v.get(..8)?)?.checked_add(parse_time(v.get(9..)?)?)
}

/// Append `ns` as a UTCTimestamp with milliseconds (`YYYYMMDD-HH:MM:SS.sss`).
pub fn write_timestamp(out: &mut Vec<u8>, ns: i64) {
    let (y, mo, d) = civil_from_days(ns.div_euclid(NS_PER_DAY));
    let t = ns.rem_euclid(NS_PER_DAY);
    let (s, ms) = (t / NS_PER_SEC, (t % NS_PER_SEC) / 1_000_000);
    use std::io::Write;
    let _ = write!(out, "{y:04}{mo:02}{d:02}-{:02}:{:02}:{:02}.{ms:03}", s / 3600, s / 60 % 60, s % 60);
}

/// The current time, nanoseconds since the epoch.
pub fn now_ns() -> i64 {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_and_reject_garbage() {
        let ns = parse_timestamp(b"20240102-09:30:00.123").expect("ts");
        assert_eq!(ns, 1_704_187_800_123_000_000);
        assert_eq!(parse_timestamp(b"20240102-09:30:00.123456789"), Some(1_704_187_800_123_456_789));
        assert_eq!(parse_timestamp(b"20240102-09:30:00"), Some(1_704_187_800_000_000_000));
        let mut out = Vec::new();
        write_timestamp(&mut out, ns);
        assert_eq!(out, b"20240102-09:30:00.123");
        assert_eq!(parse_date(b"19700101"), Some(0));
        assert_eq!(parse_time(b"00:00:01.5"), Some(1_500_000_000));
        for bad in [
            &b""[..],
            b"2024010-09:30:00",
            b"20241302-09:30:00",
            b"20240102-24:00:00",
            b"20240102-09:30:00.",
            b"20240102-09:30:00.1234567890",
            b"20240102 09:30:00",
            b"99991231-23:59:59",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}

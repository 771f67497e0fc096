//! Calendar arithmetic on nanosecond timestamps: parsing and printing ISO-8601, intervals,
//! truncation and field extraction. Proleptic Gregorian, UTC, no time zones.
//!
//! Days ↔ civil date conversions follow Howard Hinnant's `days_from_civil` algorithm.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

/// Nanoseconds in a microsecond.
pub const NS_PER_US: i64 = 1_000;
/// Nanoseconds in a millisecond.
pub const NS_PER_MS: i64 = 1_000_000;
/// Nanoseconds in a second.
pub const NS_PER_SEC: i64 = 1_000_000_000;
/// Nanoseconds in a minute.
pub const NS_PER_MIN: i64 = 60 * NS_PER_SEC;
/// Nanoseconds in an hour.
pub const NS_PER_HOUR: i64 = 60 * NS_PER_MIN;
/// Nanoseconds in a day (UTC days have no leap seconds here).
pub const NS_PER_DAY: i64 = 24 * NS_PER_HOUR;

/// The current time in nanoseconds since the Unix epoch (0 before it, saturating far after).
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Calendar months since 1970-01 of a timestamp (floor).
pub fn month_index(ns: i64) -> i64 {
    let (y, m, _) = civil_from_days(ns.div_euclid(NS_PER_DAY));
    (y - 1970) * 12 + (m as i64 - 1)
}

/// The first instant of calendar month `mi` (months since 1970-01), saturating far out.
pub fn month_start(mi: i64) -> i64 {
    let y = 1970 + mi.div_euclid(12);
    let m = mi.rem_euclid(12) as u32 + 1;
    days_from_civil(y, m, 1).saturating_mul(NS_PER_DAY)
}

/// Start of the `n`-month bucket (aligned on 1970-01) holding a timestamp.
pub fn month_bucket(n: i64, ns: i64) -> i64 {
    month_start(month_index(ns).div_euclid(n) * n)
}

/// Days since 1970-01-01 of a civil date (year, month 1-12, day 1-31); negative before it.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Civil date (year, month 1-12, day 1-31) of days since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// The number written by the first `n` bytes of `s` (at most 18, so it fits), if all digits.
fn digits(s: &[u8], n: usize) -> Option<i64> {
    let d = s.get(..n)?;
    if n > 18 || !d.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(d.iter().fold(0i64, |a, &c| a * 10 + i64::from(c - b'0')))
}

/// How many ASCII digits `s` starts with.
fn digit_run(s: &[u8]) -> usize {
    s.iter().take_while(|c| c.is_ascii_digit()).count()
}

fn parse_ymd(b: &[u8]) -> Option<(i64, u32, u32, usize)> {
    // YYYY-MM-DD (year may have more digits, no sign support needed here)
    let ylen = digit_run(b);
    if !(4..=6).contains(&ylen) {
        return None;
    }
    let y = digits(b, ylen)?;
    let month = b.get(ylen..)?.strip_prefix(b"-")?;
    let mlen = digit_run(month);
    if !(1..=2).contains(&mlen) {
        return None;
    }
    let m = digits(month, mlen)? as u32;
    let day = month.get(mlen..)?.strip_prefix(b"-")?;
    let dlen = digit_run(day);
    if !(1..=2).contains(&dlen) {
        return None;
    }
    let d = digits(day, dlen)? as u32;
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some((y, m, d, ylen + 1 + mlen + 1 + dlen))
}

/// Parse `YYYY-MM-DD` into days since the epoch.
pub fn parse_date(s: &str) -> Option<i32> {
    let s = s.trim();
    let (y, m, d, used) = parse_ymd(s.as_bytes())?;
    if used != s.len() {
        return None;
    }
    i32::try_from(days_from_civil(y, m, d)).ok()
}

/// The timestamp `'infinity'`: later than every other (PostgreSQL's and DuckDB's spelling).
pub const TS_INFINITY: i64 = i64::MAX;
/// The timestamp `'-infinity'`: earlier than every other. Not `i64::MIN`, which NumPy and
/// pandas read as NaT (DuckDB likewise keeps it one above the type's minimum).
pub const TS_NEG_INFINITY: i64 = -i64::MAX;

/// Parse `YYYY-MM-DD[( |T)HH:MM[:SS[.fffffffff]]][Z|+00[:00]]` into ns since the epoch, or
/// `[+|-]infinity` (any case) into [`TS_INFINITY`] / [`TS_NEG_INFINITY`].
pub fn parse_timestamp(s: &str) -> Option<i64> {
    parse_timestamp_with(s, &mut DayCache::default())
}

/// The last `YYYY-MM-DD` that [`parse_timestamp_with`] read, with the ns of its day's start: a
/// column of one day's times (the usual CSV file) parses each date once.
#[derive(Debug, Default, Clone)]
pub struct DayCache {
    text: [u8; 10],
    /// The start of day `text`, once one is remembered.
    day_ns: Option<i128>,
}

/// [`parse_timestamp`], reusing the date of `days` when `s` starts with the same ten bytes
/// (the same date, as that parse read exactly ten bytes), and remembering this one's.
pub fn parse_timestamp_with(s: &str, days: &mut DayCache) -> Option<i64> {
    let s = s.trim();
    if s.len() <= 9 {
        let is = |w: &str| s.eq_ignore_ascii_case(w);
        if is("infinity") || is("+infinity") {
            return Some(TS_INFINITY);
        }
        if is("-infinity") {
            return Some(TS_NEG_INFINITY);
        }
    }
    let b = s.as_bytes();
    // In i128 until the end: the earliest i64 timestamp (1677-09-21 00:12:43.145224192) is
    // its day's start, outside i64, plus the time of day.
    let (mut ns, mut i) = match (days.day_ns, b.get(..10)) {
        (Some(ns), Some(head)) if head == days.text => (ns, 10),
        _ => {
            let (y, m, d, i) = parse_ymd(b)?;
            let ns = i128::from(days_from_civil(y, m, d)) * i128::from(NS_PER_DAY);
            if let (10, Some(head)) = (i, b.get(..10)) {
                days.text.copy_from_slice(head);
                days.day_ns = Some(ns);
            }
            (ns, i)
        }
    };
    if matches!(b.get(i), Some(b' ' | b'T')) {
        i += 1;
        let hh = digits(b.get(i..)?, 2)?;
        if b.get(i + 2) != Some(&b':') {
            return None;
        }
        let mm = digits(b.get(i + 3..)?, 2)?;
        i += 5;
        let mut ss = 0;
        if b.get(i) == Some(&b':') {
            ss = digits(b.get(i + 1..)?, 2)?;
            i += 3;
        }
        if hh > 23 || mm > 59 || ss > 59 {
            return None;
        }
        let mut frac = 0i64;
        if b.get(i) == Some(&b'.') {
            i += 1;
            let n = digit_run(b.get(i..)?);
            if n == 0 || n > 9 {
                return None;
            }
            frac = digits(b.get(i..)?, n)? * 10i64.pow(9 - n as u32);
            i += n;
        }
        ns += i128::from(hh * NS_PER_HOUR + mm * NS_PER_MIN + ss * NS_PER_SEC + frac);
    }
    match s.get(i..)? {
        "" | "Z" | "z" | "+00" | "+00:00" | "+0000" => i64::try_from(ns).ok(),
        _ => None,
    }
}

/// Whether `ns` is `'infinity'` or `'-infinity'`.
pub fn is_infinite(ns: i64) -> bool {
    ns == TS_INFINITY || ns == TS_NEG_INFINITY
}

/// `infinity` / `-infinity` for the two infinite timestamps.
pub fn infinite_text(ns: i64) -> Option<&'static str> {
    match ns {
        TS_INFINITY => Some("infinity"),
        TS_NEG_INFINITY => Some("-infinity"),
        _ => None,
    }
}

/// `YYYY-MM-DD HH:MM:SS.fffffffff` — always nine fractional digits (`infinity`/`-infinity`
/// for the infinite timestamps).
pub fn format_timestamp(ns: i64) -> String {
    let mut s = String::with_capacity(30);
    push_timestamp(ns, false, &mut s);
    s
}

/// ISO-8601 with `T` and `Z`, as the HTTP and JSON formats print timestamps.
pub fn format_timestamp_iso(ns: i64) -> String {
    let mut s = String::with_capacity(30);
    push_timestamp(ns, true, &mut s);
    s
}

/// [`format_timestamp`]'s text (or [`format_timestamp_iso`]'s with `iso`) appended to `out`,
/// digit by digit: answers print a timestamp per row, and `format!` was most of their cost.
pub fn push_timestamp(ns: i64, iso: bool, out: &mut String) {
    if let Some(t) = infinite_text(ns) {
        return out.push_str(t);
    }
    let (y, m, d) = civil_from_days(ns.div_euclid(NS_PER_DAY));
    let rem = ns.rem_euclid(NS_PER_DAY);
    let (h, rem) = (rem / NS_PER_HOUR, rem % NS_PER_HOUR);
    let (mi, rem) = (rem / NS_PER_MIN, rem % NS_PER_MIN);
    let (sec, frac) = (rem / NS_PER_SEC, rem % NS_PER_SEC);
    let (t, z) = if iso { ("T", "Z") } else { (" ", "") };
    // Nanoseconds in an i64 span the years 1677 to 2262: always four digits.
    debug_assert!((1677..=2262).contains(&y), "year {y}");
    let year = y.unsigned_abs() % 10_000;
    let mut b = *b"0000-00-00 00:00:00.000000000";
    let fields: [(std::ops::Range<usize>, u64); 7] = [
        (0..4, year),
        (5..7, u64::from(m)),
        (8..10, u64::from(d)),
        (11..13, h as u64),
        (14..16, mi as u64),
        (17..19, sec as u64),
        (20..29, frac as u64),
    ];
    for (at, mut v) in fields {
        for c in b.get_mut(at).into_iter().flatten().rev() {
            *c = b'0' + (v % 10) as u8;
            v /= 10;
        }
    }
    let text = |r: std::ops::Range<usize>| b.get(r).and_then(|s| std::str::from_utf8(s).ok()).unwrap_or_default();
    out.push_str(text(0..10));
    out.push_str(t);
    out.push_str(text(11..29));
    out.push_str(z);
}

/// `YYYY-MM-DD` of a DATE (days since 1970-01-01).
pub fn format_date(days: i32) -> String {
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Human form of a duration, e.g. `01:30:00`, `2 days 00:00:01.5`.
pub fn format_interval(ns: i64) -> String {
    let neg = ns < 0;
    let a = ns.unsigned_abs() as i128;
    let day = NS_PER_DAY as i128;
    let (days, rem) = (a / day, a % day);
    let (h, rem) = (rem / NS_PER_HOUR as i128, rem % NS_PER_HOUR as i128);
    let (m, rem) = (rem / NS_PER_MIN as i128, rem % NS_PER_MIN as i128);
    let (s, frac) = (rem / NS_PER_SEC as i128, rem % NS_PER_SEC as i128);
    let sign = if neg { "-" } else { "" };
    let mut out = String::new();
    if days > 0 {
        out.push_str(&format!("{sign}{days} day{} ", if days == 1 { "" } else { "s" }));
    }
    out.push_str(&format!("{}{h:02}:{m:02}:{s:02}", if days > 0 { "" } else { sign }));
    if frac > 0 {
        let f = format!("{frac:09}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
    out
}

/// Nanoseconds in one unit of a time unit name (`ns`, `ms`, `second`, `minutes`, `h`, `day`, `week`).
pub fn unit_ns(unit: &str) -> Option<i64> {
    let u = unit.to_ascii_lowercase();
    let v = match u.as_str() {
        "ns" | "nanosecond" | "nanoseconds" | "nanos" => 1,
        "us" | "microsecond" | "microseconds" | "micros" => NS_PER_US,
        "ms" | "millisecond" | "milliseconds" | "millis" | "msec" => NS_PER_MS,
        "s" | "sec" | "secs" | "second" | "seconds" => NS_PER_SEC,
        "m" | "min" | "mins" | "minute" | "minutes" => NS_PER_MIN,
        "h" | "hr" | "hrs" | "hour" | "hours" => NS_PER_HOUR,
        "d" | "day" | "days" => NS_PER_DAY,
        "w" | "week" | "weeks" => 7 * NS_PER_DAY,
        _ => return None,
    };
    Some(v)
}

/// Parse an interval text: `1 minute`, `500ms`, `1h`, `2 hours 30 minutes`, `-1.5 s`, `00:01:30`.
pub fn parse_interval(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if let Some(v) = parse_hms(s) {
        return Some(v);
    }
    let b = s.as_bytes();
    let mut i = 0;
    let mut total: i64 = 0;
    let mut any = false;
    // Every index below stops at an ASCII byte, so every slice is on a character boundary.
    let skip = |mut i: usize, keep: fn(&u8) -> bool| {
        while b.get(i).is_some_and(keep) {
            i += 1;
        }
        i
    };
    while i < b.len() {
        i = skip(i, u8::is_ascii_whitespace);
        if i >= b.len() {
            break;
        }
        let start = i;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        i = skip(i, |c| c.is_ascii_digit() || *c == b'.');
        let num: f64 = s.get(start..i)?.parse().ok()?;
        i = skip(i, u8::is_ascii_whitespace);
        let ustart = i;
        i = skip(i, u8::is_ascii_alphabetic);
        let unit = unit_ns(s.get(ustart..i)?)?;
        let part = num * unit as f64;
        if !part.is_finite() || part.abs() > 9.2e18 {
            return None;
        }
        total = total.checked_add(part.round() as i64)?;
        any = true;
    }
    any.then_some(total)
}

fn parse_hms(s: &str) -> Option<i64> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let parts: Vec<&str> = body.split(':').collect();
    let [h, m, sec] = parts.as_slice() else { return None };
    let h: i64 = h.parse().ok()?;
    let m: i64 = m.parse().ok()?;
    let sec: f64 = sec.parse().ok()?;
    let sec_ns = sec * NS_PER_SEC as f64;
    if !sec_ns.is_finite() || sec_ns.abs() > 9.2e18 {
        return None;
    }
    // Checked: `1000000000000:00:00` is out of range, not a wrapped (or, in debug, a panicking)
    // product.
    let v = h.checked_mul(NS_PER_HOUR)?.checked_add(m.checked_mul(NS_PER_MIN)?)?.checked_add(sec_ns.round() as i64)?;
    Some(if neg { -v } else { v })
}

/// Truncate a timestamp to the start of its unit (`second`..`year`, `week` = ISO Monday).
pub fn trunc_timestamp(unit: &str, ns: i64) -> Option<i64> {
    let u = unit.to_ascii_lowercase();
    let fixed = match u.as_str() {
        "microsecond" | "microseconds" => Some(NS_PER_US),
        "millisecond" | "milliseconds" => Some(NS_PER_MS),
        "second" | "seconds" => Some(NS_PER_SEC),
        "minute" | "minutes" => Some(NS_PER_MIN),
        "hour" | "hours" => Some(NS_PER_HOUR),
        "day" | "days" => Some(NS_PER_DAY),
        _ => None,
    };
    if let Some(w) = fixed {
        return ns.div_euclid(w).checked_mul(w);
    }
    let days = ns.div_euclid(NS_PER_DAY);
    let (y, m, _) = civil_from_days(days);
    let d = match u.as_str() {
        "week" | "weeks" => days - (days + 3).rem_euclid(7), // 1970-01-01 was a Thursday
        "month" | "months" => days_from_civil(y, m, 1),
        "quarter" | "quarters" => days_from_civil(y, (m - 1) / 3 * 3 + 1, 1),
        "year" | "years" => days_from_civil(y, 1, 1),
        "decade" | "decades" => days_from_civil(y.div_euclid(10) * 10, 1, 1),
        "century" | "centuries" => days_from_civil((y - 1).div_euclid(100) * 100 + 1, 1, 1),
        _ => return None,
    };
    d.checked_mul(NS_PER_DAY)
}

/// A date/time field of a timestamp, as `extract(field FROM ts)` returns it.
pub fn extract_field(field: &str, ns: i64) -> Option<i64> {
    let days = ns.div_euclid(NS_PER_DAY);
    let rem = ns.rem_euclid(NS_PER_DAY);
    let (y, m, d) = civil_from_days(days);
    let v = match field.to_ascii_lowercase().as_str() {
        "year" | "years" => y,
        "month" | "months" => m as i64,
        "day" | "days" => d as i64,
        "hour" | "hours" => rem / NS_PER_HOUR,
        "minute" | "minutes" => rem % NS_PER_HOUR / NS_PER_MIN,
        "second" | "seconds" => rem % NS_PER_MIN / NS_PER_SEC,
        "millisecond" | "milliseconds" => rem % NS_PER_MIN / NS_PER_MS,
        "microsecond" | "microseconds" => rem % NS_PER_MIN / NS_PER_US,
        "nanosecond" | "nanoseconds" => rem % NS_PER_MIN,
        "quarter" => (m as i64 - 1) / 3 + 1,
        "dow" | "dayofweek" => (days + 4).rem_euclid(7), // Sunday = 0
        "isodow" => (days + 3).rem_euclid(7) + 1,        // Monday = 1
        "doy" | "dayofyear" => days - days_from_civil(y, 1, 1) + 1,
        "epoch" => ns.div_euclid(NS_PER_SEC),
        "decade" => y.div_euclid(10),
        "century" => (y - 1).div_euclid(100) + 1,
        _ => return None,
    };
    Some(v)
}

#[cfg(test)]
mod tests {

    /// What `format_timestamp` was before it wrote digits itself.
    fn by_format(ns: i64) -> String {
        if let Some(t) = infinite_text(ns) {
            return t.to_string();
        }
        let (y, m, d) = civil_from_days(ns.div_euclid(NS_PER_DAY));
        let rem = ns.rem_euclid(NS_PER_DAY);
        let (h, rem) = (rem / NS_PER_HOUR, rem % NS_PER_HOUR);
        let (mi, rem) = (rem / NS_PER_MIN, rem % NS_PER_MIN);
        let (s, frac) = (rem / NS_PER_SEC, rem % NS_PER_SEC);
        format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02}.{frac:09}")
    }

    #[test]
    fn timestamps_print_as_format_did() {
        let mut ns = vec![0, -1, 1, i64::MIN, i64::MAX, TS_INFINITY, TS_NEG_INFINITY, 1_704_187_800_123_456_789];
        ns.extend([i64::MIN + 2, i64::MAX - 1, -86_400_000_000_001, 946_684_799_999_999_999]);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ns.push(x as i64);
            ns.push((x % 400_000_000_000_000_000) as i64 - 200_000_000_000_000_000);
        }
        for n in ns {
            let want = by_format(n);
            assert_eq!(format_timestamp(n), want, "{n}");
            let iso = if infinite_text(n).is_some() {
                want
            } else {
                format!("{}T{}Z", &want[..want.len() - 19], &want[want.len() - 18..])
            };
            assert_eq!(format_timestamp_iso(n), iso, "{n}");
        }
    }

    use super::*;

    /// Text of any shape, valid or not, gives a value or `None`, never a panic (debug builds
    /// check arithmetic overflow too): mutations of valid timestamps, dates and intervals.
    #[test]
    fn parsers_never_panic() {
        assert_eq!(parse_interval("1000000000000:00:00"), None, "out of range, not wrapped");
        assert_eq!(parse_interval("-01:30:00"), Some(-(NS_PER_HOUR + 30 * NS_PER_MIN)));
        let seeds = ["2024-01-02 09:30:00.123456789Z", "2024-1-2T9:30", "00:01:30", "2 hours 30 minutes", "-1.5 s"];
        let alphabet = b"0123456789-:. TZz+eE_\xc3\xa9hsm";
        let mut rng = crate::rng::XorShift::new(7);
        let mut days = DayCache::default();
        for _ in 0..50_000 {
            let mut b = seeds[rng.index(seeds.len())].as_bytes().to_vec();
            for _ in 0..1 + rng.index(4) {
                let at = rng.index(b.len() + 1);
                match rng.index(3) {
                    0 if at < b.len() => {
                        b.remove(at);
                    }
                    1 if at < b.len() => b[at] = alphabet[rng.index(alphabet.len())],
                    _ => b.insert(at, alphabet[rng.index(alphabet.len())]),
                }
            }
            let text = String::from_utf8_lossy(&b);
            let _ = (parse_date(&text), parse_interval(&text));
            // A day remembered from any earlier text never changes an answer.
            assert_eq!(parse_timestamp_with(&text, &mut days), parse_timestamp(&text), "{text:?}");
        }
    }

    #[test]
    fn month_buckets() {
        let ts = parse_timestamp("2024-05-17 13:00:00").expect("ts");
        assert_eq!(month_index(ts), 54 * 12 + 4);
        assert_eq!(format_timestamp(month_bucket(1, ts)), "2024-05-01 00:00:00.000000000");
        assert_eq!(format_timestamp(month_bucket(3, ts)), "2024-04-01 00:00:00.000000000");
        assert_eq!(format_timestamp(month_bucket(12, ts)), "2024-01-01 00:00:00.000000000");
        let old = parse_timestamp("1969-12-31 23:59:59").expect("ts");
        assert_eq!(format_timestamp(month_bucket(1, old)), "1969-12-01 00:00:00.000000000");
        assert_eq!(month_start(month_index(ts) + 8), parse_timestamp("2025-01-01").expect("ts"));
    }

    #[test]
    fn round_trip_civil() {
        for z in [-800_000i64, -1, 0, 1, 19_724, 2_932_896] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
        assert_eq!(civil_from_days(19_724), (2024, 1, 2));
    }

    #[test]
    fn timestamps() {
        let t = parse_timestamp("2024-01-02 09:30:00.123456789").expect("parses");
        assert_eq!(format_timestamp(t), "2024-01-02 09:30:00.123456789");
        assert_eq!(parse_timestamp("2024-01-02T09:30:00Z"), parse_timestamp("2024-01-02 09:30"));
        assert_eq!(parse_timestamp("2024-01-02"), Some(19_724 * NS_PER_DAY));
        assert_eq!(parse_timestamp("2024-02-30"), None);
        assert_eq!(parse_timestamp("2024-01-02 25:00:00"), None);
        assert_eq!(format_timestamp(-1), "1969-12-31 23:59:59.999999999");
        assert_eq!(format_timestamp_iso(0), "1970-01-01T00:00:00.000000000Z");
        // Every i64 reads back from its text, the earliest too; one past either end does not.
        for ns in [i64::MIN, i64::MAX] {
            assert_eq!(parse_timestamp(&format_timestamp(ns)), Some(ns));
        }
        assert_eq!(parse_timestamp("1677-09-21 00:12:43.145224191"), None);
        assert_eq!(parse_timestamp("2262-04-11 23:47:16.854775808"), None);
    }

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("1 minute"), Some(NS_PER_MIN));
        assert_eq!(parse_interval("500ms"), Some(500 * NS_PER_MS));
        assert_eq!(parse_interval("1h"), Some(NS_PER_HOUR));
        assert_eq!(parse_interval("2 hours 30 minutes"), Some(150 * NS_PER_MIN));
        assert_eq!(parse_interval("00:01:30"), Some(90 * NS_PER_SEC));
        assert_eq!(parse_interval("1 fortnight"), None);
        assert_eq!(format_interval(90 * NS_PER_SEC), "00:01:30");
    }

    #[test]
    fn trunc_and_extract() {
        let t = parse_timestamp("2024-05-15 13:45:12.5").expect("parses");
        assert_eq!(format_timestamp(trunc_timestamp("hour", t).expect("unit")), "2024-05-15 13:00:00.000000000");
        assert_eq!(format_timestamp(trunc_timestamp("month", t).expect("unit")), "2024-05-01 00:00:00.000000000");
        assert_eq!(format_timestamp(trunc_timestamp("week", t).expect("unit")), "2024-05-13 00:00:00.000000000");
        assert_eq!(extract_field("minute", t), Some(45));
        assert_eq!(extract_field("dow", t), Some(3));
        assert_eq!(extract_field("doy", t), Some(136));
    }
}

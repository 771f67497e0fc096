//! QuestDB's interval text, as `ts IN '...'` reads it: a partial timestamp standing for the
//! whole span it names (`'2024'` a year, `'2024-01-02'` a day, `'2024-01-02T10'` an hour,
//! `'2024-01-02T10:30:00.5'` a tenth of a second), then optionally `;dur` giving the span's
//! length from its start instead (`'2024-01-02T10;2h'`: 10:00 up to 12:00, as QuestDB 9.3
//! reads it), then optionally `;period;count`
//! repeating it `count` times, `period` apart (negative: backwards). Units: `s m h d M y`
//! (and `T` milliseconds, `u` microseconds). Half-open `[start, end)` ranges in nanoseconds.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use super::{add, Unit};
use zepto_storage::time::{parse_timestamp, NS_PER_SEC};

/// Most ranges one interval text may repeat into.
const MAX_REPEATS: i64 = 10_000;

/// The ranges `text` names, or what is wrong with it.
pub fn ranges(text: &str) -> Result<Vec<(i64, i64)>, String> {
    let mut parts = text.split(';');
    let base = parts.next().unwrap_or_default().trim();
    let (start, mut end) = span(base).ok_or_else(|| format!("Invalid date: {base}"))?;
    let rest: Vec<&str> = parts.map(str::trim).collect();
    if let Some(dur) = rest.first() {
        let (n, unit) = amount(dur)?;
        if n < 0 {
            return Err(format!("'{dur}': the length of an interval is not negative"));
        }
        end = add(unit, n, start).ok_or_else(|| format!("'{text}' is outside the timestamp range"))?;
    }
    let (period, count) = match rest.as_slice() {
        [] | [_] => return Ok(vec![(start, end)]),
        [_, period, count] => (amount(period)?, count.parse::<i64>().map_err(|_| format!("'{count}' is not a count"))?),
        _ => return Err(format!("'{text}': expected date[;length[;period;count]]")),
    };
    if !(1..=MAX_REPEATS).contains(&count) {
        return Err(format!("'{text}': the count must be between 1 and {MAX_REPEATS}"));
    }
    let (k, unit) = period;
    let out_of_range = || format!("'{text}' is outside the timestamp range");
    (0..count)
        .map(|i| {
            let shift = k.checked_mul(i).ok_or_else(out_of_range)?;
            Ok((add(unit, shift, start).ok_or_else(out_of_range)?, add(unit, shift, end).ok_or_else(out_of_range)?))
        })
        .collect()
}

/// `[-]n unit` (`2h`, `-1d`, `30m`).
fn amount(s: &str) -> Result<(i64, Unit), String> {
    let digits_at = usize::from(s.starts_with('-'));
    let digits = s.bytes().skip(digits_at).take_while(u8::is_ascii_digit).count();
    let (number, letter) = s.split_at(digits_at + digits);
    let n = number.parse::<i64>().map_err(|_| format!("Expected number before unit '{letter}'"))?;
    let unit = match letter {
        "s" | "m" | "h" | "d" | "M" | "y" | "T" | "u" => Unit::from_letter(letter),
        _ => None,
    };
    Ok((n, unit.ok_or_else(|| format!("'{s}': unknown unit '{letter}' (s m h d M y)"))?))
}

/// The span a partial timestamp names: `[its start, the start of the next one)`. Its length
/// says its unit (`2024` a year ... `2024-01-02T10:30:00` a second); the text is completed
/// to a full timestamp by what that unit leaves out.
fn span(base: &str) -> Option<(i64, i64)> {
    let base = base.strip_suffix('Z').unwrap_or(base);
    let b = base.as_bytes();
    let all_digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|x| x.iter().all(u8::is_ascii_digit));
    let (rest, unit) = match b.len() {
        4 if all_digits(0..4) => ("-01-01", Unit::Year),
        7 if all_digits(0..4) && b.get(4) == Some(&b'-') && all_digits(5..7) => ("-01", Unit::Month),
        10 => ("", Unit::Day),
        13 => (":00", Unit::Hour),
        16 => ("", Unit::Minute),
        19 => ("", Unit::Second),
        n if n > 20 && b.get(19) == Some(&b'.') => {
            let start = parse_timestamp(base)?;
            let digits = u32::try_from(n - 20).ok().filter(|&d| d <= 9)?;
            return Some((start, start.checked_add(NS_PER_SEC / 10i64.pow(digits))?));
        }
        _ => return None,
    };
    let start = parse_timestamp(&format!("{base}{rest}"))?;
    Some((start, add(unit, 1, start)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::time::format_timestamp_iso as iso;

    fn show(text: &str) -> Vec<(String, String)> {
        ranges(text).expect("valid").into_iter().map(|(a, b)| (iso(a), iso(b))).collect()
    }

    #[test]
    fn partial_timestamps_lengths_and_repeats() {
        let one = |a: &str, b: &str| vec![(format!("{a}.000000000Z"), format!("{b}.000000000Z"))];
        assert_eq!(show("2024"), one("2024-01-01T00:00:00", "2025-01-01T00:00:00"));
        assert_eq!(show("2024-02"), one("2024-02-01T00:00:00", "2024-03-01T00:00:00"));
        assert_eq!(show("2024-01-02"), one("2024-01-02T00:00:00", "2024-01-03T00:00:00"));
        assert_eq!(show("2024-01-02T10;2h"), one("2024-01-02T10:00:00", "2024-01-02T12:00:00"));
        assert_eq!(show("2024-01-02T10:30;1m"), one("2024-01-02T10:30:00", "2024-01-02T10:31:00"));
        assert_eq!(show("2024-01-02 10:30"), one("2024-01-02T10:30:00", "2024-01-02T10:31:00"));
        assert_eq!(show("2024-01-02T10:30:00Z"), one("2024-01-02T10:30:00", "2024-01-02T10:30:01"));
        assert_eq!(show("2024-01-02T10:30:00.5")[0].1, "2024-01-02T10:30:00.600000000Z");
        assert_eq!(show("2024-01-02T10:30:00.000000Z")[0].1, "2024-01-02T10:30:00.000001000Z");
        let r = show("2024-01-01T23:00;1h;1d;3");
        assert_eq!(r.len(), 3);
        assert_eq!(r[2], ("2024-01-03T23:00:00.000000000Z".into(), "2024-01-04T00:00:00.000000000Z".into()));
        assert_eq!(show("2024-01-02;1s;-1d;2")[1].0, "2024-01-01T00:00:00.000000000Z");
        for bad in ["garbage", "2024-01-02;-1h", "2024-01-02;1x", "2024-01-02;1h;1d", "2024-01-02;1h;1d;0", "2024-13"] {
            assert!(ranges(bad).is_err(), "{bad}");
        }
    }
}

//! QuestDB's timestamp patterns, as `to_timestamp(text, pattern)` reads them: `yyyy` year,
//! `MM`/`M` month (`MMM` its short name, `MMMM` its full name), `dd`/`d` day, `HH`/`H` hour of
//! the day, `hh`/`h` hour of a half day with `a` (AM/PM), `mm`/`m` minute, `ss`/`s` second,
//! `S`..`SSS` milliseconds, `U`..`UUU` microseconds, `N`..`NNN` nanoseconds, `E`/`EEE` a day
//! name (read and ignored), `Z` an offset (`Z`, `+01:00`, `-0130`); any other character, and
//! text in single quotes, must appear as written. Text that does not match gives NULL.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use zepto_storage::time::{days_from_civil, NS_PER_DAY, NS_PER_HOUR, NS_PER_MIN, NS_PER_MS, NS_PER_SEC, NS_PER_US};

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const DAYS: [&str; 7] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

/// One element of a compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// A field: its letter and how many times it was written.
    Field(char, usize),
    /// Text that must appear as written.
    Literal(String),
}

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    items: Vec<Item>,
}

const LETTERS: &str = "yMdHhmsSUNaEZ";

impl Pattern {
    /// `pattern` compiled; an error names what is wrong with it.
    pub fn compile(pattern: &str) -> Result<Pattern, String> {
        let mut items = Vec::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                let mut text = String::new();
                loop {
                    match chars.next() {
                        Some('\'') if chars.peek() == Some(&'\'') => {
                            chars.next();
                            text.push('\'');
                        }
                        Some('\'') => break,
                        Some(x) => text.push(x),
                        None => return Err(format!("pattern '{pattern}': an unclosed quote")),
                    }
                }
                items.push(Item::Literal(text));
            } else if LETTERS.contains(c) {
                let mut width = 1;
                while chars.peek() == Some(&c) {
                    chars.next();
                    width += 1;
                }
                items.push(Item::Field(c, width));
            } else {
                items.push(Item::Literal(c.to_string()));
            }
        }
        Ok(Pattern { items })
    }

    /// The timestamp `text` gives under the pattern; `None` when it does not match.
    pub fn parse(&self, text: &str) -> Option<i64> {
        let mut f = Fields::default();
        let mut rest = text;
        for item in &self.items {
            rest = match item {
                Item::Literal(l) => rest.strip_prefix(l.as_str())?,
                Item::Field(c, w) => f.read(*c, *w, rest)?,
            };
        }
        if !rest.is_empty() {
            return None;
        }
        f.timestamp()
    }
}

/// The fields read so far.
#[derive(Debug, Default)]
struct Fields {
    year: i64,
    month: Option<u32>,
    day: Option<u32>,
    hour: i64,
    half_day: Option<bool>,
    minute: i64,
    second: i64,
    nanos: i64,
    offset_ns: i64,
}

impl Fields {
    /// Read field `c` written `w` times from the front of `s`; what is left.
    fn read<'a>(&mut self, c: char, w: usize, s: &'a str) -> Option<&'a str> {
        match c {
            'M' if w >= 3 => return self.month_name(s),
            'E' => return day_name(s),
            'a' => return self.am_pm(s),
            'Z' => return self.offset(s),
            _ => {}
        }
        let max = match c {
            'y' if w == 2 => 2,
            'y' => 9,
            'S' | 'U' | 'N' => w.max(3),
            _ => 2,
        };
        let (v, rest) = digits(s, if w >= 2 && c != 'y' { w } else { 1 }, max)?;
        match c {
            'y' if w == 2 => self.year = 2000 + v,
            'y' => self.year = v,
            'M' => self.month = Some(u32::try_from(v).ok()?),
            'd' => self.day = Some(u32::try_from(v).ok()?),
            'H' | 'h' => self.hour = v,
            'm' => self.minute = v,
            's' => self.second = v,
            'S' => self.nanos += v * NS_PER_MS,
            'U' => self.nanos += v * NS_PER_US,
            _ => self.nanos += v,
        }
        Some(rest)
    }

    fn month_name<'a>(&mut self, s: &'a str) -> Option<&'a str> {
        let (i, rest) = name(s, &MONTHS)?;
        self.month = Some(i as u32 + 1);
        Some(rest)
    }

    fn am_pm<'a>(&mut self, s: &'a str) -> Option<&'a str> {
        let head = s.get(..2)?;
        self.half_day = Some(match head.to_ascii_uppercase().as_str() {
            "AM" => false,
            "PM" => true,
            _ => return None,
        });
        s.get(2..)
    }

    fn offset<'a>(&mut self, s: &'a str) -> Option<&'a str> {
        if let Some(rest) = s.strip_prefix('Z').or_else(|| s.strip_prefix("UTC")) {
            return Some(rest);
        }
        let sign = match s.get(..1)? {
            "+" => 1,
            "-" => -1,
            _ => return None,
        };
        let (h, rest) = digits(s.get(1..)?, 2, 2)?;
        let rest = rest.strip_prefix(':').unwrap_or(rest);
        let (m, rest) = digits(rest, 2, 2)?;
        self.offset_ns = sign * (h * NS_PER_HOUR + m * NS_PER_MIN);
        Some(rest)
    }

    fn timestamp(&self) -> Option<i64> {
        let hour = match self.half_day {
            Some(pm) if (1..=12).contains(&self.hour) => self.hour % 12 + if pm { 12 } else { 0 },
            Some(_) => return None,
            None => self.hour,
        };
        let (month, day) = (self.month.unwrap_or(1), self.day.unwrap_or(1));
        let ok = (1..=12).contains(&month)
            && (1..=31).contains(&day)
            && hour < 24
            && self.minute < 60
            && self.second < 60
            && (-9999..=99999).contains(&self.year);
        if !ok {
            return None;
        }
        let days = days_from_civil(self.year, month, day);
        if zepto_storage::time::civil_from_days(days) != (self.year, month, day) {
            return None;
        }
        let tod = hour * NS_PER_HOUR + self.minute * NS_PER_MIN + self.second * NS_PER_SEC + self.nanos;
        days.checked_mul(NS_PER_DAY)?.checked_add(tod)?.checked_sub(self.offset_ns)
    }
}

/// Between `min` and `max` ASCII digits from the front of `s`, as a number.
fn digits(s: &str, min: usize, max: usize) -> Option<(i64, &str)> {
    let n = s.bytes().take(max).take_while(u8::is_ascii_digit).count();
    if n < min {
        return None;
    }
    let (d, rest) = s.split_at(n);
    Some((d.parse().ok()?, rest))
}

/// A name from `names` (full, or its first three letters), any case: its index.
fn name<'a>(s: &'a str, names: &[&str]) -> Option<(usize, &'a str)> {
    let lower = s.to_ascii_lowercase();
    for (i, n) in names.iter().enumerate() {
        if lower.starts_with(n) {
            return Some((i, s.get(n.len()..)?));
        }
    }
    for (i, n) in names.iter().enumerate() {
        if lower.get(..3).is_some_and(|p| n.starts_with(p)) {
            return Some((i, s.get(3..)?));
        }
    }
    None
}

fn day_name(s: &str) -> Option<&str> {
    name(s, &DAYS).map(|(_, rest)| rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::time::format_timestamp_iso;

    fn parse(text: &str, pattern: &str) -> Option<String> {
        Pattern::compile(pattern).expect("valid").parse(text).map(format_timestamp_iso)
    }

    #[test]
    fn questdb_patterns() {
        assert_eq!(parse("2024-01-02", "yyyy-MM-dd").as_deref(), Some("2024-01-02T00:00:00.000000000Z"));
        assert_eq!(
            parse("02/01/2024 10:30:05.123", "dd/MM/yyyy HH:mm:ss.SSS").as_deref(),
            Some("2024-01-02T10:30:05.123000000Z")
        );
        assert_eq!(
            parse("2024-01-02T10:30:05.123456Z", "yyyy-MM-ddTHH:mm:ss.SSSUUUZ").as_deref(),
            Some("2024-01-02T10:30:05.123456000Z")
        );
        assert_eq!(
            parse("Tue, 02 Jan 2024 10:30 +01:00", "E, dd MMM yyyy HH:mm Z").as_deref(),
            Some("2024-01-02T09:30:00.000000000Z")
        );
        assert_eq!(parse("1/2/2024 1:05 PM", "M/d/yyyy h:mm a").as_deref(), Some("2024-01-02T13:05:00.000000000Z"));
        assert_eq!(parse("2024-01-02 'x'", "yyyy-MM-dd '''x'''").as_deref(), Some("2024-01-02T00:00:00.000000000Z"));
        for (text, pattern) in
            [("bad", "yyyy"), ("2024-02-30", "yyyy-MM-dd"), ("2024-01-02x", "yyyy-MM-dd"), ("24:00", "HH:mm")]
        {
            assert_eq!(parse(text, pattern), None, "{text} {pattern}");
        }
        assert!(Pattern::compile("yyyy 'open").is_err());
    }
}

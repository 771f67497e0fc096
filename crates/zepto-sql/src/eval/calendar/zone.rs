//! Time zones for QuestDB's `to_timezone(ts, tz)` and `to_utc(ts, tz)` and SAMPLE BY's `ALIGN
//! TO CALENDAR TIME ZONE`: an instant's wall-clock time in a zone, and back.
//!
//! A zone is an IANA name (`Europe/Berlin`, also its abbreviations such as `EST`), `UTC`, or a
//! fixed offset (`+02:00`, `-0530`, `+5`). The rules come from the tz database bundled into
//! the binary (jiff's), so every machine answers alike, with or without tzdata installed.
//! A wall-clock time a zone skips (spring forward) is read as the instant after the gap, one
//! it repeats (fall back) as the earlier instant: jiff's `compatible`, as java.time (and so
//! QuestDB) does.

use jiff::tz::{Offset, TimeZone};
use jiff::Timestamp;
use zepto_storage::time::NS_PER_SEC;

/// A time zone's rules.
#[derive(Debug, Clone)]
pub struct Zone(TimeZone);

impl Zone {
    /// The zone `name` names (see the module doc), or what is wrong with it.
    pub fn parse(name: &str) -> Result<Zone, String> {
        let t = name.trim();
        if t.eq_ignore_ascii_case("utc") || t.eq_ignore_ascii_case("z") || t.eq_ignore_ascii_case("gmt") {
            return Ok(Zone(TimeZone::UTC));
        }
        if let Some(off) = fixed_offset(t) {
            return Ok(Zone(TimeZone::fixed(off)));
        }
        TimeZone::get(t).map(Zone).map_err(|_| {
            format!("unknown time zone '{name}' (an IANA name such as 'Europe/Berlin', or an offset such as '+02:00')")
        })
    }

    /// The wall-clock time in this zone of the instant `ns` (UTC), as nanoseconds from
    /// 1970-01-01 00:00 wall-clock time; `None` out of range.
    pub fn local(&self, ns: i64) -> Option<i64> {
        let ts = Timestamp::from_nanosecond(i128::from(ns)).ok()?;
        let off = i64::from(self.0.to_offset(ts).seconds());
        ns.checked_add(off.checked_mul(NS_PER_SEC)?)
    }

    /// The instant (UTC) of the wall-clock time `local` in this zone (see the module doc for
    /// skipped and repeated times); `None` out of range.
    pub fn utc(&self, local: i64) -> Option<i64> {
        let civil = Offset::UTC.to_datetime(Timestamp::from_nanosecond(i128::from(local)).ok()?);
        let ts = self.0.to_ambiguous_timestamp(civil).compatible().ok()?;
        i64::try_from(ts.as_nanosecond()).ok()
    }
}

/// `+hh[:mm]`, `-hhmm`, `+h`: a fixed offset of at most 18 hours.
fn fixed_offset(t: &str) -> Option<Offset> {
    let (sign, rest) = match t.as_bytes().first()? {
        b'+' => (1, t.get(1..)?),
        b'-' => (-1, t.get(1..)?),
        _ => return None,
    };
    let (h, m) = match rest.split_once(':') {
        Some((h, m)) => (h, m),
        None if rest.len() > 2 => (rest.get(..rest.len() - 2)?, rest.get(rest.len() - 2..)?),
        None => (rest, "0"),
    };
    let ok = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|c| c.is_ascii_digit());
    if !ok(h) || !ok(m) {
        return None;
    }
    let (h, m): (i32, i32) = (h.parse().ok()?, m.parse().ok()?);
    if h > 18 || m > 59 {
        return None;
    }
    Offset::from_seconds(sign * (h * 3600 + m * 60)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::time::parse_timestamp;

    fn ts(s: &str) -> i64 {
        parse_timestamp(s).expect(s)
    }

    #[test]
    fn wall_clock_and_back_across_daylight_saving() {
        let berlin = Zone::parse("Europe/Berlin").expect("zone");
        // Winter +1, summer +2 (the change at 2024-03-31 01:00 UTC).
        assert_eq!(berlin.local(ts("2024-03-31 00:30:00")), Some(ts("2024-03-31 01:30:00")));
        assert_eq!(berlin.local(ts("2024-03-31 01:30:00")), Some(ts("2024-03-31 03:30:00")));
        assert_eq!(berlin.utc(ts("2024-04-01 00:00:00")), Some(ts("2024-03-31 22:00:00")));
        // 02:30 does not exist that night: the instant after the gap.
        assert_eq!(berlin.utc(ts("2024-03-31 02:30:00")), Some(ts("2024-03-31 01:30:00")));
        // 02:30 on 2024-10-27 happens twice: the earlier.
        assert_eq!(berlin.utc(ts("2024-10-27 02:30:00")), Some(ts("2024-10-27 00:30:00")));
        let fixed = Zone::parse("+05:30").expect("offset");
        assert_eq!(fixed.local(0), Some(5 * 3600 * NS_PER_SEC + 30 * 60 * NS_PER_SEC));
        assert_eq!(Zone::parse("-0530").expect("offset").utc(0), Some(5 * 3600 * NS_PER_SEC + 30 * 60 * NS_PER_SEC));
        assert_eq!(Zone::parse("UTC").expect("utc").local(7), Some(7));
        assert_eq!(berlin.local(i64::MAX), None);
        for bad in ["Mars/Olympus", "+25:00", "+1:75", "", "+"] {
            assert!(Zone::parse(bad).is_err(), "{bad}");
        }
    }
}

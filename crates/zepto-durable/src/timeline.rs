//! The change feed's timeline: which history a subscriber's event ids belong to.
//!
//! An event id is `TIMELINE-LSN`: the LSN alone names a record only while no record the feed
//! published can be lost. Under `--sync always` nothing published is lost (a write is
//! published after its record is on disk), so a restart, even after `kill -9`, keeps the
//! timeline and a subscriber resumes by LSN from the log. Under `interval` or `none` the
//! records after the last fsync may be gone after a crash and their LSNs given to new
//! records, and point-in-time recovery may cut damaged ones: the database then starts a new
//! timeline, and ids of the old one are refused as gone rather than resumed into other rows.
//! A restored backup has no timeline file and starts a new one too.
//!
//! The file `timeline` beside the checkpoints holds `<timeline> <always|relaxed>`: the
//! timeline and whether the run that wrote it synced every record.

use crate::DurableError;
use zepto_wal::{Storage, SyncMode};

const FILE: &str = "timeline";

/// The timeline this run continues (the last run's, when nothing it published can have been
/// lost), recorded with this run's sync mode.
pub fn continued(storage: &dyn Storage, sync: SyncMode, cut: bool) -> Result<u64, DurableError> {
    let io = |e: std::io::Error| DurableError::Io(format!("the feed's timeline file: {e}"));
    let names = storage.list().map_err(io)?;
    let last = names.iter().any(|n| n == FILE).then(|| storage.read(FILE)).transpose();
    let last = last.map_err(io)?.and_then(|b| parse(&String::from_utf8_lossy(&b)));
    let timeline = match last {
        Some((t, true)) if !cut => t,
        other => fresh(other.map(|(t, _)| t)),
    };
    let always = matches!(sync, SyncMode::Always);
    let text = format!("{timeline} {}\n", if always { "always" } else { "relaxed" });
    crate::identity::write_whole(storage, FILE, text.as_bytes()).map_err(io)?;
    Ok(timeline)
}

fn parse(text: &str) -> Option<(u64, bool)> {
    let (t, mode) = text.trim().split_once(' ')?;
    Some((t.parse().ok()?, mode == "always"))
}

/// A new timeline: the time in microseconds, never the one before.
fn fresh(before: Option<u64>) -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_micros() as u64);
    match before {
        Some(b) if now <= b => b + 1,
        _ => now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_wal::MemStorage;

    /// Kept across restarts while every run synced each record and recovery cut nothing;
    /// a new one after a relaxed run, after a cut, and for a directory without the file.
    #[test]
    fn a_timeline_lasts_while_nothing_published_can_be_lost() {
        let st = MemStorage::new();
        let first = continued(&st, SyncMode::Always, false).expect("first");
        assert_eq!(continued(&st, SyncMode::Always, false).expect("again"), first);
        let relaxed = SyncMode::parse("interval=10").expect("mode");
        assert_eq!(continued(&st, relaxed, false).expect("relaxed run"), first, "the last run synced all");
        let after_relaxed = continued(&st, SyncMode::Always, false).expect("after");
        assert!(after_relaxed > first, "the relaxed run may have lost published records");
        let after_cut = continued(&st, SyncMode::Always, true).expect("cut");
        assert!(after_cut > after_relaxed);
        assert_eq!(continued(&st, SyncMode::Always, false).expect("kept"), after_cut);
        assert_eq!(st.list().expect("list"), vec![FILE.to_string()]);
    }
}

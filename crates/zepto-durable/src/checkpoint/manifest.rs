//! A checkpoint's manifest: the text that lists its files and makes it exist (see the
//! module docs of [`crate::checkpoint`] for the layout).
//!
//! Formats this build reads:
//! * 1: `file <name> <bytes> <crc32 hex>`. Every table file is the checkpoint's own.
//! * 2 (written now): `file <name> <bytes> <crc32 hex> <stamp>`, where the stamp names the
//!   table's content ([`Stamp`]). A file may be one an earlier checkpoint wrote, named again
//!   because its table has not changed since (its name then carries that checkpoint's LSN).
//!
//! A manifest of a later format is refused with [`DurableError::Format`], never read as
//! damage.

use crate::DurableError;
use zepto_storage::{Stamp, ViewDef};
use zepto_wal::Lsn;

const PREFIX: &str = "zeptodb-checkpoint";
/// The format this build writes.
pub const FORMAT: u32 = 2;
/// The oldest format this build reads.
const OLDEST: u32 = 1;

/// One table file a manifest names, with what checks it.
#[derive(Debug, Clone, PartialEq)]
pub struct FileEntry {
    /// The file's name in the checkpoint directory.
    pub name: String,
    /// Its length.
    pub bytes: u64,
    /// Its CRC-32.
    pub crc: u32,
    /// The content of the table it holds (`None` in format 1).
    pub stamp: Option<Stamp>,
}

/// A parsed manifest.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The format it was written in.
    pub format: u32,
    /// Every change up to this LSN is in the checkpoint.
    pub lsn: Lsn,
    /// The tables' files, in table order.
    pub files: Vec<FileEntry>,
    /// The materialized views, each with its file of partial states when it had one.
    pub views: Vec<(ViewDef, Option<FileEntry>)>,
}

impl Manifest {
    /// An empty manifest of this build's format.
    pub fn new(lsn: Lsn) -> Manifest {
        Manifest { format: FORMAT, lsn, files: Vec::new(), views: Vec::new() }
    }

    /// Every file it names, tables' and views'.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let states = self.views.iter().filter_map(|(_, f)| f.as_ref());
        self.files.iter().chain(states).map(|f| f.name.as_str())
    }

    /// The manifest's text, its checksum line last.
    pub fn render(&self) -> String {
        debug_assert_eq!(self.format, FORMAT, "only this build's format is written");
        let mut out = format!("{PREFIX} {}\nlsn {}\n", self.format, self.lsn);
        for f in &self.files {
            let stamp = f.stamp.map_or_else(|| "-".to_string(), |s| s.to_string());
            out.push_str(&format!("file {} {} {:08x} {stamp}\n", f.name, f.bytes, f.crc));
        }
        for (d, state) in &self.views {
            out.push_str(&format!("view\t{}\t{}\t{}\n", escape(d.name()), escape(d.base()), escape(d.sql())));
            if let Some(f) = state {
                out.push_str(&format!("viewstate\t{}\t{}\t{}\t{:08x}\n", escape(d.name()), f.name, f.bytes, f.crc));
            }
        }
        out.push_str(&format!("crc {:08x}\n", crc32fast::hash(out.as_bytes())));
        out
    }

    /// Parse manifest `name` (of the checkpoint at `lsn`), checksum first.
    pub fn parse(name: &str, lsn: Lsn, raw: Vec<u8>) -> Result<Manifest, DurableError> {
        let corrupt = |reason: String| DurableError::Corrupt { file: name.to_string(), reason };
        let text = String::from_utf8(raw).map_err(|_| corrupt("not UTF-8".into()))?;
        let body_end = text.rfind("crc ").ok_or_else(|| corrupt("no checksum line".into()))?;
        let (body, crc_line) = text.split_at(body_end);
        let want = crc_line.trim_end().strip_prefix("crc ").and_then(|h| u32::from_str_radix(h, 16).ok());
        if want != Some(crc32fast::hash(body.as_bytes())) {
            return Err(corrupt("checksum mismatch".into()));
        }
        let mut lines = body.lines();
        let format = header_format(name, lines.next())?;
        if lines.next() != Some(format!("lsn {lsn}").as_str()) {
            return Err(corrupt("its LSN line does not match its name".into()));
        }
        let mut m = Manifest { format, lsn, files: Vec::new(), views: Vec::new() };
        for l in lines {
            let bad = || corrupt(format!("a malformed line: {l}"));
            if l.starts_with("view") {
                m.view_line(l).ok_or_else(bad)?;
            } else {
                m.files.push(file_line(l, format).ok_or_else(bad)?);
            }
        }
        Ok(m)
    }

    /// Take a `view` or `viewstate` line (a state follows its view's line).
    fn view_line(&mut self, l: &str) -> Option<()> {
        let f: Vec<&str> = l.split('\t').collect();
        match f.as_slice() {
            ["view", name, base, sql] => {
                let def = ViewDef::new(&unescape(name)?, &unescape(base)?, &unescape(sql)?).ok()?;
                self.views.push((def, None));
            }
            ["viewstate", name, file, bytes, crc] => {
                let name = unescape(name)?;
                if !is_table_file_name(file) {
                    return None;
                }
                let slot = self.views.iter_mut().find(|(d, _)| d.name() == name)?;
                let entry = FileEntry {
                    name: file.to_string(),
                    bytes: bytes.parse().ok()?,
                    crc: u32::from_str_radix(crc, 16).ok()?,
                    stamp: None,
                };
                slot.1 = Some(entry);
            }
            _ => return None,
        }
        Some(())
    }
}

/// The format a manifest's first line declares, if this build reads it.
fn header_format(name: &str, header: Option<&str>) -> Result<u32, DurableError> {
    let digits = header.and_then(|h| h.strip_prefix(PREFIX)).and_then(|n| n.strip_prefix(' '));
    let n: Option<u32> = digits.filter(|d| d.bytes().all(|b| b.is_ascii_digit())).and_then(|d| d.parse().ok());
    match n {
        Some(n) if (OLDEST..=FORMAT).contains(&n) => Ok(n),
        Some(n) if n > FORMAT => Err(DurableError::Format(format!(
            "{name} was written by a newer ZeptoDB (checkpoint format {n}; this build reads formats \
             {OLDEST} to {FORMAT}): start that version or a later one, or restore a backup"
        ))),
        _ => Err(DurableError::Corrupt { file: name.to_string(), reason: "not a checkpoint manifest".into() }),
    }
}

/// A `file` line of a manifest of `format`.
fn file_line(l: &str, format: u32) -> Option<FileEntry> {
    let f: Vec<&str> = l.split(' ').collect();
    let (name, bytes, crc, stamp) = match (format, f.as_slice()) {
        (1, ["file", name, bytes, crc]) => (name, bytes, crc, None),
        (2, ["file", name, bytes, crc, "-"]) => (name, bytes, crc, None),
        (2, ["file", name, bytes, crc, stamp]) => (name, bytes, crc, Some(Stamp::parse(stamp)?)),
        _ => return None,
    };
    if !is_table_file_name(name) {
        return None;
    }
    Some(FileEntry {
        name: name.to_string(),
        bytes: bytes.parse().ok()?,
        crc: u32::from_str_radix(crc, 16).ok()?,
        stamp,
    })
}

/// Whether `name` is a table file's name (`<20 digits>-<5 or more digits>.arrow`): a restore
/// copies the files a manifest names, so a name reaching out of the directory is damage.
fn is_table_file_name(name: &str) -> bool {
    let Some((lsn, k)) = name.strip_suffix(".arrow").and_then(|n| n.split_once('-')) else { return false };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    lsn.len() == 20 && digits(lsn) && k.len() >= 5 && digits(k)
}

/// A manifest field: backslash, tab and line ends escaped.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\t', "\\t").replace('\n', "\\n").replace('\r', "\\r")
}

fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            '\\' => '\\',
            't' => '\t',
            'n' => '\n',
            'r' => '\r',
            _ => return None,
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, stamp: Option<Stamp>) -> FileEntry {
        FileEntry { name: name.into(), bytes: 123, crc: 0xdead_beef, stamp }
    }

    #[test]
    fn a_manifest_reads_back_as_written() {
        let mut m = Manifest::new(42);
        m.files.push(entry("00000000000000000042-00000.arrow", Some(Stamp::next())));
        m.files.push(entry("00000000000000000007-00001.arrow", Some(Stamp::next())));
        let def = ViewDef::new("v\t1", "t", "SELECT a\nFROM t").expect("a view");
        m.views.push((def, Some(entry("00000000000000000042-00002.arrow", None))));
        let text = m.render();
        let back = Manifest::parse("m", 42, text.into_bytes()).expect("parses");
        assert_eq!(back.files, m.files);
        assert_eq!(back.views.len(), 1);
        assert_eq!(back.views[0].0.sql(), "SELECT a\nFROM t");
        assert_eq!(back.views[0].1, m.views[0].1);
        assert_eq!(back.names().count(), 3);
    }

    #[test]
    fn format_one_reads_and_later_formats_are_refused() {
        let body = "zeptodb-checkpoint 1\nlsn 5\nfile 00000000000000000005-00000.arrow 10 0000abcd\n";
        let text = format!("{body}crc {:08x}\n", crc32fast::hash(body.as_bytes()));
        let m = Manifest::parse("m", 5, text.into_bytes()).expect("format 1 reads");
        assert_eq!((m.format, m.files[0].bytes, m.files[0].stamp), (1, 10, None));
        // A stamp on a format 1 line is damage, not a format 2 line.
        let body = "zeptodb-checkpoint 1\nlsn 5\nfile a 10 0000abcd 0123456789abcdef.1\n";
        let text = format!("{body}crc {:08x}\n", crc32fast::hash(body.as_bytes()));
        assert!(matches!(Manifest::parse("m", 5, text.into_bytes()), Err(DurableError::Corrupt { .. })));
        let body = "zeptodb-checkpoint 2\nlsn 5\nfile 00000000000000000005-123456.arrow 10 0000abcd -\n";
        let text = format!("{body}crc {:08x}\n", crc32fast::hash(body.as_bytes()));
        assert!(Manifest::parse("m", 5, text.into_bytes()).is_ok(), "table 123456 of a large catalog");
        for bad in [
            "file ../../etc/x 10 0000abcd -",
            "file 00000000000000000005-0000.arrow 10 0000abcd -",
            "file 00000000000000000005-00000.arrow/../x 10 0000abcd -",
            "file 0000000000000000005-00000.arrow 10 0000abcd -",
        ] {
            let body = format!("zeptodb-checkpoint 2\nlsn 5\n{bad}\n");
            let text = format!("{body}crc {:08x}\n", crc32fast::hash(body.as_bytes()));
            assert!(matches!(Manifest::parse("m", 5, text.into_bytes()), Err(DurableError::Corrupt { .. })), "{bad}");
        }
        for bad in ["zeptodb-checkpoint2", "zeptodb-checkpoint +2", "zeptodb-checkpoint  2"] {
            let body = format!("{bad}\nlsn 5\n");
            let text = format!("{body}crc {:08x}\n", crc32fast::hash(body.as_bytes()));
            assert!(matches!(Manifest::parse("m", 5, text.into_bytes()), Err(DurableError::Corrupt { .. })), "{bad}");
        }
        let body = "zeptodb-checkpoint 3\nlsn 5\n";
        let text = format!("{body}crc {:08x}\n", crc32fast::hash(body.as_bytes()));
        match Manifest::parse("m", 5, text.into_bytes()) {
            Err(DurableError::Format(msg)) => assert!(msg.contains("format 3"), "{msg}"),
            other => panic!("{other:?}"),
        }
    }
}

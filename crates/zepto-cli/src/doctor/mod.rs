//! `zeptodb doctor`: checks the host's settings the way a bare-metal tuning checklist does and
//! says what to change, with the reason (docs/operations.md, "Tune"). Exits 1 when a check
//! warns, 0 otherwise; `--format json` gives the same findings to a script.
//!
//! It only reads: kernel settings under `--root` (`/`; a test points it at a tree of its own),
//! the data directory's mount and free space, and the CPU's features. Changing a setting is
//! left to the operator, since each needs root and some a reboot.

mod checks;

use checks::{Finding, Host, Status};
use clap::{Arg, ArgMatches, Command};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn command() -> Command {
    Command::new("doctor")
        .about("Check the host's settings for running ZeptoDB and say what to change")
        .arg(
            Arg::new("data-dir")
                .long("data-dir")
                .value_name("DIR")
                .default_value("./zepto-data")
                .help("The data directory to check (its file system and free space)"),
        )
        .arg(Arg::new("format").long("format").value_parser(["text", "json"]).default_value("text"))
        .arg(
            Arg::new("root")
                .long("root")
                .value_name("DIR")
                .default_value("/")
                .help("Read /proc and /sys under DIR instead of / (for tests)"),
        )
}

/// Every check, in the checklist's order.
pub fn findings(host: &Host, data_dir: &Path) -> Vec<Finding> {
    vec![
        checks::transparent_huge_pages(host),
        checks::reserved_huge_pages(host),
        checks::cpu_governor(host),
        checks::swappiness(host),
        checks::overcommit(host),
        checks::open_files(host),
        checks::numa_balancing(host),
        checks::isolated_cores(host),
        checks::clock_source(host),
        checks::data_filesystem(host, data_dir),
        checks::free_space(data_dir),
        checks::avx2(),
    ]
}

pub fn run(a: &ArgMatches) -> ExitCode {
    let root = a.get_one::<String>("root").map_or("/", String::as_str);
    let dir = a.get_one::<String>("data-dir").map_or("./zepto-data", String::as_str);
    let dir = resolve(Path::new(dir));
    let found = findings(&Host::new(root), &dir);
    match a.get_one::<String>("format").map(String::as_str) {
        Some("json") => println!("{}", json(&found)),
        _ => print!("{}", text(&found)),
    }
    if found.iter().any(|f| f.status == Status::Warn) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `dir` made absolute, its deepest existing ancestor's links resolved: the data directory may
/// not exist yet, and is checked where it will be made.
fn resolve(dir: &Path) -> PathBuf {
    let abs = std::env::current_dir().map_or_else(|_| dir.to_path_buf(), |cwd| cwd.join(dir));
    for up in abs.ancestors() {
        if let (Ok(real), Ok(rest)) = (std::fs::canonicalize(up), abs.strip_prefix(up)) {
            return real.join(rest);
        }
    }
    abs
}

fn text(found: &[Finding]) -> String {
    let width = found.iter().map(|f| f.check.len()).max().unwrap_or(0);
    let mut out = String::new();
    for f in found {
        out.push_str(&format!("{:<5} {:<width$}  {}\n", f.status.name(), f.check, f.value));
        if !f.advice.is_empty() {
            out.push_str(&format!("{:<5} {:<width$}  -> {}\n", "", "", f.advice));
        }
    }
    let warns = found.iter().filter(|f| f.status == Status::Warn).count();
    out.push_str(&match warns {
        0 => "nothing to change\n".to_string(),
        n => format!("{n} setting(s) to change\n"),
    });
    out
}

fn json(found: &[Finding]) -> String {
    let checks: Vec<serde_json::Value> = found
        .iter()
        .map(|f| serde_json::json!({"check": f.check, "status": f.status.name(), "value": f.value, "advice": f.advice}))
        .collect();
    let ok = !found.iter().any(|f| f.status == Status::Warn);
    serde_json::json!({ "ok": ok, "checks": checks }).to_string()
}

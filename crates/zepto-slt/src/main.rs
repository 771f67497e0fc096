//! `zepto-slt [--tier | --cluster N] FILE...`: run sqllogictest files, print failures and a
//! closing `N passed, M failed` line; exit non-zero on any failure. `--tier` moves the older
//! half of every table to the Parquet history before each query; `--cluster N` runs every
//! file on an in-process cluster of N engines (see `zepto_slt::Mode::Cluster`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut files: Vec<String> = std::env::args().skip(1).collect();
    let mode = match files.first().map(String::as_str) {
        Some("--tier") => {
            files.remove(0);
            zepto_slt::Mode::Tier
        }
        Some("--cluster") => {
            files.remove(0);
            match (!files.is_empty()).then(|| files.remove(0).parse::<usize>()) {
                Some(Ok(n)) if n > 0 => zepto_slt::Mode::Cluster(n),
                _ => {
                    eprintln!("--cluster takes a node count (1 or more)");
                    return ExitCode::from(2);
                }
            }
        }
        _ => zepto_slt::Mode::Plain,
    };
    let tier = mode == zepto_slt::Mode::Tier;
    if files.is_empty() {
        eprintln!("usage: zepto-slt [--tier | --cluster N] FILE.slt...");
        return ExitCode::from(2);
    }
    let (mut passed, mut failed) = (0, 0);
    for f in &files {
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{f}: {e}");
                failed += 1;
                continue;
            }
        };
        let r = zepto_slt::run_file_in(f, &text, mode);
        print!("{}", r.failures);
        if let zepto_slt::Mode::Cluster(n) = mode {
            eprintln!(
                "{f}: {} passed, {} failed ({} queries gathered from {n} nodes)",
                r.passed, r.failed, r.exchanged
            );
        } else if tier {
            eprintln!("{f}: {} passed, {} failed ({} queries over history)", r.passed, r.failed, r.over_history);
        } else {
            eprintln!("{f}: {} passed, {} failed", r.passed, r.failed);
        }
        passed += r.passed;
        failed += r.failed;
    }
    println!("slt: {passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

//! `zepto-slt [--tier] FILE...`: run sqllogictest files, print failures and a closing
//! `N passed, M failed` line; exit non-zero on any failure. `--tier` moves the older half of
//! every table to the Parquet history before each query.

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut files: Vec<String> = std::env::args().skip(1).collect();
    let tier = files.first().is_some_and(|a| a == "--tier");
    if tier {
        files.remove(0);
    }
    if files.is_empty() {
        eprintln!("usage: zepto-slt [--tier] FILE.slt...");
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
        let r = zepto_slt::run_file_with(f, &text, tier);
        print!("{}", r.failures);
        if tier {
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

//! `zepto-slt FILE...`: run sqllogictest files, print failures and a closing
//! `N passed, M failed` line; exit non-zero on any failure.

use std::process::ExitCode;

fn main() -> ExitCode {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: zepto-slt FILE.slt...");
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
        let r = zepto_slt::run_file(f, &text);
        print!("{}", r.failures);
        eprintln!("{f}: {} passed, {} failed", r.passed, r.failed);
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

//! The interactive shell: line editing and history (rustyline), statements may span lines and
//! end with `;`, backslash commands for meta operations.

use crate::backend::Backend;
use crate::output::render;
use std::process::ExitCode;
use std::time::Instant;

const HELP: &str =
    "\\q quit   \\timing toggle timing   \\d list tables   \\d NAME describe   \\format table|csv|json   \\? help";

pub fn run(backend: &mut Backend, format: &str) -> ExitCode {
    let mut rl = match rustyline::DefaultEditor::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("zeptodb: cannot start the line editor: {e}");
            return ExitCode::FAILURE;
        }
    };
    let history = std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".zeptodb_history"));
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    println!("ZeptoDB {} — type SQL ending with ';', \\? for help", env!("CARGO_PKG_VERSION"));
    let mut format = format.to_string();
    let mut timing = false;
    let mut buf = String::new();
    loop {
        let prompt = if buf.is_empty() { "zepto> " } else { "   ..> " };
        let line = match rl.readline(prompt) {
            Ok(l) => l,
            Err(rustyline::error::ReadlineError::Interrupted) => {
                buf.clear();
                continue;
            }
            Err(_) => break,
        };
        let t = line.trim();
        if buf.is_empty() && t.starts_with('\\') {
            let _ = rl.add_history_entry(t);
            let mut parts = t.split_whitespace();
            match (parts.next(), parts.next()) {
                (Some("\\q"), _) => break,
                (Some("\\timing"), _) => {
                    timing = !timing;
                    println!("Timing is {}.", if timing { "on" } else { "off" });
                }
                (Some("\\d"), None) => exec(backend, "SHOW TABLES", &format, timing),
                (Some("\\d"), Some(name)) => exec(backend, &format!("DESCRIBE {name}"), &format, timing),
                (Some("\\format"), Some(f)) if ["table", "csv", "json"].contains(&f) => format = f.to_string(),
                _ => println!("{HELP}"),
            }
            continue;
        }
        buf.push_str(&line);
        buf.push('\n');
        if t.ends_with(';') {
            let sql = std::mem::take(&mut buf);
            let _ = rl.add_history_entry(sql.trim());
            exec(backend, &sql, &format, timing);
        }
    }
    if let Some(h) = &history {
        let _ = rl.save_history(h);
    }
    ExitCode::SUCCESS
}

fn exec(backend: &mut Backend, sql: &str, format: &str, timing: bool) {
    let t0 = Instant::now();
    match backend.execute(sql) {
        Ok(r) => {
            let el = t0.elapsed();
            print!("{}", render(&r, format, el));
            if timing {
                println!("Time: {:.3} ms", el.as_secs_f64() * 1e3);
            }
        }
        Err(e) => println!("{}", e.line()),
    }
}

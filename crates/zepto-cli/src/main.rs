//! `zeptodb`: the command-line door to the engine (SPEC §1).
//!
//! * `zeptodb sql` — REPL (history, multi-line statements ending in `;`, `\timing`, `\q`) or
//!   one-shot (`-c`, `-f`), output as table, CSV or JSON.
//! * `zeptodb serve` — the HTTP server (SPEC §2); `zeptodb keygen` makes API keys.
//! * `zeptodb demo` — loads a generated market-data set and runs example queries.
//! * `zeptodb doctor` — checks the host's settings and says what to change.
//! * `zeptodb backup`, `zeptodb restore` — online backups and restoring one.

mod backend;
mod backup;
mod demo;
mod doctor;
mod durable;
mod output;
mod remote;
mod repl;
mod serve;

/// Count allocations per thread so the server can enforce per-query memory limits.
#[global_allocator]
static ALLOC: zepto_storage::mem::CountingAlloc = zepto_storage::mem::CountingAlloc;

use clap::{Arg, ArgAction, Command};
use std::process::ExitCode;
use zepto_sql::{Engine, SqlError};

fn cli() -> Command {
    let sql = Command::new("sql")
        .about("Run SQL: a REPL, or one-shot with -c/-f")
        .arg(
            Arg::new("command")
                .short('c')
                .long("command")
                .value_name("SQL")
                .help("SQL to run (';'-separated; the last result is printed)"),
        )
        .arg(Arg::new("file").short('f').long("file").value_name("FILE").help("Run the SQL in FILE"))
        .arg(Arg::new("format").long("format").value_parser(["table", "csv", "json"]).default_value("table"))
        .arg(Arg::new("data-dir").long("data-dir").value_name("DIR").help("Durable data directory (write-ahead log)"))
        .arg(
            Arg::new("sync")
                .long("sync")
                .value_name("MODE")
                .help("With --data-dir: always (default), interval=<ms>, none"),
        )
        .arg(
            Arg::new("url")
                .long("url")
                .value_name("URL")
                .help("Run on a server (http://host:port; key from $ZEPTO_API_KEY)"),
        )
        .arg(
            Arg::new("demo")
                .long("demo")
                .action(ArgAction::SetTrue)
                .help("Start with the generated demo tables (trades, quotes)"),
        )
        .arg(crate::demo::rows_arg())
        .arg(Arg::new("timing").long("timing").action(ArgAction::SetTrue).help("Print elapsed time to stderr"));
    let demo = Command::new("demo")
        .about("Generate a market-data set in memory and run example queries")
        .arg(demo::rows_arg());
    Command::new("zeptodb")
        .about("ZeptoDB: an in-memory columnar time-series database")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommand_required(true)
        .subcommand(sql)
        .subcommand(serve::command())
        .subcommand(serve::keygen_command())
        .subcommand(demo)
        .subcommand(doctor::command())
        .subcommand(backup::backup_command())
        .subcommand(backup::restore_command())
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("zeptodb: {msg}");
    ExitCode::FAILURE
}

fn error_line(e: &SqlError) -> String {
    format!("error [{}]: {e}", e.code())
}

fn main() -> ExitCode {
    zepto_storage::mem::retain_freed_memory();
    zepto_storage::mem::tune_arenas();
    let m = match cli().try_get_matches() {
        Ok(m) => m,
        Err(e) => {
            let code = if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
            let _ = e.print();
            return code;
        }
    };
    match m.subcommand() {
        Some(("demo", a)) => {
            let rows = a.get_one::<usize>("rows").copied().unwrap_or(1_000_000);
            match demo::run(rows) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&error_line(&e)),
            }
        }
        Some(("serve", a)) => serve::run(a),
        Some(("keygen", a)) => serve::keygen(a),
        Some(("doctor", a)) => doctor::run(a),
        Some(("backup", a)) => backup::run_backup(a),
        Some(("restore", a)) => backup::run_restore(a),
        Some(("sql", a)) => {
            let mut durable = None;
            let mut backend = match a.get_one::<String>("url") {
                Some(url) => {
                    if a.get_flag("demo") {
                        return fail("--demo loads a local engine; with --url the server's tables are used");
                    }
                    match remote::Remote::new(url) {
                        Ok(r) => backend::Backend::Remote(r),
                        Err(e) => return fail(&e),
                    }
                }
                None => {
                    let mut engine = Engine::new();
                    if let Some(dir) = a.get_one::<String>("data-dir") {
                        let sync = a.get_one::<String>("sync").cloned();
                        match durable::open(&engine, dir, zepto_durable::DirOptions { sync, ..Default::default() }) {
                            Ok(d) => durable = Some(d),
                            Err(e) => return fail(&e),
                        }
                        // COPY never reads or writes the data directory's own files.
                        match zepto_sql::FilePolicy::new(None, &[std::path::Path::new(dir)]) {
                            Ok(files) => engine = engine.with_files(files),
                            Err(e) => return fail(&e),
                        }
                    }
                    if a.get_flag("demo") && !engine.catalog().exists("trades") {
                        let rows = a.get_one::<usize>("rows").copied().unwrap_or(1_000_000);
                        if let Err(e) = demo::load(&engine, rows, true) {
                            return fail(&error_line(&e));
                        }
                    }
                    backend::Backend::Local(engine)
                }
            };
            let format = a.get_one::<String>("format").map(String::as_str).unwrap_or("table");
            let timing = a.get_flag("timing");
            let script = match (a.get_one::<String>("command"), a.get_one::<String>("file")) {
                (Some(c), None) => Some(c.clone()),
                (None, Some(f)) => match std::fs::read_to_string(f) {
                    Ok(s) => Some(s),
                    Err(e) => return fail(&format!("{f}: {e}")),
                },
                (Some(_), Some(_)) => return fail("give either -c or -f, not both"),
                (None, None) => None,
            };
            let code = match script {
                Some(s) => one_shot(&mut backend, &s, format, timing),
                None => repl::run(&mut backend, format),
            };
            if let (Some(d), backend::Backend::Local(engine)) = (&durable, &backend) {
                if d.durable().due() {
                    durable::close(d, engine.catalog());
                }
            }
            code
        }
        _ => fail("unknown command"),
    }
}

fn one_shot(backend: &mut backend::Backend, sql: &str, format: &str, timing: bool) -> ExitCode {
    let t0 = std::time::Instant::now();
    match backend.execute(sql) {
        Ok(r) => {
            let elapsed = t0.elapsed();
            print!("{}", output::render(&r, format, elapsed));
            if timing {
                eprintln!("Time: {:.3} ms", elapsed.as_secs_f64() * 1e3);
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e.line()),
    }
}

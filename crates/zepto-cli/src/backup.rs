//! `zeptodb backup DEST` and `zeptodb restore SRC --data-dir DIR` (docs/operations.md,
//! "Back up and restore"): a backup is the `BACKUP TO` statement, run on a server (`--url`)
//! while it serves, or on a data directory no server holds; a restore lays a backup out as a
//! new data directory (`zepto_durable::backup`).

use clap::{Arg, ArgMatches, Command};
use std::path::Path;
use std::process::ExitCode;

/// `zeptodb backup`.
pub fn backup_command() -> Command {
    Command::new("backup")
        .about("Back a durable database up into a directory, online: a consistent snapshot while writes go on")
        .arg(
            Arg::new("dest")
                .required(true)
                .value_name("DEST")
                .help("The backup directory (a later backup there copies only new history files)"),
        )
        .arg(
            Arg::new("url")
                .long("url")
                .value_name("URL")
                .help("The server to back up (http://host:port; key from $ZEPTO_API_KEY, an admin's)"),
        )
        .arg(Arg::new("data-dir").long("data-dir").value_name("DIR").help("Or: a data directory no server holds"))
}

/// `zeptodb restore`.
pub fn restore_command() -> Command {
    Command::new("restore")
        .about("Lay a backup out as a new data directory (then: zeptodb serve --data-dir DIR)")
        .arg(Arg::new("src").required(true).value_name("SRC").help("The backup directory"))
        .arg(
            Arg::new("data-dir")
                .long("data-dir")
                .value_name("DIR")
                .required(true)
                .help("The new data directory (missing or empty)"),
        )
}

/// The statement that backs up into `dest`.
fn statement(dest: &str) -> String {
    format!("BACKUP TO '{}'", dest.replace('\'', "''"))
}

pub fn run_backup(a: &ArgMatches) -> ExitCode {
    let Some(dest) = a.get_one::<String>("dest") else { return crate::fail("a backup directory is required") };
    let sql = statement(dest);
    let result = match (a.get_one::<String>("url"), a.get_one::<String>("data-dir")) {
        (Some(url), None) => crate::remote::Remote::new(url)
            .and_then(|mut r| r.execute(&sql).map_err(|e| format!("error [{}]: {}", e.code, e.message))),
        (None, Some(dir)) => {
            let engine = zepto_sql::Engine::new();
            let _dir = match crate::durable::open(&engine, dir, zepto_durable::DirOptions::default()) {
                Ok(d) => d,
                Err(e) => return crate::fail(&e),
            };
            let files = match zepto_sql::FilePolicy::new(None, &[Path::new(dir)]) {
                Ok(f) => f,
                Err(e) => return crate::fail(&e),
            };
            engine.with_files(files).execute(&sql).map_err(|e| crate::error_line(&e))
        }
        _ => return crate::fail("give the server (--url) or the data directory (--data-dir) to back up"),
    };
    match result {
        Ok(r) => {
            println!("{}", r.status.as_deref().unwrap_or("backup done"));
            ExitCode::SUCCESS
        }
        Err(e) => crate::fail(&e),
    }
}

pub fn run_restore(a: &ArgMatches) -> ExitCode {
    let (Some(src), Some(dir)) = (a.get_one::<String>("src"), a.get_one::<String>("data-dir")) else {
        return crate::fail("restore needs the backup and --data-dir");
    };
    let restored = if zepto_durable::backup::is_object_store(src) {
        zepto_history::SharedStore::open(src)
            .map_err(|e| zepto_durable::DurableError::Io(e.to_string()))
            .and_then(|store| zepto_durable::backup::restore_from_store(&store, Path::new(dir)))
    } else {
        zepto_durable::backup::restore(Path::new(src), Path::new(dir))
    };
    match restored {
        Ok(s) => {
            println!("restored {dir} from {src}: {s}");
            ExitCode::SUCCESS
        }
        Err(e) => crate::fail(&format!("restore from {src}: {e}")),
    }
}

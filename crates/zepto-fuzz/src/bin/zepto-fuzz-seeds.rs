//! `zepto-fuzz-seeds DIR`: write every target's seeds as `DIR/<target>/seed<k>`, where
//! cargo-fuzz starts from them (`make fuzz`). Existing files are kept.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: zepto-fuzz-seeds DIR");
        std::process::exit(2);
    };
    for t in zepto_fuzz::TARGETS {
        let d = dir.join(t.name);
        std::fs::create_dir_all(&d)?;
        for (k, seed) in (t.seeds)().iter().enumerate() {
            std::fs::write(d.join(format!("seed{k}")), seed)?;
        }
    }
    Ok(())
}

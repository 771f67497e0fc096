//! Any bytes as a FIX stream: framed, parsed, its groups read and mapped to rows of an
//! in-memory catalog. Errors are fine, panics are bugs, and a refused message adds no row.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zepto_fix::map::Batch;
use zepto_fix::parse::parse;

fuzz_target!(|data: &[u8]| {
    let mut at = 0;
    let mut batch = Batch::default();
    while let Some(rest) = data.get(at..).filter(|r| !r.is_empty()) {
        let Ok(m) = parse(rest) else { break };
        at += m.len();
        let _ = m.fields().count();
        if let Ok(Some(g)) = m.group(268, 269, |t| t != 89) {
            let _: usize = g.flatten().map(|e| e.fields().count()).sum();
        }
        let before = batch.rows();
        match batch.add(&m) {
            Ok(n) => assert_eq!(batch.rows(), before + n),
            Err(_) => assert_eq!(batch.rows(), before),
        }
    }
    let _ = batch.apply(&zepto_storage::Catalog::new(), None);
});

//! Any bytes as a FIX stream: framed, parsed, its groups read and mapped to rows.

use zepto_fix::map::Batch;
use zepto_fix::parse::parse;

/// Frame and map every message in `data`; a refused message adds no row.
pub fn run(data: &[u8]) {
    let mut at = 0;
    let mut batch = Batch::default();
    while let Some(rest) = data.get(at..).filter(|r| !r.is_empty()) {
        let Ok(m) = parse(rest) else { break };
        assert!(!m.is_empty(), "a parsed message is never empty");
        at += m.len();
        let _ = m.fields().count();
        if let Ok(Some(g)) = m.group(268, 269, |t| t != 89) {
            let _: usize = g.flatten().map(|e| e.fields().count()).sum();
        }
        let before = batch.rows();
        match batch.add(&m) {
            Ok(n) => assert_eq!(batch.rows(), before + n),
            Err(_) => assert_eq!(batch.rows(), before, "a refused message added rows"),
        }
    }
    let _ = batch.apply(&zepto_storage::Catalog::new(), None);
}

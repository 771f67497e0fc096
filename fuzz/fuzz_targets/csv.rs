//! Any bytes as CSV into a table schema: errors are fine, panics are bugs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zepto_io::csv::{read_csv, CsvOptions};
use zepto_storage::{ColumnDef, DataType};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let schema: Vec<ColumnDef> = [
            ("ts", DataType::Timestamp),
            ("sym", DataType::Symbol),
            ("px", DataType::Float64),
            ("n", DataType::Int64),
            ("s", DataType::Varchar),
            ("b", DataType::Bool),
        ]
        .iter()
        .map(|(n, t)| ColumnDef { name: n.to_string(), data_type: *t })
        .collect();
        for header in [true, false] {
            let _ = read_csv(text, &schema, &CsvOptions { header, delimiter: b',' });
        }
    }
});

//! libFuzzer entry for the `table_file` target (see `zepto_fuzz::targets`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zepto_fuzz::targets::run("table_file", data));

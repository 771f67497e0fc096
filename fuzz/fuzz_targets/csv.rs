//! libFuzzer entry for the `csv` target (see `zepto_fuzz::targets`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zepto_fuzz::targets::run("csv", data));

//! libFuzzer entry for the `http` target (see `zepto_fuzz::targets`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zepto_fuzz::targets::run("http", data));

//! libFuzzer entry for the `changes` target (see `zepto_fuzz::targets`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zepto_fuzz::targets::run("changes", data));

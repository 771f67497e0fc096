//! libFuzzer entry for the `pgcopy` target (see `zepto_fuzz::targets`).
#![no_main]

libfuzzer_sys::fuzz_target!(
    // libfuzzer-sys aborts on every panic, even one a target catches on purpose (the Arrow
    // reader's, turned into errors): back to the default hook, so only a panic that escapes
    // the target reaches libfuzzer-sys's own catch and counts as a crash.
    init: drop(std::panic::take_hook()),
    |data: &[u8]| zepto_fuzz::targets::run("pgcopy", data)
);

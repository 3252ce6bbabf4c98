#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| toolhost_fuzz::primitives::host_names(data));

#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| toolhost_fuzz::fronts::token_file(data));

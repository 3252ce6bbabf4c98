#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| toolhost_fuzz::fronts::mcp_server_lines(data));

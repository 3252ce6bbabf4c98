//! A larger stack than wasm-ld's 1 MiB default: the JavaScript engine
//! recurses as the script does, and a script's deep recursion should meet
//! the engine's own limit (a RangeError it can catch) before the stack ends.
fn main() {
    println!("cargo:rustc-link-arg-cdylib=-zstack-size=8388608");
}

//! Links the `toolhost` executable so that a process touches fewer of its
//! pages, on x86-64 Linux with glibc where rustc links with LLD (Rust 1.90
//! on):
//!
//! - the functions that run when toolhost starts and serves calls come first,
//!   together (`link-order.txt`, written by `link-order.py`): the kernel maps
//!   code 64 KiB around each page touched, and spread over 28 MB of text that
//!   cost 20 MiB of resident code in a long-running server, 9 MiB together;
//! - relative relocations are packed (`-z pack-relative-relocs`, glibc 2.36
//!   on): 1.7 MB of relocation records the loader reads at every start become
//!   25 KB.
//!
//! Neither changes what the program does. `TOOLHOST_PLAIN_LINK=1` turns both
//! off; so does any linker choice in the rustflags.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link-order.txt");
    println!("cargo:rerun-if-env-changed=TOOLHOST_PLAIN_LINK");
    if std::env::var_os("TOOLHOST_PLAIN_LINK").is_some_and(|v| v != "0") || !links_with_lld() {
        return;
    }
    let order = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("link-order.txt");
    println!("cargo:rustc-link-arg-bin=toolhost=-Wl,--symbol-ordering-file={}", order.display());
    // Names the build no longer has (a stale list) are skipped quietly.
    println!("cargo:rustc-link-arg-bin=toolhost=-Wl,--no-warn-symbol-ordering");
    if glibc_at_least(2, 36) {
        println!("cargo:rustc-link-arg-bin=toolhost=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether rustc links this build with LLD: its default for
/// x86_64-unknown-linux-gnu since Rust 1.90, unless the rustflags choose.
fn links_with_lld() -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("TARGET") != "x86_64-unknown-linux-gnu" {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if ["linker", "link-self-contained", "fuse-ld"].iter().any(|chosen| flags.contains(chosen)) {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc).arg("--version").output().map(|o| o.stdout).unwrap_or_default();
    // "rustc 1.95.0 (…)"
    let minor = String::from_utf8_lossy(&version)
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1).and_then(|m| m.parse::<u32>().ok()));
    minor.is_some_and(|m| m >= 90)
}

/// Whether the C library the executable will load is glibc of at least
/// `major.minor` (the build machine's: a native build).
fn glibc_at_least(major: u32, minor: u32) -> bool {
    if std::env::var("HOST").ok() != std::env::var("TARGET").ok() {
        return false;
    }
    let out = Command::new("getconf").arg("GNU_LIBC_VERSION").output().map(|o| o.stdout).unwrap_or_default();
    // "glibc 2.36"
    let text = String::from_utf8_lossy(&out);
    let mut parts = text.split_whitespace().nth(1).unwrap_or("").split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (have_major, have_minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (have_major, have_minor) >= (major, minor)
}

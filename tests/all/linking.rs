//! How the `toolhost` executable is linked (host/cli/build.rs): the
//! functions that run at start and per call first, in the order of
//! host/cli/link-order.txt, and relative relocations packed. Both only
//! change how many of the executable's pages a process touches; these tests
//! keep them from lapsing silently. A stale list (a dependency or the
//! compiler changed the names since it was written) costs memory, not
//! correctness: it is reported, never a failure, and the list is written
//! again on its own schedule (host/cli/link-order.py).

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use std::collections::HashMap;

/// The targets build.rs orders the link on.
const ORDERED_TARGET: bool = cfg!(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"));

fn plain_link() -> bool {
    std::env::var_os("TOOLHOST_PLAIN_LINK").is_some_and(|v| v != "0")
}

/// The executable's bytes.
fn executable() -> Vec<u8> {
    std::fs::read(env!("CARGO_BIN_EXE_toolhost")).expect("the toolhost executable")
}

/// The `rustc version …` that built the executable (its `.comment`).
fn compiler_of(file: &object::File) -> String {
    let comment = file.section_by_name(".comment").and_then(|s| s.data().ok()).unwrap_or_default();
    comment
        .split(|&b| b == 0)
        .map(String::from_utf8_lossy)
        .find_map(|s| s.strip_prefix("rustc version ").map(str::to_string))
        .unwrap_or_default()
}

#[test]
fn the_functions_of_the_link_order_come_first_in_the_executable() {
    if !ORDERED_TARGET || plain_link() {
        eprintln!("not linked in order on this target (or TOOLHOST_PLAIN_LINK is set)");
        return;
    }
    let list = std::fs::read_to_string(toolhost_tests::repo_root().join("host/cli/link-order.txt")).unwrap();
    // Sections, each for one way of building (`cargo build --release`,
    // `cargo test --release`): a `# rustc VERSION: section NAME, …` line,
    // then names.
    let mut sections: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in list.lines().filter(|l| !l.is_empty()) {
        match line.strip_prefix("# rustc ") {
            Some(header) => sections.push((header, Vec::new())),
            None => sections.last_mut().expect("link-order.txt starts with a `# rustc` line").1.push(line),
        }
    }
    assert!(sections.iter().all(|(_, names)| names.len() > 1000), "a section of link-order.txt is nearly empty");

    let bytes = executable();
    let file = object::File::parse(&*bytes).expect("an ELF executable");
    let text: HashMap<&str, (u64, u64)> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
        .filter_map(|s| Some((s.name().ok()?, (s.address(), s.size()))))
        .collect();
    let found: Vec<(u64, u64)> =
        sections.iter().flat_map(|(_, names)| names).filter_map(|n| text.get(n).copied()).collect();

    // The names carry hashes of the compiler and of each crate's resolved
    // features: one section is this build's, whole, when its compiler wrote it.
    let built_with = compiler_of(&file);
    let ours = sections.iter().filter(|(header, _)| built_with.starts_with(header.split(':').next().unwrap()));
    let best = ours.map(|(_, names)| (names.iter().filter(|n| text.contains_key(*n)).count(), names.len())).max();
    match best {
        Some((present, listed)) if present * 10 < listed * 9 => eprintln!(
            "note: at best {present} of the {listed} functions of a section of host/cli/link-order.txt are in \
             this executable: its dependencies or their features changed since the list was written, and the \
             executable holds more pages of code than it would; write it again (needs valgrind): `cargo test \
             --release --no-run && python3 host/cli/link-order.py --section test` and `cargo build --release -p \
             toolhost-cli && python3 host/cli/link-order.py --section release`"
        ),
        Some(_) => {}
        None => eprintln!(
            "link-order.txt was written by another compiler than this build's ({built_with}): not checking its names"
        ),
    }
    if found.is_empty() {
        return;
    }
    // Together at the start of the code: what they span is about what they
    // weigh (lld puts them first, in the list's order).
    let start = text.values().map(|&(address, _)| address).min().unwrap();
    let end = found.iter().map(|&(address, size)| address + size).max().unwrap();
    let weight: u64 = found.iter().map(|&(_, size)| size).sum();
    assert!(
        end - start <= weight + weight / 8 + (64 << 10),
        "the {} listed functions ({weight} bytes) are spread over {} bytes of code: the link order was not applied",
        found.len(),
        end - start
    );
}

#[test]
fn relative_relocations_are_packed_where_glibc_reads_them_packed() {
    if !ORDERED_TARGET || plain_link() {
        eprintln!("not linked with packed relocations on this target (or TOOLHOST_PLAIN_LINK is set)");
        return;
    }
    let glibc = std::process::Command::new("getconf").arg("GNU_LIBC_VERSION").output().expect("getconf");
    let glibc = String::from_utf8_lossy(&glibc.stdout).trim().to_string();
    let minor: u32 = glibc.rsplit('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
    let bytes = executable();
    let file = object::File::parse(&*bytes).expect("an ELF executable");
    let packed = file.section_by_name(".relr.dyn").is_some();
    let unpacked = file.section_by_name(".rela.dyn").map_or(0, |s| s.size());
    if glibc.starts_with("glibc 2.") && minor >= 36 {
        assert!(packed, "{glibc} reads packed relocations, yet the executable has none");
        assert!(unpacked < 256 << 10, "{unpacked} bytes of unpacked relocations are left");
    } else {
        assert!(!packed, "{glibc} cannot load packed relocations");
    }
}

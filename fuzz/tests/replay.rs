//! Every fuzz target's checker, in `cargo test`: on each input of its saved
//! corpus (which keeps every input that ever broke it), then on inputs
//! mutated from that corpus by a fixed seed, so a run is the same run
//! every time. A failing input is written under `target/fuzz-failures/`
//! and named in the failure, for `fuzz/run` or a debugger.

use std::panic::{AssertUnwindSafe, catch_unwind};
use toolhost_fuzz::{TARGETS, Target, corpus_dir};

/// xorshift64*: a fixed sequence from a fixed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn corpus(target: &Target) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir(target.name);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the corpus of `{}` ({}): {e}", target.name, dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).expect("a corpus file")))
        .collect()
}

/// An input made from the corpus: one entry, changed in one to four ways
/// (bytes flipped, inserted, removed, repeated, or spliced from another).
fn mutate(rng: &mut Rng, corpus: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut data = corpus[rng.below(corpus.len())].1.clone();
    for _ in 0..=rng.below(4) {
        let len = data.len();
        match rng.below(6) {
            0 if len > 0 => {
                let at = rng.below(len);
                data[at] ^= 1 << rng.below(8);
            }
            1 => {
                let at = rng.below(len + 1);
                data.insert(at, *b"\0\x7f\xff{}()[]<>\"'\\$|&;\n *-:/.,".get(rng.below(24)).unwrap_or(&b'x'));
            }
            2 if len > 0 => {
                let at = rng.below(len);
                let n = rng.below(len - at + 1).min(16);
                data.drain(at..at + n);
            }
            3 if len > 0 => {
                let at = rng.below(len);
                let n = rng.below(len - at).min(64) + 1;
                let piece = data[at..at + n].to_vec();
                let to = rng.below(len + 1);
                data.splice(to..to, piece);
            }
            4 => {
                let other = &corpus[rng.below(corpus.len())].1;
                let at = rng.below(len + 1);
                let from = rng.below(other.len() + 1);
                data.splice(at..at, other[from..].iter().copied().take(256));
            }
            _ => data.push(rng.next() as u8),
        }
    }
    data
}

fn check(target: &Target, what: &str, data: &[u8]) {
    if catch_unwind(AssertUnwindSafe(|| (target.check)(data))).is_err() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/fuzz-failures");
        let _ = std::fs::create_dir_all(&dir);
        let file = dir.join(format!("{}-{}", target.name, what.replace('/', "_")));
        let _ = std::fs::write(&file, data);
        panic!(
            "`{}` failed on {what} (saved as {}; `fuzz/run {} --input {}` replays it): {:?}",
            target.name,
            file.display(),
            target.name,
            file.display(),
            String::from_utf8_lossy(&data[..data.len().min(400)])
        );
    }
}

fn replay(name: &str) {
    let target = TARGETS.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no target `{name}`"));
    let corpus = corpus(target);
    assert!(!corpus.is_empty(), "`{name}` has no saved corpus in {}", corpus_dir(name).display());
    for (file, data) in &corpus {
        check(target, &format!("corpus/{file}"), data);
    }
    let mut rng =
        Rng(0x7001_4057_0000_0000 ^ name.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64)));
    for i in 0..target.seeded {
        let data = mutate(&mut rng, &corpus);
        check(target, &format!("seeded-{i}"), &data);
    }
    eprintln!("{name}: {} corpus inputs and {} seeded ones", corpus.len(), target.seeded);
}

macro_rules! targets {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { replay(stringify!($name)); })*

        #[test]
        fn every_target_is_replayed() {
            let replayed = [$(stringify!($name)),*];
            for t in TARGETS {
                assert!(replayed.contains(&t.name), "`{}` has no replay test", t.name);
            }
        }
    };
}

targets!(
    shell,
    rules,
    decide,
    settings,
    hooks,
    component,
    hosts,
    schema,
    run_input,
    repair,
    mcp_stdio,
    mcp_sessionless,
    mcp_http,
    mcp_tool,
    mcp_server_lines,
    signatures,
    sigstore,
    session_paths,
    token_file,
    notebook_json,
    read_notebook,
    read_pdf,
    webfetch_html,
    script_code,
    guest_info,
    guest_output,
    guest_decision,
    plain_values,
    wassette_policy,
    package_docs,
    command,
    paths,
    host_names,
);

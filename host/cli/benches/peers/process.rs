//! Part `process` of the peers benchmark: whole `toolhost call` processes
//! against the native tools doing the same work.

use super::*;

/// One side of a comparison: a command, run whole (spawn to exit), and the
/// check of its output.
pub(super) struct Contender<'a> {
    pub(super) label: String,
    pub(super) command: Command,
    pub(super) check: Box<dyn Fn(&Output) + 'a>,
}

impl<'a> Contender<'a> {
    pub(super) fn new(label: impl Into<String>, command: Command, check: impl Fn(&Output) + 'a) -> Self {
        Contender { label: label.into(), command, check: Box::new(check) }
    }

    /// One run, checked; its wall time in microseconds.
    pub(super) fn run(&mut self) -> f64 {
        let started = Instant::now();
        let out = self.command.output().unwrap_or_else(|e| panic!("{}: {e}", self.label));
        let micros = started.elapsed().as_secs_f64() * 1e6;
        (self.check)(&out);
        micros
    }
}

/// Runs each contender once untimed, then `n` timed runs of each, taking
/// turns (A, B, A, B, …).
pub(super) fn alternately(n: usize, contenders: &mut [Contender]) -> Vec<Stats> {
    for c in contenders.iter_mut() {
        c.run();
    }
    let mut samples = vec![Vec::with_capacity(n); contenders.len()];
    for _ in 0..n {
        for (c, s) in contenders.iter_mut().zip(&mut samples) {
            s.push(c.run());
        }
    }
    samples.into_iter().map(common::stats).collect()
}

/// "p50 ms (p10–p90)".
pub(super) fn ms(s: &Stats) -> String {
    format!("{:.1} ms ({:.1}–{:.1})", s.p50 / 1e3, s.p10 / 1e3, s.p90 / 1e3)
}

pub(super) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Checks that a run succeeded, showing its output if not.
pub(super) fn succeeded(label: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{label}: {}\n{}\n{}",
        out.status,
        stdout(out).chars().take(2000).collect::<String>(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The patterns of the Grep comparison: a literal, an alternation with a
/// class, an alternation with word boundaries.
pub(super) const PATTERNS: [(&str, &str); 3] = [
    ("literal", "connection_timeout"),
    ("alternation + class", "(error|fatal)s? [a-z]+"),
    ("word-bounded alternation", r"\b(error|warning|fatal)\b"),
];

pub(super) fn process() {
    println!("| whole process, p50 (p10–p90) | toolhost | baseline | ratio of p50s | target | measured in |");
    println!("|---|---|---|---|---|---|");
    grep();
    read();
    bash();
}

/// The sum of `rg --count`'s per-file counts (`path:count` lines).
pub(super) fn rg_total(out: &Output) -> u64 {
    stdout(out).lines().map(|l| l.rsplit_once(':').and_then(|(_, n)| n.parse::<u64>().ok()).expect("path:count")).sum()
}

/// The total of Grep's count mode, from its closing line ("Found N total
/// occurrences across M files."). A result too long for the model was saved
/// to the file its `<persisted-output>` preview names: that file is read,
/// then removed with the session's directories it leaves empty.
pub(super) fn grep_total(out: &Output) -> u64 {
    let mut text = stdout(out);
    let saved = text.lines().find_map(|l| l.split_once("Full output saved to: ")).map(|(_, p)| PathBuf::from(p.trim()));
    if let Some(path) = saved {
        text = std::fs::read_to_string(&path).expect("the saved result");
        let _ = std::fs::remove_file(&path);
        for dir in path.ancestors().skip(1).take(2) {
            let _ = std::fs::remove_dir(dir);
        }
    }
    text.lines()
        .find_map(|l| l.strip_prefix("Found ").and_then(|rest| rest.split(' ').next()).and_then(|n| n.parse().ok()))
        .unwrap_or_else(|| panic!("no total in Grep's output: {}", text.chars().take(2000).collect::<String>()))
}

pub(super) fn grep() {
    let tree = bench_dir("grep-tree");
    eprintln!("the Grep tree (written on first use)...");
    common::generate_tree(&tree);
    let Some(rg) = common::ripgrep() else {
        println!("| Grep | | rg not available | | | |");
        return;
    };
    let (mut log_j1, mut log_rg) = (0.0, 0.0);
    for (label, pattern) in PATTERNS {
        eprintln!("Grep `{pattern}`...");
        let rg_count = |threads: Option<&str>| {
            let mut cmd = Command::new(&rg);
            cmd.args(threads).args(["--count", pattern]).arg(&tree);
            cmd
        };
        let expected = {
            let out = rg_count(None).output().expect("rg");
            succeeded("rg", &out);
            rg_total(&out)
        };
        let mut call = toolhost(&tree);
        call.args(["call", "Grep"])
            .arg(json!({"pattern": pattern, "output_mode": "count", "head_limit": 0}).to_string());
        let mut contenders = [
            Contender::new("toolhost call Grep", call, |out| {
                succeeded("toolhost call Grep", out);
                assert_eq!(grep_total(out), expected, "toolhost's total against rg's for {pattern}");
            }),
            Contender::new("rg -j1 --count", rg_count(Some("-j1")), |out| {
                succeeded("rg -j1", out);
                assert_eq!(rg_total(out), expected);
            }),
            Contender::new("rg --count", rg_count(None), |out| {
                succeeded("rg", out);
                assert_eq!(rg_total(out), expected);
            }),
        ];
        let machine = common::Machine::now();
        let [t, j1, all] = &alternately(10, &mut contenders)[..] else { unreachable!() };
        log_j1 += (t.p50 / j1.p50).ln();
        log_rg += (t.p50 / all.p50).ln();
        println!(
            "| Grep `{}` ({label}; {expected} matching lines in both), 5,000 files / 50 MB | {} | `rg -j1 --count` {} | {} | | {} |",
            cell(pattern),
            ms(t),
            ms(j1),
            times(t.p50 / j1.p50),
            machine.describe()
        );
        println!("| | | `rg --count` {} | {} | | the same run |", ms(all), times(t.p50 / all.p50));
    }
    let n = PATTERNS.len() as f64;
    let (j1, all) = ((log_j1 / n).exp(), (log_rg / n).exp());
    println!(
        "| Grep, geometric mean of the ratios | | | {} `rg -j1`, {} `rg` | ≤ 1.5× `rg -j1` {}, ≤ 1.5× `rg` {} | the runs above |",
        times(j1),
        times(all),
        tick(j1 <= 1.5),
        tick(all <= 1.5)
    );
}

pub(super) fn read() {
    let ws = bench_dir("read-ws");
    let file = common::ten_megabyte_file(&ws);
    let text = std::fs::read_to_string(&file).expect("10 MB file");
    // The last 1,000 lines: Read scans the whole file to reach them.
    let lines = text.lines().count();
    let (first, last) = (lines - 999, lines);
    let last_line = text.lines().next_back().expect("a last line").to_string();
    drop(text);
    let size = std::fs::metadata(&file).expect("10 MB file").len();
    eprintln!("Read, lines {first}–{last} of {}, and all of it...", file.display());
    let mut call = toolhost(&ws);
    call.args(["call", "Read"]).arg(json!({"file_path": file, "offset": first, "limit": 1000}).to_string());
    // All lines: a range selecting more than Read's range cap (3.2 MB) is
    // refused, as Claude Code 2.1.328 refuses it, once the text counted
    // passes the cap: no longer the same work as `cat -n` (until 2.1.328's
    // rule came in, Read took in the whole file and answered with the token
    // cap's error).
    let mut whole = toolhost(&ws);
    whole.args(["call", "Read"]).arg(json!({"file_path": file, "offset": 1, "limit": lines}).to_string());
    // The refusal's text, before any hint Read appends to it.
    let over = toolhost_plugin_read::range_too_large("");
    assert!(size > toolhost_plugin_read::text::MAX_SELECTED_BYTES, "the file is over the range cap");
    let mut cat_sed = Command::new("sh");
    cat_sed.arg("-c").arg(format!("cat -n '{}' | sed -n '{first},{last}p'", file.display()));
    let mut cat = Command::new("cat");
    cat.arg("-n").arg(&file).stdout(std::process::Stdio::null());
    // Both print the window numbered; only the number's padding differs.
    let window = |label: &str, out: &Output| {
        succeeded(label, out);
        let text = stdout(out);
        let printed: Vec<&str> = text.lines().collect();
        assert_eq!(printed.len(), 1000, "{label}");
        assert!(printed[0].trim_start().starts_with(&format!("{first}\t")), "{label}: {}", printed[0]);
        assert_eq!(printed[999].trim_start(), format!("{last}\t{last_line}"), "{label}");
    };
    let mut contenders = [
        Contender::new("toolhost call Read", call, |out| window("toolhost call Read", out)),
        Contender::new("toolhost call Read, all lines", whole, |out| {
            assert!(stdout(out).starts_with(&over), "{}", stdout(out));
        }),
        Contender::new("cat -n | sed -n", cat_sed, |out| window("cat -n | sed -n", out)),
        Contender::new("cat -n > /dev/null", cat, |out| succeeded("cat -n > /dev/null", out)),
    ];
    let machine = common::Machine::now();
    let [t, all, sed, cat] = &alternately(15, &mut contenders)[..] else { unreachable!() };
    println!(
        "| Read, the last 1,000 of {lines} lines of a 10 MB file | {} | `{}` {} | {} | ≤ 1.5× {} | {} |",
        ms(t),
        cell(&format!("cat -n FILE | sed -n '{first},{last}p'")),
        ms(sed),
        times(t.p50 / sed.p50),
        tick(t.p50 <= 1.5 * sed.p50),
        machine.describe()
    );
    println!(
        "| | | `cat -n FILE > /dev/null` {} | {} | ≤ 1.2× {} | the same run |",
        ms(cat),
        times(t.p50 / cat.p50),
        tick(t.p50 <= 1.2 * cat.p50)
    );
    println!(
        "| Read, all {lines} lines of a 10 MB file (refused at the range cap, 3.2 MB, once counted past it: \
         not `cat -n`'s work) | {} | `cat -n FILE > /dev/null` {} | {} | | the same run |",
        ms(all),
        ms(cat),
        times(all.p50 / cat.p50),
    );
}

pub(super) fn bash() {
    eprintln!("Bash `true`...");
    let mut call = toolhost(&bench_dir("peers-bash-ws"));
    call.args(["call", "Bash"]).arg(json!({"command": "true"}).to_string());
    let mut native = Command::new("bash");
    native.args(["-c", "true"]);
    let mut contenders = [
        Contender::new("toolhost call Bash", call, |out| {
            succeeded("toolhost call Bash", out);
            assert_eq!(stdout(out).trim_end(), "(Bash completed with no output)");
        }),
        Contender::new("bash -c true", native, |out| succeeded("bash -c true", out)),
    ];
    let machine = common::Machine::now();
    let [t, b] = &alternately(200, &mut contenders)[..] else { unreachable!() };
    println!(
        "| `Bash {{\"command\": \"true\"}}` (the whole `toolhost call` process, start-up included) | {} | `bash -c true` {} | {} | ≤ 1.3× {} | {} |",
        ms(t),
        ms(b),
        times(t.p50 / b.p50),
        tick(t.p50 <= 1.3 * b.p50),
        machine.describe()
    );
}

use super::*;
use std::sync::Arc;

fn query(root: &Path, pattern: &str, mode: Mode) -> Query {
    Query {
        pattern: pattern.into(),
        root: root.to_path_buf(),
        cwd: root.to_path_buf(),
        mode,
        case_insensitive: false,
        multiline: false,
        line_numbers: true,
        before: 0,
        after: 0,
        globs: Vec::new(),
        file_type: None,
        max_columns: Some(500),
        enough_lines: None,
    }
}

fn options(threads: usize, confinement: Confinement) -> Options<'static> {
    Options {
        threads,
        max_output: 1 << 30,
        max_buffer: 1 << 20,
        confinement,
        skip: Arc::new(|_, _| false),
        stop: &|| false,
    }
}

/// 300 files over 3 directories, some with matches near each other (context).
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for d in 0..3 {
        std::fs::create_dir(dir.path().join(format!("d{d}"))).unwrap();
        for f in 0..100 {
            let mut text = String::new();
            for l in 0..40 {
                let hit = (d * 7 + f * 3 + l) % 11 == 0;
                text.push_str(&format!("line {l} {}\n", if hit { "needle here" } else { "hay" }));
            }
            std::fs::write(dir.path().join(format!("d{d}/f{f:03}.txt")), text).unwrap();
        }
    }
    std::fs::write(dir.path().join(".gitignore"), "d2/f05*\n").unwrap();
    dir
}

#[test]
fn files_come_in_the_order_of_their_whole_paths() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    // A directory `a` beside files whose names start with `a`: its files
    // come after `a.txt` and `a-b` (`.`, `-` < `/`) and before `a0`.
    for name in ["a/z.txt", "a.txt", "a-b", "a0", "ab/c", "b", "a/b/c", "A"] {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "x\n").unwrap();
    }
    let out = run(&query(&root, "x", Mode::FilesWithMatches), &options(3, Confinement::Ambient)).unwrap();
    let paths: Vec<String> = String::from_utf8(out).unwrap().lines().map(str::to_owned).collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted, "walk order is path order");
    assert_eq!(paths.len(), 8);
}

#[test]
fn every_thread_count_prints_what_one_thread_prints() {
    let dir = tree();
    let root = dir.path().canonicalize().unwrap();
    for mode in [Mode::Content, Mode::Count, Mode::FilesWithMatches] {
        let mut q = query(&root, "needle", mode);
        q.before = 1;
        q.after = 2;
        let one = run(&q, &options(1, Confinement::Ambient)).unwrap();
        assert!(!one.is_empty());
        for threads in [2, 3, 8] {
            assert_eq!(run(&q, &options(threads, Confinement::Ambient)).unwrap(), one, "{mode:?}, {threads}");
        }
    }
    let q = query(&root, "needle", Mode::FilesWithMatches);
    let listed = String::from_utf8(run(&q, &options(4, Confinement::Ambient)).unwrap()).unwrap();
    assert!(!listed.contains("d2/f05"), "the .gitignore holds");
    let paths: Vec<&str> = listed.lines().collect();
    let mut sorted = paths.clone();
    sorted.sort_unstable();
    assert_eq!(paths, sorted, "walk order");
}

#[test]
fn context_groups_of_different_files_are_separated() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a"), "x\nneedle\ny\n").unwrap();
    std::fs::write(dir.path().join("b"), "needle\n").unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mut q = query(&root, "needle", Mode::Content);
    q.after = 1;
    let out = String::from_utf8(run(&q, &options(2, Confinement::Ambient)).unwrap()).unwrap();
    let (a, b) = (root.join("a").display().to_string(), root.join("b").display().to_string());
    assert_eq!(out, format!("{a}:2:needle\n{a}-3-y\n--\n{b}:1:needle\n"));
}

#[test]
fn stops_after_the_file_that_printed_enough() {
    let dir = tree();
    let root = dir.path().canonicalize().unwrap();
    let whole = run(&query(&root, "needle", Mode::Content), &options(1, Confinement::Ambient)).unwrap();
    let mut q = query(&root, "needle", Mode::Content);
    q.enough_lines = Some(25);
    for threads in [1, 2, 4] {
        let page = run(&q, &options(threads, Confinement::Ambient)).unwrap();
        let lines = count_lines(&page);
        assert!(lines > 25 && lines < 25 + 10, "{lines}");
        assert!(whole.starts_with(&page), "a prefix of the whole output");
    }
}

#[test]
fn bad_arguments_are_invalid_and_limits_hold() {
    let dir = tree();
    let root = dir.path().canonicalize().unwrap();
    let bad = |q: Query| run(&q, &options(2, Confinement::Ambient)).unwrap_err();
    // What ripgrep 14.1.1 prints after `rg: ` for each (checked against
    // the binary Claude Code ships), the file type first, then the globs,
    // then the pattern, as it checks them.
    let invalid = |why: &str| Error::Invalid(why.to_string());
    assert_eq!(
        bad(query(&root, "(", Mode::Count)),
        invalid("regex parse error:\n    (?:()\n    ^\nerror: unclosed group")
    );
    assert_eq!(
        bad(query(&root, "a{2", Mode::Content)),
        invalid("regex parse error:\n    (?:a{2)\n        ^^\nerror: unclosed counted repetition")
    );
    assert_eq!(
        bad(query(&root, r"(?i)\w{1000}{100}", Mode::Count)),
        invalid("compiled regex exceeds size limit of 104857600")
    );
    let mut q = query(&root, "(", Mode::Count);
    q.globs = vec!["{a".into()];
    assert_eq!(
        bad(q.clone()),
        invalid("error parsing glob '{a': unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)")
    );
    q.file_type = Some("nosuch".into());
    assert_eq!(bad(q), invalid("unrecognized file type: nosuch"));
    let mut small = options(2, Confinement::Ambient);
    small.max_output = 100;
    assert!(matches!(run(&query(&root, "line", Mode::Content), &small), Err(Error::TooLarge(_))));
    let stopped = Options { stop: &|| true, ..options(2, Confinement::Ambient) };
    assert_eq!(run(&query(&root, "line", Mode::Content), &stopped), Err(Error::Interrupted));
}

#[test]
fn a_file_needing_more_than_the_buffer_limit_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    // One 2 MiB line, over the tests' 1 MiB limit, and a small file.
    std::fs::write(root.join("a-long.txt"), format!("needle{}\n", "x".repeat(2 << 20))).unwrap();
    std::fs::write(root.join("b-short.txt"), "needle\n").unwrap();
    for multiline in [false, true] {
        let mut q = query(&root, "needle", Mode::FilesWithMatches);
        q.multiline = multiline;
        let out = String::from_utf8(run(&q, &options(2, Confinement::Ambient)).unwrap()).unwrap();
        assert_eq!(out, format!("{}\n", root.join("b-short.txt").display()), "multiline: {multiline}");
    }
}

#[test]
fn skipped_paths_are_neither_listed_nor_entered() {
    let dir = tree();
    let root = dir.path().canonicalize().unwrap();
    let d1 = root.join("d1");
    let skip: Skip = Arc::new(move |p, is_dir| is_dir && p == d1);
    let opts = Options { skip, ..options(2, Confinement::Ambient) };
    let out = String::from_utf8(run(&query(&root, "needle", Mode::FilesWithMatches), &opts).unwrap()).unwrap();
    assert!(out.contains("/d0/") && out.contains("/d2/") && !out.contains("/d1/"), "{out}");
}

/// The shape the binding generators give the contract's `search`
/// interface, standing in for their modules.
mod wit {
    pub struct Query {
        pub pattern: String,
        pub root: String,
        pub cwd: String,
        pub mode: SearchMode,
        pub case_insensitive: bool,
        pub multiline: bool,
        pub line_numbers: bool,
        pub before: u32,
        pub after: u32,
        pub globs: Vec<String>,
        pub file_type: Option<String>,
        pub max_columns: Option<u32>,
        pub enough_lines: Option<u64>,
    }

    pub enum SearchMode {
        Content,
        Count,
        FilesWithMatches,
    }

    #[derive(Debug, PartialEq)]
    pub enum SearchError {
        Invalid(String),
        TooLarge(u64),
        Interrupted,
    }
}

crate::contract_mapping!(wit);

#[test]
fn the_contract_maps_field_for_field() {
    let given = |mode| wit::Query {
        pattern: "p".into(),
        root: "/r".into(),
        cwd: "/c".into(),
        mode,
        case_insensitive: true,
        multiline: false,
        line_numbers: true,
        before: 1,
        after: 2,
        globs: vec!["*.rs".into()],
        file_type: Some("rust".into()),
        max_columns: Some(500),
        enough_lines: Some(7),
    };
    let mapped = query_from_contract(given(wit::SearchMode::Count));
    let mut want = query(Path::new("/r"), "p", Mode::Count);
    want.cwd = PathBuf::from("/c");
    want.case_insensitive = true;
    want.after = 2;
    want.before = 1;
    want.globs = vec!["*.rs".into()];
    want.file_type = Some("rust".into());
    want.enough_lines = Some(7);
    assert_eq!(format!("{mapped:?}"), format!("{want:?}"));
    let mode = |m| query_from_contract(given(m)).mode;
    assert_eq!(mode(wit::SearchMode::Content), Mode::Content);
    assert_eq!(mode(wit::SearchMode::FilesWithMatches), Mode::FilesWithMatches);
    assert_eq!(error_to_contract(Error::Invalid("why".into())), wit::SearchError::Invalid("why".into()));
    assert_eq!(error_to_contract(Error::TooLarge(9)), wit::SearchError::TooLarge(9));
    assert_eq!(error_to_contract(Error::Interrupted), wit::SearchError::Interrupted);
}

#[test]
fn confined_search_reads_nothing_outside_its_directories() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "needle outside\n").unwrap();
    let inside = tempfile::tempdir().unwrap();
    let root = inside.path().canonicalize().unwrap();
    std::fs::write(root.join("mine.txt"), "needle inside\n").unwrap();
    // A symlink to a file outside, named directly as the root: the walk
    // does not follow links, but a named file is opened, and must fail.
    let link = root.join("link.txt");
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), &link).unwrap();
    let within = || Confinement::Within(vec![root.clone()]);
    let q = query(&root, "needle", Mode::Content);
    let out = String::from_utf8(run(&q, &options(2, within())).unwrap()).unwrap();
    assert!(out.contains("needle inside") && !out.contains("outside"), "{out}");
    let mut q = query(&link, "needle", Mode::Content);
    q.cwd = root.clone();
    assert_eq!(run(&q, &options(2, within())).unwrap(), b"");
    // Ambient, the same named link is followed, as rg follows it.
    assert!(!run(&q, &options(2, Confinement::Ambient)).unwrap().is_empty());
}

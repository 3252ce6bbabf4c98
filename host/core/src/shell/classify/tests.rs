use super::*;

/// (command, read-only?)
const TABLE: &[(&str, bool)] = &[
    // Plain read-only commands.
    ("ls", true),
    ("ls -la /tmp", true),
    ("cat README.md", true),
    ("head -n 20 src/main.rs", true),
    ("tail -f log.txt", true),
    ("wc -l *.rs", true),
    ("grep -rn TODO src", true),
    ("rg -n 'fn main' --type rust", true),
    ("find . -name '*.rs' -type f", true),
    ("find . -newer Cargo.toml -print", true),
    ("echo hi", true),
    ("printf '%s\\n' a b", true),
    ("pwd", true),
    ("true", true),
    ("false", true),
    ("sleep 1", true),
    ("date", true),
    ("date +%s", true),
    ("which cargo", true),
    ("stat Cargo.toml", true),
    ("file /bin/ls", true),
    ("du -sh target", true),
    ("df -h", true),
    ("sort names.txt", true),
    ("uniq -c names.txt", true),
    ("diff a.txt b.txt", true),
    ("jq .name package.json", true),
    ("sed -n '1,5p' file.txt", true),
    ("sed 's/a/b/g' file.txt", true),
    ("cd src && ls", true),
    ("/bin/ls -l", true),
    ("env", true),
    ("env LANG=C sort f", true),
    ("timeout 5 cat f", true),
    ("command -v git", true),
    ("[ -f Cargo.toml ]", true),
    ("test -d src", true),
    // git.
    ("git status", true),
    ("git log --oneline -5", true),
    ("git diff HEAD~1", true),
    ("git show HEAD:README.md", true),
    ("git branch", true),
    ("git branch --list", true),
    ("git branch -a", true),
    ("git -C sub status", true),
    ("git --no-pager log", true),
    ("git config --get user.name", true),
    ("git remote -v", true),
    ("git stash list", true),
    ("git tag", true),
    ("git rev-parse HEAD", true),
    ("git blame src/lib.rs", true),
    ("git branch new-feature", false),
    ("git branch -D old", false),
    ("git tag v1.0", false),
    ("git commit -m x", false),
    ("git push", false),
    ("git checkout main", false),
    ("git reset --hard", false),
    ("git -c core.pager=evil log", false),
    ("git config user.name x", false),
    ("git stash", false),
    ("git diff --output=patch.txt", false),
    // Pipelines and lists: every part must be read-only.
    ("ls | grep foo | wc -l", true),
    ("cat a && cat b || echo none", true),
    ("git status; git log -1", true),
    ("git status; rm x", false),
    ("ls && rm -rf /", false),
    ("echo hi | tee f", false),
    ("cat f | xargs rm", false),
    // Redirections.
    ("ls > out.txt", false),
    ("echo hi >> log", false),
    ("ls 2>&1", true),
    ("ls 2>/dev/null", true),
    ("ls &> all.txt", false),
    ("cat < input.txt", true),
    ("grep x <<< \"$VAR\"", true),
    ("cat <<EOF\nhello\nEOF", true),
    ("cat <<EOF > out.txt\nhello\nEOF", false),
    ("(ls; pwd) > out", false),
    // Substitutions, expansions, jobs.
    ("cat $(rm -rf x)", false),
    ("echo `whoami`", false),
    ("diff <(ls a) <(ls b)", false),
    ("cat \"$FILE\"", true),
    ("$CMD --help", false),
    ("sleep 100 &", false),
    // Environment prefixes.
    ("FOO=1 ls", true),
    ("LANG=C grep x f", true),
    ("LD_PRELOAD=/tmp/evil.so ls", false),
    ("PATH=/tmp ls", false),
    ("GIT_EXTERNAL_DIFF=evil git diff", false),
    // Writers and runners.
    ("find . -delete", false),
    ("find . -name x -exec rm {} \\;", false),
    ("find . -fprint out", false),
    ("sed -i 's/a/b/' f", false),
    ("sed -i.bak 's/a/b/' f", false),
    ("sed --in-place 's/a/b/' f", false),
    ("sed -e'1e touch pwned' README.md", false),
    ("sed --expression='1e touch pwned' f", false),
    ("sed -ne '1e touch pwned' f", false),
    ("sed -nf script.sed f", false),
    ("sed --file=script.sed f", false),
    ("sed -n -e '1,3p' f", true),
    ("sed -ne 's/a/b/p' f", true),
    ("git grep -O'touch pwned' -e x", false),
    ("git grep --open-files-in-pager=vim x", false),
    ("git --git-dir=evil --work-tree=. status", false),
    ("git -C ../other log", false),
    ("sort -S 16k --compress-program=sh f", false),
    ("sed 's/a/b/w out' f", false),
    ("sed -n 'w out' f", false),
    ("sort -o out.txt in.txt", false),
    ("uniq in.txt out.txt", false),
    ("rg --pre ./script x", false),
    ("rm -rf target", false),
    ("mv a b", false),
    ("cp a b", false),
    ("touch x", false),
    ("mkdir d", false),
    ("chmod +x f", false),
    ("curl https://example.com", false),
    ("python3 -c 'print(1)'", false),
    ("bash -c ls", false),
    ("sh script.sh", false),
    ("./configure", false),
    ("npm install", false),
    ("cargo build", false),
    ("awk '{print}' f", false),
    ("xargs ls", false),
    ("date -s '2020-01-01'", false),
    ("env rm x", false),
    ("timeout 5 rm x", false),
    ("exec ls", false),
    ("eval ls", false),
    ("export FOO=1", false),
    // Control flow over read-only commands.
    ("for f in *.rs; do cat \"$f\"; done", true),
    ("if [ -f x ]; then cat x; fi", true),
    ("while true; do rm x; done", false),
    ("f() { rm x; }; f", false),
    // Parse errors.
    ("echo 'unterminated", false),
    ("ls \"unterminated", false),
    ("ls &&", false),
    // Each read-only command's guards, both ways (cargo-mutants found
    // them untested).
    ("tree -L 2", true),
    ("tree -o out.txt", false),
    ("xxd f", true),
    ("xxd f out", false),
    ("hostname", true),
    ("hostname evil", false),
    ("uniq f", true),
    ("uniq f out", false),
    ("sort -r f", true),
    ("sort -o out f", false),
    ("sort -oout f", false),
    ("sort --output=out f", false),
    ("command -v ls", true),
    ("command ls", false),
    ("/usr/bin/ls -la", true),
    ("/bin/cat f", true),
    ("/usr/bin/x/ls", false),
    ("./ls", false),
    ("FOO=1 ls", true),
    ("LD_PRELOAD=/x.so ls", false),
    ("DYLD_INSERT_LIBRARIES=/x ls", false),
    ("BASH_ENV=/x ls", false),
    ("IFS=x ls", false),
    ("GIT_DIR=/x git status", false),
    ("env -u HOME ls", true),
    ("env --unset HOME ls", true),
    ("env -u HOME rm x", false),
    ("env -i ls", true),
    ("env -i rm x", false),
    ("env A=1 ls", true),
    ("env A=1 rm x", false),
    ("sed --in-place s/a/b/ f", false),
    ("sed -n 1p --expression 'w out' f", false),
    ("sed --quiet 's/a/b/w out' f", false),
    ("sed 's/a\\/b/c/w out' f", false),
    ("sed 's/a/b/e' f", false),
    ("sed 's/a/b/g' f", true),
    ("sed 's/w/e/' f", true),
    ("sed 's/a/bw/' f", true),
    ("sed --file s.sed f", false),
    ("git -c status log", false),
    ("git --namespace foo status", true),
    ("git --exec-path=/x status", false),
    ("git --config-env=a=B status", false),
    ("git reflog", true),
    ("git reflog show", true),
    ("git reflog delete", false),
    ("git worktree list", true),
    ("git worktree add x", false),
    ("git remote", true),
    ("git remote -v", true),
    ("git remote show origin", true),
    ("git remote add", false),
    ("git remote -v rm x", false),
    // Wrappers: each option form, with a reader and with a writer.
    ("timeout -s KILL 5 cat f", true),
    ("timeout -s KILL 5 rm f", false),
    ("timeout -sKILL 5 cat f", true),
    ("timeout --signal=KILL -k 1 5 cat f", true),
    ("timeout --kill-after 1 --preserve-status 5 cat f", true),
    ("timeout --kill-after 1 --preserve-status 5 rm f", false),
    ("timeout -- 5 cat f", true),
    ("timeout 5", true),
    ("nice cat f", true),
    ("nice -n 5 cat f", true),
    ("nice -n5 cat f", true),
    ("nice -n 5 rm f", false),
    ("nice", true),
    ("env -u X A=1 cat f", true),
    ("env -u X A=1 rm f", false),
    ("env -uX cat f", true),
    ("env --unset=X cat f", true),
    ("env -C dir cat f", true),
    ("env -C dir rm f", false),
    ("env - cat f", true),
    ("/usr/bin/env A=1 cat f", true),
    ("/tmp/env cat f", false),
    ("timeout 5 nice -n 5 env A=1 cat f", true),
    ("timeout 5 nice -n 5 env A=1 rm f", false),
    ("env PATH=/tmp cat f", false),
    ("nice env LD_PRELOAD=/x.so cat f", false),
    // What cannot be read for certain is not read-only: an unknown
    // option (`env -S` splits its value into the command), words from
    // expansions (which split into more words).
    ("env -S 'X=1 rm' cat", false),
    ("env -iu X cat f", false),
    ("nice --niceness 5 cat f", false),
    ("nice --adjustment 5 cat f", true),
    ("nice --adjustment 5 rm f", false),
    ("timeout -- -v 5 cat f", false),
    ("timeout $D cat f", false),
    ("nice -n $N cat f", false),
    ("env A=$X cat f", false),
    ("env $A=1 cat f", false),
    ("env $CMD f", false),
    // Wrappers that write, or change how or as whom a command runs.
    ("time -o out cat f", false),
    ("nohup cat f", false),
    ("stdbuf -oL cat f", false),
    ("sudo cat f", false),
    ("setsid cat f", false),
];

#[test]
fn classification_table() {
    assert!(TABLE.len() >= 80, "{} cases", TABLE.len());
    let mut wrong = Vec::new();
    for (command, expected) in TABLE {
        let c = classify(command);
        if c.read_only != *expected {
            wrong.push(format!("{command:?}: expected read_only={expected}, got {c:?}"));
        }
    }
    assert!(wrong.is_empty(), "{} wrong:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn very_long_commands_parse() {
    let long = vec!["cat README.md"; 2000].join(" && ");
    let c = classify(&long);
    assert!(c.read_only, "{c:?}");
    assert_eq!(parse(&long).commands.len(), 2000);
    let long_bad = format!("{long} && rm x");
    assert!(!classify(&long_bad).read_only);
}

/// Read-only commands that each hazard below is put into.
const READERS: &[&str] =
    &["ls -la", "cat README.md", "grep -rn TODO src", "git status", "echo hi", "find . -name x", "wc -l f", "head f"];

/// Ways a command writes, redirects output to a file or substitutes.
const HAZARDS: &[&str] = &[
    "rm -rf x",
    "touch new",
    "tee out.txt",
    "sed -i s/a/b/ f",
    "find . -delete",
    "git push",
    "cp a b",
    "mv a b",
    "dd of=x",
    "echo x > out.txt",
    "ls >> out.txt",
    "ls 2> err.txt",
    "ls &> all.txt",
    "ls >| out.txt",
    "cat <> f",
    "echo $(rm x)",
    "echo `rm x`",
    "cat <(rm x)",
    "ls > >(tee x)",
    "PATH=/tmp/evil ls",
    "LD_PRELOAD=/x.so cat f",
    "sleep 5 &",
    "bash -c 'rm x'",
    "xargs rm",
];

/// Every hazard in every place a reader can hold it: alone, before and
/// after each operator, in a subshell, a group, a condition, a loop,
/// a function, an argument through substitution. None is read-only,
/// while each reader alone is (so the test tells the verdicts apart).
#[test]
fn nothing_that_writes_redirects_or_substitutes_is_read_only() {
    let mut wrong = Vec::new();
    for reader in READERS {
        assert!(classify(reader).read_only, "{reader:?} should be read-only");
        for hazard in HAZARDS {
            let places = [
                hazard.to_string(),
                format!("{reader} && {hazard}"),
                format!("{hazard} && {reader}"),
                format!("{reader} || {hazard}"),
                format!("{reader}; {hazard}"),
                format!("{reader} | {hazard}"),
                format!("{hazard} | {reader}"),
                format!("({reader}; {hazard})"),
                format!("{{ {reader}; {hazard}; }}"),
                format!("if {reader}; then {hazard}; fi"),
                format!("if {hazard}; then {reader}; fi"),
                format!("while {reader}; do {hazard}; done"),
                format!("for i in a b; do {hazard}; done"),
                format!("f() {{ {hazard}; }}; {reader}"),
                format!("{reader} \"$({hazard})\""),
                format!("{reader} $({reader}; {hazard})"),
                format!("! {hazard}"),
                format!("{reader} &&\n{hazard}"),
            ];
            for command in places {
                let c = classify(&command);
                if c.read_only {
                    wrong.push(command);
                }
            }
        }
    }
    assert!(wrong.is_empty(), "read-only, yet each writes, redirects or substitutes:\n{}", wrong.join("\n"));
}

#[test]
fn assignments_that_change_what_runs() {
    for a in ["PATH=/tmp", "LD_PRELOAD=x", "DYLD_LIBRARY_PATH=x", "BASH_ENV=x", "GIT_SSH=x", "PAGER+=x", "IFS[0]=x"] {
        assert!(assignment_changes_what_runs(a), "{a}");
    }
    for a in ["FOO=1", "LANG=C", "MY_PATH=x", "XLD_=1"] {
        assert!(!assignment_changes_what_runs(a), "{a}");
    }
    assert!(changes_loading("LD_AUDIT") && changes_loading("DYLD_X") && changes_loading("PS4"));
    assert!(!changes_loading("PATH") && !changes_loading("HOME"));
}

#[test]
fn reasons_say_why() {
    assert_eq!(classify("ls > out.txt").reason.unwrap(), "it writes to `out.txt` through a redirection");
    assert_eq!(classify("rm x").reason.unwrap(), "`rm` is not a known read-only command");
    assert!(classify("ls").reason.is_none());
}

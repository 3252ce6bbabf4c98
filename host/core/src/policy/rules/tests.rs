use super::*;
use std::sync::Arc;

/// Rule texts from every combination of a tool name, spacing and up to
/// three pieces of content (parentheses, escapes, globs, prefixes,
/// domains, paths): whatever parses prints as a text that parses back to
/// the same rule, and printing again changes nothing.
#[test]
fn every_rule_prints_back_to_itself() {
    const TOOLS: &[&str] = &["Bash", "Read", "mcp__srv__tool", "mcp__srv", "a.b-c_d", "", "Bad Tool", "T(x)"];
    const PIECES: &[&str] = &[
        "",
        "*",
        ":*",
        "(",
        ")",
        "\\",
        "\\(",
        " ",
        "a b",
        "**/x",
        "domain:x.com",
        "~/",
        "//abs",
        "./r",
        "npm run",
        "\"q\"",
    ];
    let mut parsed = 0;
    for tool in TOOLS {
        for a in PIECES {
            for b in PIECES {
                for c in PIECES {
                    let content = format!("{a}{b}{c}");
                    for text in
                        [format!("{tool}({content})"), format!(" {tool} ( {content} ) "), format!("{tool}{content}")]
                    {
                        let Ok(rule) = Rule::parse(&text) else { continue };
                        parsed += 1;
                        let printed = rule.to_string();
                        assert_eq!(Rule::parse(&printed).as_ref(), Ok(&rule), "{text:?} printed as {printed:?}");
                        assert_eq!(Rule::parse(&printed).unwrap().to_string(), printed, "{text:?}");
                    }
                }
            }
        }
    }
    assert!(parsed > 10_000, "{parsed} texts parsed");
}
use crate::registry::PathField;
use serde_json::json;

fn entries(list: &[(Behavior, &str)]) -> Vec<RuleEntry> {
    list.iter()
        .map(|&(behavior, text)| RuleEntry {
            rule: Rule::parse(text).unwrap(),
            behavior,
            origin: Arc::from("test"),
            base: Some(PathBuf::from("/etc/toolhost")),
        })
        .collect()
}

fn places() -> Places {
    Places { cwd: "/work/p".into(), working: vec!["/work/p".into()], home: Some("/home/u".into()) }
}

/// What the test tools declare: the built-ins' declarations, a fetcher
/// with a URL, a third-party tool moving files from one path to another,
/// and tools that declare nothing.
fn roles(tool: &str) -> InputRoles {
    let paths = |fields: &[(&str, PathAccess)]| InputRoles {
        paths: fields.iter().map(|&(f, access)| PathField { field: f.into(), access }).collect(),
        ..InputRoles::default()
    };
    match tool {
        "Bash" | "Shell" => InputRoles { command: Some("command".into()), ..InputRoles::default() },
        "Read" => paths(&[("file_path", PathAccess::Read)]),
        "Write" | "Edit" => paths(&[("file_path", PathAccess::Edit)]),
        "Glob" | "Grep" => paths(&[("path", PathAccess::Search)]),
        "Mover" => paths(&[("/from/path", PathAccess::Read), ("to", PathAccess::Edit)]),
        "WebFetch" => InputRoles { addresses: vec!["url".into(), "hosts".into()], ..InputRoles::default() },
        _ => InputRoles::default(),
    }
}

fn catalog() -> Catalog {
    ["Bash", "Shell", "Read", "Write", "Edit", "Glob", "Grep", "Mover", "WebFetch", "Other", "Third"]
        .into_iter()
        .map(|t| (t.to_string(), ContentKind::of(&roles(t))))
        .collect()
}

#[test]
fn a_rule_naming_an_alias_applies_to_the_tool() {
    let mut catalog = Catalog::default();
    catalog.add("TaskStop", &["KillShell".to_string()], ContentKind::Opaque);
    catalog.add("Other", &["TaskStop".to_string()], ContentKind::Opaque);
    let s = RuleSet::compile(entries(&[(Behavior::Deny, "KillShell")]), places(), &catalog).unwrap();
    assert!(s.denies_tool("TaskStop").is_some());
    assert!(s.denies_tool("KillShell").is_none());
    let s = RuleSet::compile(entries(&[(Behavior::Deny, "TaskStop")]), places(), &catalog).unwrap();
    assert!(s.denies_tool("Other").is_none(), "a name taken by a tool is never another's alias");
}

fn set(list: &[(Behavior, &str)]) -> RuleSet {
    RuleSet::compile(entries(list), places(), &catalog()).unwrap()
}

/// Which list decides, by strength, and the rule's text.
fn strongest(set: &RuleSet, tool: &str, input: Value) -> Option<String> {
    let roles = roles(tool);
    let parsed = roles.command_in(&input).map(shell::parse);
    let v = set.check(&Subject::of(tool, &roles, &input, parsed.as_ref()));
    v.deny.or(v.ask).or(v.allow).map(|e| format!("{} {}", e.behavior.as_str(), e.rule))
}

#[test]
fn rules_parse_and_print() {
    for (text, tool, content) in [
        ("Bash", "Bash", None),
        ("Bash()", "Bash", None),
        ("Bash(*)", "Bash", None),
        ("Bash(npm run test:*)", "Bash", Some("npm run test:*")),
        (" Read( ./src/** ) ", "Read", Some("./src/**")),
        ("mcp__github__create_pr", "mcp__github__create_pr", None),
        ("Bash(echo (x))", "Bash", Some("echo (x)")),
    ] {
        let rule = Rule::parse(text).unwrap();
        assert_eq!((rule.tool.as_str(), rule.content.as_deref()), (tool, content), "{text}");
    }
    assert_eq!(Rule::parse("Bash(ls -la)").unwrap().to_string(), "Bash(ls -la)");
    for bad in ["", "(ls)", "Bash(ls", "Ba sh", "Bash(ls) x"] {
        assert!(Rule::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_server_rule_covers_every_tool_of_that_server_only() {
    use Behavior::*;
    let s = set(&[(Deny, "mcp__fs"), (Allow, "mcp__git__*"), (Ask, "mcp__git__push")]);
    assert_eq!(strongest(&s, "mcp__fs__read_file", json!({})).as_deref(), Some("deny mcp__fs"));
    assert_eq!(strongest(&s, "mcp__fsx__read_file", json!({})), None, "another server");
    assert_eq!(strongest(&s, "mcp__git__status", json!({})).as_deref(), Some("allow mcp__git__*"));
    assert_eq!(strongest(&s, "mcp__git__push", json!({})).as_deref(), Some("ask mcp__git__push"));
    assert!(s.denies_tool("mcp__fs__write_file").is_some() && s.denies_tool("mcp__git__push").is_none());
    assert!(s.denies_tool("mcp__fs").is_some(), "the rule names itself");
    assert!(Rule::parse("mcp__fs__*").is_ok());
}

#[test]
fn wildcard_tool_names_deny_and_ask_anywhere_and_allow_within_a_server() {
    use Behavior::*;
    for (text, behavior, ok) in [
        ("mcp__github__get_*", Allow, true),
        ("mcp__github__*", Allow, true),
        ("mcp__git*", Allow, false),
        ("mcp__*", Allow, false),
        ("mcp__*__x", Allow, false),
        ("Bash*", Allow, false),
        ("*", Allow, false),
        ("Web*", Deny, true),
        ("*", Ask, true),
        ("mcp__*", Deny, true),
    ] {
        assert_eq!(Rule::parse_in(text, behavior).is_ok(), ok, "{text} in {behavior:?}");
    }
    assert!(Rule::parse("Bash*(ls)").is_err(), "a pattern takes no content");
    let s = set(&[(Deny, "Web*"), (Ask, "mcp__*__push"), (Allow, "mcp__github__get_*")]);
    assert_eq!(strongest(&s, "WebFetch", json!({})).as_deref(), Some("deny Web*"));
    assert!(s.denies_tool("WebSearch").is_some() && s.denies_tool("Read").is_none());
    assert_eq!(strongest(&s, "mcp__git__push", json!({})).as_deref(), Some("ask mcp__*__push"));
    assert_eq!(strongest(&s, "mcp__github__get_issue", json!({})).as_deref(), Some("allow mcp__github__get_*"));
    assert_eq!(strongest(&s, "mcp__github__create_issue", json!({})), None);
    for (pattern, name, matches) in [
        ("*", "", true),
        ("a*", "a", true),
        ("a*b*c", "aXbYc", true),
        ("a*b*c", "acb", false),
        ("ab*ba", "aba", false),
        ("*x*", "yyxyy", true),
        ("Read", "Read", true),
        ("Read", "ReadX", false),
    ] {
        assert_eq!(tool_pattern_matches(pattern, name), matches, "{pattern} ~ {name}");
    }
}

#[test]
fn malformed_contents_are_errors() {
    for bad in ["Bash(:*)", "Read([)"] {
        let e = RuleSet::compile(entries(&[(Behavior::Allow, bad)]), places(), &catalog()).unwrap_err();
        assert!(e.to_string().contains(bad), "{e}");
    }
}

#[test]
fn bash_prefix_and_exact_rules() {
    use Behavior::*;
    let s = set(&[(Allow, "Bash(npm run test:*)"), (Allow, "Bash(git push origin main)"), (Deny, "Bash(rm:*)")]);
    let cmd = |c: &str| strongest(&s, "Bash", json!({"command": c}));
    assert_eq!(cmd("npm run test").as_deref(), Some("allow Bash(npm run test:*)"));
    assert_eq!(cmd("npm run test -- --watch").as_deref(), Some("allow Bash(npm run test:*)"));
    assert_eq!(cmd("npm   run 'test' x").as_deref(), Some("allow Bash(npm run test:*)"));
    assert_eq!(cmd("npm run testing"), None);
    assert_eq!(cmd("npm run test && rm -rf /").as_deref(), Some("deny Bash(rm:*)"));
    assert_eq!(cmd("npm run test && curl x"), None, "every part needs a rule");
    assert_eq!(cmd("npm run test && ls").as_deref(), Some("allow Bash(npm run test:*)"), "read-only parts need none");
    assert_eq!(cmd("npm run test $(curl x)"), None, "substitution");
    assert_eq!(cmd("git push origin main").as_deref(), Some("allow Bash(git push origin main)"));
    assert_eq!(cmd("git push origin main --force"), None, "exact");
    assert_eq!(cmd("git status"), None, "read-only: the mode decides, not a rule");
    assert_eq!(cmd("timeout 5 rm x").as_deref(), Some("deny Bash(rm:*)"));
    assert_eq!(cmd("FOO=1 env X=2 rm x").as_deref(), Some("deny Bash(rm:*)"));
    assert_eq!(cmd("find . | xargs rm").as_deref(), Some("deny Bash(rm:*)"));
    assert_eq!(cmd("setsid -f rm x").as_deref(), Some("deny Bash(rm:*)"));
    assert_eq!(cmd("echo $(rm x)").as_deref(), Some("deny Bash(rm:*)"));
    assert_eq!(cmd("/bin/rm x").as_deref(), Some("deny Bash(rm:*)"));
    assert_eq!(cmd("\\rm x").as_deref(), Some("deny Bash(rm:*)"));
    assert_eq!(cmd("bash -c 'ls; rm x'").as_deref(), Some("deny Bash(rm:*)"));
    assert_eq!(cmd("sh -ec \"bash -c 'rm -rf x'\"").as_deref(), Some("deny Bash(rm:*)"));
    assert_eq!(cmd("eval rm x").as_deref(), Some("deny Bash(rm:*)"));
    assert_eq!(cmd("find . -name '*.o' -exec rm {} +").as_deref(), Some("deny Bash(rm:*)"));
    assert_eq!(cmd("f() { rm x; }; f").as_deref(), Some("deny Bash(rm:*)"));
    assert_eq!(cmd("/tmp/npm run test"), None, "a path is not the program an allow rule names");
    assert_eq!(cmd("$'rm' -rf x").as_deref(), Some("deny Bash(rm:*)"));
    let git = set(&[(Allow, "Bash(git:*)"), (Ask, "Bash(git push:*)")]);
    let g = |c: &str| strongest(&git, "Bash", json!({"command": c}));
    assert_eq!(g("git -C . push --force").as_deref(), Some("ask Bash(git push:*)"), "options between the words");
    assert_eq!(g("git --no-pager push").as_deref(), Some("ask Bash(git push:*)"));
    assert_eq!(g("git commit -m push").as_deref(), Some("allow Bash(git:*)"), "a word that is no option stops it");
    assert_eq!(cmd("PATH=/tmp npm run test"), None, "an assignment that changes what runs");
    assert_eq!(cmd("npm run test > out.log").as_deref(), Some("allow Bash(npm run test:*)"));
    assert_eq!(cmd("npm run test > /etc/x"), None, "writes outside the working directories");
    assert_eq!(cmd("npm run test > ../x"), None);
}

#[test]
fn commands_the_rules_cannot_check_are_unclear() {
    use Behavior::*;
    let limited = set(&[(Deny, "Bash(rm:*)")]);
    let open = set(&[(Allow, "Bash(npm run:*)")]);
    for (command, unclear) in [
        ("ls -la", false),
        ("bash -c 'ls && echo ok'", false),
        ("$x -rf y", true),
        ("echo rm x | sh", true),
        ("bash deploy.sh", true),
        ("source env.sh", true),
        ("bash -c \"$CMD\"", true),
        ("ls (", true),
        ("sh -c 'sh -c \"$X\"'", true),
        // Wrappers: an option toolhost does not know may take the next
        // word; an expanded word before the command may split.
        ("sudo -u root ls", false),
        ("sudo -X rm f", true),
        ("timeout $D rm f", true),
        ("nice -n $N rm f", true),
        ("env -S 'rm f' ls", true),
        ("timeout -s KILL 5 ls", false),
        ("find . $ARGS", true),
        ("find . -name '*.rs'", false),
    ] {
        let input = json!({"command": command});
        let parsed = shell::parse(command);
        let (bash, shell) = (roles("Bash"), roles("Shell"));
        let subject = Subject::of("Bash", &bash, &input, Some(&parsed));
        assert_eq!(limited.check(&subject).unclear.is_some(), unclear, "{command}");
        assert!(open.check(&subject).unclear.is_none(), "no deny or ask rule to check: {command}");
        let other_tool = Subject::of("Shell", &shell, &input, Some(&parsed));
        assert!(limited.check(&other_tool).unclear.is_none(), "Bash rules limit Bash only: {command}");
    }
}

#[test]
fn path_rules_are_gitignore_style() {
    use Behavior::*;
    let s = set(&[
        (Allow, "Edit(./src/**)"),
        (Deny, "Read(*.env)"),
        (Deny, "Edit(~/.ssh/**)"),
        (Ask, "Read(//etc/secrets)"),
        (Deny, "Write(/policy.json)"),
        (Deny, "Read(build/)"),
    ]);
    let call = |tool: &str, path: &str| {
        let field = if matches!(tool, "Glob" | "Grep") { "path" } else { "file_path" };
        strongest(&s, tool, json!({ field: path }))
    };
    assert_eq!(call("Edit", "/work/p/src/a/b.rs").as_deref(), Some("allow Edit(./src/**)"));
    assert_eq!(call("Write", "src/new.rs").as_deref(), Some("allow Edit(./src/**)"), "relative to cwd");
    assert_eq!(call("Edit", "/work/p/src/../secret.rs"), None, "`..` is resolved");
    assert_eq!(call("Read", "/work/p/.env").as_deref(), Some("deny Read(*.env)"));
    assert_eq!(call("Read", "/work/p/deep/x/prod.env").as_deref(), Some("deny Read(*.env)"));
    assert_eq!(call("Grep", "/work/p/prod.env").as_deref(), Some("deny Read(*.env)"), "Read rules cover Grep");
    assert_eq!(call("Edit", "/work/p/.env"), None, "Read rules do not cover Edit");
    assert_eq!(call("Write", "/home/u/.ssh/config").as_deref(), Some("deny Edit(~/.ssh/**)"));
    assert_eq!(call("Read", "/etc/secrets/a/b").as_deref(), Some("ask Read(//etc/secrets)"), "inside a dir");
    assert_eq!(call("Write", "/etc/toolhost/policy.json").as_deref(), Some("deny Write(/policy.json)"));
    assert_eq!(call("Edit", "/etc/toolhost/policy.json"), None, "Write(…) covers Write only");
    assert_eq!(call("Read", "/work/p/build/out.o").as_deref(), Some("deny Read(build/)"));
    let up = set(&[(Deny, "Read(../shared/secrets/**)")]);
    assert_eq!(
        strongest(&up, "Read", json!({"file_path": "/work/shared/secrets/k"})).as_deref(),
        Some("deny Read(../shared/secrets/**)")
    );
}

#[test]
fn symlinks_are_checked_on_both_forms() {
    use Behavior::*;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::os::unix::fs::symlink(root.join("secret"), root.join("src/link")).unwrap();
    let places = Places { cwd: root.clone(), working: vec![root.clone()], home: None };
    let s = RuleSet::compile(entries(&[(Allow, "Edit(./src/**)"), (Deny, "Read(./secret/**)")]), places, &catalog())
        .unwrap();
    let link = root.join("src/link/key").to_string_lossy().into_owned();
    assert_eq!(strongest(&s, "Edit", json!({"file_path": link})), None, "allow must match the real path too");
    assert_eq!(
        strongest(&s, "Read", json!({"file_path": link})).as_deref(),
        Some("deny Read(./secret/**)"),
        "deny matches the real path"
    );
}

#[test]
fn hidden_paths_cover_every_form_of_a_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().canonicalize().unwrap().join("w");
    std::fs::create_dir(&real).unwrap();
    let link = dir.path().canonicalize().unwrap().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let places = Places { cwd: real.clone(), working: vec![real.clone(), link.clone()], home: None };
    let list = [(Behavior::Deny, "Read(./.env)"), (Behavior::Allow, "Read(./x)")];
    let s = RuleSet::compile(entries(&list), places, &catalog()).unwrap();
    let hidden = s.hidden_paths("Grep", &roles("Grep"));
    assert_eq!(hidden, [format!("{}/.env", real.display()), format!("{}/.env", link.display())]);
    assert!(s.hidden_paths("Edit", &roles("Edit")).is_empty(), "Read rules do not hide from Edit");
    assert_eq!(s.hidden_paths("Mover", &roles("Mover")).len(), 2, "a tool that reads a path gets them too");
    assert!(s.hidden_paths("Other", &roles("Other")).is_empty(), "a tool that declares no path reads none");
}

#[test]
fn domains_and_other_tools() {
    use Behavior::*;
    let s = set(&[
        (Allow, "WebFetch(domain:example.com)"),
        (Deny, "WebFetch(domain:*.evil.com)"),
        (Deny, "Plugin(whatever)"),
        (Allow, "Other(whatever)"),
        (Ask, "Third"),
    ]);
    let fetch = |u: &str| strongest(&s, "WebFetch", json!({"url": u}));
    assert_eq!(fetch("https://example.com/x").as_deref(), Some("allow WebFetch(domain:example.com)"));
    assert_eq!(fetch("https://EXAMPLE.com./x").as_deref(), Some("allow WebFetch(domain:example.com)"));
    assert_eq!(fetch("https://example.com@other.org/"), None, "the host, not the user info");
    assert_eq!(fetch("https://a.example.com/"), None);
    assert_eq!(fetch("https://a.evil.com/").as_deref(), Some("deny WebFetch(domain:*.evil.com)"));
    assert_eq!(strongest(&s, "Plugin", json!({})).as_deref(), Some("deny Plugin(whatever)"), "fails closed");
    assert_eq!(strongest(&s, "Other", json!({})), None, "an allow it cannot interpret allows nothing");
    assert_eq!(strongest(&s, "Third", json!({"a": 1})).as_deref(), Some("ask Third"));
    assert_eq!(s.warnings().len(), 2);
}

#[test]
fn suggestions_would_allow_the_call() {
    let p = places();
    for (tool, input, want) in [
        ("Bash", json!({"command": "npm run build -- --prod"}), vec!["Bash(npm run:*)"]),
        ("Bash", json!({"command": "rm -rf dist && mkdir dist"}), vec!["Bash(rm -rf dist)", "Bash(mkdir dist)"]),
        ("Bash", json!({"command": "echo $(whoami)"}), vec![]),
        ("Bash", json!({"command": "make all $(whoami)"}), vec![]),
        ("Bash", json!({"command": "make all <(ls)"}), vec![]),
        ("Bash", json!({"command": "make ("}), vec![]),
        ("Bash", json!({"command": "timeout 60 make -j4 all"}), vec!["Bash(make -j4 all)"]),
        ("Bash", json!({"command": "timeout 60 cargo build --release"}), vec!["Bash(cargo build:*)"]),
        ("Bash", json!({"command": "sudo apt install x"}), vec!["Bash(sudo apt install x)"]),
        ("Bash", json!({"command": "unshare bash -c x"}), vec!["Bash(unshare bash -c x)"]),
        ("Bash", json!({"command": "python3 -c 'import os' x"}), vec!["Bash(python3 -c 'import os' x)"]),
        ("Bash", json!({"command": "git '' status x"}), vec!["Bash(git '' status x)"]),
        ("Write", json!({"file_path": "/work/p/src/a.rs"}), vec!["Edit(./src/a.rs)"]),
        ("Glob", json!({"pattern": "*"}), vec!["Read(.)"]),
        ("Grep", json!({"pattern": "x", "path": "/work/p/src"}), vec!["Read(./src)"]),
        ("Edit", json!({"file_path": "/opt/x"}), vec!["Edit(//opt/x)"]),
        ("WebFetch", json!({"url": "https://docs.rs/x"}), vec!["WebFetch(domain:docs.rs)"]),
        (
            "WebFetch",
            json!({"hosts": ["a.org:8080", "b.net"]}),
            vec!["WebFetch(domain:a.org)", "WebFetch(domain:b.net)"],
        ),
        ("Shell", json!({"command": "make deploy"}), vec!["Shell(make deploy)"]),
        ("Mover", json!({"from": {"path": "a"}, "to": "/work/p/b"}), vec!["Read(./a)", "Edit(./b)"]),
        ("Thing", json!({}), vec!["Thing"]),
    ] {
        let roles = roles(tool);
        let parsed = roles.command_in(&input).map(shell::parse);
        let subject = Subject::of(tool, &roles, &input, parsed.as_ref());
        let got = suggest(&subject, &p);
        assert_eq!(got, want, "{input}");
        if !got.is_empty() {
            let allow: Vec<_> = got.iter().map(|r| (Behavior::Allow, r.as_str())).collect();
            let s = set(&allow);
            assert!(s.check(&subject).allow.is_some(), "{got:?} allows {input}");
        }
    }
}

#[test]
fn third_party_tools_get_rules_from_what_they_declare() {
    use Behavior::*;
    let s = set(&[
        (Allow, "Mover(./inbox/**)"),
        (Deny, "Edit(./locked/**)"),
        (Deny, "Read(./secret/**)"),
        (Deny, "Shell(rm:*)"),
        (Allow, "Shell(make:*)"),
    ]);
    let mover = |from: &str, to: &str| strongest(&s, "Mover", json!({"from": {"path": from}, "to": to}));
    assert_eq!(mover("inbox/a", "inbox/b").as_deref(), Some("allow Mover(./inbox/**)"), "both paths allowed");
    assert_eq!(mover("inbox/a", "outbox/b"), None, "an allow rule must cover every path");
    assert_eq!(mover("inbox/a", "locked/b").as_deref(), Some("deny Edit(./locked/**)"), "the path it edits");
    assert_eq!(mover("secret/k", "inbox/b").as_deref(), Some("deny Read(./secret/**)"), "the path it reads");
    assert_eq!(strongest(&s, "Edit", json!({"file_path": "inbox/a"})), None, "Mover's rule is Mover's");
    let shell = |c: &str| strongest(&s, "Shell", json!({"command": c}));
    assert_eq!(shell("make all && rm -rf /").as_deref(), Some("deny Shell(rm:*)"));
    assert_eq!(shell("make all").as_deref(), Some("allow Shell(make:*)"));
    assert_eq!(strongest(&s, "Bash", json!({"command": "rm x"})), None, "Shell's rules are not Bash's");
    let fetch = |hosts: Value| strongest(&set(&[(Allow, "WebFetch(domain:a.org)")]), "WebFetch", hosts);
    assert_eq!(fetch(json!({"hosts": ["a.org"]})).as_deref(), Some("allow WebFetch(domain:a.org)"), "a bare host");
    assert_eq!(fetch(json!({"hosts": ["a.org", "b.org"]})), None, "an allow rule must cover every address");
    // Content for a tool that declares nothing it could mean fails closed.
    let opaque = set(&[(Deny, "Other(x)")]);
    assert_eq!(strongest(&opaque, "Other", json!({})).as_deref(), Some("deny Other(x)"));
}

// The tests below pin behaviour that mutation testing (`cargo mutants`,
// docs/development.md, "Mutation testing") found no test of.

#[test]
fn a_subdomain_rule_needs_a_whole_label_before_the_domain() {
    use Behavior::*;
    let s = set(&[(Deny, "WebFetch(domain:*.evil.com)")]);
    let fetch = |u: &str| strongest(&s, "WebFetch", json!({"url": u}));
    assert!(fetch("https://a.evil.com/").is_some());
    assert!(fetch("https://a.b.evil.com/").is_some());
    for not_under in ["https://evil.com/", "https://xevil.com/", "https://a.xevil.com/", "https://vil.com/"] {
        assert_eq!(fetch(not_under), None, "{not_under}");
    }
    // A host that is the dot and the domain alone names no subdomain.
    assert!(!Domain::Under("evil.com".into()).matches(".evil.com"));
    assert!(Domain::Under("evil.com".into()).matches("a.evil.com"));
}

#[test]
fn domain_content_for_a_tool_not_loaded_is_read_as_domains() {
    use Behavior::*;
    // `Later` is not in the catalog (not loaded when the rules compiled).
    let s = set(&[(Deny, "Later(domain:evil.com)")]);
    let subject =
        |addresses: Vec<&'static str>| Subject { tool: "Later", paths: vec![], command: None, text: None, addresses };
    assert!(s.check(&subject(vec!["https://evil.com/x"])).deny.is_some());
    assert!(s.check(&subject(vec!["https://good.org/x"])).deny.is_none(), "a domain rule, not every call");
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
    // Other content it cannot read: the rule applies to every call.
    let s = set(&[(Deny, "Later(something)")]);
    assert!(s.check(&subject(vec!["https://good.org/x"])).deny.is_some());
}

#[test]
fn the_places_and_the_patterns_hidden_from_searches() {
    use Behavior::*;
    let s = set(&[(Deny, "Read(./.env)"), (Ask, "Read(//etc/secret/)"), (Allow, "Read(./x)"), (Deny, "Edit(./y)")]);
    assert_eq!(s.places().cwd, Path::new("/work/p"));
    assert_eq!(s.places().home.as_deref(), Some(Path::new("/home/u")));
    // A search through the host reads: the deny and ask rules on reads
    // are hidden from it, whatever tool asks; allow and edit rules are not.
    for tool in ["Grep", "Other"] {
        assert_eq!(s.hidden_from_searches(tool), ["/work/p/.env", "/etc/secret/"], "{tool}");
    }
}

#[test]
fn the_root_and_the_settings_directory_as_path_rules() {
    use Behavior::*;
    let hidden = |content: &str| set(&[(Deny, content)]).hidden_from_searches("Grep");
    assert_eq!(hidden("Read(//)"), ["/"], "the root");
    assert_eq!(hidden("Read(//../etc/x)"), ["/etc/x"], "nothing above the root");
    assert_eq!(hidden("Read(../../../../x)"), ["/x"]);
    assert_eq!(hidden("Read(./a/./b/../c)"), ["/work/p/a/c"]);
    let root = set(&[(Deny, "Read(//)")]);
    assert!(strongest(&root, "Read", json!({"file_path": "/etc/passwd"})).is_some(), "the root covers all");
    assert_eq!(hidden("Read(/)"), ["/etc/toolhost"], "the settings file's directory");
    assert_eq!(hidden("Read(//tmp/)"), ["/tmp/"], "a directory only");
    assert_eq!(hidden("Read(~)"), ["/home/u"]);
    let s = set(&[(Deny, "Read(/)")]);
    let read = |p: &str| strongest(&s, "Read", json!({"file_path": p}));
    assert_eq!(read("/etc/toolhost/settings.json").as_deref(), Some("deny Read(/)"));
    assert_eq!(read("/etc/other"), None);
}

/// A working directory on disk with a home beside it, and a rule set
/// over it.
fn on_disk(list: &[(Behavior, &str)]) -> (tempfile::TempDir, RuleSet) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (work, home) = (root.join("w"), root.join("h"));
    for d in [&work, &home] {
        std::fs::create_dir(d).unwrap();
    }
    for (file, inside) in [(".env", &work), ("secret", &home), ("x", &home), ("~x", &work)] {
        std::fs::write(inside.join(file), "k").unwrap();
    }
    let places = Places { cwd: work.clone(), working: vec![work], home: Some(home) };
    let set = RuleSet::compile(entries(list), places, &catalog()).unwrap();
    (dir, set)
}

#[test]
fn files_a_command_names_meet_the_read_rules() {
    use Behavior::*;
    let (_dir, s) = on_disk(&[(Deny, "Read(./.env)"), (Ask, "Read(~/secret)"), (Deny, "Read(~/x)")]);
    let cmd = |c: &str| strongest(&s, "Bash", json!({"command": c}));
    assert_eq!(cmd("cat .env").as_deref(), Some("deny Read(./.env)"));
    assert_eq!(cmd("wc -l < .env").as_deref(), Some("deny Read(./.env)"), "a `<` source");
    assert_eq!(cmd("grep --file=.env x").as_deref(), Some("deny Read(./.env)"), "`--opt=value`");
    assert_eq!(cmd("cat ~/secret").as_deref(), Some("ask Read(~/secret)"), "`~/` is home");
    assert_eq!(cmd("cat ~x"), None, "`~x` is another user's home, not `x` in ours");
    assert_eq!(cmd("cat missing.env"), None);
    // Only deny and ask rules on reads look into commands.
    let (_dir, s) = on_disk(&[(Deny, "Edit(./.env)"), (Allow, "Read(./.env)")]);
    assert_eq!(strongest(&s, "Bash", json!({"command": "cat .env"})), None);
}

#[test]
fn paths_outside_the_working_directories() {
    let s = set(&[]);
    let outside = |c: &str| s.path_outside(&shell::parse(c)).map(str::to_string);
    for (command, want) in [
        ("cat src/a.rs", None),
        ("cat /work/p/src/a.rs", None),
        ("cat /etc/passwd", Some("/etc/passwd")),
        ("cat ~/notes", Some("~/notes")),
        ("cat ../other/x", Some("../other/x")),
        ("ls ..", Some("..")),
        ("cat src/../../x", Some("src/../../x")),
        ("cat src/../a", None),
        ("cat < /etc/passwd", Some("/etc/passwd")),
        ("sort --output=/etc/x a", Some("--output=/etc/x")),
        ("echo a=/etc/x", None),
        ("ls -a/../../etc", None),
        ("cat /dev/null /dev/stdin", None),
        ("cat /dev/sda", Some("/dev/sda")),
        ("cat $HOME/x", Some("$HOME/x")),
        ("cat \"$D\"/x", Some("\"$D\"/x")),
        ("cat x$Y", None),
        ("cat x$Y/../../z", Some("x$Y/../../z")),
    ] {
        assert_eq!(outside(command).as_deref(), want, "{command}");
    }
}

#[test]
fn allow_rules_never_cover_what_runs_unseen() {
    use Behavior::*;
    let s = set(&[(Allow, "Bash(npm run:*)")]);
    let cmd = |c: &str| strongest(&s, "Bash", json!({"command": c}));
    assert_eq!(cmd("npm run test").as_deref(), Some("allow Bash(npm run:*)"));
    for unseen in ["npm run test $(ls)", "npm run test `ls`", "npm run test <(ls)", "npm run test ("] {
        assert_eq!(cmd(unseen), None, "{unseen}");
    }
}

#[test]
fn nested_shells_are_followed_four_deep() {
    use Behavior::*;
    let s = set(&[(Deny, "Bash(rm:*)")]);
    let check = |c: &str| {
        let parsed = shell::parse(c);
        let roles = roles("Bash");
        let input = json!({"command": c});
        let v = s.check(&Subject::of("Bash", &roles, &input, Some(&parsed)));
        (v.deny.is_some(), v.unclear)
    };
    assert_eq!(check("eval eval eval eval rm x"), (true, None));
    let (deny, unclear) = check("eval eval eval eval eval rm x");
    assert!(!deny, "not followed past four shells");
    assert_eq!(unclear.as_deref(), Some("The command nests shells too deeply to check."));
    // The script a shell is given, past its options.
    assert!(check("bash --norc -c 'rm x'").0);
    assert!(check("bash -e -c 'rm x'").0);
    assert!(check("sh -ec 'rm x'").0);
    // A script file with arguments: nothing the host can see.
    assert!(check("bash deploy.sh prod").1.is_some());
    // A script only known when it runs.
    let (_, unclear) = check("bash -c \"ls $X\"");
    assert_eq!(unclear.as_deref(), Some("`bash` runs a script only known when the command runs."));
}

#[test]
fn prefix_rules_look_past_options_and_their_values() {
    use Behavior::*;
    let s = set(&[(Allow, "Bash(git:*)"), (Ask, "Bash(git push:*)"), (Ask, "Bash(git remote add:*)")]);
    let g = |c: &str| strongest(&s, "Bash", json!({"command": c}));
    assert_eq!(g("git -C . remote add x y").as_deref(), Some("ask Bash(git remote add:*)"));
    assert_eq!(g("git -c user.name=x push").as_deref(), Some("ask Bash(git push:*)"), "an option's value");
    assert_eq!(g("git -x commit other push").as_deref(), Some("allow Bash(git:*)"), "two words are no option");
    assert_eq!(g("git -C ."), None, "no word after the option's value (and read-only)");
    assert_eq!(g("git --work-tree=x push").as_deref(), Some("ask Bash(git push:*)"));
}

#[test]
fn wrappers_are_looked_through() {
    use Behavior::*;
    let s = set(&[(Deny, "Bash(rm:*)"), (Allow, "Bash(make:*)")]);
    let cmd = |c: &str| strongest(&s, "Bash", json!({"command": c}));
    // Deny rules: through every wrapper.
    for wrapped in [
        "time rm x",
        "nohup rm x",
        "nice -n 5 rm x",
        "timeout -s KILL 5 rm x",
        "stdbuf -oL rm x",
        "env -u A X=1 rm x",
        "sudo -u root rm x",
        "doas rm x",
        "setsid rm x",
        "unshare -r rm x",
        "xargs -n 1 rm",
        "command rm x",
        "builtin rm x",
        "exec rm x",
        "find . -execdir rm {} +",
    ] {
        assert_eq!(cmd(wrapped).as_deref(), Some("deny Bash(rm:*)"), "{wrapped}");
    }
    // Allow rules: only through wrappers that time or prioritise.
    for allowed in ["make", "time make", "nohup make", "nice -n 5 make", "timeout 5 make"] {
        assert_eq!(cmd(allowed).as_deref(), Some("allow Bash(make:*)"), "{allowed}");
    }
    for not_allowed in [
        "stdbuf -oL make",
        "env X=1 make",
        "sudo make",
        "setsid make",
        "xargs make",
        "exec make",
        "command make",
        "find . -exec make {} +",
    ] {
        assert_eq!(cmd(not_allowed), None, "{not_allowed}");
    }
    // A wrapper with nothing after its options wraps nothing.
    for bare in ["time -p", "env X=1", "nice -n", "sudo -u"] {
        assert_eq!(cmd(bare), None, "{bare}");
    }
}

/// Each wrapper's options that take a value, separate or joined: the
/// rules reach the command after them.
#[test]
fn wrapper_options_with_values_are_skipped() {
    use Behavior::*;
    let deny = set(&[(Deny, "Bash(cat:*)")]);
    for wrapped in [
        "timeout -s KILL 5 cat f",
        "timeout -sKILL 5 cat f",
        "timeout --signal KILL --kill-after 1 5 cat f",
        "timeout --signal=KILL 5 cat f",
        "nice -n 5 cat f",
        "nice -n5 cat f",
        "env -u X A=1 cat f",
        "env --unset X --chdir d cat f",
        "env -C d A=1 B=2 cat f",
        "stdbuf -o L -e 0 cat f",
        "sudo -u root -g wheel cat f",
        "doas -C conf cat f",
        "xargs -I {} -n 1 -P 2 cat f",
        "timeout 5 nice -n 5 env -u X cat f",
        "sudo -p pw cat f",
        "sudo --prompt pw cat f",
        "sudo -T 5 cat f",
        "exec -a name cat f",
        "time -o out cat f",
        "nice --adjustment 5 cat f",
        "xargs --max-args 1 cat",
        "stdbuf --output L cat f",
    ] {
        assert_eq!(
            strongest(&deny, "Bash", json!({"command": wrapped})).as_deref(),
            Some("deny Bash(cat:*)"),
            "{wrapped}"
        );
        // Read with certainty: not asked as unclear.
        let (bash, parsed) = (roles("Bash"), shell::parse(wrapped));
        let input = json!({"command": wrapped});
        let unclear = deny.check(&Subject::of("Bash", &bash, &input, Some(&parsed))).unclear;
        assert!(unclear.is_none(), "{wrapped}: {unclear:?}");
    }
    let allow = set(&[(Allow, "Bash(make:*)")]);
    let allowed = |c: &str| strongest(&allow, "Bash", json!({"command": c}));
    for timed in ["timeout -s KILL 5 make", "timeout --signal=KILL -k 1 5 make", "nice -n 5 make", "time -p make"] {
        assert_eq!(allowed(timed).as_deref(), Some("allow Bash(make:*)"), "{timed}");
    }
    assert_eq!(allowed("env -u X A=1 make"), None, "allow rules do not look through `env`");
}

/// Content that is not one plain command is read as Claude Code reads
/// it: text, matched against the whole command as written (exact) or
/// one simple command at a time (its words joined by spaces).
#[test]
fn a_command_rule_that_is_not_one_plain_command_is_text() {
    use Behavior::*;
    let s = set(&[(Allow, "Bash(echo (x))"), (Allow, "Bash(make \\(all\\):*)"), (Deny, "Bash(rm x > y)")]);
    let cmd = |c: &str| strongest(&s, "Bash", json!({"command": c}));
    assert_eq!(cmd("echo (x)").as_deref(), Some("allow Bash(echo (x))"), "the command as approved");
    assert_eq!(cmd("  echo (x) ").as_deref(), Some("allow Bash(echo (x))"), "white space around it");
    for not_it in ["echo (x); rm -rf /", "echo (x) && rm -rf /", "echo (y)", "echo \\(x\\)", "echo '(x)'"] {
        assert_eq!(cmd(not_it), None, "{not_it}");
    }
    // A prefix: one simple command at a time, never past an operator.
    assert_eq!(cmd("make '(all)' -j4").as_deref(), Some("allow Bash(make (all):*)"), "unquoted words");
    assert_eq!(cmd("make (all) -j4"), None, "only the whole text can allow what does not parse");
    let text_prefix = set(&[(Allow, "Bash(ls && rm:*)"), (Allow, "Bash(git * commit)")]);
    let cmd = |c: &str| strongest(&text_prefix, "Bash", json!({"command": c}));
    assert_eq!(cmd("ls && rm -rf /"), None, "a prefix never spans simple commands");
    assert_eq!(cmd("'ls && rm' -rf /"), None, "nor words");
    assert_eq!(cmd("git -C x commit").as_deref(), Some("allow Bash(git * commit)"));
    assert_eq!(cmd("git -C x commit && curl evil"), None, "every part needs a rule");
    assert_eq!(cmd("git $(curl evil) commit"), None, "a substitution is never allowed");
    assert_eq!(cmd("git \"$X\" commit"), None, "nor a word only known when it runs");
    assert_eq!(strongest(&s, "Bash", json!({"command": "ls; rm x > y"})).as_deref(), Some("deny Bash(rm x > y)"));
    for bad in ["Bash(:*)", "Bash( :* )"] {
        let e = RuleSet::compile(entries(&[(Allow, bad)]), places(), &catalog()).unwrap_err();
        assert!(e.to_string().contains("Prefix cannot be empty before :*"), "{e}");
    }
}

#[test]
fn escaped_parentheses_are_literal_in_words() {
    use Behavior::*;
    let s = set(&[(Allow, "Bash(python -c \"print\\(1\\)\")"), (Deny, "Bash(echo \\\\\\(x\\\\\\))")]);
    let cmd = |c: &str| strongest(&s, "Bash", json!({"command": c}));
    assert_eq!(cmd("python -c \"print(1)\"").as_deref(), Some("allow Bash(python -c \"print(1)\")"));
    assert_eq!(cmd("python -c 'print(1)'").as_deref(), Some("allow Bash(python -c \"print(1)\")"), "words");
    assert_eq!(cmd("python -c \"print(2)\""), None);
    // `Bash(echo \\\(x\\\))` is the content `echo \(x\)`: the words `echo (x)`.
    assert_eq!(cmd("ls; echo '(x)'").as_deref(), Some("deny Bash(echo \\\\\\(x\\\\\\))"));
}

#[test]
fn wildcards_follow_claude_code() {
    for (pattern, text, matches) in [
        ("git * status", "git -C x status", true),
        ("git * status", "git status", false),
        ("git *", "git", true),
        ("git *", "gitx", false),
        ("npm run*", "npm runx", true),
        ("a \\* b", "a * b", true),
        ("a \\* b", "a x b", false),
        ("ls src/**/x *", "ls src/x", false),
        ("ls src/**/x *", "ls src/a/x y", true),
        ("ls src/**/x*", "ls src/x", true),
        ("ls src/**/x*", "ls src/a/b/x.rs", true),
        ("echo (*)", "echo (a b)", true),
        ("echo *", "echo a\nb", true),
        ("a.b*", "axb", false),
    ] {
        let regex = super::commands::wildcard_for_tests(pattern);
        assert_eq!(regex.is_match(text), matches, "{pattern} ~ {text}: {regex}");
    }
}

#[test]
fn addresses_without_a_scheme_are_read_as_hosts() {
    use Behavior::*;
    let s = set(&[(Deny, "WebFetch(domain:evil.com)"), (Allow, "WebFetch(domain:a.org)")]);
    let hosts = |h: &[&str]| strongest(&s, "WebFetch", json!({ "hosts": h }));
    for evil in ["evil.com", "EVIL.com.", "evil.com:8080", "evil.com/x", "user@evil.com", "//evil.com/x"] {
        assert_eq!(hosts(&[evil]).as_deref(), Some("deny WebFetch(domain:evil.com)"), "{evil}");
    }
    for good in ["a.org", "a.org:443", "a.org/x?y", "https://a.org/", "me@a.org"] {
        assert_eq!(hosts(&[good]).as_deref(), Some("allow WebFetch(domain:a.org)"), "{good}");
    }
    // An address whose host cannot be told: deny and ask rules apply,
    // allow rules do not.
    for unreadable in ["a b", "https://", "a.org:x"] {
        assert_eq!(hosts(&[unreadable]).as_deref(), Some("deny WebFetch(domain:evil.com)"), "{unreadable:?}");
        let allow_only = set(&[(Allow, "WebFetch(domain:a.org)")]);
        assert_eq!(strongest(&allow_only, "WebFetch", json!({ "hosts": [unreadable] })), None, "{unreadable:?}");
    }
    assert_eq!(host_of("a.org:x"), None, "not a port");
}

#[test]
fn directories_on_disk_meet_directory_rules() {
    use Behavior::*;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for d in ["build", "secret", "src/real"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("out"), "a file").unwrap();
    std::os::unix::fs::symlink(root.join("src/real"), root.join("src/link")).unwrap();
    let places = Places { cwd: root.clone(), working: vec![root.clone()], home: None };
    let list = [(Deny, "Read(build/)"), (Deny, "Read(out/)"), (Deny, "Read(./secret/**)"), (Allow, "Edit(./src/**)")];
    let s = RuleSet::compile(entries(&list), places, &catalog()).unwrap();
    let call = |tool: &str, path: &Path| {
        let field = if matches!(tool, "Glob" | "Grep") { "path" } else { "file_path" };
        strongest(&s, tool, json!({ field: path }))
    };
    assert_eq!(call("Grep", &root.join("build")).as_deref(), Some("deny Read(build/)"), "a directory");
    assert_eq!(call("Read", &root.join("out")), None, "`out/` names directories; `out` is a file");
    // Searching a directory whose contents are denied is denied; the
    // directory itself is not read.
    assert_eq!(call("Grep", &root.join("secret")).as_deref(), Some("deny Read(./secret/**)"));
    assert_eq!(call("Read", &root.join("secret")), None);
    assert_eq!(call("Read", &root.join("secret/k")).as_deref(), Some("deny Read(./secret/**)"));
    // A link and its target both allowed: allowed.
    assert_eq!(call("Edit", &root.join("src/link/a.rs")).as_deref(), Some("allow Edit(./src/**)"));
}

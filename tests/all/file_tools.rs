//! The built-in file tools through the binary: behaviour and every refusal.

use crate::support::*;
use serde_json::json;

#[test]
fn read_formats_lines_and_pages() {
    let sb = Sandbox::new();
    let body: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    let file = sb.write("big.txt", &body);
    let text = call(&sb, "Read", &json!({"file_path": p(&file)}), &[]).assert_ok();
    assert!(text.starts_with("     1\tline 1\n"), "{}", &text[..50]);
    assert!(text.contains("  2000\tline 2000\n") && !text.contains("line 2001\n"));
    assert!(text.contains("(Showing lines 1-2000 of 3000."));
    let text = call(&sb, "Read", &json!({"file_path": p(&file), "offset": 2999, "limit": 5}), &[]).assert_ok();
    assert_eq!(text, "  2999\tline 2999\n  3000\tline 3000\n");
    // Relative paths resolve against the workspace.
    let text = call(&sb, "Read", &json!({"file_path": "big.txt", "limit": 1}), &[]).assert_ok();
    assert!(text.starts_with("     1\tline 1\n"));
}

#[test]
fn read_refusals() {
    let sb = Sandbox::new();
    call(&sb, "Read", &json!({"file_path": p(&sb.ws("missing.txt"))}), &[]).assert_error("File does not exist");
    std::fs::create_dir(sb.ws("dir")).unwrap();
    call(&sb, "Read", &json!({"file_path": p(&sb.ws("dir"))}), &[]).assert_error("is a directory, not a file");
    let bin = sb.write("blob.bin", [0u8, 1, 2, 0, 159, 146, 150]);
    call(&sb, "Read", &json!({"file_path": p(&bin)}), &[]).assert_error("appears to be a binary file");
}

#[test]
fn read_returns_images_as_image_blocks() {
    let sb = Sandbox::new();
    // A 1x1 PNG.
    let png: &[u8] = &[
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1,
        8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0a, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0, 1, 0, 0, 5,
        0, 1, 0x0d, 0x0a, 0x2d, 0xb4, 0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];
    let file = sb.write("dot.png", png);
    let r = call(&sb, "Read", &json!({"file_path": p(&file)}), &[]);
    assert_eq!(r.code, 0, "{r:?}");
    let block = &r.json()["content"][0];
    assert_eq!(block["type"], "image");
    assert_eq!(block["source"]["media_type"], "image/png");
    assert_eq!(block["source"]["data"].as_str().unwrap().len(), png.len().div_ceil(3) * 4);
}

#[test]
fn paths_outside_the_workspace_are_refused() {
    let sb = Sandbox::new();
    let secret = sb.root.join("secret.txt");
    std::fs::write(&secret, "top secret").unwrap();
    let via_dots = format!("{}/../secret.txt", p(&sb.workspace));
    std::os::unix::fs::symlink(&secret, sb.ws("link.txt")).unwrap();
    for path in [p(&secret), via_dots.clone(), "/etc/passwd".to_string()] {
        let text = call(&sb, "Read", &json!({"file_path": path}), &["--mode", "bypassPermissions"])
            .assert_error("outside the working directories");
        assert!(!text.contains("top secret"));
    }
    let text = call(&sb, "Read", &json!({"file_path": p(&sb.ws("link.txt"))}), &[])
        .assert_error("resolves outside the working directories");
    assert!(!text.contains("top secret"));
    call(&sb, "Grep", &json!({"pattern": "secret", "path": p(&sb.root)}), &[])
        .assert_error("outside the working directories");
    call(&sb, "Glob", &json!({"pattern": "../*.txt"}), &[]).assert_error("outside the working directories");

    // Writing through the link or outside must not touch the secret.
    let edits = [
        ("Write", json!({"file_path": p(&sb.ws("link.txt")), "content": "pwned"})),
        ("Write", json!({"file_path": via_dots, "content": "pwned"})),
        ("Edit", json!({"file_path": p(&secret), "old_string": "top", "new_string": "pwned"})),
    ];
    for (tool, input) in edits {
        let r = call(&sb, tool, &input, &["--mode", "bypassPermissions"]);
        assert!(r.is_error(), "{tool} {input}: {r:?}");
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "top secret");
    }
}

#[test]
fn write_creates_and_requires_a_fresh_read_to_overwrite() {
    let sb = Sandbox::new();
    let s = ["--session", "w1", "--mode", "acceptEdits"];
    let new = sb.ws("sub/dir/new.txt");
    let text = call(&sb, "Write", &json!({"file_path": p(&new), "content": "fresh\n"}), &s).assert_ok();
    assert_eq!(text, format!("File created successfully at: {}", p(&new)));
    assert_eq!(std::fs::read_to_string(&new).unwrap(), "fresh\n");

    let old = sb.write("old.txt", "original\n");
    call(&sb, "Write", &json!({"file_path": p(&old), "content": "clobber"}), &s)
        .assert_error("File has not been read yet");
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "original\n");

    call(&sb, "Read", &json!({"file_path": p(&old)}), &s).assert_ok();
    let text = call(&sb, "Write", &json!({"file_path": p(&old), "content": "replaced\n"}), &s).assert_ok();
    assert!(text.contains("has been updated") && text.contains("     1\treplaced"), "{text}");
    // Its own write counts as a read: a second write needs no new Read.
    call(&sb, "Write", &json!({"file_path": p(&old), "content": "again\n"}), &s).assert_ok();
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "again\n");
}

#[test]
fn writes_after_a_change_on_disk_are_refused() {
    let sb = Sandbox::new();
    let s = ["--session", "stale", "--mode", "acceptEdits"];
    let file = sb.write("f.txt", "one two\n");
    call(&sb, "Read", &json!({"file_path": p(&file)}), &s).assert_ok();
    // Someone else edits the file (different size and mtime).
    std::fs::write(&file, "one two three\n").unwrap();
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap() + std::time::Duration::from_secs(5);
    std::fs::File::options().write(true).open(&file).unwrap().set_modified(mtime).unwrap();
    call(&sb, "Edit", &json!({"file_path": p(&file), "old_string": "two", "new_string": "2"}), &s)
        .assert_error("has been modified since it was read");
    call(&sb, "Write", &json!({"file_path": p(&file), "content": "x"}), &s)
        .assert_error("has been modified since it was read");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one two three\n");
}

#[test]
fn edit_replaces_and_refuses_bad_edits() {
    let sb = Sandbox::new();
    let s = ["--session", "e1", "--mode", "acceptEdits"];
    let file = sb.write("code.rs", "fn a() {}\nfn b() {}\nlet x = 1;\nlet x = 1;\n");
    let original = std::fs::read(&file).unwrap();
    let edit = |old: &str, new: &str, all: bool| {
        call(&sb, "Edit", &json!({"file_path": p(&file), "old_string": old, "new_string": new, "replace_all": all}), &s)
    };
    edit("fn a", "fn z", false).assert_error("File has not been read yet");
    call(&sb, "Read", &json!({"file_path": p(&file)}), &s).assert_ok();
    edit("fn c", "fn d", false).assert_error("String to replace not found in file.\nString: fn c");
    edit("let x = 1;", "let x = 2;", false)
        .assert_error("Found 2 matches of the string to replace, but replace_all is false");
    edit("same", "same", false).assert_error("No changes to make: old_string and new_string are exactly the same.");
    assert_eq!(std::fs::read(&file).unwrap(), original, "failed edits leave the file as it was");

    let text = edit("fn b() {}", "fn b() { todo!() }", false).assert_ok();
    assert!(text.contains("     2\tfn b() { todo!() }"), "{text}");
    edit("let x = 1;", "let y = 1;", true).assert_ok();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "fn a() {}\nfn b() { todo!() }\nlet y = 1;\nlet y = 1;\n");
    let leftovers: Vec<_> = std::fs::read_dir(&sb.workspace)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".toolhost-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn edit_keeps_an_executable_bit() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let s = ["--session", "x", "--mode", "acceptEdits"];
    let script = sb.write("run.sh", "#!/bin/sh\necho old\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    call(&sb, "Read", &json!({"file_path": p(&script)}), &s).assert_ok();
    call(&sb, "Edit", &json!({"file_path": p(&script), "old_string": "old", "new_string": "new"}), &s).assert_ok();
    assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o755);
}

#[test]
fn a_failed_write_leaves_nothing_behind() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.ws("taken/inner")).unwrap();
    call(&sb, "Write", &json!({"file_path": p(&sb.ws("taken")), "content": "x"}), &["--mode", "acceptEdits"])
        .assert_error("is a directory");
    // A parent that is a file.
    sb.write("plain", "data");
    call(&sb, "Write", &json!({"file_path": p(&sb.ws("plain/child.txt")), "content": "x"}), &["--mode", "acceptEdits"]);
    assert_eq!(std::fs::read_to_string(sb.ws("plain")).unwrap(), "data");
    let names: Vec<String> = std::fs::read_dir(&sb.workspace)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains("toolhost")), "{names:?}");
}

#[test]
fn glob_lists_newest_first_and_respects_gitignore() {
    let sb = Sandbox::new();
    sb.write(".gitignore", "target/\n");
    sb.write("target/skip.rs", "");
    sb.write("src/old.rs", "");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(sb.ws("src/old.rs")).unwrap().set_modified(old).unwrap();
    sb.write("src/new.rs", "");
    sb.write("README.md", "");
    let text = call(&sb, "Glob", &json!({"pattern": "**/*.rs"}), &[]).assert_ok();
    assert_eq!(text, format!("{}\n{}", p(&sb.ws("src/new.rs")), p(&sb.ws("src/old.rs"))));
    assert_eq!(call(&sb, "Glob", &json!({"pattern": "*.nothing"}), &[]).assert_ok(), "No files found");
}

#[test]
fn grep_modes_through_the_binary() {
    let sb = Sandbox::new();
    sb.write("a.py", "import os\nprint('needle')\n");
    sb.write("b.rs", "// needle\nfn main() {}\n");
    sb.write("ignored/c.txt", "needle\n");
    sb.write(".gitignore", "ignored/\n");
    let text = call(&sb, "Grep", &json!({"pattern": "needle"}), &[]).assert_ok();
    assert!(text.starts_with("Found 2 files\n"), "{text}");
    let text =
        call(&sb, "Grep", &json!({"pattern": "needle", "output_mode": "content", "type": "py"}), &[]).assert_ok();
    assert_eq!(text, format!("{}:2:print('needle')", p(&sb.ws("a.py"))));
    let text =
        call(&sb, "Grep", &json!({"pattern": "NEEDLE", "-i": true, "output_mode": "count", "glob": "*.rs"}), &[])
            .assert_ok();
    assert_eq!(text, format!("{}:1\n\nFound 1 total occurrence across 1 file.", p(&sb.ws("b.rs"))));
    call(&sb, "Grep", &json!({"pattern": "(unclosed"}), &[]).assert_error("Invalid regular expression");
}

#[test]
fn oversized_results_are_persisted_and_readable() {
    let sb = Sandbox::new();
    let body: String = (0..20_000).map(|i| format!("match number {i}\n")).collect();
    sb.write("many.txt", &body);
    let s = ["--session", "big"];
    let text =
        call(&sb, "Grep", &json!({"pattern": "match", "output_mode": "content", "head_limit": 0}), &s).assert_ok();
    assert!(text.starts_with("<persisted-output>\nOutput too large ("), "{}", &text[..200.min(text.len())]);
    let path = text
        .lines()
        .find_map(|l| l.strip_prefix("Output too large").and_then(|l| l.split("saved to: ").nth(1)))
        .unwrap();
    assert!(path.starts_with(&p(&sb.data)), "{path}");
    let saved = std::fs::read_to_string(path).unwrap();
    assert_eq!(saved.lines().count(), 20_000);
    // The model can read the persisted file with Read, which never persists.
    let text = call(&sb, "Read", &json!({"file_path": path, "offset": 20000, "limit": 1}), &s).assert_ok();
    assert!(text.contains("match number 19999"), "{text}");
}

//! The built-in file tools through the binary: behaviour and every refusal.

use crate::support::*;
use serde_json::json;

#[test]
fn read_formats_lines_and_pages() {
    let sb = Sandbox::new();
    let body: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    let file = sb.write("big.txt", &body);
    // Claude Code 2.1.88: `N\tline`, joined with newlines, no footer; the
    // empty text after the last newline is a line too.
    let text = call(&sb, "Read", &json!({"file_path": p(&file)}), &[]).assert_ok();
    assert!(text.starts_with("1\tline 1\n2\tline 2\n"), "{}", &text[..50]);
    assert!(text.ends_with("\n3000\tline 3000\n3001\t"), "{}", &text[text.len() - 50..]);
    let text = call(&sb, "Read", &json!({"file_path": p(&file), "offset": 2999, "limit": 5}), &[]).assert_ok();
    assert_eq!(text, "2999\tline 2999\n3000\tline 3000\n3001\t");
    // Relative paths resolve against the workspace.
    let text = call(&sb, "Read", &json!({"file_path": "big.txt", "limit": 1}), &[]).assert_ok();
    assert_eq!(text, "1\tline 1");
    let text = call(&sb, "Read", &json!({"file_path": "big.txt", "offset": 4000}), &[]).assert_ok();
    assert_eq!(
        text,
        "<system-reminder>Warning: the file exists but is shorter than the provided offset (4000). The file has \
         3001 lines.</system-reminder>"
    );
}

#[test]
fn read_caps_size_and_tokens() {
    let sb = Sandbox::new();
    // 300,000 bytes: over 256 KB without a limit, fine with one.
    let file = sb.write("big.txt", "x\n".repeat(150_000));
    let s = ["--session", "caps"];
    call(&sb, "Read", &json!({"file_path": p(&file)}), &s).assert_error(
        "File content (293KB) exceeds maximum allowed size (256KB). Use offset and limit parameters to read specific \
         portions of the file, or search for specific content instead of reading the whole file.",
    );
    call(&sb, "Read", &json!({"file_path": p(&file), "offset": 10}), &s).assert_error("(293KB) exceeds");
    assert_eq!(call(&sb, "Read", &json!({"file_path": p(&file), "limit": 2}), &s).assert_ok(), "1\tx\n2\tx");
    // A limit lifts the size cap, not the 25,000-token one.
    let r = call(&sb, "Read", &json!({"file_path": p(&file), "limit": 60_000}), &s);
    let text = r.assert_error("File content (30000 tokens) exceeds maximum allowed tokens (25000).");
    assert!(!text.contains("1\tx"), "nothing of the file comes with the error");
    // JSON counts two bytes a token; a whole-file read over the cap gives
    // its first lines and the banner, and Write then refuses the file.
    let json_file = sb.write("data.json", "[1,2,3,4]\n".repeat(6_000));
    let text = call(&sb, "Read", &json!({"file_path": p(&json_file)}), &s).assert_ok();
    assert!(text.contains("\n4250\t[1,2,3,4]\n\n<system-reminder>\n[Truncated: PARTIAL view"), "{}", &text[..200]);
    assert!(
        text.contains("showing lines 1-4250 of 6001 total (30000 tokens, cap 25000)"),
        "{}",
        &text[text.len() - 400..]
    );
    call(&sb, "Write", &json!({"file_path": p(&json_file), "content": "[]"}), &s)
        .assert_error("You were given only the start of this file");
}

#[test]
fn read_notebooks_and_pdfs() {
    let sb = Sandbox::new();
    let notebook = json!({
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
        "cells": [
            {"cell_type": "markdown", "id": "m", "metadata": {}, "source": ["# Notes"]},
            {"cell_type": "code", "id": "c", "execution_count": 1, "metadata": {}, "source": ["print(1)"],
             "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}]}
        ]
    });
    let nb = sb.write("n.ipynb", notebook.to_string());
    let text = call(&sb, "Read", &json!({"file_path": p(&nb)}), &[]).assert_ok();
    assert_eq!(
        text,
        "<cell id=\"m\"><cell_type>markdown</cell_type># Notes</cell id=\"m\">\n\
         <cell id=\"c\">print(1)</cell id=\"c\">\n\n1\n"
    );
    // A three-page PDF, whole and by pages, as document blocks.
    let file = sb.write("doc.pdf", unbase64(THREE_PAGE_PDF));
    let r = call(&sb, "Read", &json!({"file_path": p(&file)}), &[]);
    assert_eq!(r.assert_ok(), format!("PDF file read: {} (966 bytes)", p(&file)));
    let block = &r.json()["content"][1];
    assert_eq!((&block["type"], &block["source"]["media_type"]), (&json!("document"), &json!("application/pdf")));
    assert_eq!(block["source"]["data"], THREE_PAGE_PDF);
    let r = call(&sb, "Read", &json!({"file_path": p(&file), "pages": "2-3"}), &[]);
    assert_eq!(r.assert_ok(), format!("PDF pages extracted: 2 page(s) from {} (966 bytes)", p(&file)));
    let part = unbase64(r.json()["content"][1]["source"]["data"].as_str().unwrap());
    assert!(part.starts_with(b"%PDF-"));
    call(&sb, "Read", &json!({"file_path": p(&file), "pages": "1-21"}), &[])
        .assert_error("<tool_use_error>Page range \"1-21\" exceeds maximum of 20 pages per request.");
    let fake = sb.write("fake.pdf", "<html></html>");
    call(&sb, "Read", &json!({"file_path": p(&fake)}), &[])
        .assert_error(&format!("File is not a valid PDF (missing %PDF- header): {}", p(&fake)));
}

/// Standard base64 (with padding) decoded.
fn unbase64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=').map(value).collect();
    let bits = digits.chunks(4).flat_map(|q| {
        let n = q.iter().enumerate().fold(0u32, |n, (i, &d)| n | u32::from(d) << (18 - 6 * i));
        [(n >> 16) as u8, (n >> 8) as u8, n as u8].into_iter().take(q.len() - 1)
    });
    bits.collect()
}

/// A three-page PDF (lopdf), 966 bytes.
const THREE_PAGE_PDF: &str = concat!(
    "JVBERi0xLjUKJbutwN4KMSAwIG9iago8PC9UeXBlL1BhZ2VzL0tpZHNbNCAwIFIgNiAwIFIgOCAwIFJdL0NvdW50IDM+PgplbmRv",
    "YmoKMiAwIG9iago8PC9UeXBlL0ZvbnQvU3VidHlwZS9UeXBlMS9CYXNlRm9udC9IZWx2ZXRpY2E+PgplbmRvYmoKMyAwIG9iago8",
    "PC9MZW5ndGggMzc+PnN0cmVhbQpCVCAvRjEgMjQgVGYgNzIgNzIwIFRkIChQYWdlIDEpIFRqIEVUCmVuZHN0cmVhbSAKZW5kb2Jq",
    "CjQgMCBvYmoKPDwvVHlwZS9QYWdlL1BhcmVudCAxIDAgUi9Db250ZW50cyAzIDAgUi9SZXNvdXJjZXM8PC9Gb250PDwvRjEgMiAw",
    "IFI+Pj4+L01lZGlhQm94WzAgMCA2MTIgNzkyXT4+CmVuZG9iago1IDAgb2JqCjw8L0xlbmd0aCAzNz4+c3RyZWFtCkJUIC9GMSAy",
    "NCBUZiA3MiA3MjAgVGQgKFBhZ2UgMikgVGogRVQKZW5kc3RyZWFtIAplbmRvYmoKNiAwIG9iago8PC9UeXBlL1BhZ2UvUGFyZW50",
    "IDEgMCBSL0NvbnRlbnRzIDUgMCBSL1Jlc291cmNlczw8L0ZvbnQ8PC9GMSAyIDAgUj4+Pj4vTWVkaWFCb3hbMCAwIDYxMiA3OTJd",
    "Pj4KZW5kb2JqCjcgMCBvYmoKPDwvTGVuZ3RoIDM3Pj5zdHJlYW0KQlQgL0YxIDI0IFRmIDcyIDcyMCBUZCAoUGFnZSAzKSBUaiBF",
    "VAplbmRzdHJlYW0gCmVuZG9iago4IDAgb2JqCjw8L1R5cGUvUGFnZS9QYXJlbnQgMSAwIFIvQ29udGVudHMgNyAwIFIvUmVzb3Vy",
    "Y2VzPDwvRm9udDw8L0YxIDIgMCBSPj4+Pi9NZWRpYUJveFswIDAgNjEyIDc5Ml0+PgplbmRvYmoKOSAwIG9iago8PC9UeXBlL0Nh",
    "dGFsb2cvUGFnZXMgMSAwIFI+PgplbmRvYmoKMTAgMCBvYmoKPDwvUm9vdCA5IDAgUi9UeXBlL1hSZWYvU2l6ZSAxMS9XWzEgNCAy",
    "XS9JbmRleFsxIDEwXS9MZW5ndGggNzA+PnN0cmVhbQoBAAAADwAAAQAAAE4AAAEAAACNAAABAAAA4gAAAQAAAVIAAAEAAAGnAAAB",
    "AAACFwAAAQAAAmwAAAEAAALcAAABAAADCQAACmVuZHN0cmVhbSAKZW5kb2JqCgpzdGFydHhyZWYKNzc3CiUlRU9G",
);

#[test]
fn read_refusals() {
    let sb = Sandbox::new();
    call(&sb, "Read", &json!({"file_path": p(&sb.ws("missing.txt"))}), &[])
        .assert_error(&format!("File does not exist. Note: your current working directory is {}.", p(&sb.workspace)));
    sb.write("notes.md", "x");
    call(&sb, "Read", &json!({"file_path": p(&sb.ws("notes.txt"))}), &[]).assert_error(" Did you mean notes.md?");
    std::fs::create_dir(sb.ws("dir")).unwrap();
    call(&sb, "Read", &json!({"file_path": p(&sb.ws("dir"))}), &[])
        .assert_error(&format!("EISDIR: illegal operation on a directory, read '{}'", p(&sb.ws("dir"))));
    let bin = sb.write("blob.bin", [0u8, 1, 2, 0, 159, 146, 150]);
    call(&sb, "Read", &json!({"file_path": p(&bin)}), &[]).assert_error(
        "<tool_use_error>This tool cannot read binary files. The file appears to be a binary .bin file. Use a skill \
         for this file type if one is available, or a shell command or script that can read the format.</tool_use_error>",
    );
    // Binary content under another name is read as text, with a note.
    let raw = sb.write("blob.raw", [b'a', 0, 1]);
    let text = call(&sb, "Read", &json!({"file_path": p(&raw)}), &[]).assert_ok();
    assert!(text.starts_with("1\ta\u{0}\u{1}\n\n[This file has NUL bytes in its first 8 KB"), "{text}");
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
    // Claude Code hands a relative pattern to ripgrep as a glob: `..` matches nothing.
    assert_eq!(call(&sb, "Glob", &json!({"pattern": "../*.txt"}), &[]).assert_ok(), "No files found");
    call(&sb, "Glob", &json!({"pattern": format!("{}/*.txt", p(&sb.root))}), &[])
        .assert_error("outside the working directories");

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
    assert_eq!(
        text,
        format!(
            "File created successfully at: {} (file state is current in your context — no need to Read it back)",
            p(&new)
        )
    );
    assert_eq!(std::fs::read_to_string(&new).unwrap(), "fresh\n");

    let old = sb.write("old.txt", "original\n");
    call(&sb, "Write", &json!({"file_path": p(&old), "content": "clobber"}), &s)
        .assert_error("File has not been read yet");
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "original\n");

    call(&sb, "Read", &json!({"file_path": p(&old)}), &s).assert_ok();
    let text = call(&sb, "Write", &json!({"file_path": p(&old), "content": "replaced\n"}), &s).assert_ok();
    assert_eq!(
        text,
        format!(
            "The file {} has been updated successfully. (file state is current in your context — no need to Read it back)",
            p(&old)
        )
    );
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
    // Someone else edits the file (different size and mtime), so that
    // `two` names two places: Edit cannot apply it as a stale-read recovery.
    std::fs::write(&file, "one two three two\n").unwrap();
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap() + std::time::Duration::from_secs(5);
    std::fs::File::options().write(true).open(&file).unwrap().set_modified(mtime).unwrap();
    let modified = "<tool_use_error>File has been modified since read, either by the user or by a linter. Read it \
                    again before attempting to write it.</tool_use_error>";
    let r = call(&sb, "Edit", &json!({"file_path": p(&file), "old_string": "two", "new_string": "2"}), &s);
    assert_eq!(r.assert_error("modified since read"), modified);
    let r = call(&sb, "Write", &json!({"file_path": p(&file), "content": "x"}), &s);
    assert_eq!(r.assert_error("modified since read"), modified);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one two three two\n");
    // Where `old_string` still names one place, the edit applies, with a note.
    let r = call(&sb, "Edit", &json!({"file_path": p(&file), "old_string": "three", "new_string": "3"}), &s);
    assert!(r.assert_ok().ends_with("Read it before edits that depend on surrounding content.)"), "{r:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one two 3 two\n");
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
    assert_eq!(
        text,
        format!(
            "The file {} has been updated successfully. (file state is current in your context — no need to Read it back)",
            p(&file)
        )
    );
    let text = edit("let x = 1;", "let y = 1;", true).assert_ok();
    assert_eq!(
        text,
        format!(
            "The file {} has been updated. All occurrences were successfully replaced. (file state is current in your context — no need to Read it back)",
            p(&file)
        )
    );
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
    // As in Claude Code 2.1.328, a directory is refused as one.
    call(&sb, "Write", &json!({"file_path": p(&sb.ws("taken")), "content": "x"}), &["--mode", "acceptEdits"])
        .assert_error(
            "taken is a directory, not a file. To create a file inside it, include the file name in file_path.",
        );
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
fn glob_lists_oldest_first_ignoring_gitignore() {
    let sb = Sandbox::new();
    sb.write(".gitignore", "target/\n");
    let hours_ago = |h: u64| std::time::SystemTime::now() - std::time::Duration::from_secs(3600 * h);
    for (name, age) in [("target/skip.rs", 2), ("src/old.rs", 3), ("src/new.rs", 1)] {
        sb.write(name, "");
        std::fs::File::options().write(true).open(sb.ws(name)).unwrap().set_modified(hours_ago(age)).unwrap();
    }
    sb.write("README.md", "");
    // Claude Code 2.1.88 lists with `rg --files --no-ignore --hidden --sort=modified`,
    // relative to the working directory.
    let text = call(&sb, "Glob", &json!({"pattern": "**/*.rs"}), &[]).assert_ok();
    assert_eq!(text, "src/old.rs\ntarget/skip.rs\nsrc/new.rs");
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
    assert_eq!(text, "a.py:2:print('needle')");
    let text =
        call(&sb, "Grep", &json!({"pattern": "NEEDLE", "-i": true, "output_mode": "count", "glob": "*.rs"}), &[])
            .assert_ok();
    assert_eq!(text, "b.rs:1\n\nFound 1 total occurrence across 1 file.");
    // ripgrep refuses the pattern: 2.1.328 reports ripgrep's message.
    let refused = call(&sb, "Grep", &json!({"pattern": "(unclosed"}), &[]).assert_error("Search failed");
    assert!(refused.ends_with("rg: regex parse error:\n    (?:(unclosed)\n    ^\nerror: unclosed group"), "{refused}");
}

/// Grep searches through the host's ripgrep on every core; the output keeps
/// the walk's order and every context separator, and skips what deny rules
/// hide from reads.
#[test]
fn grep_in_parallel_keeps_order_context_and_hidden_paths() {
    let sb = Sandbox::new();
    let mut expected = String::new();
    for d in 0..4 {
        for f in 0..12 {
            let rel = format!("d{d}/f{f:02}.txt");
            sb.write(&rel, format!("a\nneedle {d} {f}\nb\nc\nd\nneedle again\n"));
            if !expected.is_empty() {
                expected.push_str("--\n");
            }
            // Claude Code 2.1.328 makes the paths of context lines relative too.
            expected.push_str(&format!(
                "{rel}-1-a\n{rel}:2:needle {d} {f}\n{rel}-3-b\n--\n{rel}-5-d\n{rel}:6:needle again\n"
            ));
        }
    }
    sb.write("secret/key.txt", "needle secret\n");
    let input = json!({"pattern": "needle", "output_mode": "content", "-C": 1, "head_limit": 0, "path": p(&sb.ws(""))});
    let r = call(&sb, "Grep", &input, &["--deny", "Read(./secret/**)"]);
    assert_eq!(format!("{}\n", r.assert_ok()), expected);
    // A page stops the search early and is the same page as one thread's.
    let page =
        call(&sb, "Grep", &json!({"pattern": "needle", "output_mode": "content", "head_limit": 7}), &[]).assert_ok();
    assert!(
        page.starts_with("d0/f00.txt:2:needle 0 0\nd0/f00.txt:6:needle again\nd0/f01.txt:2:needle 0 1\n"),
        "{page}"
    );
    assert!(page.ends_with("[Showing results with pagination = limit: 7]"), "{page}");
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

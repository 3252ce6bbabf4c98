//! The sandbox's primitives (`toolhost-primitives`), which every check of a
//! path or a host name goes through: their laws, on any input.

use arbitrary::{Result, Unstructured};
use std::path::{Component, Path, PathBuf};
use toolhost_primitives::{host, path};

/// A root no file system has: under it nothing exists, so resolving a path
/// changes nothing and containment is decided as written.
const NOWHERE: &str = "/toolhost-fuzz-nowhere-7f3a";

/// Paths: lexical normalization, containment by whole components, and
/// containment as written and as resolved.
pub fn paths(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok((written, dir, cwd)) =
        (|| -> Result<(String, String, String)> { Ok((piece(&mut u)?, piece(&mut u)?, piece(&mut u)?)) })()
    else {
        return;
    };
    let normalized = path::normalize(Path::new(&written));
    // Absolute, of plain names only, and a fixed point.
    assert!(normalized.is_absolute(), "{written:?} → {normalized:?}");
    assert!(
        normalized.components().skip(1).all(|c| matches!(c, Component::Normal(_))),
        "{written:?} → {normalized:?} keeps a `.`, `..` or root inside"
    );
    assert_eq!(path::normalize(&normalized), normalized, "normalizing {written:?} twice changes it");
    // Never above the root: as many `..` as there are names give `/`.
    let climbs = "../".repeat(normalized.components().count());
    assert_eq!(path::normalize(&normalized.join(&climbs)), Path::new("/"), "{normalized:?} + {climbs}");
    // `absolute` is the join, normalized; an absolute path ignores the cwd.
    let cwd = path::normalize(Path::new(&cwd));
    assert_eq!(path::absolute(&cwd, Path::new(&written)), path::normalize(&cwd.join(&written)));
    if written.starts_with('/') {
        assert_eq!(path::absolute(&cwd, Path::new(&written)), normalized);
    }

    // Inside means whole components: the same answer as comparing the
    // texts a name at a time.
    let dir = path::normalize(Path::new(&dir));
    let (p, d) = (normalized.to_string_lossy(), dir.to_string_lossy());
    let by_text = d == "/" || p == d || p.starts_with(&format!("{d}/"));
    assert_eq!(path::is_inside(&normalized, [&dir]), by_text, "{normalized:?} inside {dir:?}");
    assert!(path::is_inside(&dir.join("x"), [&dir]) && path::is_inside(&dir, [&dir]));
    assert!(!path::is_inside(&normalized, Vec::<PathBuf>::new()));

    // Where nothing exists, containment is the answer as written.
    let under = |p: &Path| Path::new(NOWHERE).join(p.strip_prefix("/").unwrap_or(p));
    let (here, allowed) = (under(&normalized), under(&dir));
    let inside = |p: &Path| path::is_inside(p, [&allowed]);
    let expected = if inside(&here) { path::Containment::Inside } else { path::Containment::Outside };
    assert_eq!(path::containment(&here, inside), expected, "{here:?} against {allowed:?}");
}

/// Host names: normalization, and whether one is under or within a domain.
pub fn host_names(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok((a, b)) = (|| -> Result<(String, String)> { Ok((name(&mut u)?, name(&mut u)?)) })() else {
        return;
    };
    let (na, nb) = (host::normalize(&a), host::normalize(&b));
    assert_eq!(host::normalize(&na), na, "normalizing {a:?} twice changes it");
    assert!(!na.ends_with('.') && !na.bytes().any(|c| c.is_ascii_uppercase()), "{a:?} → {na:?}");
    // Case and trailing dots never change an answer.
    assert_eq!(host::is_under(&a, &b), host::is_under(&na, &nb), "{a:?} under {b:?}");
    assert_eq!(host::is_within(&a, &b), host::is_within(&na, &nb), "{a:?} within {b:?}");
    // Under: one whole label or more before the domain; within: under, or
    // the domain itself.
    let labels = !nb.split('.').any(str::is_empty);
    let by_text =
        labels && na.ends_with(&format!(".{nb}")) && !na.ends_with(&format!("..{nb}")) && na != format!(".{nb}");
    assert_eq!(host::is_under(&na, &nb), by_text, "{na:?} under {nb:?}");
    assert_eq!(host::is_within(&na, &nb), host::is_under(&na, &nb) || na == nb);
    assert!(!host::is_under(&na, &na), "{na:?} is under itself");
}

/// A path's text: mostly separators, dots and a few short names, so that
/// `..` and nesting come often.
fn piece(u: &mut Unstructured<'_>) -> Result<String> {
    let mut out = String::new();
    for _ in 0..u.int_in_range(0..=12)? {
        out.push_str(u.choose(&["/", "//", ".", "..", "a", "b", "ab", "é", " ", "a.b", "...", "\\"])?);
    }
    Ok(out)
}

/// A host name's text: labels of a few letters, dots, case.
fn name(u: &mut Unstructured<'_>) -> Result<String> {
    let mut out = String::new();
    for _ in 0..u.int_in_range(0..=8)? {
        out.push_str(u.choose(&["a", "B", "ex", "EX", "com", ".", "..", "-", "1", "xn--", "*"])?);
    }
    Ok(out)
}

//! The paths the permission rules hide from a tool's directory walks, as the
//! contract's `policy.hidden-paths` carries them: absolute glob patterns
//! (`*` stays within a path component, `**` crosses them, `\` escapes), a
//! pattern ending in `/` matching directories only.
//!
//! Three places meet here, and must agree to the byte: the host's policy,
//! which writes the patterns from its path rules ([`glob`], [`pattern`]);
//! the host's `search` capability, which skips them in its walk; and the
//! SDK, whose tools (Glob) skip them in theirs. A search and a walk that
//! matched differently would hide different files, so the matcher
//! ([`HiddenPaths`]) is written once, here.
//!
//! It is a crate of its own, depending on globset alone, because its users
//! sit on both sides of the contract: the SDK builds for `wasm32-wasip2`
//! and must not pull in ripgrep's crates (`toolhost-search`) or the host;
//! the host must not depend on the guests' SDK (wit-bindgen).

use std::path::Path;

/// A path rule's glob compiled as the policy matches it, and as hidden paths
/// are matched: `*` does not cross a `/`, and `\` escapes the next character.
pub fn glob(pattern: &str) -> Result<globset::Glob, globset::Error> {
    globset::GlobBuilder::new(pattern).literal_separator(true).backslash_escape(true).build()
}

/// The hidden-path text of an absolute `glob` (in [`glob`]'s syntax): a `/`
/// after it when only directories match.
pub fn pattern(glob: &str, dir_only: bool) -> String {
    if dir_only { format!("{glob}/") } else { glob.to_string() }
}

/// Hidden paths, compiled: what a walk asks about every entry it meets.
#[derive(Clone, Debug, Default)]
pub struct HiddenPaths {
    set: globset::GlobSet,
    /// Per glob of `set`: whether it matches directories only.
    dir_only: Vec<bool>,
}

impl HiddenPaths {
    /// Compiles `patterns` (see [`pattern`]). A pattern that does not compile
    /// hides nothing but is not an error: the host sends patterns its rules
    /// compiled already.
    pub fn new(patterns: &[String]) -> HiddenPaths {
        let mut builder = globset::GlobSetBuilder::new();
        let mut dir_only = Vec::new();
        for p in patterns {
            let (pattern, dirs) = match p.strip_suffix('/') {
                Some(d) if !d.is_empty() => (d, true),
                _ => (p.as_str(), false),
            };
            if let Ok(glob) = glob(pattern) {
                builder.add(glob);
                dir_only.push(dirs);
            }
        }
        HiddenPaths { set: builder.build().unwrap_or_default(), dir_only }
    }

    /// Whether nothing is hidden.
    pub fn is_empty(&self) -> bool {
        self.dir_only.is_empty()
    }

    /// Whether `path` (a directory when `is_dir`) is hidden. A walk asks it
    /// of every entry and does not enter a hidden directory, so what is
    /// inside one is hidden with it.
    pub fn contains(&self, path: &Path, is_dir: bool) -> bool {
        !self.is_empty() && self.set.matches(path).into_iter().any(|i| is_dir || !self.dir_only[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden(patterns: &[&str]) -> HiddenPaths {
        HiddenPaths::new(&patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn hidden_paths_match_files_and_directories() {
        let hidden = hidden(&["/w/secret/**", "/w/**/*.env", "/w/**/build/"]);
        assert!(hidden.contains(Path::new("/w/secret/key"), false));
        assert!(!hidden.contains(Path::new("/w/secret"), true), "the directory itself is walked, its contents hidden");
        assert!(hidden.contains(Path::new("/w/a/b/prod.env"), false));
        assert!(hidden.contains(Path::new("/w/.env"), false), "`**/` matches no directory too");
        assert!(hidden.contains(Path::new("/w/x/build"), true));
        assert!(!hidden.contains(Path::new("/w/x/build"), false), "dir-only");
        assert!(!hidden.contains(Path::new("/w/src/main.rs"), false));
        assert!(!HiddenPaths::default().contains(Path::new("/w/secret/key"), false));
    }

    #[test]
    fn a_star_stays_within_a_component_and_a_backslash_escapes() {
        let hidden = hidden(&["/w/*.key", r"/w/\[draft\]"]);
        assert!(hidden.contains(Path::new("/w/a.key"), false));
        assert!(!hidden.contains(Path::new("/w/sub/a.key"), false), "`*` does not cross a `/`");
        assert!(hidden.contains(Path::new("/w/[draft]"), false));
        assert!(!hidden.contains(Path::new("/w/d"), false), "escaped brackets are no class");
    }

    #[test]
    fn the_root_and_bad_patterns() {
        // "/" is the root, not a directory-only empty pattern.
        let root = hidden(&["/"]);
        assert!(!root.is_empty());
        assert!(root.contains(Path::new("/"), true));
        assert!(!root.contains(Path::new("/etc"), true));
        let bad = hidden(&["/w/[", "/w/ok"]);
        assert!(!bad.contains(Path::new("/w/["), false), "a pattern that does not compile hides nothing");
        assert!(bad.contains(Path::new("/w/ok"), false), "and the others still hide");
        assert!(hidden(&["/w/["]).is_empty());
    }

    #[test]
    fn patterns_are_read_as_they_are_written() {
        for (glob, dir_only, path) in [("/w/build", true, "/w/build"), ("/w/**/*.env", false, "/w/a/.env")] {
            let hidden = HiddenPaths::new(&[pattern(glob, dir_only)]);
            assert!(hidden.contains(Path::new(path), true), "{glob}");
            assert_eq!(hidden.contains(Path::new(path), false), !dir_only, "{glob}");
        }
    }
}

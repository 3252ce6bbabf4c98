//! What a tool may use: the capabilities a Store is built with. A built-in
//! gets the access its job needs; a third-party tool gets what it requested
//! ([`Allowance`], from its component) and the operator granted (the same
//! shape, in the settings' `toolGrants`), and nothing else.

use crate::grants::{Allowance, DirAccess, HostPattern};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolhost_primitives::path::is_inside;

/// Filesystem access to the working directories (the built-ins' grant).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FileAccess {
    /// No directory at all.
    #[default]
    None,
    /// The working directories and the read-only directories, read-only.
    ReadOnly,
    /// The working directories read-write (plus the `files` capability), the
    /// read-only directories read-only.
    ReadWrite,
}

impl FileAccess {
    /// The access a request's `workspace` names.
    pub fn of(workspace: Option<DirAccess>) -> FileAccess {
        match workspace {
            None => FileAccess::None,
            Some(DirAccess::ReadOnly) => FileAccess::ReadOnly,
            Some(DirAccess::ReadWrite) => FileAccess::ReadWrite,
        }
    }

    /// As a request's `workspace` names it.
    pub fn workspace(self) -> Option<DirAccess> {
        match self {
            FileAccess::None => None,
            FileAccess::ReadOnly => Some(DirAccess::ReadOnly),
            FileAccess::ReadWrite => Some(DirAccess::ReadWrite),
        }
    }
}

/// Per-call limits.
#[derive(Clone, Copy, Debug)]
pub struct CallLimits {
    /// Largest linear memory, in bytes.
    pub memory: usize,
    /// Wall-clock limit of one call.
    pub timeout: Duration,
}

/// What a tool may use in its Store.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grants {
    /// The working directories (built-ins).
    pub files: FileAccess,
    /// The process capability (starting commands, policed by the host).
    pub process: bool,
    /// Directories requested and granted, each preopened at its own path.
    pub dirs: Vec<(PathBuf, DirAccess)>,
    /// Environment variables requested and granted (their values are the
    /// host's, read when a call starts).
    pub env: Vec<String>,
    /// Secrets requested and granted, by name (their values are read from
    /// the user's store when a call starts).
    pub secrets: Vec<String>,
    /// Network hosts requested and granted, as [`HostPattern`]s (`*`,
    /// `*.name`, `name`, an address; each with an optional `:port`).
    pub hosts: Vec<String>,
    /// Memory the tool requested, and what the operator granted of it.
    pub memory: Option<(usize, Option<usize>)>,
    /// Time per call the tool requested, and what the operator granted.
    pub timeout: Option<(Duration, Option<Duration>)>,
}

impl Grants {
    /// Whether the tool may read some files (the working directories or a
    /// directory of its own): what the `search` capability needs.
    pub fn reads_files(&self) -> bool {
        self.files != FileAccess::None || !self.dirs.is_empty()
    }
}

/// Requested ∩ granted, and what was requested but not granted (one line
/// each, naming the grant that would add it).
pub fn intersect(requested: &Allowance, granted: &Allowance, project: &Path) -> (Grants, Vec<String>) {
    let mut out = Grants::default();
    let mut missing = Vec::new();
    if let Some(want) = requested.workspace {
        let access = granted.workspace.map(|g| g.min(want));
        out.files = FileAccess::of(access);
        match access {
            None => missing.push(format!("the working directories ({})", want.name())),
            Some(a) if a < want => missing.push("the working directories (read-write): granted read-only".into()),
            Some(_) => {}
        }
    }
    if requested.process {
        out.process = granted.process;
        if !granted.process {
            missing.push("the process capability".into());
        }
    }
    let home = std::env::home_dir();
    let granted_dirs: Vec<(PathBuf, DirAccess)> = granted
        .directories
        .iter()
        .filter_map(|d| resolve(&d.path, project, home.as_deref()).map(|p| (p, d.access)))
        .collect();
    let mut requested_dirs: Vec<(PathBuf, DirAccess)> = Vec::new();
    for want in &requested.directories {
        let Some(path) = resolve(&want.path, project, home.as_deref()) else {
            missing.push(format!("directory {} ({}): it does not exist", want.path, want.access.name()));
            continue;
        };
        requested_dirs.push((path.clone(), want.access));
        // The widest access any grant covering the directory gives, at most
        // what was asked for.
        let access = granted_dirs.iter().filter(|(g, _)| is_inside(&path, [g])).map(|(_, a)| *a).max();
        match access.map(|a| a.min(want.access)) {
            Some(a) => {
                if a < want.access {
                    missing.push(format!("directory {} (read-write): granted read-only", path.display()));
                }
                out.dirs.push((path, a));
            }
            None => missing.push(format!("directory {} ({})", path.display(), want.access.name())),
        }
    }
    // A grant inside a requested directory gives that part of it (a tool
    // asking for `/` granted `/srv/data` gets `/srv/data`), at the access
    // both give.
    for (granted, access) in &granted_dirs {
        if out.dirs.iter().any(|(p, _)| is_inside(granted, [p])) {
            continue;
        }
        let wanted = requested_dirs.iter().filter(|(r, _)| is_inside(granted, [r])).map(|(_, a)| *a).max();
        if let Some(wanted) = wanted {
            out.dirs.push((granted.clone(), (*access).min(wanted)));
        }
    }
    for name in &requested.env {
        if granted.env.contains(name) {
            out.env.push(name.clone());
        } else {
            missing.push(format!("variable {name}"));
        }
    }
    for name in &requested.secrets {
        if granted.secrets.contains(name) {
            out.secrets.push(name.clone());
        } else {
            missing.push(format!("secret {name}"));
        }
    }
    // Hosts: each requested pattern some grant covers, and each granted
    // pattern some request covers (a request for `*` and a grant of
    // `127.0.0.1:8080` give that address, and only it).
    let patterns = |list: &[String]| list.iter().filter_map(|h| HostPattern::parse(h)).collect::<Vec<_>>();
    let (asked, given) = (patterns(&requested.hosts), patterns(&granted.hosts));
    for want in &asked {
        if given.iter().any(|g| g.grants(want)) {
            out.hosts.push(want.to_string());
            continue;
        }
        let narrower: Vec<String> = given.iter().filter(|g| want.covers(g)).map(|g| g.to_string()).collect();
        missing.push(match narrower.is_empty() {
            true => format!("host {want}"),
            false => format!("host {want}: granted only {}", narrower.join(", ")),
        });
    }
    out.hosts.extend(given.iter().filter(|g| asked.iter().any(|a| a.covers(g))).map(|g| g.to_string()));
    out.hosts.sort();
    out.hosts.dedup();
    let mib = |m: u64| usize::try_from(m.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
    if let Some(m) = requested.memory_mib {
        out.memory = Some((mib(m), granted.memory_mib.map(mib)));
        note_short(m, granted.memory_mib, "memory", "MiB", &mut missing);
    }
    if let Some(ms) = requested.timeout_ms {
        out.timeout = Some((Duration::from_millis(ms), granted.timeout_ms.map(Duration::from_millis)));
        note_short(ms, granted.timeout_ms, "time", "ms", &mut missing);
    }
    (out, missing)
}

fn note_short(requested: u64, granted: Option<u64>, what: &str, unit: &str, missing: &mut Vec<String>) {
    match granted {
        Some(g) if g < requested => missing.push(format!("{what} {requested} {unit}: granted {g} {unit}")),
        Some(_) => {}
        None => missing.push(format!("{what} {requested} {unit}: the default applies (at most that)")),
    }
}

impl Grants {
    /// The limits of one call. A tool that requested memory or time gets
    /// what it asked for, at most what was granted; without a grant, at most
    /// the host's default. A tool that requested nothing gets the default.
    pub fn limits(&self, base: CallLimits) -> CallLimits {
        let memory = self.memory.map_or(base.memory, |(r, g)| r.min(g.unwrap_or(base.memory)));
        let timeout = self.timeout.map_or(base.timeout, |(r, g)| r.min(g.unwrap_or(base.timeout)));
        CallLimits { memory, timeout }
    }

    /// The largest memory limit these grants can give a call.
    pub fn most_memory(&self) -> Option<usize> {
        self.memory.and_then(|(r, g)| g.map(|g| r.min(g)))
    }
}

/// `path` (relative to `project`, absolute, or `~/…`) as an existing
/// directory's canonical path.
fn resolve(path: &str, project: &Path, home: Option<&Path>) -> Option<PathBuf> {
    crate::fsx::expand(path, project, home).canonicalize().ok().filter(|p| p.is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::DirRequest;

    fn dir(path: &str, access: DirAccess) -> DirRequest {
        DirRequest { path: path.into(), access }
    }

    #[test]
    fn a_tool_gets_what_it_requested_and_was_granted() {
        let project = tempfile::tempdir().unwrap();
        let root = project.path().canonicalize().unwrap();
        for d in ["data", "out", "other"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        let requested = Allowance {
            directories: vec![
                dir("data", DirAccess::ReadOnly),
                dir("out", DirAccess::ReadWrite),
                dir("nope", DirAccess::ReadOnly),
            ],
            hosts: vec!["api.example.com:443".into(), "evil.example:80".into()],
            env: vec!["A".into(), "B".into()],
            memory_mib: Some(64),
            timeout_ms: Some(9_000),
            ..Allowance::default()
        };
        let granted = Allowance {
            // The whole project read-only, `other` read-write: `out` gets
            // read-only (not what it asked), `data` read-only.
            directories: vec![
                dir(&root.display().to_string(), DirAccess::ReadOnly),
                dir("other", DirAccess::ReadWrite),
            ],
            hosts: vec!["api.example.com".into()],
            env: vec!["A".into(), "C".into()],
            memory_mib: Some(32),
            timeout_ms: None,
            ..Allowance::default()
        };
        let (g, missing) = intersect(&requested, &granted, &root);
        assert_eq!(g.dirs, [(root.join("data"), DirAccess::ReadOnly), (root.join("out"), DirAccess::ReadOnly)]);
        assert_eq!(g.env, ["A"]);
        assert_eq!(g.hosts, ["api.example.com:443"]);
        let base = super::CallLimits { memory: 512 << 20, timeout: Duration::from_secs(2) };
        let limits = g.limits(base);
        assert_eq!(limits.memory, 32 << 20, "asked 64, granted 32");
        assert_eq!(limits.timeout, Duration::from_secs(2), "no grant: never beyond the default");
        let more = Allowance { timeout_ms: Some(60_000), ..granted.clone() };
        assert_eq!(intersect(&requested, &more, &root).0.limits(base).timeout, Duration::from_secs(9));
        for expected in [
            "directory nope (read-only): it does not exist",
            "(read-write): granted read-only",
            "variable B",
            "host evil.example:80",
            "memory 64 MiB: granted 32 MiB",
        ] {
            assert!(missing.iter().any(|m| m.contains(expected)), "{expected} in {missing:?}");
        }
    }

    #[test]
    fn a_grant_inside_a_requested_directory_gives_that_part() {
        let project = tempfile::tempdir().unwrap();
        let root = project.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("wide/narrow")).unwrap();
        std::fs::create_dir(root.join("elsewhere")).unwrap();
        let requested = Allowance { directories: vec![dir("wide", DirAccess::ReadOnly)], ..Allowance::default() };
        let granted = Allowance {
            directories: vec![dir("wide/narrow", DirAccess::ReadWrite), dir("elsewhere", DirAccess::ReadOnly)],
            ..Allowance::default()
        };
        let (g, missing) = intersect(&requested, &granted, &root);
        assert_eq!(g.dirs, [(root.join("wide/narrow"), DirAccess::ReadOnly)], "inside, at the access both give");
        assert_eq!(missing, [format!("directory {} (read-only)", root.join("wide").display())]);
    }

    #[test]
    fn the_working_directories_and_the_process_are_granted_as_asked() {
        let project = tempfile::tempdir().unwrap();
        let ask = |workspace, process| Allowance { workspace, process, ..Allowance::default() };
        let rw = ask(Some(DirAccess::ReadWrite), true);
        let (g, missing) = intersect(&rw, &rw, project.path());
        assert_eq!((g.files, g.process, missing.len()), (FileAccess::ReadWrite, true, 0));
        let (g, missing) = intersect(&rw, &ask(Some(DirAccess::ReadOnly), false), project.path());
        assert_eq!((g.files, g.process), (FileAccess::ReadOnly, false));
        assert_eq!(missing, ["the working directories (read-write): granted read-only", "the process capability"]);
        let (g, _) = intersect(&ask(Some(DirAccess::ReadOnly), false), &rw, project.path());
        assert_eq!((g.files, g.process), (FileAccess::ReadOnly, false), "never more than was asked");
        let (g, missing) = intersect(&ask(None, false), &rw, project.path());
        assert_eq!((g.files, g.process, missing.len()), (FileAccess::None, false, 0));
    }

    #[test]
    fn hosts_are_what_both_sides_name() {
        let project = tempfile::tempdir().unwrap();
        let hosts =
            |list: &[&str]| Allowance { hosts: list.iter().map(|h| h.to_string()).collect(), ..Allowance::default() };
        let (g, missing) = intersect(&hosts(&["*"]), &hosts(&["*", "127.0.0.1:8080"]), project.path());
        assert_eq!(g.hosts, ["*", "127.0.0.1:8080"], "the address is granted beside the public hosts");
        assert!(missing.is_empty());
        let (g, missing) = intersect(&hosts(&["*"]), &hosts(&["docs.rs", "*.example.com:443"]), project.path());
        assert_eq!(g.hosts, ["*.example.com:443", "docs.rs"]);
        assert_eq!(missing, ["host *: granted only docs.rs, *.example.com:443"]);
        let (g, _) = intersect(&hosts(&["api.example.com:443"]), &hosts(&["*"]), project.path());
        assert_eq!(g.hosts, ["api.example.com:443"], "never more than was asked");
        let (g, missing) = intersect(&hosts(&["a.org"]), &hosts(&["b.org"]), project.path());
        assert!(g.hosts.is_empty());
        assert_eq!(missing, ["host a.org"]);
        // `*` is public hosts only: a tool asking for the cloud metadata
        // address or loopback does not get it from a grant of `*`.
        for private in ["169.254.169.254:80", "127.0.0.1", "[::1]:8080", "10.1.2.3"] {
            let (g, missing) = intersect(&hosts(&[private]), &hosts(&["*"]), project.path());
            assert!(g.hosts.is_empty(), "{private}: {:?}", g.hosts);
            assert_eq!(missing.len(), 1, "{private}");
        }
        let (g, _) = intersect(&hosts(&["8.8.8.8:53"]), &hosts(&["*"]), project.path());
        assert_eq!(g.hosts, ["8.8.8.8:53"], "a public address is a public host");
    }

    #[test]
    fn nothing_granted_means_nothing() {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join("data")).unwrap();
        let requested = Allowance {
            directories: vec![dir("data", DirAccess::ReadOnly)],
            env: vec!["HOME".into()],
            ..Allowance::default()
        };
        let (g, missing) = intersect(&requested, &Allowance::default(), project.path());
        assert!(g.dirs.is_empty() && g.env.is_empty());
        assert_eq!(missing.len(), 2);
    }
}

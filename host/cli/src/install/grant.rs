//! The grants review of `install`: what a component requests and is not
//! granted yet, item by item, asked at the terminal and written to the
//! workspace's local settings.

use super::*;

impl Installer<'_> {
    /// Shows what `tools` (one component's) are granted already, grants
    /// what they lack as the operator answers (all with `yes`; none without
    /// a terminal), in the local settings, and says what is left and how to
    /// grant it. The tools of one component request the same: the operator
    /// is asked once, and each tool is granted the answer by its name.
    pub(super) fn grant(&self, tools: &[LoadedTool], yes: bool) -> anyhow::Result<()> {
        let tool = &tools[0];
        let name = &tool.spec().name;
        let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
        let existing = self.settings.tool_grants.get(name).cloned().unwrap_or_default();
        println!("already granted: {}", existing.describe());
        // What it requests and `toolGrants` do not give it yet, item by item.
        let project = &self.host.working_dirs()[0];
        let wanted: Vec<Allowance> = items(tool.requests())
            .into_iter()
            .filter(|item| !toolhost::grants::intersect(item, &existing, project).1.is_empty())
            .collect();
        let answers = if wanted.is_empty() {
            Vec::new()
        } else if yes {
            vec![true; wanted.len()]
        } else if crate::prompt::at_terminal() {
            ask(name, &wanted).context("reading the answers")?
        } else {
            println!("(not at a terminal, so nothing is asked and nothing granted; --yes grants it all)");
            vec![false; wanted.len()]
        };
        let (mut granted, mut left) = (Allowance::default(), Allowance::default());
        for (item, yes) in wanted.iter().zip(&answers) {
            if *yes { granted.add(item) } else { left.add(item) }
        }
        let local = self.settings.local_file.as_deref();
        if !granted.is_empty() {
            let local = local.context("there is no local settings file to write the grants to")?;
            for name in &names {
                toolhost::grants::persist::add_tool_grant(local, name, &granted)?;
            }
            self.keep_trusted(local);
            let keys: Vec<String> = names.iter().map(|n| format!("toolGrants.{n}")).collect();
            println!("granted:         {} (in {} of {})", granted.describe(), keys.join(", "), local.display());
            if matches!(self.settings.trust, Some((_, false))) {
                println!(
                    "note:            {} is not trusted (new, or changed since `toolhost trust`), so its grants \
                     do not count yet: review it, then run `toolhost trust`",
                    local.display()
                );
            }
        }
        if !left.is_empty() {
            let file = local.map_or("a settings file".into(), |f| f.display().to_string());
            println!("not granted:     {}", left.describe());
            println!("To grant it, add this to {file} (or install again at a terminal, or with --yes):");
            let each: serde_json::Map<String, serde_json::Value> =
                names.iter().map(|n| (n.to_string(), json!(left))).collect();
            println!("{}", serde_json::to_string_pretty(&json!({"toolGrants": each}))?);
        }
        let mut will_have = existing;
        will_have.add(&granted);
        for lack in refused_imports(tool, &will_have, project) {
            println!("warning:         {name} will not load until it is granted {lack}");
        }
        Ok(())
    }
}

/// What `requests` asks for, one grant per item: the working directories,
/// each directory, host, variable and secret, the process capability,
/// memory, time.
pub(super) fn items(requests: &Allowance) -> Vec<Allowance> {
    // Every field named, so that a new kind of request is not left out.
    let Allowance { workspace, directories, hosts, env, secrets, process, memory_mib, timeout_ms } = requests;
    let one = Allowance::default;
    let mut items: Vec<Allowance> = workspace.map(|a| Allowance { workspace: Some(a), ..one() }).into_iter().collect();
    items.extend(directories.iter().map(|d| Allowance { directories: vec![d.clone()], ..one() }));
    items.extend(hosts.iter().map(|h| Allowance { hosts: vec![h.clone()], ..one() }));
    items.extend(env.iter().map(|e| Allowance { env: vec![e.clone()], ..one() }));
    items.extend(secrets.iter().map(|s| Allowance { secrets: vec![s.clone()], ..one() }));
    items.extend(process.then(|| Allowance { process: true, ..one() }));
    items.extend(memory_mib.map(|m| Allowance { memory_mib: Some(m), ..one() }));
    items.extend(timeout_ms.map(|t| Allowance { timeout_ms: Some(t), ..one() }));
    items
}

/// Asks the operator which of `wanted` to grant, on standard error (the
/// terminal, also when the review on stdout goes to a file): all, none, or
/// item by item. Anything but a yes is a no.
pub(super) fn ask(name: &str, wanted: &[Allowance]) -> std::io::Result<Vec<bool>> {
    eprintln!("\n{name} requests, and is not granted yet:");
    for (n, item) in wanted.iter().enumerate() {
        eprintln!("  {}. {}", n + 1, item.describe());
    }
    let question = format!("Grant {name} all of this? [y] all, [n] none, [c] choose one by one (default: n) ");
    let answer = crate::prompt::ask_line(&question)?.to_ascii_lowercase();
    match answer.as_str() {
        "y" | "yes" => Ok(vec![true; wanted.len()]),
        "c" | "choose" => {
            wanted.iter().map(|item| crate::prompt::ask_yes(&format!("  grant {}? [y/N] ", item.describe()))).collect()
        }
        _ => Ok(vec![false; wanted.len()]),
    }
}

/// The grants `tool` would lack to load at all, given `granted`: a
/// capability it imports needs what its requests ask for it (the loader
/// refuses it otherwise).
pub(super) fn refused_imports(tool: &LoadedTool, granted: &Allowance, project: &Path) -> Vec<&'static str> {
    let (grants, _) = toolhost::grants::intersect(tool.requests(), granted, project);
    tool.shape()
        .capabilities
        .iter()
        .filter_map(|cap| match cap {
            Capability::Files => {
                (grants.files != FileAccess::ReadWrite).then_some("the working directories (read-write)")
            }
            Capability::Process => (!grants.process).then_some("the process capability"),
            Capability::Search => (!grants.reads_files()).then_some("files to read (the workspace or a directory)"),
            // Never granted: the loader refuses it from anything but the built-in.
            Capability::Tools => Some("calling other tools (the Script built-in's alone)"),
            Capability::Progress
            | Capability::Session
            | Capability::Output
            | Capability::Shell
            | Capability::Policy => None,
        })
        .collect()
}

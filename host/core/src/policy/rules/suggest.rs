//! The rule to suggest when a call is asked: the narrowest rule that would
//! allow the same call again, never one that allows more than it should.

use super::*;

/// Rules that would allow the call if it needs approval: the narrowest the
/// host can name from what the tool declares (its commands, the hosts it
/// connects to, the paths it touches, else the tool as a whole). Empty when
/// no rule can (a command substitution).
pub(crate) fn suggest(subject: &Subject<'_>, places: &Places) -> Vec<String> {
    let tool = subject.tool;
    let mut out: Vec<String> = Vec::new();
    // Printed as a rule prints: escaped where the content needs it.
    let mut add = |tool: &str, content: String| {
        let rule = Rule { tool: tool.to_string(), content: Some(content) }.to_string();
        if !out.contains(&rule) {
            out.push(rule);
        }
    };
    if let Some(parsed) = subject.command {
        if parsed.parse_error || parsed.command_substitution || parsed.process_substitution {
            return Vec::new();
        }
        for cmd in parsed.commands.iter().filter(|c| !shell::command_read_only(c)) {
            // The command a timing wrapper runs (`timeout 60 make` → `make`).
            let Some((argv, dynamic)) = candidates(cmd, false).pop() else { return Vec::new() };
            if dynamic.first() == Some(&true) {
                return Vec::new();
            }
            let words = |n: usize| argv[..n].iter().map(|w| shell::quote(w)).collect::<Vec<_>>().join(" ");
            // `git commit …` → `Tool(git commit:*)`; programs that run other
            // programs or code get only the exact command.
            let subcommand = argv.len() > 2
                && !runs_anything(program_name(&argv[0]))
                && !dynamic.get(1).copied().unwrap_or(true)
                && argv[1].chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
                && argv[1].chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'));
            if subcommand {
                add(tool, format!("{}:*", words(2)));
            } else if dynamic.iter().any(|&d| d) {
                return Vec::new();
            } else {
                add(tool, words(argv.len()));
            }
        }
    } else if !subject.addresses.is_empty() {
        for address in &subject.addresses {
            let Some(host) = host_of(address) else { return Vec::new() };
            add(tool, format!("domain:{host}"));
        }
    } else if !subject.paths.is_empty() {
        for &(written, access) in &subject.paths {
            let path = normalize(&places.cwd.join(written));
            let family = match access {
                PathAccess::Read | PathAccess::Search => READ_FAMILY,
                PathAccess::Edit => EDIT_FAMILY,
            };
            let written = match path.strip_prefix(&places.cwd) {
                Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
                Ok(rel) => format!("./{}", globset::escape(&rel.to_string_lossy())),
                Err(_) => format!("/{}", globset::escape(&path.to_string_lossy())),
            };
            add(family, written);
        }
    } else {
        out.push(tool.to_string());
    }
    out
}

/// Programs whose arguments are another program or code: a prefix rule on
/// them would allow anything. Beyond the wrappers, shells, interpreters and
/// the programs that run code or commands given as arguments.
pub(super) fn runs_anything(program: &str) -> bool {
    shell::is_wrapper(program)
        || matches!(
            program,
            "eval"
                | "source"
                | "."
                | "bash"
                | "sh"
                | "dash"
                | "zsh"
                | "ksh"
                | "fish"
                | "busybox"
                | "python"
                | "python3"
                | "node"
                | "deno"
                | "bun"
                | "ruby"
                | "perl"
                | "php"
                | "lua"
                | "npx"
                | "bunx"
                | "pnpx"
                | "ssh"
                | "watch"
                | "parallel"
                | "awk"
                | "gawk"
                | "sed"
        )
}

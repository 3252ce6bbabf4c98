//! `toolhost uninstall NAME`: the component out of the plugins directory,
//! with the files beside it and its grants.

use super::*;

impl Installer<'_> {
    /// `toolhost uninstall NAME [--keep-grants]`.
    pub fn uninstall(&self, name: &str, keep_grants: bool) -> anyhow::Result<ExitCode> {
        let installed = self.installed()?;
        let matching: Vec<&Installed> =
            installed.iter().filter(|i| i.holds(name) || i.path.file_stem().is_some_and(|s| s == name)).collect();
        if matching.is_empty() {
            if self.host.tool(name).is_some_and(|t| *t.origin() == Origin::Builtin) {
                eprintln!(
                    "toolhost: {name} is a built-in tool, which cannot be uninstalled; to keep it from the model, \
                     deny it (--deny {name}, or \"{name}\" in permissions.deny of a settings file)"
                );
                return Ok(ExitCode::FAILURE);
            }
            let list: Vec<String> = installed
                .iter()
                .map(|i| {
                    let file = i.path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned());
                    match &i.names {
                        Ok(tools) => format!("{} ({file})", tools.join(", ")),
                        Err(_) => format!("{file} (does not load)"),
                    }
                })
                .collect();
            eprintln!(
                "toolhost: no installed tool is called {name}; the plugins directory {} holds {}",
                self.dir.display(),
                if list.is_empty() { "none".into() } else { list.join(", ") }
            );
            return Ok(ExitCode::FAILURE);
        }
        let mut names = vec![name.to_string()];
        for i in &matching {
            remove(&i.path)?;
            remove(&beside(&i.path, "minisig"))?;
            remove(&beside(&i.path, RECORD))?;
            remove(&toolhost::grants::wassette::beside(&i.path))?;
            remove(&toolhost::manifest::beside(&i.path))?;
            let held = i.names.as_ref().map_or_else(|_| name.to_string(), |n| n.join(", "));
            println!("removed {held}: {}", i.path.display());
            for tool in i.names.iter().flatten() {
                if !names.contains(tool) {
                    names.push(tool.clone());
                }
            }
        }
        if let (false, Some(local)) = (keep_grants, &self.settings.local_file) {
            for tool in &names {
                if toolhost::grants::persist::remove_tool_grant(local, tool)? {
                    self.keep_trusted(local);
                    println!("removed toolGrants.{tool} from {}", local.display());
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

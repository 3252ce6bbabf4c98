//! MCP servers configured as Claude Code configures them: the `mcpServers`
//! object of the settings files and of a workspace's `.mcp.json`, each
//! server `{"command", "args", "env"}` (stdio) or `{"type": "http", "url",
//! "headers"}` (streamable HTTP), `${VAR}` and `${VAR:-default}` expanded
//! from the host's environment.

use serde::Deserialize;
use std::collections::BTreeMap;

/// A server as a settings file writes it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServerShape {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// How to reach a configured MCP server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpServer {
    /// A program the host starts, speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it.
        env: BTreeMap<String, String>,
    },
    /// A server at a URL, over streamable HTTP.
    Http {
        /// Its endpoint.
        url: String,
        /// Headers sent with every request (an `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

/// A configured server, or why its configuration cannot be used, with the
/// file it is written in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfiguredServer {
    /// The server, or what is wrong with its entry.
    pub server: Result<McpServer, String>,
    /// The file that configures it.
    pub file: String,
}

impl ServerShape {
    /// One line for a review (`toolhost trust`).
    pub(crate) fn describe(&self) -> String {
        match (&self.command, &self.url) {
            (Some(command), _) => std::iter::once(command.as_str())
                .chain(self.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            (None, Some(url)) => url.clone(),
            (None, None) => "(neither a command nor a url)".into(),
        }
    }

    /// The server this entry describes, its `${…}` expanded by `var`.
    pub(crate) fn read(&self, var: &dyn Fn(&str) -> Option<String>) -> Result<McpServer, String> {
        let x = |text: &str| expand(text, var);
        let map = |m: &BTreeMap<String, String>| -> Result<BTreeMap<String, String>, String> {
            m.iter().map(|(k, v)| Ok((k.clone(), x(v)?))).collect()
        };
        match (self.kind.as_deref(), &self.command, &self.url) {
            (None | Some("stdio"), Some(command), _) => {
                let command = x(command)?;
                if command.trim().is_empty() {
                    return Err("its `command` is empty".into());
                }
                let args = self.args.iter().map(|a| x(a)).collect::<Result<_, _>>()?;
                Ok(McpServer::Stdio { command, args, env: map(&self.env)? })
            }
            (None | Some("http"), None, Some(url)) | (Some("http"), Some(_), Some(url)) => {
                let url = x(url)?;
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!("its `url` ({url}) is not an http:// or https:// URL"));
                }
                Ok(McpServer::Http { url, headers: map(&self.headers)? })
            }
            (Some("sse"), _, _) => Err("the `sse` transport (deprecated in MCP) is not supported; \
                 use `\"type\": \"http\"` with the server's streamable HTTP endpoint"
                .into()),
            (Some("stdio"), None, _) => Err("a stdio server needs a `command`".into()),
            (Some("http"), _, None) => Err("an http server needs a `url`".into()),
            (None, None, None) => Err("it has neither a `command` (stdio) nor a `url` (http)".into()),
            (Some(other), _, _) => Err(format!("its type `{other}` is not one toolhost speaks (stdio or http)")),
        }
    }
}

/// `text` with `${VAR}` replaced by the variable's value and
/// `${VAR:-default}` by the value or, when unset or empty, the default; a
/// `$` not starting such a form stays. An unset variable without a default
/// is an error naming it.
pub(crate) fn expand(text: &str, var: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let Some(end) = rest[at..].find('}') else {
            out.push_str(&rest[at..]);
            return Ok(out);
        };
        let inner = &rest[at + 2..at + end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (var(name).filter(|v| !v.is_empty() || default.is_none()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(format!("the environment variable `{name}` it names is not set")),
        }
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_expand_with_defaults() {
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer s3cret");
        assert_eq!(expand("${NOPE:-/tmp}/x", &env).unwrap(), "/tmp/x");
        assert_eq!(expand("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(expand("${EMPTY}", &env).unwrap(), "");
        assert_eq!(expand("$HOME ${unclosed", &env).unwrap(), "$HOME ${unclosed");
        assert!(expand("${NOPE}", &env).unwrap_err().contains("`NOPE`"));
    }

    #[test]
    fn each_kind_of_entry_is_read() {
        let shape = |v: serde_json::Value| serde_json::from_value::<ServerShape>(v).unwrap();
        let stdio = shape(serde_json::json!({"command": "npx", "args": ["-y", "${TOKEN}"], "env": {"K": "${TOKEN}"}}));
        let McpServer::Stdio { command, args, env: vars } = stdio.read(&env).unwrap() else { panic!() };
        assert_eq!((command.as_str(), args[1].as_str(), vars["K"].as_str()), ("npx", "s3cret", "s3cret"));
        assert_eq!(stdio.describe(), "npx -y ${TOKEN}", "reviews show what is written");
        let http = shape(serde_json::json!({"type": "http", "url": "https://x/mcp", "headers": {"A": "${TOKEN}"}}));
        assert!(matches!(http.read(&env).unwrap(), McpServer::Http { headers, .. } if headers["A"] == "s3cret"));
        for (bad, why) in [
            (serde_json::json!({"type": "sse", "url": "https://x"}), "sse"),
            (serde_json::json!({"type": "ws", "url": "https://x"}), "ws"),
            (serde_json::json!({}), "neither"),
            (serde_json::json!({"url": "file:///x"}), "not an http"),
            (serde_json::json!({"command": "${NOPE}"}), "NOPE"),
            (serde_json::json!({"type": "stdio", "url": "https://x"}), "needs a `command`"),
        ] {
            let e = shape(bad.clone()).read(&env).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}

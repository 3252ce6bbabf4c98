//! The `Bash` tool: runs a command through the host's process capability.

use toolhost_sdk::process::{self, ExitStatus, Program, SpawnOptions};
use toolhost_sdk::{
    Context, Deserialize, ErrorKind, InterruptBehavior, JsonSchema, Output, Permission, Tool, ToolError, export_tool,
    shell,
};

/// Default timeout, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest timeout, in milliseconds.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Bytes of output kept from the start and from the end; the middle is cut.
pub const KEEP_HEAD: usize = 15_000;
pub const KEEP_TAIL: usize = 15_000;
/// Bytes of each output chunk forwarded as progress.
const PROGRESS_BYTES: usize = 4096;

/// Input of `Bash`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashInput {
    /// The command to execute
    pub command: String,
    /// Optional timeout in milliseconds (max 600000)
    #[schemars(range(min = 1, max = 600000))]
    pub timeout: Option<u64>,
    /// Clear, concise description of what this command does in 5-10 words, in active voice.
    pub description: Option<String>,
    /// Set to true to run this command in the background. Use BashOutput to read the output later.
    pub run_in_background: Option<bool>,
}

pub struct Bash;

impl Tool for Bash {
    type Input = BashInput;
    const NAME: &'static str = "Bash";
    const COMMAND_FIELD: Option<&'static str> = Some("command");
    // A failed command usually means the plan went wrong: the calls beside
    // it in the same turn are cancelled.
    const CANCELS_SIBLINGS_ON_FAILURE: bool = true;
    const DESCRIPTION: &'static str = "Executes a bash command in the working directory, with a timeout.";
    const INTERRUPT_BEHAVIOR: InterruptBehavior = InterruptBehavior::Cancel;

    fn prompt() -> String {
        PROMPT.to_string()
    }
    fn search_hint() -> Option<String> {
        Some("shell command terminal run execute bash".into())
    }
    fn is_read_only(input: &BashInput) -> bool {
        shell::classify(&input.command).read_only
    }
    fn is_concurrency_safe(input: &BashInput) -> bool {
        Self::is_read_only(input)
    }

    fn validate_input(input: &BashInput, _: &Context) -> Result<(), ToolError> {
        if input.command.trim().is_empty() {
            return Err(ToolError::invalid_input("The command is empty."));
        }
        match input.timeout {
            Some(t) if t > MAX_TIMEOUT_MS => Err(ToolError::invalid_input(format!(
                "timeout is {t} ms; the most is {MAX_TIMEOUT_MS} ms (10 minutes). Use run_in_background for longer commands."
            ))),
            _ => Ok(()),
        }
    }

    fn check_permissions(input: &BashInput, _: &Context) -> Permission {
        let verdict = shell::classify(&input.command);
        if verdict.read_only {
            return Permission::Passthrough;
        }
        Permission::Ask {
            message: format!(
                "Bash wants to run `{}`, which is not read-only ({}).",
                clip(&input.command, 200),
                verdict.reason.unwrap_or_default()
            ),
            suggested_rules: suggested_rule(&input.command).into_iter().collect(),
        }
    }

    fn call(input: BashInput, ctx: &Context) -> Result<Output, ToolError> {
        let timeout_ms = input.timeout.unwrap_or(DEFAULT_TIMEOUT_MS).min(MAX_TIMEOUT_MS);
        let options = SpawnOptions {
            program: Program::Shell(input.command.clone()),
            cwd: None,
            env: Vec::new(),
            stdin: None,
            timeout_ms: if input.run_in_background == Some(true) { u64::MAX / 2 } else { timeout_ms },
        };
        let refused = |e: process::ProcessError| {
            ToolError::new(
                ErrorKind::PermissionDenied,
                format!("Bash could not run the command: {}", process::describe(&e)),
            )
        };
        if input.run_in_background == Some(true) {
            let id = process::start_background(&options).map_err(refused)?;
            return Ok(Output::text(format!(
                "Command running in background with ID: {id}. Use BashOutput with bash_id \"{id}\" to read its output, and KillShell to stop it."
            )));
        }
        let child = process::spawn(&options).map_err(refused)?;
        let mut out = Capped::new(KEEP_HEAD, KEEP_TAIL);
        while let Some(chunks) = child.read(250) {
            for chunk in chunks {
                let shown = &chunk.data[..chunk.data.len().min(PROGRESS_BYTES)];
                ctx.progress(&String::from_utf8_lossy(shown));
                out.push(&chunk.data);
            }
        }
        let finished = child.wait();
        let mut output = render(out.text(), finished.status, finished.timed_out, finished.cancelled, timeout_ms);
        if !finished.unconfined.is_empty() {
            ctx.log(toolhost_sdk::LogLevel::Warn, &format!("ran unconfined: {}", finished.unconfined.join("; ")));
            if let Some(toolhost_sdk::Content::Text(text)) = output.content.first_mut() {
                text.push_str(&format!(
                    "\n[The host could not confine this command: {}]",
                    finished.unconfined.join("; ")
                ));
            }
        }
        let code = match finished.status {
            ExitStatus::Exited(c) => Some(c),
            ExitStatus::Signaled(_) => None,
        };
        Ok(output.with_structured(toolhost_sdk::serde_json::json!({
            "exitCode": code,
            "timedOut": finished.timed_out,
            "cancelled": finished.cancelled,
            "outputBytes": out.total(),
            "unconfined": finished.unconfined,
        })))
    }
}

/// The result for a finished command: its output, and why it failed if it did.
pub fn render(output: String, status: ExitStatus, timed_out: bool, cancelled: bool, timeout_ms: u64) -> Output {
    let mut text = output.trim_end_matches('\n').to_string();
    let failure = if timed_out {
        Some(format!("Command timed out after {timeout_ms} ms and was killed."))
    } else if cancelled {
        Some("Command was cancelled.".to_string())
    } else {
        match status {
            ExitStatus::Exited(0) => None,
            ExitStatus::Exited(code) => Some(format!("Exit code {code}")),
            ExitStatus::Signaled(sig) => Some(format!("Command was killed by signal {sig}.")),
        }
    };
    if text.is_empty() && failure.is_none() {
        text = "(no output)".into();
    }
    match failure {
        None => Output::text(text),
        Some(why) => {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&why);
            Output::text(text).into_error()
        }
    }
}

/// Output kept as its first `head` bytes and last `tail` bytes, counting what
/// is cut in between: the tool's memory stays bounded whatever the command
/// prints.
pub struct Capped {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    keep_head: usize,
    keep_tail: usize,
    total: u64,
}

impl Capped {
    pub fn new(keep_head: usize, keep_tail: usize) -> Self {
        Capped { head: Vec::new(), tail: Default::default(), keep_head, keep_tail, total: 0 }
    }

    pub fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        let room = self.keep_head - self.head.len();
        let take = room.min(data.len());
        self.head.extend_from_slice(&data[..take]);
        data = &data[take..];
        if data.len() >= self.keep_tail {
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.keep_tail..]);
        } else {
            let over = (self.tail.len() + data.len()).saturating_sub(self.keep_tail);
            self.tail.drain(..over);
            self.tail.extend(data);
        }
    }

    /// Bytes pushed in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The kept text (invalid UTF-8 replaced), with a note of what was cut.
    pub fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        let cut = self.total - self.head.len() as u64 - self.tail.len() as u64;
        if cut > 0 {
            text.push_str(&format!(
                "\n\n... [{cut} bytes of output cut; the first {} and last {} bytes are shown] ...\n\n",
                self.keep_head, self.keep_tail
            ));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = a.to_vec();
        tail.extend_from_slice(b);
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}

/// `Bash(git commit:*)` for `git commit -m x`: the first two words of the
/// first command.
fn suggested_rule(command: &str) -> Option<String> {
    let parsed = shell::parse(command);
    let first = parsed.commands.first()?;
    let words: Vec<&str> = first.argv.iter().take(2).map(String::as_str).filter(|w| !w.starts_with('-')).collect();
    (!words.is_empty()).then(|| format!("Bash({}:*)", words.join(" ")))
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() > max { format!("{}…", s.chars().take(max).collect::<String>()) } else { s.to_string() }
}

const PROMPT: &str = "Executes a given bash command with an optional timeout, in the working directory.

Usage notes:
  - The command argument is required.
  - You can specify an optional timeout in milliseconds (up to 600000ms / 10 minutes). If not specified, commands will timeout after 120000ms (2 minutes).
  - Write a clear, concise description of what this command does in 5-10 words.
  - If the output exceeds 30000 characters, the middle is cut: the first and last 15000 bytes are returned.
  - You can use the `run_in_background` parameter to run the command in the background, then read its output with BashOutput and stop it with KillShell.
  - Avoid using Bash with `find`, `grep`, `cat`, `head`, `tail`, `sed`, `awk` or `echo` when a dedicated tool (Glob, Grep, Read, Edit, Write) does the job.
  - Separate commands with ';' or '&&'; do not use newlines except in quoted strings.
  - The command runs confined by the host: it can write only inside the working directories, and has no network unless granted.
  - A non-zero exit code makes the result an error that still carries the output.";

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests).
toolhost_sdk::requests!(r#"{"process": true}"#);

export_tool!(Bash);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_capped_head_and_tail() {
        let mut c = Capped::new(4, 4);
        c.push(b"abcdefghij");
        c.push(b"klmn");
        assert_eq!(c.text(), "abcd\n\n... [6 bytes of output cut; the first 4 and last 4 bytes are shown] ...\n\nklmn");
        let mut small = Capped::new(4, 4);
        small.push(b"ab");
        small.push(b"cdef");
        assert_eq!(small.text(), "abcdef");
    }

    #[test]
    fn failures_keep_the_output() {
        let out = render("partial\n".into(), ExitStatus::Exited(2), false, false, 1000);
        assert!(out.is_error);
        assert_eq!(out.content, vec![toolhost_sdk::Content::Text("partial\nExit code 2".into())]);
        let ok = render(String::new(), ExitStatus::Exited(0), false, false, 1000);
        assert_eq!(ok.content, vec![toolhost_sdk::Content::Text("(no output)".into())]);
        assert!(render(String::new(), ExitStatus::Signaled(9), true, false, 500).is_error);
    }
}

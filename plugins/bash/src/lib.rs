//! The `Bash` tool: runs a command through the host's process capability,
//! and reports it as Claude Code 2.1.88 does (see [`output`] and
//! [`semantics`]).
//!
//! `dangerouslyDisableSandbox` never lifts toolhost's confinement: every
//! command runs confined whatever the call says. What the flag does is make
//! the call ask for approval (in Claude Code it takes the command out of the
//! sandbox, so the sandbox's automatic approval no longer covers it); deny
//! rules still come first, and bypassPermissions runs it, confined.

pub mod output;
pub mod semantics;
pub mod stale;

use toolhost_sdk::process::{self, BackgroundTask, ExitStatus, Program, SpawnOptions};
use toolhost_sdk::{
    Content, Context, Deserialize, ErrorKind, InterruptBehavior, JsonSchema, LogLevel, Output, Permission, Tool,
    ToolError, export_tool, serde_json, shell,
};

/// Default timeout, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest timeout, in milliseconds (longer ones are cut to it).
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// How long a background command may run before it is stopped, by default
/// and at most, in milliseconds (Claude Code 2.1.328, chunk-sdk1kvcc.js
/// `iNa = 18e5, H5o = 72e5`).
pub const BACKGROUND_DEFAULT_MS: u64 = 1_800_000;
pub const BACKGROUND_MAX_MS: u64 = 7_200_000;
/// Bytes of output kept for the result: the host saves a result over
/// [`Bash::MAX_RESULT_SIZE_CHARS`] to a file the model can read, with a
/// preview, and the rest of a larger output is dropped.
pub const KEEP_BYTES: usize = 8 << 20;
/// Bytes of each output chunk forwarded as progress.
const PROGRESS_BYTES: usize = 4096;
/// What Claude Code reports for a command it killed at its timeout (SIGTERM's
/// 128 + 15) and for one the user interrupted (SIGKILL's 128 + 9).
const TIMED_OUT_CODE: i32 = 143;
const INTERRUPTED_CODE: i32 = 137;

/// Input of `Bash`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashInput {
    /// The command to execute
    pub command: String,
    /// Optional timeout in milliseconds (max 600000 for a foreground command)
    pub timeout: Option<f64>,
    /// What the command does, in active voice and plain words (never "complex" or "risky"). Say
    /// what it achieves without repeating its text, flags or file paths: the user often reads this
    /// description without the command. For a simple command 5 to 10 words are enough: `git
    /// status` is "Show working tree status", `npm install` is "Install package dependencies". For a
    /// command that is hard to read at a glance (pipes, unusual flags), say enough to make its
    /// effect clear: `find . -name "*.tmp" -exec rm {} \;` is "Find and delete all .tmp files
    /// recursively".
    pub description: Option<String>,
    // One line: the text is Claude Code's, compared whole.
    #[schemars(
        description = "Set to true to run this command in the background. With it, `timeout` limits how long the command may run in the background before it is stopped (default 1800000 ms, max 7200000 ms)."
    )]
    pub run_in_background: Option<bool>,
    /// Set to true to ask to run this command outside the sandbox. toolhost never lifts its
    /// sandbox: the call asks the user for approval and the command still runs sandboxed.
    #[serde(rename = "dangerouslyDisableSandbox")]
    pub dangerously_disable_sandbox: Option<bool>,
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
    const MAX_RESULT_SIZE_CHARS: Option<u64> = Some(30_000);
    // Claude Code's Bash checks nothing beyond its schema, but its schema
    // refuses control characters in the command, which JSON Schema cannot
    // say: that check is made here.
    const VALIDATES_INPUT: bool = true;

    fn prompt() -> String {
        include_str!("prompt.md").to_string()
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
        if hidden_control_character(&input.command) {
            return Err(ToolError::invalid_input(CONTROL_CHARACTERS));
        }
        Ok(())
    }

    fn check_permissions(input: &BashInput, _: &Context) -> Permission {
        if let Some(message) = sandbox_ask(input) {
            return Permission::Ask { message, suggested_rules: suggested_rule(&input.command).into_iter().collect() };
        }
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
        let background = input.run_in_background == Some(true);
        let options = SpawnOptions {
            program: Program::Shell(input.command.clone()),
            cwd: None,
            env: Vec::new(),
            stdin: None,
            timeout_ms: if background { background_timeout_ms(input.timeout) } else { timeout_ms(input.timeout) },
        };
        let refused = |e: process::ProcessError| {
            ToolError::new(
                ErrorKind::PermissionDenied,
                format!("Bash could not run the command: {}", process::describe(&e)),
            )
        };
        if background {
            let id = process::start_background(&options).map_err(refused)?;
            BackgroundTask::started(ctx, &id, &input.command);
            let file = process::output_file(ctx, &id);
            if file.is_none() {
                ctx.log(LogLevel::Warn, &format!("the host recorded no output file for background task {id}"));
            }
            return Ok(Output::text(output::background_text(&id, file.as_deref()))
                .with_structured(serde_json::json!({"backgroundTaskId": id, "backgroundOutputPath": file})));
        }
        let started_ms = stale::now_ms();
        let child = process::spawn(&options).map_err(refused)?;
        let mut out = Vec::new();
        let mut total: u64 = 0;
        while let Some(chunks) = child.read(250) {
            for chunk in chunks {
                let shown = &chunk.data[..chunk.data.len().min(PROGRESS_BYTES)];
                ctx.progress(&String::from_utf8_lossy(shown));
                total += chunk.data.len() as u64;
                let room = KEEP_BYTES.saturating_sub(out.len());
                out.extend_from_slice(&chunk.data[..chunk.data.len().min(room)]);
            }
        }
        let finished = child.wait();
        let code = if finished.cancelled {
            INTERRUPTED_CODE
        } else if finished.timed_out {
            TIMED_OUT_CODE
        } else {
            match finished.status {
                ExitStatus::Exited(c) => c,
                // How Node reports a shell killed by a signal.
                ExitStatus::Signaled(15) => 144,
                ExitStatus::Signaled(_) => 1,
            }
        };
        let interpretation = semantics::interpret(&input.command, code);
        let mut result = if interpretation.is_error {
            let first = &out[..out.len().min(output::FIRST_BYTES)];
            Output::text(output::failure_text(code, finished.cancelled, &String::from_utf8_lossy(first))).into_error()
        } else {
            let text = String::from_utf8_lossy(&out);
            match output::image(&text) {
                Some((media_type, data)) => {
                    Output { content: vec![Content::Image { media_type, data }], ..Output::default() }
                }
                None => {
                    let text = output::success_text(&text);
                    // Files read earlier that the command rewrote are named after the output.
                    let text = match (stale::note(ctx, &input.command, started_ms), text.is_empty()) {
                        (Some(note), true) => note,
                        (Some(note), false) => format!("{text}\n{note}"),
                        (None, true) => output::NO_OUTPUT.to_string(),
                        (None, false) => text,
                    };
                    Output::text(text)
                }
            }
        };
        if !finished.unconfined.is_empty() {
            let missing = finished.unconfined.join("; ");
            ctx.log(LogLevel::Warn, &format!("ran unconfined: {missing}"));
            result.content.push(Content::Text(format!("[The host could not confine this command: {missing}]")));
        }
        Ok(result.with_structured(serde_json::json!({
            "exitCode": code,
            "interrupted": finished.cancelled,
            "timedOut": finished.timed_out,
            "returnCodeInterpretation": interpretation.message,
            "outputBytes": total,
            "dangerouslyDisableSandbox": input.dangerously_disable_sandbox,
            "unconfined": finished.unconfined,
        })))
    }
}

/// Whether `command` holds a character an approval dialog would not show:
/// a control character other than tab and newline (C0, DEL, C1), as
/// 2.1.328's schema refuses it.
pub fn hidden_control_character(command: &str) -> bool {
    command.chars().any(|c| matches!(c, '\0'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'))
}

/// 2.1.328's answer to such a command: its schema's refinement fails alone,
/// so the model gets the schema library's own report of the issue.
pub const CONTROL_CHARACTERS: &str = "InputValidationError: [\n  {\n    \"code\": \"custom\",\n    \"path\": [\n      \
     \"command\"\n    ],\n    \"message\": \"command contains control characters that would be hidden in the approval \
     dialog\"\n  }\n]";

/// Why the call asks when it wants the sandbox lifted (it is not lifted).
pub fn sandbox_ask(input: &BashInput) -> Option<String> {
    (input.dangerously_disable_sandbox == Some(true)).then(|| {
        format!(
            "Bash was asked to run `{}` with dangerouslyDisableSandbox. toolhost never lifts its confinement, so \
             the command still runs confined; the flag only makes the call need approval.",
            clip(&input.command, 200)
        )
    })
}

/// The timeout of a call: the default when absent or 0, at most
/// [`MAX_TIMEOUT_MS`], at least 1 ms.
pub fn timeout_ms(requested: Option<f64>) -> u64 {
    match requested {
        Some(t) if t.is_finite() && t != 0.0 => (t.ceil().max(1.0) as u64).min(MAX_TIMEOUT_MS),
        _ => DEFAULT_TIMEOUT_MS,
    }
}

/// How long a background command may run: [`BACKGROUND_DEFAULT_MS`] when
/// absent or 0, at most [`BACKGROUND_MAX_MS`], at least 1 ms.
pub fn background_timeout_ms(requested: Option<f64>) -> u64 {
    match requested {
        Some(t) if t.is_finite() && t != 0.0 => (t.ceil().max(1.0) as u64).min(BACKGROUND_MAX_MS),
        _ => BACKGROUND_DEFAULT_MS,
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

// What the built-in needs, stamped like any component's requests (the
// host grants a built-in all it requests): the process capability, time
// for a command of the longest timeout, and reading the workspace (only to
// see which files read earlier a command rewrote).
toolhost_sdk::requests!(r#"{"process": true, "workspace": "read-only", "timeout_ms": 630000}"#);

export_tool!(Bash);

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sdk::serde_json::json;

    #[test]
    fn control_characters_a_dialog_would_hide_are_refused() {
        assert!(!hidden_control_character("printf 'a\tb\n' | cat\nls"));
        for c in ['\0', '\r', '\u{1b}', '\u{7f}', '\u{85}', '\u{9f}'] {
            assert!(hidden_control_character(&format!("echo a{c}b")), "{c:?}");
        }
        assert!(!hidden_control_character("echo é \u{a0} \u{202e}"), "format characters are another check");
    }

    #[test]
    fn timeouts_default_and_are_bounded() {
        assert_eq!(timeout_ms(None), DEFAULT_TIMEOUT_MS);
        assert_eq!(timeout_ms(Some(0.0)), DEFAULT_TIMEOUT_MS);
        assert_eq!(timeout_ms(Some(1500.5)), 1501);
        assert_eq!(timeout_ms(Some(900_000.0)), MAX_TIMEOUT_MS);
        assert_eq!(timeout_ms(Some(-5.0)), 1);
        assert_eq!(background_timeout_ms(None), 1_800_000);
        assert_eq!(background_timeout_ms(Some(0.0)), 1_800_000);
        assert_eq!(background_timeout_ms(Some(900_000.0)), 900_000, "past the foreground cap");
        assert_eq!(background_timeout_ms(Some(9_000_000.0)), 7_200_000);
    }

    #[test]
    fn the_schema_has_claude_codes_fields() {
        let schema: serde_json::Value = serde_json::from_str(&toolhost_sdk::input_schema::<Bash>()).unwrap();
        let props = schema["properties"].as_object().unwrap();
        let names: Vec<&str> = props.keys().map(String::as_str).collect();
        assert_eq!(names, ["command", "timeout", "description", "run_in_background", "dangerouslyDisableSandbox"]);
        assert_eq!(schema["required"], json!(["command"]));
        assert_eq!(schema["additionalProperties"], json!(false));
        assert_eq!(props["timeout"]["type"], "number");
        assert_eq!(props["dangerouslyDisableSandbox"]["type"], "boolean");
        assert_eq!(props["command"]["description"], "The command to execute");
    }

    #[test]
    fn disabling_the_sandbox_asks_whatever_the_command() {
        let input = |flag| BashInput {
            command: "ls".into(),
            timeout: None,
            description: None,
            run_in_background: None,
            dangerously_disable_sandbox: flag,
        };
        let message = sandbox_ask(&input(Some(true))).unwrap();
        assert!(message.contains("`ls`") && message.contains("still runs confined"), "{message}");
        assert_eq!(sandbox_ask(&input(Some(false))), None);
        assert_eq!(sandbox_ask(&input(None)), None);
    }
}

//! Every question toolhost puts at a terminal, in one place: a call's
//! approval (`call`), the grants of `install`, and a secret's value
//! (`secret set`, without echo). Questions go to standard error; answers
//! come from standard input.

use std::io::{IsTerminal as _, Write as _};
use toolhost::{Answer, Approver, AskRequest};

/// Whether a user is there to answer: standard input and standard error
/// are both terminals.
pub fn at_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Shows `question` on standard error and reads one answer line, trimmed
/// (end of input: an empty answer).
pub fn ask_line(question: &str) -> std::io::Result<String> {
    let mut err = std::io::stderr().lock();
    write!(err, "{question}")?;
    err.flush()?;
    drop(err);
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(line.trim().to_string())
}

/// Asks `question` and reads yes (`y`, `yes`, any case) or anything else.
pub fn ask_yes(question: &str) -> std::io::Result<bool> {
    Ok(matches!(ask_line(question)?.to_ascii_lowercase().as_str(), "y" | "yes"))
}

/// Asks a call's approval at the terminal. One question at a time.
#[derive(Default)]
pub struct TerminalApprover {
    lock: std::sync::Mutex<()>,
}

impl Approver for TerminalApprover {
    fn ask(&self, request: &AskRequest) -> Answer {
        let _one_at_a_time = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let choices = request.choices();
        let mut question = format!("\n{}\n", request.question());
        for choice in &choices {
            question.push_str(&format!("  {}  {}\n", choice.key(), choice.explain()));
        }
        let keys: Vec<String> = choices.iter().map(|c| c.key().to_string()).collect();
        question.push_str(&format!("Allow? [{}] (n <reason> to tell the model why) ", keys.join("/")));
        let answer = ask_line(&question).unwrap_or_default();
        let (word, reason) = answer.split_once(char::is_whitespace).unwrap_or((&answer, ""));
        match request.choice(word) {
            Some(choice) => choice.answer(Some(reason.trim())),
            // Anything else denies, with what was typed as the reason.
            None => Answer::denied(Some(reason.trim())),
        }
    }
}

/// Reads one line from standard input, without its line ending: at a
/// terminal, after showing `question`, without echo (rpassword, on the
/// terminal itself).
pub fn read_secret(question: &str) -> std::io::Result<String> {
    if std::io::stdin().is_terminal() {
        return rpassword::prompt_password(question);
    }
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

//! The terminal prompt: asks on standard error, reads the answer from
//! standard input (both terminals). One prompt at a time.

use std::io::Write;
use toolhost::{Answer, Approver, AskRequest};

#[derive(Default)]
pub struct TerminalApprover {
    lock: std::sync::Mutex<()>,
}

impl Approver for TerminalApprover {
    fn ask(&self, request: &AskRequest) -> Answer {
        let _one_at_a_time = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let choices = request.choices();
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "\n{}", request.question());
        for choice in &choices {
            let _ = writeln!(err, "  {}  {}", choice.key(), choice.explain());
        }
        let keys: Vec<String> = choices.iter().map(|c| c.key().to_string()).collect();
        let _ = write!(err, "Allow? [{}] (n <reason> to tell the model why) ", keys.join("/"));
        let _ = err.flush();
        drop(err);
        let mut line = String::new();
        if std::io::stdin().read_line(&mut line).is_err() {
            line.clear();
        }
        let answer = line.trim();
        let (word, reason) = answer.split_once(char::is_whitespace).unwrap_or((answer, ""));
        match request.choice(word) {
            Some(choice) => choice.answer(Some(reason)),
            // Anything else denies, with what was typed as the reason.
            None => Answer::denied(Some(reason)),
        }
    }
}

/// Reads one line from standard input, without its line ending: at a
/// terminal, after showing `question` on standard error, with echo off.
pub fn read_secret(question: &str) -> std::io::Result<String> {
    use std::io::IsTerminal as _;
    use std::os::fd::AsRawFd as _;
    let stdin = std::io::stdin();
    let fd = stdin.as_raw_fd();
    let mut line = String::new();
    if !stdin.is_terminal() {
        stdin.read_line(&mut line)?;
        return Ok(line.trim_end_matches(['\n', '\r']).to_string());
    }
    eprint!("{question}");
    // SAFETY: termios is plain data, filled in by tcgetattr on a terminal
    // descriptor; the saved state is restored below.
    let saved = unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut t) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let saved = t;
        t.c_lflag &= !libc::ECHO;
        t.c_lflag |= libc::ECHONL;
        libc::tcsetattr(fd, libc::TCSANOW, &t);
        saved
    };
    let read = stdin.read_line(&mut line);
    // SAFETY: restores the state read above, on the same descriptor.
    unsafe { libc::tcsetattr(fd, libc::TCSANOW, &saved) };
    read?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

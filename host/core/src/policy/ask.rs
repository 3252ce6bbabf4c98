//! Asking the user about a call: the request, the answer, who answers
//! (the terminal prompt, an MCP elicitation, a library callback), and the
//! choices every front offers.

use serde_json::Value;

/// A request to the user.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct AskRequest {
    /// The tool being called.
    pub tool: String,
    /// The call's `tool_use` id.
    pub tool_use_id: String,
    /// The call's input.
    pub input: Value,
    /// Why the user is asked, in words.
    pub message: String,
    /// Rules that would allow the call ("allow always" adds the first).
    pub suggested_rules: Vec<String>,
}

impl AskRequest {
    /// The question every front asks: what wants to run with which input
    /// (the whole input as JSON, control characters escaped), and why it
    /// needs approval (control characters made visible), so nothing the
    /// model wrote can hide or redraw part of it.
    pub fn question(&self) -> String {
        let message: String = self
            .message
            .chars()
            .flat_map(|c| if c.is_control() { c.escape_default().collect() } else { vec![c] })
            .collect();
        format!("{} wants to run with {}\n{message}", self.tool, self.input)
    }

    /// The choices to offer: allow once, allow always (only with a rule that
    /// would allow the call), deny.
    pub fn choices(&self) -> Vec<Choice> {
        let mut choices = vec![Choice::AllowOnce];
        if let Some(rule) = self.suggested_rules.first() {
            choices.push(Choice::AllowAlways(rule.clone()));
        }
        choices.push(Choice::Deny);
        choices
    }

    /// The choice a user named (its key, `y`, `a` or `n`, a word such as
    /// `yes` or `always`, or its label), among [`AskRequest::choices`].
    pub fn choice(&self, named: &str) -> Option<Choice> {
        let named = named.trim().to_ascii_lowercase();
        self.choices().into_iter().find(|c| c.names().contains(&named.as_str()))
    }
}

/// One answer offered to the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    AllowOnce,
    /// Allow, and keep this rule.
    AllowAlways(String),
    Deny,
}

impl Choice {
    /// Its label, as a form shows it.
    pub fn label(&self) -> &'static str {
        match self {
            Choice::AllowOnce => "allow once",
            Choice::AllowAlways(_) => "allow always",
            Choice::Deny => "deny",
        }
    }

    /// The key a terminal user types for it.
    pub fn key(&self) -> char {
        match self {
            Choice::AllowOnce => 'y',
            Choice::AllowAlways(_) => 'a',
            Choice::Deny => 'n',
        }
    }

    /// What it does, in words.
    pub fn explain(&self) -> String {
        match self {
            Choice::AllowOnce => "allow once".into(),
            Choice::AllowAlways(rule) => format!("allow always (adds `{rule}` to the local settings)"),
            Choice::Deny => "deny (a reason, if given, is told to the model)".into(),
        }
    }

    fn names(&self) -> [&'static str; 3] {
        match self {
            Choice::AllowOnce => ["y", "yes", "allow once"],
            Choice::AllowAlways(_) => ["a", "always", "allow always"],
            Choice::Deny => ["n", "no", "deny"],
        }
    }

    /// The answer it gives, with the user's `reason` for a denial.
    pub fn answer(self, reason: Option<&str>) -> Answer {
        match self {
            Choice::AllowOnce => Answer::AllowOnce,
            Choice::AllowAlways(rule) => Answer::AllowAlways(rule),
            Choice::Deny => Answer::denied(reason),
        }
    }
}

/// The user's answer.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Answer {
    /// Allow this call only.
    AllowOnce,
    /// Allow, and add the rule to the local settings so the same call runs
    /// without asking from now on.
    AllowAlways(String),
    /// Refuse; the text goes to the model.
    Deny(String),
    /// The user is asked out of band and the call does not run now: an MCP
    /// client of the 2026-07-28 revision gets the question in an
    /// input-required result and calls again with the answer. The text goes
    /// to the model if the call's result reaches it all the same; the audit
    /// log records the decision as an ask.
    Later(String),
}

impl Answer {
    /// A denial by the user, with their reason if they gave one.
    pub fn denied(reason: Option<&str>) -> Answer {
        match reason.map(str::trim).filter(|r| !r.is_empty()) {
            Some(reason) => Answer::Deny(format!("The user denied this call: {reason}")),
            None => Answer::Deny("The user denied this call.".into()),
        }
    }
}

/// Asks the user about a call (the CLI's terminal prompt, an MCP elicitation,
/// a library callback). Called on the thread running the call.
pub trait Approver: Send + Sync {
    /// The user's answer to `request`.
    fn ask(&self, request: &AskRequest) -> Answer;
}

impl<F: Fn(&AskRequest) -> Answer + Send + Sync> Approver for F {
    fn ask(&self, request: &AskRequest) -> Answer {
        self(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(rules: &[&str]) -> AskRequest {
        AskRequest {
            tool: "Bash".into(),
            tool_use_id: "t".into(),
            input: serde_json::json!({"command": "touch x"}),
            message: "needs\u{1b}[2J approval".into(),
            suggested_rules: rules.iter().map(|r| r.to_string()).collect(),
        }
    }

    #[test]
    fn choices_offer_allow_always_only_with_a_rule() {
        assert_eq!(request(&[]).choices(), [Choice::AllowOnce, Choice::Deny]);
        let r = request(&["Bash(touch x)"]);
        assert_eq!(r.choices(), [Choice::AllowOnce, Choice::AllowAlways("Bash(touch x)".into()), Choice::Deny]);
        assert_eq!(r.choice("A"), Some(Choice::AllowAlways("Bash(touch x)".into())));
        assert_eq!(r.choice("allow once"), Some(Choice::AllowOnce));
        assert_eq!(request(&[]).choice("always"), None, "no rule, no allow always");
        assert_eq!(r.choice("maybe"), None);
        assert_eq!(
            Choice::Deny.answer(Some(" too risky ")),
            Answer::Deny("The user denied this call: too risky".into())
        );
        assert!(!r.question().contains('\u{1b}'), "control characters are made visible");
    }
}

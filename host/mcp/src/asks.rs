//! Asking the client's user about a call, in both shapes MCP has for it:
//!
//! - before 2026-07-28, a live `elicitation/create` request from the server
//!   while the call waits ([`Elicitation`]);
//! - from 2026-07-28 on, servers send no requests: the call ends with an
//!   `InputRequiredResult` carrying the same form, and the client calls the
//!   tool again with the user's answer and the opaque `requestState` it got
//!   ([`Deferring`], [`Pending`]).
//!
//! The form is the same in both: the question, and a `decision` among the
//! choices the host offers (allow once, allow always when a rule would
//! allow the call, deny) with an optional reason.

use crate::records::{Kind, Records};
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequiredResult,
};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost::{Answer, Approver, AskRequest};

/// The key of the one input request an approval needs.
pub(crate) const APPROVAL: &str = "approval";

/// The form asking `request` of the user.
fn form(request: &AskRequest) -> Result<ElicitRequestParams, String> {
    let choices = request.choices();
    let explained: Vec<String> = choices.iter().map(|c| format!("\"{}\": {}", c.label(), c.explain())).collect();
    let message = format!("toolhost: {}\n{}", request.question(), explained.join("; "));
    let labels: Vec<&str> = choices.iter().map(|c| c.label()).collect();
    let schema = json!({
        "type": "object",
        "properties": {
            "decision": {"type": "string", "title": "Decision", "enum": labels},
            "reason": {"type": "string", "title": "Reason (when denying, told to the model)"},
        },
        "required": ["decision"],
    });
    let Value::Object(schema) = schema else { unreachable!("an object") };
    let requested_schema = ElicitationSchema::from_json_schema(schema).map_err(|e| e.to_string())?;
    Ok(ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema })
}

/// The answer an elicitation result gives to `request`.
fn answer(request: &AskRequest, result: &ElicitResult) -> Answer {
    match result.action {
        ElicitationAction::Accept => {
            let content = result.content.clone().unwrap_or(Value::Null);
            let reason = content["reason"].as_str();
            match content["decision"].as_str().and_then(|d| request.choice(d)) {
                Some(choice) => choice.answer(reason),
                None => Answer::denied(reason),
            }
        }
        ElicitationAction::Decline => Answer::denied(None),
        _ => Answer::Deny("The user dismissed the approval request; the call did not run.".into()),
    }
}

/// Asks the MCP client's user about one call by a live form elicitation
/// (the revisions before 2026-07-28).
pub(crate) struct Elicitation {
    pub(crate) peer: Peer<RoleServer>,
    /// The request's cancellation: a cancelled call stops waiting.
    pub(crate) cancelled: CancellationToken,
    pub(crate) timeout: Duration,
    pub(crate) runtime: tokio::runtime::Handle,
}

impl Approver for Elicitation {
    fn ask(&self, request: &AskRequest) -> Answer {
        let (peer, cancelled) = (self.peer.clone(), self.cancelled.clone());
        let params = match form(request) {
            Ok(p) => p,
            Err(e) => return Answer::Deny(format!("toolhost could not build the approval form: {e}")),
        };
        let timeout = self.timeout;
        let result = self.runtime.block_on(async move {
            tokio::select! {
                r = peer.create_elicitation_with_timeout(params, Some(timeout)) => Some(r),
                () = cancelled.cancelled() => None,
            }
        });
        match result {
            None => Answer::Deny("The call was cancelled while waiting for approval.".into()),
            Some(Err(e)) => Answer::Deny(format!("toolhost could not get the user's approval: {e}")),
            Some(Ok(r)) => answer(request, &r),
        }
    }
}

/// The approver of a 2026-07-28 call: answers the questions the user has
/// answered in earlier rounds of the same call, and defers the first new
/// one (the call ends without running; [`Deferring::deferred`] has it).
#[derive(Default)]
pub(crate) struct Deferring {
    /// The user's answers so far, by question.
    answered: Vec<(String, Answer)>,
    deferred: Mutex<Option<AskRequest>>,
}

impl Deferring {
    pub(crate) fn new(answered: Vec<(String, Answer)>) -> Deferring {
        Deferring { answered, deferred: Mutex::new(None) }
    }

    /// The user's answers so far, by question.
    pub(crate) fn answered(&self) -> &[(String, Answer)] {
        &self.answered
    }

    /// The question left for the user, if the call asked a new one.
    pub(crate) fn deferred(&self) -> Option<AskRequest> {
        self.deferred.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl Approver for Deferring {
    fn ask(&self, request: &AskRequest) -> Answer {
        let question = request.question();
        if let Some((_, answer)) = self.answered.iter().find(|(q, _)| *q == question) {
            return answer.clone();
        }
        let mut deferred = self.deferred.lock().unwrap_or_else(|e| e.into_inner());
        if deferred.is_none() {
            *deferred = Some(request.clone());
        }
        Answer::Later("The call waits for the user's approval, asked through the MCP client.".into())
    }
}

/// A call waiting for its user's answer: what the client must call again.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Waiting {
    /// Who made the call: only they may answer.
    pub(crate) owner: String,
    pub(crate) tool: String,
    /// The call's arguments as the client sent them.
    pub(crate) arguments: Map<String, Value>,
    /// The question put to the user.
    pub(crate) request: AskRequest,
    /// Answers of earlier rounds.
    pub(crate) answered: Vec<(String, Answer)>,
}

/// Why a retried call's answer is not taken.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No waiting call has this state: never given out, given to another
    /// identity, answered already, or expired.
    Unknown,
    /// The state belongs to a call of another tool or with other arguments.
    OtherCall,
    /// No answer to the question under [`APPROVAL`], or not an elicitation result.
    NoAnswer(String),
    /// The shared state store failed.
    Store(String),
}

impl Refused {
    /// What the model is told.
    pub(crate) fn message(&self) -> String {
        match self {
            Refused::Unknown => "This approval is unknown or has expired (requestState is valid once, for the \
                                 identity that made the call, for a limited time). Call the tool again."
                .into(),
            Refused::OtherCall => "This approval was asked for another call: a retry must repeat the tool and \
                                   arguments of the call that asked. Call the tool again."
                .into(),
            Refused::NoAnswer(why) => format!("The retry carries no usable answer to the approval request: {why}"),
            Refused::Store(why) => format!("toolhost could not look up the approval: {why}. Try again shortly."),
        }
    }
}

/// Calls waiting for an answer, by the `requestState` handed to the client.
/// A state is valid once, for the identity that made the call, until it
/// expires. Kept in the front's records: this process's memory, or the
/// store instances share (so the retry may reach any of them).
pub(crate) struct Pending {
    expiry: Duration,
    records: Arc<Records>,
}

/// Most calls one identity may leave waiting; beyond it the oldest is
/// forgotten.
const MAX_WAITING: usize = 256;

/// The record entry holding a waiting call, and the one saying until when
/// (milliseconds since the epoch).
const WAITING: &str = "waiting";
const UNTIL: &str = "until";
/// What every state starts with.
const PREFIX: &str = "approval_";

impl Pending {
    pub(crate) fn new(expiry: Duration, records: Arc<Records>) -> Pending {
        Pending { expiry, records }
    }

    /// Keeps `waiting` and returns the input-required result asking its
    /// question. Blocks on the store.
    pub(crate) fn defer(&self, waiting: Waiting) -> Result<InputRequiredResult, String> {
        let params = form(&waiting.request)?;
        let state = toolhost::unguessable_id(PREFIX);
        let until = crate::now_ms() + self.expiry.as_millis() as u64;
        let record = serde_json::to_string(&waiting).map_err(|e| e.to_string())?;
        self.records.apply(&state, &[(WAITING, Some(record)), (UNTIL, Some(until.to_string()))])?;
        for beyond in self.records.admit(&waiting.owner, Kind::Waiting, &state, MAX_WAITING)? {
            self.records.remove(&beyond)?;
        }
        let requests = [(APPROVAL.to_string(), InputRequest::Elicitation(ElicitRequest::new(params)))].into();
        Ok(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// The answers so far of the call that `state` names, with the one in
    /// `responses`: for a retry by `owner` of `tool` with `arguments`. The
    /// state is used up whatever the outcome, bar an unknown one. Blocks on
    /// the store.
    pub(crate) fn resume(
        &self,
        state: &str,
        owner: &str,
        tool: &str,
        arguments: &Map<String, Value>,
        responses: Option<&std::collections::BTreeMap<String, Value>>,
    ) -> Result<Vec<(String, Answer)>, Refused> {
        let waiting = self.take(state, owner)?;
        if waiting.tool != tool || waiting.arguments != *arguments {
            return Err(Refused::OtherCall);
        }
        let response = responses
            .and_then(|r| r.get(APPROVAL))
            .ok_or_else(|| Refused::NoAnswer(format!("inputResponses has no `{APPROVAL}`")))?;
        let result: ElicitResult = serde_json::from_value(response.clone())
            .map_err(|e| Refused::NoAnswer(format!("`{APPROVAL}` is not an elicitation result: {e}")))?;
        let mut answered = waiting.answered;
        answered.push((waiting.request.question(), answer(&waiting.request, &result)));
        Ok(answered)
    }

    /// The waiting call `state` names, taken out of the records if `owner`
    /// made it and it has not expired: looked at first, so another identity
    /// presenting the state uses nothing up; then taken, so of two retries
    /// on two instances only one gets it.
    fn take(&self, state: &str, owner: &str) -> Result<Waiting, Refused> {
        if !crate::could_be(state, PREFIX) {
            return Err(Refused::Unknown);
        }
        let parse = |entries: &toolhost::Entries| -> Option<(Waiting, u64)> {
            let waiting: Waiting = serde_json::from_str(entries.get(WAITING)?).ok()?;
            Some((waiting, entries.get(UNTIL)?.parse().ok()?))
        };
        let looked = self.records.load(state).map_err(Refused::Store)?;
        match parse(&looked) {
            Some((w, until)) if w.owner == owner && crate::now_ms() < until => {}
            _ => return Err(Refused::Unknown),
        }
        let taken = self.records.take(state).map_err(Refused::Store)?;
        self.records.release(owner, Kind::Waiting, state).map_err(Refused::Store)?;
        match parse(&taken) {
            Some((w, until)) if w.owner == owner && crate::now_ms() < until => Ok(w),
            _ => Err(Refused::Unknown),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(input: Value) -> AskRequest {
        AskRequest {
            tool: "Bash".into(),
            tool_use_id: "toolu_1".into(),
            input,
            message: "rm asks".into(),
            suggested_rules: vec!["Bash(rm:*)".into()],
        }
    }

    fn waiting(owner: &str, request: AskRequest) -> Waiting {
        let Value::Object(arguments) = request.input.clone() else { panic!() };
        Waiting { owner: owner.into(), tool: "Bash".into(), arguments, request, answered: Vec::new() }
    }

    fn accept(decision: &str) -> std::collections::BTreeMap<String, Value> {
        [(APPROVAL.to_string(), json!({"action": "accept", "content": {"decision": decision, "reason": "no"}}))].into()
    }

    #[test]
    fn the_deferring_approver_answers_known_questions_and_defers_the_first_new_one() {
        let first = ask(json!({"command": "rm a"}));
        let second = ask(json!({"command": "rm b"}));
        let approver = Deferring::new(vec![(first.question(), Answer::AllowOnce)]);
        assert_eq!(approver.ask(&first), Answer::AllowOnce);
        assert!(matches!(approver.ask(&second), Answer::Later(_)));
        assert!(matches!(approver.ask(&ask(json!({"command": "rm c"}))), Answer::Later(_)));
        assert_eq!(approver.deferred().map(|r| r.input), Some(second.input));
        assert!(approver.deferred().is_none());
    }

    #[test]
    fn a_state_is_good_once_for_its_owner_and_its_call() {
        a_state_is_good_once(&Pending::new(Duration::from_secs(60), records()));
    }

    fn a_state_is_good_once(pending: &Pending) {
        let request = ask(json!({"command": "rm a"}));
        let args = waiting("alice", request.clone()).arguments;
        let result = pending.defer(waiting("alice", request.clone())).unwrap();
        let state = result.request_state.clone().unwrap();
        assert!(state.len() >= 26 + 9, "{state}");
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(wire["resultType"], "input_required");
        assert_eq!(wire["inputRequests"][APPROVAL]["method"], "elicitation/create");
        let form = &wire["inputRequests"][APPROVAL]["params"];
        assert!(form["message"].as_str().unwrap().contains("rm a"), "{form}");
        assert_eq!(
            form["requestedSchema"]["properties"]["decision"]["enum"],
            json!(["allow once", "allow always", "deny"])
        );

        // Another identity presenting it is told exactly what an unknown state gets.
        let r = pending.resume(&state, "mallory", "Bash", &args, Some(&accept("allow once")));
        assert_eq!(r.unwrap_err(), Refused::Unknown);
        assert_eq!(pending.resume("approval_nope", "alice", "Bash", &args, None).unwrap_err(), Refused::Unknown);
        let answered = pending.resume(&state, "alice", "Bash", &args, Some(&accept("allow once"))).unwrap();
        assert_eq!(answered, vec![(request.question(), Answer::AllowOnce)]);
        // Used up.
        let again = pending.resume(&state, "alice", "Bash", &args, Some(&accept("allow once")));
        assert_eq!(again.unwrap_err(), Refused::Unknown);

        // A retry of another call, or one without an answer.
        let state = pending.defer(waiting("alice", request.clone())).unwrap().request_state.unwrap();
        let Value::Object(other) = json!({"command": "rm -rf /"}) else { panic!() };
        assert_eq!(pending.resume(&state, "alice", "Bash", &other, None).unwrap_err(), Refused::OtherCall);
        let state = pending.defer(waiting("alice", request.clone())).unwrap().request_state.unwrap();
        assert!(matches!(pending.resume(&state, "alice", "Bash", &args, None), Err(Refused::NoAnswer(_))));
        let state = pending.defer(waiting("alice", request.clone())).unwrap().request_state.unwrap();
        let denied = pending.resume(&state, "alice", "Bash", &args, Some(&accept("deny"))).unwrap();
        assert_eq!(denied[0].1, Answer::Deny("The user denied this call: no".into()));
    }

    #[test]
    fn states_expire_and_each_identity_keeps_a_bounded_number() {
        let request = ask(json!({"command": "rm a"}));
        let args = waiting("alice", request.clone()).arguments;
        let pending = Pending::new(Duration::from_millis(0), records());
        let state = pending.defer(waiting("alice", request.clone())).unwrap().request_state.unwrap();
        assert_eq!(pending.resume(&state, "alice", "Bash", &args, None).unwrap_err(), Refused::Unknown);

        // Two instances sharing the records hold one cap.
        let shared = records();
        let (on_a, on_b) =
            (Pending::new(Duration::from_secs(60), Arc::clone(&shared)), Pending::new(Duration::from_secs(60), shared));
        let states: Vec<String> = (0..MAX_WAITING + 3)
            .map(|i| {
                let on = if i % 2 == 0 { &on_a } else { &on_b };
                on.defer(waiting("alice", request.clone())).unwrap().request_state.unwrap()
            })
            .collect();
        let bobs = on_a.defer(waiting("bob", request.clone())).unwrap().request_state.unwrap();
        let kept = states.iter().filter(|s| !on_a.records.load(s).unwrap().is_empty()).count();
        assert_eq!(kept, MAX_WAITING);
        let newest = states.last().unwrap();
        assert!(on_b.resume(newest, "alice", "Bash", &args, Some(&accept("allow once"))).is_ok());
        assert!(on_b.resume(&bobs, "bob", "Bash", &args, Some(&accept("allow once"))).is_ok());
    }

    fn records() -> Arc<Records> {
        Arc::new(Records::in_memory())
    }
}

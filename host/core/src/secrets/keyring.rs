//! The OS keyring: the freedesktop Secret Service (GNOME Keyring, KeePassXC,
//! KWallet's bridge) over the D-Bus session bus, through the pure-Rust
//! `secret-service` crate, the values encrypted on the bus (a
//! Diffie-Hellman session).
//!
//! Each secret is one item of the default collection with the attributes
//! `application=toolhost`, `tool=TOOL`, `name=NAME`. The keyring is only
//! used unlocked: the host never raises an unlock prompt (a tool call must
//! not pop up a dialog), so a locked or missing default collection counts
//! as no keyring.
//!
//! Every request runs on one thread of its own that keeps the connection,
//! and a caller waits at most [`ANSWER_WITHIN`]: a bus or a provider that
//! never answers costs a call that long, never the host. A thread that did
//! not answer is left behind; the next request starts another.

#![cfg_attr(not(feature = "keyring"), allow(dead_code))]

use std::time::Duration;
#[cfg(feature = "keyring")]
use std::{
    collections::HashMap,
    sync::Mutex,
    sync::mpsc::{Receiver, Sender, SyncSender, sync_channel},
};

/// How long a caller waits for the keyring.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(10);

#[cfg(feature = "keyring")]
const APPLICATION: &str = "toolhost";

/// Why the keyring could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Trouble {
    /// There is no usable keyring here (no session bus, no provider, no
    /// default collection, locked): the file store stands in.
    Unavailable(String),
    /// The keyring is there and failed.
    Failed(String),
}

impl std::fmt::Display for Trouble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trouble::Unavailable(why) => write!(f, "no usable OS keyring: {why}"),
            Trouble::Failed(why) => write!(f, "the OS keyring failed: {why}"),
        }
    }
}

/// What can be asked of the keyring.
#[derive(Clone)]
pub(super) enum Request {
    Set {
        tool: String,
        name: String,
        value: String,
    },
    Remove {
        tool: String,
        name: String,
    },
    /// Every (tool, name) stored.
    List,
    /// `tool`'s values of `names`.
    Values {
        tool: String,
        names: Vec<String>,
    },
}

/// What it answered.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Answer {
    Done,
    Removed(bool),
    Names(Vec<(String, String)>),
    Values(Vec<(String, String)>),
}

#[cfg(feature = "keyring")]
type Job = (Request, SyncSender<Result<Answer, Trouble>>);

#[cfg(feature = "keyring")]
/// The thread's inbox; `None` until the first request, or after a thread
/// did not answer in time.
static INBOX: Mutex<Option<Sender<Job>>> = Mutex::new(None);

/// Runs `request` on the keyring's thread.
#[cfg(not(feature = "keyring"))]
pub(super) fn ask(_: Request) -> Result<Answer, Trouble> {
    Err(Trouble::Unavailable("this toolhost was built without its `keyring` feature".into()))
}

/// Runs `request` on the keyring's thread.
#[cfg(feature = "keyring")]
pub(super) fn ask(request: Request) -> Result<Answer, Trouble> {
    let (reply, answer) = sync_channel(1);
    {
        let mut inbox = INBOX.lock().unwrap_or_else(|e| e.into_inner());
        let sent = inbox.as_ref().is_some_and(|tx| tx.send((request.clone(), reply.clone())).is_ok());
        if !sent {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::Builder::new()
                .name("toolhost-keyring".into())
                .spawn(move || serve(rx))
                .map_err(|e| Trouble::Failed(format!("cannot start its thread: {e}")))?;
            tx.send((request, reply)).map_err(|_| Trouble::Failed("its thread stopped".into()))?;
            *inbox = Some(tx);
        }
    }
    match answer.recv_timeout(ANSWER_WITHIN) {
        Ok(answer) => answer,
        Err(_) => {
            // Whatever it waits for (a prompt, a bus that stopped reading),
            // the next request gets a thread of its own.
            *INBOX.lock().unwrap_or_else(|e| e.into_inner()) = None;
            Err(Trouble::Failed(format!("it did not answer within {} s", ANSWER_WITHIN.as_secs())))
        }
    }
}

#[cfg(feature = "keyring")]
/// The keyring's thread: one connection, made at the first request and
/// again after it broke.
fn serve(inbox: Receiver<Job>) {
    use secret_service::EncryptionType;
    use secret_service::blocking::SecretService;
    let mut service: Option<SecretService<'static>> = None;
    for (request, reply) in inbox {
        let mut answer = Err(Trouble::Unavailable(String::new()));
        // A connection that broke since the last request is made again once.
        for _ in 0..2 {
            if service.is_none() {
                match SecretService::connect(EncryptionType::Dh) {
                    Ok(connected) => service = Some(connected),
                    Err(e) => {
                        answer = Err(Trouble::Unavailable(connect_trouble(&e)));
                        break;
                    }
                }
            }
            let Some(connected) = service.as_ref() else { break };
            answer = run(connected, &request);
            if !matches!(answer, Err(Trouble::Failed(_))) || !broken(connected) {
                break;
            }
            service = None;
        }
        let _ = reply.send(answer);
    }
}

#[cfg(feature = "keyring")]
/// Whether the connection no longer answers.
fn broken(service: &secret_service::blocking::SecretService<'_>) -> bool {
    service.get_all_collections().is_err()
}

#[cfg(feature = "keyring")]
fn connect_trouble(e: &secret_service::Error) -> String {
    match e {
        secret_service::Error::Unavailable => "no D-Bus session bus or no Secret Service provider on it".into(),
        other => format!("cannot reach the Secret Service: {other}"),
    }
}

#[cfg(feature = "keyring")]
fn run(service: &secret_service::blocking::SecretService<'_>, request: &Request) -> Result<Answer, Trouble> {
    let failed = |e: secret_service::Error| Trouble::Failed(e.to_string());
    let collection = match service.get_default_collection() {
        Ok(collection) => collection,
        Err(secret_service::Error::NoResult) => {
            return Err(Trouble::Unavailable("the Secret Service has no default collection".into()));
        }
        Err(e) => return Err(Trouble::Unavailable(format!("cannot open its default collection: {e}"))),
    };
    if collection.is_locked().map_err(failed)? {
        return Err(Trouble::Unavailable(
            "its default collection is locked (unlock it, by logging in to the desktop for one)".into(),
        ));
    }
    let mut attributes = HashMap::from([("application", APPLICATION)]);
    match request {
        Request::Set { tool, name, value } => {
            attributes.extend([("tool", tool.as_str()), ("name", name.as_str())]);
            let label = format!("toolhost: {tool}'s secret {name}");
            collection.create_item(&label, attributes, value.as_bytes(), true, "text/plain").map_err(failed)?;
            Ok(Answer::Done)
        }
        Request::Remove { tool, name } => {
            attributes.extend([("tool", tool.as_str()), ("name", name.as_str())]);
            let items = collection.search_items(attributes).map_err(failed)?;
            for item in &items {
                item.delete().map_err(failed)?;
            }
            Ok(Answer::Removed(!items.is_empty()))
        }
        Request::List => {
            let mut names = Vec::new();
            for item in collection.search_items(attributes).map_err(failed)? {
                let found = item.get_attributes().map_err(failed)?;
                if let (Some(tool), Some(name)) = (found.get("tool"), found.get("name")) {
                    names.push((tool.clone(), name.clone()));
                }
            }
            names.sort();
            names.dedup();
            Ok(Answer::Names(names))
        }
        Request::Values { tool, names } => {
            attributes.insert("tool", tool);
            let mut values = Vec::new();
            for item in collection.search_items(attributes).map_err(failed)? {
                let found = item.get_attributes().map_err(failed)?;
                let Some(name) = found.get("name").filter(|n| names.contains(n)) else { continue };
                let value = item.get_secret().map_err(failed)?;
                let value = String::from_utf8(value)
                    .map_err(|_| Trouble::Failed(format!("{tool}'s secret {name} is not UTF-8 text")))?;
                values.push((name.clone(), value));
            }
            values.sort();
            values.dedup_by(|a, b| a.0 == b.0);
            Ok(Answer::Values(values))
        }
    }
}

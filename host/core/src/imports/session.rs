//! `session`: the key-value state that outlives a call, shared by the
//! built-ins and private to each third-party tool.

use super::CallView;
use crate::contract::bindings::toolhost::tool::session;
use crate::session::WriteError;

/// How a tool's session keys are kept apart from other tools'.
#[derive(Clone, Debug)]
pub enum Namespace {
    /// Built-in tools share one namespace (Read records what Edit checks).
    Shared,
    /// A third-party tool sees only keys under this prefix.
    Private(String),
}

impl Namespace {
    fn key(&self, key: &str) -> String {
        match self {
            Namespace::Shared => key.to_string(),
            Namespace::Private(prefix) => format!("{prefix}{key}"),
        }
    }
}

impl session::Host for CallView<'_> {
    fn get(&mut self, key: String) -> Option<String> {
        self.scope.session.get(&self.scope.namespace.key(&key))
    }

    fn set(&mut self, key: String, value: String) -> Result<(), session::SessionError> {
        let full = self.scope.namespace.key(&key);
        let quota = match &self.scope.namespace {
            Namespace::Shared => None,
            Namespace::Private(prefix) => Some(prefix.as_str()),
        };
        self.scope.session.set(&full, &value, quota).map_err(|e| match e {
            WriteError::InvalidKey => session::SessionError::InvalidKey,
            WriteError::ValueTooLarge => session::SessionError::ValueTooLarge,
            WriteError::QuotaExceeded => session::SessionError::QuotaExceeded,
        })
    }

    fn remove(&mut self, key: String) {
        self.scope.session.remove(&self.scope.namespace.key(&key));
    }

    fn keys(&mut self, prefix: String) -> Vec<String> {
        let full = self.scope.namespace.key(&prefix);
        let strip = full.len() - prefix.len();
        self.scope.session.keys(&full).into_iter().map(|k| k[strip..].to_string()).collect()
    }
}

//! Flow control for a stream transport: a client that writes requests faster
//! than the tools answer them is read only as fast as it is answered.
//!
//! rmcp reads every message as it arrives and starts a task for each request,
//! so a client that pipelines 40,000 calls had the server hold all of them
//! parsed at once (290–340 MB). [`Bounded`] stops reading while `limit` of the
//! client's requests are unanswered, so the pipe fills and the client's
//! writes wait instead. It reads on while the server waits for the client
//! (an elicitation it sent and the client has not answered): that answer is
//! what frees the calls, and it can only arrive by reading.

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// How many of a client's requests may wait for their answer before the
/// server stops reading from it.
pub const MAX_UNANSWERED: usize = 1024;

/// A server transport that reads no further request while `limit` are
/// unanswered and the server waits for nothing from the client.
pub struct Bounded<T> {
    inner: T,
    flow: Arc<Flow>,
}

#[derive(Default)]
struct Flow {
    state: Mutex<FlowState>,
    changed: Notify,
    limit: usize,
}

#[derive(Default)]
struct FlowState {
    /// The client's requests read and not yet answered.
    unanswered: HashSet<RequestId>,
    /// The server's requests sent and not yet answered by the client.
    asked: HashSet<RequestId>,
}

impl Flow {
    fn may_read(&self) -> bool {
        let state = self.state.lock().expect("flow state");
        state.unanswered.len() < self.limit || !state.asked.is_empty()
    }

    fn update(&self, change: impl FnOnce(&mut FlowState)) {
        change(&mut self.state.lock().expect("flow state"));
        self.changed.notify_waiters();
    }
}

impl<T> Bounded<T> {
    pub fn new(inner: T, limit: usize) -> Self {
        Bounded { inner, flow: Arc::new(Flow { limit: limit.max(1), ..Flow::default() }) }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Bounded<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // An answer counts once it is written: until then it is held here,
        // and a client that reads slowly must slow the reading too.
        let answered = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            JsonRpcMessage::Request(r) => {
                let id = r.id.clone();
                self.flow.update(|s| {
                    s.asked.insert(id);
                });
                None
            }
            // The server gave up on one of its requests (its timeout).
            JsonRpcMessage::Notification(n) => {
                if let ServerNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = c.params.request_id.clone()
                {
                    self.flow.update(|s| {
                        s.asked.remove(&id);
                    });
                }
                None
            }
        };
        let sent = self.inner.send(item);
        let flow = self.flow.clone();
        async move {
            let result = sent.await;
            if let Some(id) = answered {
                flow.update(|s| {
                    s.unanswered.remove(&id);
                });
            }
            result
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let changed = self.flow.changed.notified();
            tokio::pin!(changed);
            // Registered before the check, so a change between the check and
            // the wait is not missed.
            changed.as_mut().enable();
            if self.flow.may_read() {
                break;
            }
            changed.await;
        }
        let message = self.inner.receive().await?;
        match &message {
            JsonRpcMessage::Request(r) => {
                let id = r.id.clone();
                self.flow.update(|s| {
                    s.unanswered.insert(id);
                });
            }
            JsonRpcMessage::Response(r) => {
                let id = r.id.clone();
                self.flow.update(|s| {
                    s.asked.remove(&id);
                });
            }
            JsonRpcMessage::Error(e) => {
                if let Some(id) = e.id.clone() {
                    self.flow.update(|s| {
                        s.asked.remove(&id);
                    });
                }
            }
            // A request the client cancelled may get no answer.
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = c.params.request_id.clone()
                {
                    self.flow.update(|s| {
                        s.unanswered.remove(&id);
                    });
                }
            }
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::sync::{Semaphore, mpsc};

    /// The transport under [`Bounded`]: messages from the "client" come from
    /// a channel; a send completes when `written` gives it a permit.
    struct Pipe {
        incoming: mpsc::UnboundedReceiver<RxJsonRpcMessage<RoleServer>>,
        written: Arc<Semaphore>,
    }

    impl Transport<RoleServer> for Pipe {
        type Error = std::io::Error;

        fn send(
            &mut self,
            _: TxJsonRpcMessage<RoleServer>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            let written = self.written.clone();
            async move {
                written.acquire().await.expect("open").forget();
                Ok(())
            }
        }

        async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
            self.incoming.recv().await
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn rx(json: serde_json::Value) -> RxJsonRpcMessage<RoleServer> {
        serde_json::from_value(json).expect("a client message")
    }

    fn tx(json: serde_json::Value) -> TxJsonRpcMessage<RoleServer> {
        serde_json::from_value(json).expect("a server message")
    }

    fn ping(id: u64) -> RxJsonRpcMessage<RoleServer> {
        rx(serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
    }

    fn answer(id: u64) -> TxJsonRpcMessage<RoleServer> {
        tx(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {}}))
    }

    /// A transport with `limit`, the client's sender, and the permits that
    /// complete writes (many unless a test holds them back).
    fn bounded(limit: usize) -> (Bounded<Pipe>, mpsc::UnboundedSender<RxJsonRpcMessage<RoleServer>>, Arc<Semaphore>) {
        let (client, incoming) = mpsc::unbounded_channel();
        let written = Arc::new(Semaphore::new(1 << 20));
        (Bounded::new(Pipe { incoming, written: written.clone() }, limit), client, written)
    }

    /// Whether `receive` gives a message (one is always waiting in these
    /// tests when it may read).
    async fn reads(t: &mut Bounded<Pipe>) -> bool {
        tokio::time::timeout(Duration::from_secs(10), t.receive()).await.is_ok()
    }

    /// Whether `receive` keeps waiting though a message is there: 100 ms
    /// without one (a wrong read comes at once).
    async fn waits(t: &mut Bounded<Pipe>) -> bool {
        tokio::time::timeout(Duration::from_millis(100), t.receive()).await.is_err()
    }

    #[tokio::test]
    async fn reading_stops_at_the_limit_and_resumes_when_an_answer_is_written() {
        let (mut t, client, _) = bounded(2);
        for id in 1..=3 {
            client.send(ping(id)).unwrap();
        }
        assert!(reads(&mut t).await && reads(&mut t).await);
        assert!(waits(&mut t).await, "two unanswered: the third waits");
        t.send(answer(1)).await.unwrap();
        assert!(reads(&mut t).await);
    }

    #[tokio::test]
    async fn an_answer_counts_once_it_is_written() {
        let (mut t, client, written) = bounded(1);
        written.forget_permits(1 << 20);
        client.send(ping(1)).unwrap();
        client.send(ping(2)).unwrap();
        assert!(reads(&mut t).await);
        let sending = tokio::spawn(t.send(answer(1)));
        assert!(waits(&mut t).await, "the answer is not out yet");
        written.add_permits(1);
        sending.await.unwrap().unwrap();
        assert!(reads(&mut t).await);
    }

    #[tokio::test]
    async fn it_reads_on_while_the_server_waits_for_the_client() {
        let (mut t, client, _) = bounded(1);
        client.send(ping(1)).unwrap();
        assert!(reads(&mut t).await);
        // A call asks the client (an elicitation) and can only go on with
        // its answer, which comes after more requests.
        t.send(tx(serde_json::json!({"jsonrpc": "2.0", "id": 70, "method": "ping"}))).await.unwrap();
        client.send(ping(2)).unwrap();
        client.send(rx(serde_json::json!({"jsonrpc": "2.0", "id": 70, "result": {}}))).unwrap();
        client.send(ping(3)).unwrap();
        assert!(reads(&mut t).await && reads(&mut t).await, "the request and the client's answer");
        assert!(waits(&mut t).await, "answered: back to the limit");
    }

    #[tokio::test]
    async fn a_request_the_client_cancels_frees_its_place() {
        let (mut t, client, _) = bounded(2);
        client.send(ping(1)).unwrap();
        client
            .send(rx(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 1}})))
            .unwrap();
        for id in 2..=4 {
            client.send(ping(id)).unwrap();
        }
        for _ in 0..4 {
            assert!(reads(&mut t).await, "1 is cancelled: 2 and 3 are the two unanswered");
        }
        assert!(waits(&mut t).await);
    }

    #[tokio::test]
    async fn a_server_request_the_server_gives_up_on_stops_counting() {
        let (mut t, client, _) = bounded(1);
        client.send(ping(1)).unwrap();
        client.send(ping(2)).unwrap();
        assert!(reads(&mut t).await);
        t.send(tx(serde_json::json!({"jsonrpc": "2.0", "id": 70, "method": "ping"}))).await.unwrap();
        t.send(tx(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 70}})))
            .await
            .unwrap();
        assert!(waits(&mut t).await, "nothing is awaited from the client any more");
    }
}

//! A stdio MCP server's stdout, checked line by line as it arrives: each
//! line must be a JSON-RPC message (UTF-8 JSON, an object or a batch) of
//! at most [`MAX_MESSAGE`] bytes. The first line that is not ends the
//! stream with an error, so the server is cut off and its calls fail at
//! once saying why, instead of the line being skipped (as rmcp skips what
//! it cannot parse) and the call waiting for its deadline.

use super::MAX_MESSAGE;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// Why a server's stream was ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamFault {
    /// A message over [`MAX_MESSAGE`] bytes.
    Flooded,
    /// A line that is not a JSON-RPC message: what is wrong, and how it
    /// begins.
    Malformed { why: String, begins: String },
}

impl StreamFault {
    /// What the call's error says, for the server `name`.
    pub(super) fn describe(&self, name: &str) -> String {
        match self {
            StreamFault::Flooded => format!(
                "The MCP server {name} sent a message over {} MiB and was cut off (it is started again at its next call).",
                MAX_MESSAGE >> 20
            ),
            StreamFault::Malformed { why, begins } => format!(
                "The MCP server {name} wrote a line to its stdout that is not a JSON-RPC message ({why}; it begins \
                 {begins:?}) and was cut off (it is started again at its next call). A stdio server writes only \
                 protocol messages to stdout; its logs go to stderr."
            ),
        }
    }
}

/// `inner`, read through, ending with an error at the first line that is
/// not a message; the fault is kept in `fault`.
pub(super) struct Checked<R> {
    inner: R,
    /// The line read so far (without its newline).
    line: Vec<u8>,
    fault: Arc<OnceLock<StreamFault>>,
}

impl<R> Checked<R> {
    pub(super) fn new(inner: R, fault: Arc<OnceLock<StreamFault>>) -> Checked<R> {
        Checked { inner, line: Vec::new(), fault }
    }

    /// Takes `fresh` bytes; the fault, at the first bad line.
    fn take(&mut self, fresh: &[u8]) -> Result<(), StreamFault> {
        let mut rest = fresh;
        while let Some(end) = memchr::memchr(b'\n', rest) {
            // A line whole in this read is checked where it lies; only one
            // that spans reads is gathered first.
            if self.line.is_empty() {
                check(&rest[..end])?;
            } else {
                self.line.extend_from_slice(&rest[..end]);
                check(&self.line)?;
                self.line.clear();
            }
            rest = &rest[end + 1..];
        }
        if self.line.len() + rest.len() > MAX_MESSAGE {
            return Err(StreamFault::Flooded);
        }
        self.line.extend_from_slice(rest);
        Ok(())
    }
}

/// Whether `line` is a message: UTF-8 JSON, an object or an array (a
/// byte-order mark, a carriage return and blank lines are let through).
fn check(line: &[u8]) -> Result<(), StreamFault> {
    if line.len() > MAX_MESSAGE {
        return Err(StreamFault::Flooded);
    }
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let malformed = |why: String| {
        let begins = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
        Err(StreamFault::Malformed { why, begins })
    };
    let Ok(text) = std::str::from_utf8(line) else {
        return malformed("it is not UTF-8".into());
    };
    let text = text.trim();
    if text.is_empty() {
        return Ok(());
    }
    if !(text.starts_with('{') || text.starts_with('[')) {
        return malformed("it is not a JSON object".into());
    }
    match serde_json::from_str::<AnyJson>(text) {
        Ok(_) => Ok(()),
        Err(e) => malformed(format!("it is not JSON: {e}")),
    }
}

/// Any JSON value, read the way `serde_json::Value` (and so rmcp) reads one
/// — numbers within `f64`, strings valid Unicode (no lone surrogate
/// escape), 128 levels at most — and not kept. `IgnoredAny` only follows
/// the syntax, so it let through lines rmcp then cannot parse and skips,
/// leaving the call to wait for its deadline.
struct AnyJson;

impl<'de> serde::Deserialize<'de> for AnyJson {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<AnyJson, D::Error> {
        deserializer.deserialize_any(AnyJson)
    }
}

impl<'de> serde::de::Visitor<'de> for AnyJson {
    type Value = AnyJson;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }

    fn visit_i64<E>(self, _: i64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }

    fn visit_u64<E>(self, _: u64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }

    fn visit_f64<E>(self, _: f64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }

    fn visit_str<E>(self, _: &str) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }

    fn visit_unit<E>(self) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<AnyJson, A::Error> {
        while seq.next_element::<AnyJson>()?.is_some() {}
        Ok(AnyJson)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<AnyJson, A::Error> {
        while map.next_entry::<AnyJson, AnyJson>()?.is_some() {}
        Ok(AnyJson)
    }
}

/// Runs `output` through the check as a stream would arrive, in chunks of
/// 7 bytes (so that lines span reads); the first fault, if any.
pub(super) fn check_all(output: &[u8]) -> Result<(), StreamFault> {
    let mut checked = Checked::new((), Arc::new(OnceLock::new()));
    output.chunks(7).try_for_each(|chunk| checked.take(chunk))
}

impl<R: AsyncRead + Unpin> AsyncRead for Checked<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        if self.fault.get().is_some() {
            return Poll::Ready(Err(std::io::Error::other("the server's stream was cut off")));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let this = &mut *self;
            if let Err(fault) = this.take(&buf.filled()[before..]) {
                let _ = this.fault.set(fault);
                return Poll::Ready(Err(std::io::Error::other("the server broke the protocol")));
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn read(bytes: &[u8]) -> (std::io::Result<Vec<u8>>, Option<StreamFault>) {
        let fault = Arc::new(OnceLock::new());
        let mut checked = Checked::new(bytes, Arc::clone(&fault));
        let mut out = Vec::new();
        let result = checked.read_to_end(&mut out).await.map(|_| out);
        (result, fault.get().cloned())
    }

    #[tokio::test]
    async fn messages_pass_and_the_first_bad_line_ends_the_stream() {
        let good = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\n[{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]\n\xEF\xBB\xBF{}\n";
        let (out, fault) = read(good).await;
        assert_eq!((out.unwrap(), fault), (good.to_vec(), None));
        let deep = [&b"["[..]; 200].concat().into_iter().chain(*b"\n").collect::<Vec<u8>>();
        for (bad, why) in [
            (&b"Server started on stdio\n{}\n"[..], "not a JSON object"),
            (&b"{\"jsonrpc\":\"2.0\",\n"[..], "not JSON"),
            (&b"{\"a\":\"\xFF\xFE\"}\n"[..], "not UTF-8"),
            // JSON by its syntax that rmcp cannot read (it would skip the line).
            (&b"{\"result\":{\"n\":222222222e301}}\n"[..], "number out of range"),
            (&b"{\"result\":{\"s\":\"\\ud800\"}}\n"[..], "not JSON"),
            (&b"{\"\\udc00\":1}\n"[..], "not JSON"),
            (&deep[..], "recursion"),
        ] {
            let (out, fault) = read(bad).await;
            assert!(out.is_err(), "{bad:?}");
            match fault {
                Some(StreamFault::Malformed { why: said, .. }) => assert!(said.contains(why), "{said}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn a_line_past_the_cap_ends_the_stream() {
        let long = vec![b'x'; MAX_MESSAGE + 10];
        let (out, fault) = read(&long).await;
        assert!(out.is_err());
        assert_eq!(fault, Some(StreamFault::Flooded));
        assert!(StreamFault::Flooded.describe("s").contains("over 16 MiB"));
    }
}

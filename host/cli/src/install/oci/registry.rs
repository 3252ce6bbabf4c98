//! The pull side of a registry's HTTP API (the OCI distribution spec):
//! manifests, blobs, referrers and the token exchange, with every reply
//! bounded in size and the whole pull bounded in time.
//!
//! oci-client reads each reply whole, with no cap and only a per-read
//! timeout, so a registry could stream a manifest without end or send a
//! blob a byte a second; here the transport is reqwest and every body is
//! read chunk by chunk: counted against the cap of what it is (a manifest,
//! a token, a blob of the size its manifest declared), each chunk awaited
//! at most until the pull's deadline and for at most [`IDLE`] of silence.
//! oci-client still parses references and manifests.

use super::progress::Progress;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderMap, WWW_AUTHENTICATE};
use std::time::{Duration, Instant};

/// The largest manifest, image index or referrers list read.
pub(super) const MAX_MANIFEST: u64 = 4 << 20;
/// The largest token reply read.
const MAX_TOKEN: u64 = 64 << 10;
/// The most of an error reply read (for its message).
const MAX_ERROR: u64 = 64 << 10;
/// Longest silence while a reply's head or body arrives.
const IDLE: Duration = Duration::from_secs(60);
/// Longest wait for a connection.
const CONNECT: Duration = Duration::from_secs(30);
/// Redirects followed for one request (blobs are often served elsewhere).
const REDIRECTS: usize = 5;

/// The manifest media types asked for: OCI's and Docker's, images and
/// indexes (an index is refused later, with its reason).
pub(super) const MANIFESTS: &str = "application/vnd.oci.image.manifest.v1+json, \
    application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.index.v1+json, \
    application/vnd.docker.distribution.manifest.list.v2+json";
/// What a referrers list is.
pub(super) const INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// Who the puller says it is.
#[derive(Clone)]
pub(super) enum Credentials {
    Anonymous,
    Basic {
        user: String,
        password: String,
    },
    /// An identity (refresh) token, exchanged for access tokens.
    Identity(String),
}

/// One repository of one registry, pulled from until a deadline.
pub(super) struct Repository {
    http: reqwest::Client,
    /// `https://HOST[:PORT]` (plain `http://` for a loopback registry).
    base: String,
    name: String,
    credentials: Credentials,
    /// What the registry's last challenge led to.
    authorization: Option<String>,
    deadline: Instant,
    timeout: Duration,
}

impl Repository {
    /// The repository `name` of `registry`, every request done by
    /// `timeout` from now.
    pub(super) fn new(
        registry: &str,
        name: &str,
        plain_http: bool,
        credentials: Credentials,
        timeout: Duration,
    ) -> Result<Repository, String> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT)
            .read_timeout(IDLE)
            .redirect(reqwest::redirect::Policy::limited(REDIRECTS))
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot start the network client: {e}"))?;
        let scheme = if plain_http { "http" } else { "https" };
        Ok(Repository {
            http,
            base: format!("{scheme}://{registry}"),
            name: name.to_string(),
            credentials,
            authorization: None,
            deadline: Instant::now() + timeout,
            timeout,
        })
    }

    /// The manifest `reference` (a tag or a digest) names, and its digest;
    /// `None` when the registry has no such manifest.
    pub(super) async fn manifest(
        &mut self,
        reference: &str,
        accept: &str,
    ) -> Result<Option<(Vec<u8>, String)>, String> {
        let path = format!("/v2/{}/manifests/{reference}", self.name);
        let what = format!("the manifest {reference}");
        let Some(body) = self.get(&path, accept, MAX_MANIFEST, &what, None).await? else { return Ok(None) };
        let digest = format!("sha256:{}", toolhost::content_hash(&body));
        Ok(Some((body, digest)))
    }

    /// The blob `digest`, which its manifest says holds `size` bytes (at
    /// most `max`), checked against both.
    pub(super) async fn blob(
        &mut self,
        digest: &str,
        size: u64,
        max: u64,
        what: &str,
        progress: Option<&mut Progress>,
    ) -> Result<Vec<u8>, String> {
        if size > max {
            return Err(format!("{what} is {size} bytes, more than the {max} toolhost reads"));
        }
        let path = format!("/v2/{}/blobs/{digest}", self.name);
        let body =
            self.get(&path, "*/*", size, what, progress).await?.ok_or_else(|| format!("the registry has no {what}"))?;
        let hash = format!("sha256:{}", toolhost::content_hash(&body));
        if hash != digest || body.len() as u64 != size {
            return Err(format!(
                "{what} pulled ({} bytes, {hash}) is not the blob its manifest names ({size} bytes, {digest})",
                body.len()
            ));
        }
        Ok(body)
    }

    /// The referrers list of the manifest `digest`: the registry's API,
    /// else the `sha256-HEX` tag of registries without it; `None` if
    /// neither has one.
    pub(super) async fn referrers(&mut self, digest: &str) -> Result<Option<Vec<u8>>, String> {
        let path = format!("/v2/{}/referrers/{digest}", self.name);
        let what = format!("the list of what refers to {digest}");
        if let Some(list) = self.get(&path, INDEX, MAX_MANIFEST, &what, None).await? {
            return Ok(Some(list));
        }
        Ok(self.manifest(&digest.replacen(':', "-", 1), INDEX).await?.map(|(list, _)| list))
    }

    /// `GET path`: its body (at most `max` bytes), `None` on a 404.
    async fn get(
        &mut self,
        path: &str,
        accept: &str,
        max: u64,
        what: &str,
        mut progress: Option<&mut Progress>,
    ) -> Result<Option<Vec<u8>>, String> {
        let url = format!("{}{path}", self.base);
        let mut response = self.send(&url, accept, what).await?;
        if response.status() == StatusCode::UNAUTHORIZED {
            let challenge = challenge(response.headers());
            self.authorize(challenge.as_deref(), what).await?;
            response = self.send(&url, accept, what).await?;
        }
        let status = response.status();
        if status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            let body = self.read(response, MAX_ERROR, what, None, true).await.unwrap_or_default();
            return Err(format!("reading {what}: the registry answered {status}{}", registry_message(&body)));
        }
        if let Some(length) = response.content_length()
            && length > max
        {
            return Err(format!("{what} is {length} bytes, more than the {max} toolhost reads"));
        }
        if let Some(progress) = progress.as_deref_mut() {
            progress.start(what, max);
        }
        self.read(response, max, what, progress, false).await.map(Some)
    }

    /// Sends a GET with the authorization the registry asked for, waiting
    /// for its head until the deadline.
    async fn send(&self, url: &str, accept: &str, what: &str) -> Result<reqwest::Response, String> {
        let mut request = self.http.get(url).header(ACCEPT, accept);
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization);
        }
        self.head_of(request, what).await
    }

    /// Sends `request` and waits for its head, at most until the deadline
    /// and for [`IDLE`] of silence.
    async fn head_of(&self, request: reqwest::RequestBuilder, what: &str) -> Result<reqwest::Response, String> {
        let left = self.left(what)?;
        match tokio::time::timeout(left.min(IDLE), request.send()).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => Err(format!("reading {what}: {}", error_chain(&e))),
            Err(_) if left <= IDLE => Err(self.too_slow(what)),
            Err(_) => Err(format!("reading {what}: the registry sent no answer for {} s", IDLE.as_secs())),
        }
    }

    /// The time left before the deadline, or the error past it.
    fn left(&self, what: &str) -> Result<Duration, String> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() { Err(self.too_slow(what)) } else { Ok(left) }
    }

    fn too_slow(&self, what: &str) -> String {
        format!(
            "the pull did not finish within {} s (reading {what}); the registry is too slow or never ends its \
             reply (--pull-timeout sets the limit)",
            self.timeout.as_secs()
        )
    }

    /// The body of `response`, refused past `max` bytes (a `lenient`
    /// read, of an error's message, just stops there).
    async fn read(
        &self,
        mut response: reqwest::Response,
        max: u64,
        what: &str,
        mut progress: Option<&mut Progress>,
        lenient: bool,
    ) -> Result<Vec<u8>, String> {
        let mut body = Vec::with_capacity(usize::try_from(max.min(1 << 20)).unwrap_or(0));
        loop {
            let left = self.left(what)?;
            let chunk = match tokio::time::timeout(left.min(IDLE), response.chunk()).await {
                Ok(Ok(Some(chunk))) => chunk,
                Ok(Ok(None)) => break,
                Ok(Err(e)) => return Err(format!("reading {what}: {}", error_chain(&e))),
                Err(_) if left <= IDLE => return Err(self.too_slow(what)),
                Err(_) => return Err(format!("reading {what}: the registry sent nothing for {} s", IDLE.as_secs())),
            };
            if (body.len() + chunk.len()) as u64 > max {
                if lenient {
                    let room = usize::try_from(max).unwrap_or(usize::MAX) - body.len();
                    body.extend_from_slice(&chunk[..room]);
                    break;
                }
                return Err(format!("{what} is larger than {max} bytes, the most toolhost reads of it"));
            }
            body.extend_from_slice(&chunk);
            if let Some(progress) = progress.as_deref_mut() {
                progress.advance(body.len() as u64);
            }
        }
        if let Some(progress) = progress {
            progress.finish(body.len() as u64);
        }
        Ok(body)
    }

    /// Answers the registry's challenge: a bearer token from its token
    /// service, or the credentials themselves where it asks for Basic.
    async fn authorize(&mut self, challenge: Option<&str>, what: &str) -> Result<(), String> {
        let needs = |why: &str| {
            format!(
                "reading {what}: the registry refused the {} ({why})",
                match self.credentials {
                    Credentials::Anonymous => "anonymous pull; set credentials (see `toolhost install --help`)",
                    _ => "credentials",
                }
            )
        };
        let challenge = challenge.ok_or_else(|| needs("it sent no challenge"))?;
        let (scheme, params) = parse_challenge(challenge);
        match (scheme.to_ascii_lowercase().as_str(), &self.credentials) {
            ("basic", Credentials::Basic { user, password }) => {
                use base64::Engine as _;
                let pair = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                self.authorization = Some(format!("Basic {pair}"));
                Ok(())
            }
            ("basic", _) => Err(needs("it asks for a user name and password")),
            // A first challenge, or one after the token expired: each
            // request is sent again once, so a registry refusing what it
            // asked for ends with its own 401.
            ("bearer", _) => {
                let realm = params.iter().find(|(k, _)| k == "realm").map(|(_, v)| v.clone());
                let realm = realm.ok_or_else(|| needs("its challenge names no token service"))?;
                let token = self.token(&realm, &params, what).await?;
                self.authorization = Some(format!("Bearer {token}"));
                Ok(())
            }
            (other, _) => Err(needs(&format!("it asks for {other:?} authentication, which toolhost does not speak"))),
        }
    }

    /// A token for pulling from the repository, from the token service at
    /// `realm`.
    async fn token(&self, realm: &str, params: &[(String, String)], what: &str) -> Result<String, String> {
        let realm =
            reqwest::Url::parse(realm).map_err(|e| format!("reading {what}: the token service {realm:?}: {e}"))?;
        // Credentials travel in the clear only to this machine.
        if realm.scheme() != "https" && !realm.host_str().is_some_and(super::loopback) {
            return Err(format!("reading {what}: the registry sends credentials to {realm}, which is not HTTPS"));
        }
        let service = params.iter().find(|(k, _)| k == "service").map(|(_, v)| v.as_str());
        let asked = params.iter().find(|(k, _)| k == "scope").map(|(_, v)| v.clone());
        let scope = asked.unwrap_or_else(|| format!("repository:{}:pull", self.name));
        let mut query: Vec<(&str, &str)> = vec![("scope", &scope)];
        query.extend(service.map(|s| ("service", s)));
        let request = match &self.credentials {
            Credentials::Identity(token) => {
                let mut form = vec![
                    ("grant_type", "refresh_token"),
                    ("refresh_token", token.as_str()),
                    ("client_id", "toolhost"),
                    ("scope", &scope),
                ];
                form.extend(service.map(|s| ("service", s)));
                self.http.post(realm).form(&form)
            }
            Credentials::Basic { user, password } => {
                self.http.get(realm).query(&query).basic_auth(user, Some(password))
            }
            Credentials::Anonymous => self.http.get(realm).query(&query),
        };
        let what_token = format!("a token for {what}");
        let response = self.head_of(request, &what_token).await?;
        let status = response.status();
        let body = self.read(response, MAX_TOKEN, &what_token, None, !status.is_success()).await?;
        if !status.is_success() {
            return Err(format!(
                "reading {what_token}: the token service answered {status}{}",
                registry_message(&body)
            ));
        }
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let token: Token = serde_json::from_slice(&body)
            .map_err(|e| format!("reading {what_token}: the reply is not a token ({e})"))?;
        token
            .token
            .or(token.access_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| format!("reading {what_token}: the token service's reply holds no token"))
    }
}

/// The `WWW-Authenticate` challenge of a 401.
fn challenge(headers: &HeaderMap) -> Option<String> {
    headers.get(WWW_AUTHENTICATE)?.to_str().ok().map(str::to_owned)
}

/// A challenge's scheme and its `key="value"` (or `key=token`) parameters,
/// as RFC 9110 writes them; what does not parse is left out.
pub(crate) fn parse_challenge(challenge: &str) -> (String, Vec<(String, String)>) {
    let challenge = challenge.trim();
    let (scheme, mut rest) = challenge.split_once(' ').unwrap_or((challenge, ""));
    let mut params = Vec::new();
    loop {
        rest = rest.trim_start_matches([' ', ',']);
        let Some((key, after)) = rest.split_once('=') else { break };
        let key = key.trim().to_ascii_lowercase();
        let after = after.trim_start();
        let (value, next) = match after.strip_prefix('"') {
            Some(quoted) => {
                let mut value = String::new();
                let mut chars = quoted.char_indices();
                let mut end = quoted.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => value.extend(chars.next().map(|(_, c)| c)),
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        c => value.push(c),
                    }
                }
                (value, &quoted[end.min(quoted.len())..])
            }
            None => {
                let end = after.find(',').unwrap_or(after.len());
                (after[..end].trim().to_string(), &after[end..])
            }
        };
        params.push((key, value));
        rest = next;
    }
    (scheme.to_string(), params)
}

/// The first message of a registry's error reply (`{"errors": [{"message":
/// …}]}`), for an error: `: MESSAGE`, or nothing.
fn registry_message(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Envelope {
        errors: Vec<Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        code: Option<String>,
        message: Option<String>,
    }
    let Ok(envelope) = serde_json::from_slice::<Envelope>(body) else { return String::new() };
    let Some(first) = envelope.errors.into_iter().next() else { return String::new() };
    let text = [first.code, first.message].into_iter().flatten().collect::<Vec<_>>().join(" ");
    let text: String = text.chars().filter(|c| !c.is_control()).take(300).collect();
    if text.is_empty() { text } else { format!(": {text}") }
}

/// A reqwest error with its causes (the connection's own message).
fn error_chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse_as_registries_write_them() {
        let (scheme, params) =
            parse_challenge(r#"Bearer realm="https://ghcr.io/token",service="ghcr.io",scope="repository:o/t:pull""#);
        assert_eq!(scheme, "Bearer");
        let get = |k: &str| params.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        assert_eq!(get("realm"), Some("https://ghcr.io/token"));
        assert_eq!(get("service"), Some("ghcr.io"));
        assert_eq!(get("scope"), Some("repository:o/t:pull"));
        let (scheme, params) = parse_challenge(r#"Basic realm="Registry Realm""#);
        assert_eq!((scheme.as_str(), params), ("Basic", vec![("realm".into(), "Registry Realm".into())]));
        // Unquoted values, escapes, spaces, and what does not parse.
        let (_, params) = parse_challenge(r#"Bearer  realm = "a\"b" , service=reg.io,error="x"#);
        assert_eq!(params[0], ("realm".into(), "a\"b".into()));
        assert_eq!(params[1], ("service".into(), "reg.io".into()));
        assert_eq!(params[2], ("error".into(), "x".into()));
        assert_eq!(parse_challenge("").1, vec![]);
        assert_eq!(parse_challenge("Bearer ==,=\"").0, "Bearer");
    }

    #[test]
    fn registry_errors_give_their_first_message() {
        let body = br#"{"errors":[{"code":"DENIED","message":"requested access\nis denied"}]}"#;
        assert_eq!(registry_message(body), ": DENIED requested accessis denied");
        assert_eq!(registry_message(b"<html>"), "");
    }
}

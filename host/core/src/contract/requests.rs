//! What a component requests from the operator, in its `toolhost:requests`
//! custom section (JSON, stamped by the SDK's `requests!`): the working
//! directories, other directories, network hosts, environment variable
//! names, the process capability, memory and time. Read from the
//! file without running anything, so it can be shown before a tool is
//! trusted with anything.

use crate::grants::Allowance;

/// The custom section's name.
pub(crate) const SECTION: &str = "toolhost:requests";
/// Largest requests section accepted.
const MAX_SECTION: usize = 64 << 10;

/// A requests section the host cannot accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestsError {
    #[error("`{SECTION}` is not valid: {0}")]
    /// The section is not a valid allowance (JSON, lengths, names).
    Invalid(String),
    #[error("it has more than one `{SECTION}` section")]
    /// The component has two sections, so which one counts is unclear.
    Repeated,
    #[error("it has a `{SECTION}` section already; build it again without one to stamp other requests")]
    /// Stamping a component that has a section already.
    Stamped,
    #[error("the component cannot be read: {0}")]
    /// The bytes are not a readable component.
    Unreadable(String),
}

/// The requests in `component` (a component's bytes): the one
/// `toolhost:requests` section, at the top level or in a core module inside;
/// none means the tool requests nothing.
pub fn read(component: &[u8]) -> Result<Allowance, RequestsError> {
    let mut found: Option<&[u8]> = None;
    super::scan::walk(component, RequestsError::Unreadable, |payload, _| match payload {
        wasmparser::Payload::CustomSection(section) if section.name() == SECTION => {
            if found.is_some() {
                return Err(RequestsError::Repeated);
            }
            found = Some(section.data());
            Ok(())
        }
        _ => Ok(()),
    })?;
    match found {
        None => Ok(Allowance::default()),
        Some(data) => parse(data),
    }
}

/// `component` with `requests` (JSON text) written into it as its
/// `toolhost:requests` section, for toolchains that cannot stamp one
/// themselves (componentize-py, componentize-qjs, componentize-js): checked
/// as the loader checks it, appended at the top level. A component that has
/// a section already is refused (two would make it unloadable).
pub fn stamp(component: &[u8], requests: &str) -> Result<Vec<u8>, RequestsError> {
    parse(requests.as_bytes())?;
    super::shape::check_header(component).map_err(|e| RequestsError::Unreadable(e.to_string()))?;
    if has_section(component)? {
        return Err(RequestsError::Stamped);
    }
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { byte } else { byte | 0x80 });
            if n == 0 {
                return;
            }
        }
    }
    let mut body = Vec::new();
    leb(SECTION.len(), &mut body);
    body.extend_from_slice(SECTION.as_bytes());
    body.extend_from_slice(requests.as_bytes());
    let mut out = component.to_vec();
    // A custom section (id 0) may come anywhere, the end included.
    out.push(0);
    leb(body.len(), &mut out);
    out.extend_from_slice(&body);
    Ok(out)
}

fn has_section(component: &[u8]) -> Result<bool, RequestsError> {
    let mut found = false;
    super::scan::walk(component, RequestsError::Unreadable, |payload, _| {
        found |= matches!(payload, wasmparser::Payload::CustomSection(s) if s.name() == SECTION);
        Ok(())
    })?;
    Ok(found)
}

fn parse(data: &[u8]) -> Result<Allowance, RequestsError> {
    if data.len() > MAX_SECTION {
        return Err(RequestsError::Invalid(format!("{} KiB, at most {} KiB", data.len() >> 10, MAX_SECTION >> 10)));
    }
    let requests: Allowance = serde_json::from_slice(data).map_err(|e| RequestsError::Invalid(e.to_string()))?;
    requests.check().map_err(|e| RequestsError::Invalid(e.to_string()))?;
    Ok(requests)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::DirAccess;

    #[test]
    fn requests_parse_and_are_checked() {
        let r = parse(br#"{"directories":[{"path":"data","access":"read-only"}],"hosts":["example.com:443"],"env":["A"],"memory_mib":64,"timeout_ms":5}"#).unwrap();
        assert_eq!(r.directories[0].access, DirAccess::ReadOnly);
        assert_eq!(r.memory_mib, Some(64));
        assert!(parse(br#"{"directories":[{"path":"d","access":"all"}]}"#).is_err());
        assert!(parse(br#"{"surprise":1}"#).is_err());
        assert!(parse(br#"{"env":["A=B"]}"#).is_err());
        assert!(parse(br#"{"hosts":["http://example.com"]}"#).is_err());
        assert!(parse(b"not json").is_err());
    }

    #[test]
    fn a_component_without_the_section_requests_nothing() {
        let wasm = std::fs::read(toolhost_tests::ECHO).unwrap();
        assert_eq!(read(&wasm), Ok(Allowance::default()));
        // A built-in stamps its requests like any component.
        let read_tool = crate::registry::builtin_wasm_for_tests();
        assert_eq!(read(read_tool).unwrap().workspace, Some(DirAccess::ReadOnly));
    }

    #[test]
    fn the_workspace_and_the_process_are_requested_by_name() {
        let r = parse(br#"{"workspace": "read-write", "process": true}"#).unwrap();
        assert_eq!((r.workspace, r.process), (Some(DirAccess::ReadWrite), true));
        assert!(parse(br#"{"workspace": "everything"}"#).is_err());
        assert_eq!(serde_json::to_string(&Allowance::default()).unwrap(), "{}");
    }
}

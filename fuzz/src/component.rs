//! What a component carries: its binary as the scanner reads it, its
//! `toolhost:requests` section, the host patterns it asks for against the
//! operator's grants, and the JSON Schemas it declares.

use arbitrary::{Result, Unstructured};
use serde_json::Value;
use toolhost::Allowance;
use toolhost::grants::HostPattern;
use toolhost::internals::Network;
use toolhost::internals::Schema;
use toolhost::portability_problems;

/// The smallest component header the host accepts.
const HEADER: &[u8] = b"\0asm\x0d\0\x01\0";

/// A component's bytes: the scanner and the requests reader never panic;
/// what the reader accepts passes the checks; a section stamped from text
/// reads back as that text says, and cannot be stamped twice.
pub fn component(data: &[u8]) {
    let _ = toolhost::internals::outline(data).map(|o| toolhost::internals::check_outline(&o));
    if let Ok(r) = toolhost::internals::read_requests(data) {
        r.check().expect("a section read is a section checked");
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(stamped) = toolhost::stamp_requests(HEADER, text)
    {
        let read = toolhost::internals::read_requests(&stamped).expect("a stamped section reads back");
        let again = toolhost::stamp_requests(&stamped, text);
        assert!(again.is_err(), "a component was stamped twice");
        let parsed: Allowance = serde_json::from_str(text).expect("stamp accepted it, so it parses");
        assert_eq!(read, parsed);
    }
}

const HOSTS: &[&str] = &[
    "*",
    "*:443",
    "*.example.com",
    "example.com",
    "example.com:80",
    "127.0.0.1",
    "127.0.0.1:8080",
    "10.0.0.1",
    "169.254.169.254:80",
    "[::1]",
    "[fd00:ec2::254]",
    "8.8.8.8",
    "8.8.8.8:53",
    "1.2.3.4.",
    "LOCALHOST",
    "[::ffff:127.0.0.1]",
];

fn host(u: &mut Unstructured) -> Result<String> {
    Ok(match u.int_in_range(0..=3)? {
        0 => u.arbitrary::<String>()?,
        _ => u.choose(HOSTS)?.to_string(),
    })
}

/// Host patterns, and the hosts a tool gets from what it asked and what it
/// was granted: a pattern covers itself and prints to what parses the same;
/// and no address is reachable with the intersection that the grant alone
/// does not reach (a `*` grant reaches public addresses only).
pub fn hosts(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok((asked, granted, probe, port)) = (|| -> Result<_> {
        let asked: Vec<String> = (0..u.int_in_range(0..=3)?).map(|_| host(&mut u)).collect::<Result<_>>()?;
        let granted: Vec<String> = (0..u.int_in_range(0..=3)?).map(|_| host(&mut u)).collect::<Result<_>>()?;
        let probe =
            *u.choose(&["127.0.0.1", "10.0.0.1", "169.254.169.254", "::1", "8.8.8.8", "1.2.3.4", "fd00:ec2::254"])?;
        Ok((asked, granted, probe, *u.choose(&[80u16, 443, 53, 8080])?))
    })() else {
        return;
    };
    for text in asked.iter().chain(&granted) {
        if let Some(p) = HostPattern::parse(text) {
            assert!(p.covers(&p), "{text:?} does not cover itself");
            assert_eq!(
                HostPattern::parse(&p.to_string()).as_ref(),
                Some(&p),
                "{text:?} prints as {p}, which parses differently"
            );
        }
    }
    let ask = Allowance { hosts: asked.clone(), ..Allowance::default() };
    let grant = Allowance { hosts: granted.clone(), ..Allowance::default() };
    let (grants, _missing) = toolhost::grants::intersect(&ask, &grant, std::path::Path::new("/"));
    let reach = |hosts: &[String]| {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a runtime");
        rt.block_on(Network::new(hosts).resolve(probe, port)).is_ok()
    };
    if reach(&grants.hosts) {
        assert!(
            reach(&granted),
            "asking {asked:?} and granted {granted:?}, the tool reaches {probe}:{port} (through {:?}), which the grant does not",
            grants.hosts
        );
    }
}

/// A declared JSON Schema within the loader's bounds (64 KiB, 32 levels):
/// compiling and checking never panics; a schema checks the same instance
/// the same way twice; the portability check never panics; its TypeScript
/// declaration for Script programs ends, within its budget, and cannot
/// close its doc comments early.
pub fn schema(data: &[u8]) {
    if data.len() > 64 << 10 {
        return;
    }
    let Some((split, rest)) = data.split_first() else { return };
    let at = (*split as usize).min(rest.len());
    let (schema_bytes, instance_bytes) = rest.split_at(at);
    let Ok(schema) = serde_json::from_slice::<Value>(schema_bytes) else { return };
    if depth(&schema) > 32 {
        return;
    }
    let _ = portability_problems(&schema);
    let declared = toolhost::internals::declaration_of("Fuzz", &schema);
    // The budget, and one last line (a property name or a doc line) past it.
    let bound = toolhost::internals::MAX_DECLARATION + (64 << 10) + 1024;
    assert!(declared.len() <= bound, "a declaration of {} bytes", declared.len());
    for line in declared.lines().map(str::trim_start).filter(|l| l.starts_with("/**")) {
        let body = line.strip_suffix("*/").map(|l| &l[3..]);
        assert!(body.is_some_and(|b| !b.contains("*/")), "a doc comment that does not end its line: {line}");
    }
    let Ok(compiled) = Schema::compile(schema) else { return };
    let instance = serde_json::from_slice::<Value>(instance_bytes).unwrap_or(Value::Null);
    let first = compiled.check("Fuzz", &instance).is_ok();
    assert_eq!(first, compiled.check("Fuzz", &instance).is_ok(), "a schema checked {instance} two ways");
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

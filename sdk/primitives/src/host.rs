//! Host names as every check compares them: lower case, without the
//! trailing dot of a fully qualified name; and whether one falls under a
//! domain (`*.example.com`), label by label.

/// `host` as checks compare it: ASCII lower case, trailing dots removed
/// (`Example.COM.` is `example.com`).
pub fn normalize(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Whether `host` is a name below `domain`, a whole label or more deeper
/// (`a.example.com` and `a.b.example.com` are under `example.com`;
/// `example.com` itself and `badexample.com` are not). Both are compared
/// as [`normalize`] leaves them.
pub fn is_under(host: &str, domain: &str) -> bool {
    let (host, domain) = (normalize(host), normalize(domain));
    !domain.split('.').any(str::is_empty)
        && host.len() > domain.len() + 1
        && host.ends_with(&domain)
        && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
        && host.as_bytes()[host.len() - domain.len() - 2] != b'.'
}

/// Whether `host` is `domain` or under it.
pub fn is_within(host: &str, domain: &str) -> bool {
    normalize(host) == normalize(domain) || is_under(host, domain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_in_lower_case_without_the_trailing_dot() {
        assert_eq!(normalize("Example.COM."), "example.com");
        assert_eq!(normalize("a.b.."), "a.b");
        assert_eq!(normalize(""), "");
    }

    #[test]
    fn a_host_is_under_a_domain_by_whole_labels_only() {
        assert!(is_under("a.example.com", "example.com"));
        assert!(is_under("A.B.Example.com.", "example.COM"));
        assert!(!is_under("example.com", "example.com"), "the domain itself is not under it");
        assert!(!is_under("badexample.com", "example.com"), "a label must end where the domain starts");
        assert!(!is_under(".example.com", "example.com"), "an empty label is no host");
        assert!(!is_under("a..example.com", "example.com"), "nor is one before the domain");
        assert!(!is_under("a.example.com", ""), "an empty domain holds nothing");
        assert!(is_within("example.com.", "Example.com") && is_within("x.example.com", "example.com"));
        assert!(!is_within("example.org", "example.com"));
    }

    /// Every host made of a few labels from a small alphabet against every
    /// domain made the same way: under means the host's labels end with
    /// the domain's, and there are more of them.
    #[test]
    fn under_agrees_with_comparing_labels() {
        let labels = ["a", "b", "ab", "A", ""];
        let mut names = vec![String::new()];
        for _ in 0..3 {
            let longer: Vec<String> = names
                .iter()
                .flat_map(|n| labels.iter().map(move |l| if n.is_empty() { l.to_string() } else { format!("{l}.{n}") }))
                .collect();
            names.extend(longer);
        }
        for host in &names {
            for domain in &names {
                let (h, d) = (normalize(host), normalize(domain));
                let hl: Vec<&str> = h.split('.').collect();
                let dl: Vec<&str> = d.split('.').collect();
                let expected = !d.is_empty()
                    && !dl.contains(&"")
                    && hl.len() > dl.len()
                    && hl[hl.len() - dl.len()..] == dl[..]
                    && !hl[hl.len() - dl.len() - 1].is_empty();
                assert_eq!(is_under(host, domain), expected, "{host:?} under {domain:?}");
            }
        }
    }
}

//! Ids no one can guess, from the system's random source: the handles a
//! front gives out (state handles, pending approvals), background tasks'
//! ids, the ids of calls a client did not name.

/// Fills `bytes` from the system's random source (getrandom(2) on Linux).
/// Panics only where the system has none, which toolhost cannot run
/// safely without.
pub fn fill_random(bytes: &mut [u8]) {
    getrandom::fill(bytes).expect("the system's random source");
}

/// `prefix` and `len` characters of `alphabet` (at most 256 characters),
/// each drawn uniformly from the system's random source.
pub fn random_text(prefix: &str, alphabet: &[u8], len: usize) -> String {
    assert!(!alphabet.is_empty() && alphabet.len() <= 256, "an alphabet of 1 to 256 characters");
    // The largest multiple of the alphabet's size a byte holds: bytes past
    // it are drawn again, so every character is as likely.
    let limit = 256 - 256 % alphabet.len();
    let mut text = String::with_capacity(prefix.len() + len);
    text.push_str(prefix);
    let mut pool = [0u8; 64];
    let mut drawn = pool.len();
    while text.len() < prefix.len() + len {
        if drawn == pool.len() {
            fill_random(&mut pool);
            drawn = 0;
        }
        let b = usize::from(pool[drawn]);
        drawn += 1;
        if b < limit {
            text.push(char::from(alphabet[b % alphabet.len()]));
        }
    }
    text
}

/// `prefix` and 26 characters of `a`–`z`, `2`–`7`: 130 bits no one can
/// guess. Valid as a session id when `prefix` is.
pub fn unguessable(prefix: &str) -> String {
    random_text(prefix, b"abcdefghijklmnopqrstuvwxyz234567", 26)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn ids_are_long_distinct_and_use_the_whole_alphabet() {
        let ids: BTreeSet<String> = (0..1000).map(|_| unguessable("ths_")).collect();
        assert_eq!(ids.len(), 1000);
        assert!(ids.iter().all(|id| id.len() == 30 && id.starts_with("ths_")));
        let seen: BTreeSet<char> = ids.iter().flat_map(|id| id[4..].chars()).collect();
        assert_eq!(seen.len(), 32);
    }

    #[test]
    fn every_character_of_an_odd_alphabet_is_about_as_likely() {
        let text = random_text("", b"0123456789abcdefghijklmnopqrstuvwxyz", 36_000);
        for c in b"0123456789abcdefghijklmnopqrstuvwxyz" {
            let n = text.bytes().filter(|b| b == c).count();
            assert!((700..1300).contains(&n), "{} drawn {n} times in 36,000", char::from(*c));
        }
    }
}

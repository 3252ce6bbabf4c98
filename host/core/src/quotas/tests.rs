use super::*;

fn quota(json: &str) -> (Quota, Arc<str>) {
    let quota: Quota = serde_json::from_str(json).unwrap();
    quota.check().unwrap();
    (quota, Arc::from("managed settings m.json"))
}

fn quotas(entries: &[&str]) -> Quotas {
    Quotas::new(entries.iter().map(|e| quota(e)).collect(), None)
}

#[test]
fn calls_a_minute_are_counted_per_identity_and_the_refusal_says_when_to_try_again() {
    let q = quotas(&[r#"{"callsPerMinute": 3}"#]);
    for _ in 0..3 {
        q.admit(Some("alice"), "Read", true).unwrap().finish(0);
    }
    let refusal = q.admit(Some("alice"), "Read", true).err().unwrap();
    assert_eq!(refusal.kind, QuotaKind::CallsPerMinute);
    assert!((1..=60).contains(&refusal.retry_after_secs()), "{refusal:?}");
    let text = refusal.to_string();
    assert!(text.starts_with("Over quota: 3 calls a minute for identity `alice` (managed settings m.json)."), "{text}");
    assert!(text.contains("try again in"), "{text}");
    // Another identity, and the calls without one, have quotas of their own.
    q.admit(Some("bob"), "Read", true).unwrap().finish(0);
    q.admit(None, "Read", true).unwrap().finish(0);
    assert!(q.would_refuse(Some("alice"), "Read").is_some());
    assert!(q.would_refuse(Some("bob"), "Read").is_none());
}

#[test]
fn asking_whether_a_call_would_be_refused_counts_nothing() {
    let q = quotas(&[r#"{"callsPerMinute": 1, "callsInFlight": 1}"#]);
    for _ in 0..5 {
        assert!(q.would_refuse(Some("alice"), "Read").is_none());
    }
    let held = q.admit(Some("alice"), "Read", true).unwrap();
    assert_eq!(q.would_refuse(Some("alice"), "Read").unwrap().kind, QuotaKind::CallsInFlight);
    held.finish(0);
    assert_eq!(q.would_refuse(Some("alice"), "Read").unwrap().kind, QuotaKind::CallsPerMinute);
}

#[test]
fn a_tools_quota_counts_only_its_calls_and_a_refused_call_is_taken_back_everywhere() {
    let q = quotas(&[r#"{"callsPerMinute": 2}"#, r#"{"identity": "*", "tool": "Bash", "callsPerMinute": 1}"#]);
    q.admit(Some("alice"), "Bash", true).unwrap().finish(0);
    let refusal = q.admit(Some("alice"), "Bash", true).err().unwrap();
    assert_eq!(refusal.tool.as_deref(), Some("Bash"));
    assert!(refusal.to_string().contains("1 calls a minute of Bash"), "{refusal}");
    // The refused Bash call is not among the two calls a minute.
    q.admit(Some("alice"), "Read", true).unwrap().finish(0);
    assert!(q.admit(Some("alice"), "Read", true).is_err());
}

#[test]
fn the_smallest_limit_of_several_entries_holds_and_names_its_file() {
    let q = Quotas::new(
        vec![
            (serde_json::from_str(r#"{"callsPerMinute": 5}"#).unwrap(), Arc::from("managed settings m.json")),
            (
                serde_json::from_str(r#"{"identity": "alice", "callsPerMinute": 1}"#).unwrap(),
                Arc::from("user settings u.json"),
            ),
        ],
        None,
    );
    q.admit(Some("alice"), "Read", true).unwrap().finish(0);
    let refusal = q.admit(Some("alice"), "Read", true).err().unwrap();
    assert_eq!((refusal.limit, &*refusal.origin), (1.0, "user settings u.json"));
    for _ in 0..5 {
        q.admit(Some("bob"), "Read", true).unwrap().finish(0);
    }
    assert_eq!(q.admit(Some("bob"), "Read", true).err().unwrap().limit, 5.0);
}

#[test]
fn calls_in_flight_hold_a_lease_until_they_finish_and_inner_calls_hold_none() {
    let q = quotas(&[r#"{"callsInFlight": 2}"#]);
    let first = q.admit(Some("alice"), "Read", true).unwrap();
    let second = q.admit(Some("alice"), "Script", true).unwrap();
    let refusal = q.admit(Some("alice"), "Read", true).err().unwrap();
    assert_eq!((refusal.kind, refusal.retry_after_secs()), (QuotaKind::CallsInFlight, 1));
    // The Script's own calls run within its lease.
    q.admit(Some("alice"), "Read", false).unwrap().finish(0);
    first.finish(0);
    let third = q.admit(Some("alice"), "Read", true).unwrap();
    // A call dropped unfinished (its thread failed) gives its lease back too.
    drop(second);
    drop(third);
    let _a = q.admit(Some("alice"), "Read", true).unwrap();
    let _b = q.admit(Some("alice"), "Read", true).unwrap();
}

#[test]
fn a_lapsed_lease_of_an_instance_that_died_stops_counting() {
    let store: Arc<dyn StateStore> = Arc::new(MemoryStore::default());
    let q = Quotas::new(vec![quota(r#"{"callsInFlight": 1}"#)], Some(&store));
    let record = record_id(QuotaKind::CallsInFlight, "alice", None);
    // Another instance's lease, lapsed a moment ago.
    let lapsed = (now_ms() - 1).to_string();
    store.namespace(NAMESPACE).apply(&record, &[("dead-1".into(), Some(lapsed))]).unwrap();
    let held = q.admit(Some("alice"), "Read", true).unwrap();
    let entries = store.namespace(NAMESPACE).load(&record).unwrap();
    assert_eq!(entries.len(), 1, "the lapsed lease was removed: {entries:?}");
    drop(held);
    assert!(store.namespace(NAMESPACE).load(&record).unwrap().is_empty());
}

#[test]
fn cpu_time_is_counted_when_a_call_finishes_and_refuses_the_next_once_the_hour_is_spent() {
    let q = quotas(&[r#"{"identity": "alice", "cpuSecondsPerHour": 0.002}"#]);
    q.admit(Some("alice"), "Bash", true).unwrap().finish(1_500);
    // 1.5 ms of 2: the next call still starts, and spends the rest.
    q.admit(Some("alice"), "Bash", true).unwrap().finish(1_500);
    let refusal = q.admit(Some("alice"), "Bash", true).err().unwrap();
    assert_eq!(refusal.kind, QuotaKind::CpuSecondsPerHour);
    assert!(refusal.to_string().contains("0.002 CPU seconds an hour"), "{refusal}");
    assert!((1..=3600).contains(&refusal.retry_after_secs()));
    q.admit(Some("bob"), "Bash", true).unwrap().finish(1_000_000);
}

#[test]
fn instances_sharing_a_store_hold_one_quota_together() {
    let store: Arc<dyn StateStore> = Arc::new(MemoryStore::default());
    let entries = || vec![quota(r#"{"callsPerMinute": 4, "callsInFlight": 1}"#)];
    let (a, b) = (Quotas::new(entries(), Some(&store)), Quotas::new(entries(), Some(&store)));
    let running = a.admit(Some("alice"), "Read", true).unwrap();
    assert_eq!(b.admit(Some("alice"), "Read", true).err().unwrap().kind, QuotaKind::CallsInFlight);
    running.finish(0);
    for q in [&b, &a, &b] {
        q.admit(Some("alice"), "Read", true).unwrap().finish(0);
    }
    assert_eq!(a.admit(Some("alice"), "Read", true).err().unwrap().kind, QuotaKind::CallsPerMinute);
    assert_eq!(b.admit(Some("alice"), "Read", true).err().unwrap().kind, QuotaKind::CallsPerMinute);
}

#[test]
fn entries_that_limit_nothing_or_cannot_be_met_are_refused() {
    for (json, message) in [
        (r#"{"identity": "alice"}"#, "sets no limit"),
        (r#"{"identity": "", "callsPerMinute": 1}"#, "`identity` is empty"),
        (r#"{"tool": "", "callsPerMinute": 1}"#, "`tool` is empty"),
        (r#"{"callsInFlight": 0}"#, "at least 1"),
        (r#"{"cpuSecondsPerHour": 0}"#, "above 0"),
        (r#"{"cpuSecondsPerHour": -1.5}"#, "above 0"),
    ] {
        let quota: Quota = serde_json::from_str(json).unwrap();
        let e = quota.check().unwrap_err();
        assert!(e.contains(message), "{json}: {e}");
    }
    assert!(serde_json::from_str::<Quota>(r#"{"callsPerMinut": 1}"#).is_err(), "a misspelt key is an error");
}

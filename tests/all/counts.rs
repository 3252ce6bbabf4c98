//! The hot paths' instruction counts held to their baselines (the `ci`
//! profile's, in host/cli/benches/counts/baseline.json): the quick set of
//! `cargo bench -p toolhost-cli --bench counts`, under valgrind's callgrind.

use std::path::Path;
use toolhost_tests::counts::{self, Baselines, Verdict};
use toolhost_tests::hot_paths::Fixture;

#[test]
fn hot_paths_hold_their_baselines() {
    counts::valgrind().and_then(|()| counts::time()).unwrap_or_else(|why| panic!("{why}"));
    let toolhost = Path::new(env!("CARGO_BIN_EXE_toolhost"));
    let profile = counts::profile_of(toolhost);
    let file = toolhost_tests::repo_root().join("host/cli/benches/counts/baseline.json");
    let baselines = Baselines::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let Some(base) = baselines.profiles.get(&profile) else {
        // Only the README's test build (`ci`) and `release` have baselines;
        // a plain `cargo test` build's counts mean nothing against them.
        assert!(profile != "ci" && profile != "release", "no `{profile}` baselines in {}", file.display());
        eprintln!("no baselines for the `{profile}` profile: nothing to compare");
        return;
    };
    let fixture = Fixture::new(toolhost);
    let out = fixture.root.join("out-test");
    std::fs::create_dir_all(&out).unwrap();
    let mut report = Vec::new();
    let mut rose = Vec::new();
    for scenario in fixture.quick() {
        counts::warm_up(&scenario, &out).unwrap_or_else(|e| panic!("warming up: {e}"));
        let (now, verdict, counted) =
            counts::held(&scenario, &out, base.get(&scenario.name).copied()).unwrap_or_else(|e| panic!("{e}"));
        report.push(format!(
            "{}: {:.0} instructions per call ({verdict:?}; counted {counted:.0?})",
            scenario.name, now.ir
        ));
        match verdict {
            Verdict::Within(_) | Verdict::Fell(_) => {}
            Verdict::New => rose.push(format!("{}: no baseline", scenario.name)),
            Verdict::Rose(change) => rose.push(format!("{}: {:+.1}%", scenario.name, change * 100.0)),
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        rose.is_empty(),
        "over the `{profile}` baselines by more than {:.0}%: {}\n{}\n(after a change that is meant to cost more, \
         record new baselines with `cargo bench -p toolhost-cli --bench counts -- --quick --save` on the `{profile}` build)",
        counts::TOLERANCE * 100.0,
        rose.join(", "),
        report.join("\n")
    );
}

//! The ruby filter through the binary: Ruby's VM must leave sluice's stop signals alone, and
//! a graceful stop loses and repeats nothing that went through Ruby.
#![cfg(feature = "ruby")]

mod run_support;

use std::process::Stdio;

use run_support::{sequences, temp_dir, Run};

#[test]
fn sigterm_and_sigint_stop_a_pipeline_with_a_ruby_filter() {
    for sig in ["-TERM", "-INT"] {
        let dir = temp_dir("ruby-filter", sig);
        let out = dir.join("out.jsonl");
        let config = format!(
            "input {{ generator {{ message => 'm' }} }} \
             filter {{ ruby {{ code => \"event.set('seq2', event.get('[event][sequence]') * 2)\" }} }} \
             output {{ file {{ path => '{}' codec => json_lines }} }}",
            out.display()
        );
        let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
        r.wait_log("starting pipeline", 60);
        // Let events flow through Ruby, then stop.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .count()
            < 1000
        {
            assert!(std::time::Instant::now() < deadline, "{}", r.log());
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        r.signal(sig);
        let status = r.exit(60);
        assert!(status.success(), "{sig}: {status:?}\n{}", r.log());
        let seqs = sequences(&out);
        let n = seqs.len() as i64;
        assert!(n >= 1000);
        // Every sequence from 0 once: nothing lost or repeated in the graceful stop.
        assert_eq!(
            seqs.keys().next_back().copied(),
            Some(n - 1),
            "{sig}: a sequence number is missing"
        );
        assert!(seqs.values().all(|&c| c == 1), "{sig}: duplicates");
        for line in std::fs::read_to_string(&out).unwrap().lines().take(50) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["seq2"], v["event"]["sequence"].as_i64().unwrap() * 2);
        }
    }
}

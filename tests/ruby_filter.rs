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
        r.wait_lines(&out, 1000, 60);
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

#[test]
fn code_that_never_ends_is_interrupted_by_a_stalled_stop() {
    let dir = temp_dir("ruby-filter", "loop");
    let out = dir.join("out.jsonl");
    let config = format!(
        "input {{ generator {{ count => 3 message => 'm' }} }} \
         filter {{ ruby {{ code => \"loop {{ }} if event.get('[event][sequence]') == 1; event.set('ran', true)\" }} }} \
         output {{ file {{ path => '{}' codec => json_lines }} }}",
        out.display()
    );
    let mut r = Run::start(
        &dir,
        "pipeline.workers: 1\npipeline.batch.size: 1\n",
        &[],
        &config,
        Stdio::null(),
        Stdio::null(),
    );
    r.wait_log("starting pipeline", 60);
    // Event 0 goes through; event 1 spins for ever.
    r.wait_lines(&out, 1, 60);
    r.signal("-TERM");
    // The first stall report (5 s) interrupts the code; the stop then completes, with a
    // failure status: the memory queue lost the batch that did not go through the filter.
    let status = r.exit(60);
    assert_eq!(status.code(), Some(1), "{status:?}\n{}", r.log());
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_seq = |s: i64| {
        lines
            .iter()
            .find(|v| v["event"]["sequence"] == s)
            .unwrap_or_else(|| panic!("sequence {s} missing: {lines:?}"))
    };
    assert_eq!(by_seq(0)["ran"], true);
    // The interrupted event, and the next one (code no longer runs), skipped the filter: they
    // go to no output (a memory queue counts them lost).
    assert_eq!(lines.len(), 1, "{lines:?}");
    let log = r.log();
    assert!(log.contains("cut short by the stop"), "{log}");
    assert!(log.contains("are lost"), "{log}");
}

#[test]
fn aggregate_pushes_a_timed_out_map_at_the_periodic_flush() {
    let dir = temp_dir("ruby-filter", "aggregate");
    let out = dir.join("out.jsonl");
    let config = format!(
        "input {{ stdin {{ codec => json_lines }} }} \
         filter {{ aggregate {{ task_id => '%{{id}}' code => \"map['count'] ||= 0; map['count'] += 1; event.cancel\" \
                   push_map_as_event_on_timeout => true timeout => 1 timeout_task_id_field => 'id' timeout_tags => ['timed_out'] }} }} \
         output {{ file {{ path => '{}' codec => json_lines }} }}",
        out.display()
    );
    let mut r = Run::start(
        &dir,
        "pipeline.workers: 2\n",
        &[],
        &config,
        Stdio::piped(),
        Stdio::null(),
    );
    r.wait_log("starting pipeline", 60);
    {
        use std::io::Write;
        let stdin = r.child.stdin.as_mut().unwrap();
        for _ in 0..3 {
            writeln!(stdin, "{{\"id\": \"job-1\"}}").unwrap();
        }
        stdin.flush().unwrap();
    }
    // The map times out after 1 s; the flush every 5 s pushes it, once for both workers.
    let lines = r.wait_lines(&out, 1, 30);
    drop(r.child.stdin.take());
    assert!(r.exit(60).success(), "{}", r.log());
    let text = std::fs::read_to_string(&out).unwrap();
    let pushed: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(pushed.len(), 1, "{lines}");
    assert_eq!(pushed[0]["count"], 3);
    assert_eq!(pushed[0]["id"], "job-1");
    assert_eq!(pushed[0]["tags"], serde_json::json!(["timed_out"]));
}

/// Issue 46: `Process.kill(:KILL, Process.pid)` killed sluice with no log line. Signalling
/// sluice itself or its process group is refused as `exit!` and `fork` are (and so are
/// `Process.exit!` and `exec`): the event is tagged, the error logged, and the process goes on.
#[test]
fn code_cannot_kill_or_replace_sluice() {
    let dir = temp_dir("ruby-filter", "kill");
    let input = dir.join("in.log");
    let calls = [
        "Process.kill(:KILL, Process.pid)",
        "Process.kill('TERM', 0)",
        "Process.kill(:STOP, -Process.getpgrp)",
        "Process.exit!(3)",
        "exec('true')",
    ];
    std::fs::write(
        &input,
        (0..calls.len())
            .map(|i| format!("{i}\n"))
            .collect::<String>(),
    )
    .unwrap();
    let code = calls
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c} if event.get('message') == '{i}'; "))
        .collect::<String>();
    let config = format!(
        "input {{ stdin {{ }} }} filter {{ ruby {{ code => \"{code}\" }} }} output {{ stdout {{ codec => json_lines }} }}"
    );
    let mut r = Run::start(
        &dir,
        "",
        &[],
        &config,
        Stdio::from(std::fs::File::open(&input).unwrap()),
        Stdio::piped(),
    );
    let out = r.read_stdout();
    let status = r.exit(60);
    assert!(status.success(), "{status:?}\n{}", r.log());
    let events: Vec<serde_json::Value> = out
        .join()
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), calls.len(), "{}", r.log());
    for e in &events {
        assert_eq!(e["tags"], serde_json::json!(["_rubyexception"]), "{e}");
    }
    let log = r.log();
    assert_eq!(
        log.matches("not available in sluice's ruby filter").count(),
        calls.len(),
        "{log}"
    );
}

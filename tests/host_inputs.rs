//! The host inputs through the real binary, with the shell as their peer: `heartbeat` (its
//! interval, count, sequence and epoch, both ECS modes) and `exec` (a command's output, exit
//! status and timing on an interval and on a cron schedule, both ECS modes).

mod run_support;

use std::process::Stdio;

use run_support::{pipe_through, temp_dir, Run};
use serde_json::Value as J;

/// An event's `@timestamp` (`2026-11-28T10:00:00.123Z`) in milliseconds within its month:
/// enough to measure the gaps between events of one run.
fn millis(e: &J) -> i64 {
    let t = e["@timestamp"].as_str().unwrap();
    let n = |a: usize, b: usize| t[a..b].parse::<i64>().unwrap();
    let (day, h, m, s, ms) = (n(8, 10), n(11, 13), n(14, 16), n(17, 19), n(20, 23));
    (((day * 24 + h) * 60 + m) * 60 + s) * 1000 + ms
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn heartbeat_beats_each_interval_with_its_sequence() {
    let (ok, events, log) = pipe_through(
        r#"input { heartbeat { interval => 0.2 count => 3 sequence => "sequence" } }
           output { stdout { codec => json_lines } }"#,
        "",
    );
    assert!(ok, "{log}");
    let seqs: Vec<i64> = events
        .iter()
        .map(|e| e["event"]["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3], "{events:?}");
    for e in &events {
        assert_eq!(e["message"], "ok", "{e}");
        assert!(!e["host"].as_str().unwrap().is_empty(), "{e}");
    }
    let gap = millis(&events[2]) - millis(&events[0]);
    assert!(
        (350..5_000).contains(&gap),
        "two intervals of 200 ms took {gap} ms"
    );
}

#[test]
fn heartbeat_epoch_and_the_legacy_selectors() {
    let before = now_secs();
    let (ok, events, log) = pipe_through(
        r#"input {
             heartbeat { count => 1 message => "epoch" ecs_compatibility => disabled }
             heartbeat { count => 1 message => "epoch" }
             heartbeat { count => 1 message => "alive" sequence => "epoch" }
           }
           output { stdout { codec => json_lines } }"#,
        "",
    );
    assert!(ok, "{log}");
    assert_eq!(events.len(), 3, "{events:?}");
    let legacy = events.iter().find(|e| e.get("clock").is_some()).unwrap();
    let clock = legacy["clock"].as_i64().unwrap();
    assert!((before..=now_secs()).contains(&clock), "{legacy}");
    assert!(legacy.get("message").is_none(), "{legacy}");
    // With ECS, "epoch" in message selects nothing: it is the message.
    let plain = events.iter().find(|e| e["message"] == "epoch").unwrap();
    assert!(plain.get("event").is_none(), "{plain}");
    let ecs = events.iter().find(|e| e["message"] == "alive").unwrap();
    let t = ecs["event"]["sequence"].as_i64().unwrap();
    assert!((before..=now_secs()).contains(&t), "{ecs}");
}

/// Runs `input` with `filter` until `n` events are out, then stops it: the events.
fn run_exec(name: &str, input: &str, filter: &str, n: usize) -> Vec<J> {
    let dir = temp_dir("exec", name);
    let out = dir.join("out.json");
    let config = format!(
        "input {{ {input} }} filter {{ {filter} }} output {{ file {{ path => \"{}\" }} }}",
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    let text = r.wait_lines(&out, n, 30);
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn exec_runs_the_command_each_interval() {
    let events = run_exec(
        "interval",
        r#"exec { command => "echo hello; echo world >&2; exit 3" interval => 0.3 }"#,
        r#"mutate { add_field => { "elapsed" => "%{[@metadata][input][exec][process][elapsed_time]}" } }"#,
        3,
    );
    for e in &events {
        assert_eq!(e["message"], "hello\n", "{e}");
        assert_eq!(e["process"]["exit_code"], 3, "{e}");
        assert_eq!(
            e["process"]["command_line"],
            "echo hello; echo world >&2; exit 3"
        );
        assert!(!e["host"]["name"].as_str().unwrap().is_empty(), "{e}");
        let elapsed: i64 = e["elapsed"].as_str().unwrap().parse().unwrap();
        assert!(elapsed > 0, "{e}");
    }
    let gap = millis(&events[2]) - millis(&events[0]);
    assert!(
        (500..10_000).contains(&gap),
        "two intervals of 300 ms took {gap} ms"
    );
}

#[test]
fn exec_on_a_schedule_without_ecs() {
    let events = run_exec(
        "schedule",
        r#"exec { command => "printf up" schedule => "* * * * * *" ecs_compatibility => disabled }"#,
        r#"mutate { add_field => { "status" => "%{[@metadata][exit_status]}" "took" => "%{[@metadata][duration]}" } }"#,
        2,
    );
    for e in &events {
        assert_eq!(e["message"], "up", "{e}");
        assert_eq!(e["command"], "printf up", "{e}");
        assert_eq!(e["status"], "0", "{e}");
        assert!(
            e["took"].as_str().unwrap().parse::<f64>().unwrap() > 0.0,
            "{e}"
        );
        assert!(e["host"].is_string(), "{e}");
    }
    // A cron of every second: the runs are about a second apart.
    let gap = millis(&events[1]) - millis(&events[0]);
    assert!((500..5_000).contains(&gap), "{gap} ms between runs");
}

#[test]
fn exec_needs_one_of_interval_and_schedule() {
    for options in ["", r#"interval => 1 schedule => "* * * * *""#] {
        let (ok, _, log) = pipe_through(
            &format!(
                r#"input {{ exec {{ command => "true" {options} }} }} output {{ stdout {{}} }}"#
            ),
            "",
        );
        assert!(!ok, "{options}");
        assert!(
            log.contains("either 'interval' or 'schedule' option must be defined"),
            "{log}"
        );
    }
}

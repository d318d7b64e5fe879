//! The `pipe` input and output through the real binary, with the shell as their peer: the
//! input reads a command's lines (chomped), stamps host and command, starts an ended command
//! again after 10 s and ends a running one at a stop; the output writes each event's line to
//! the command its `%{field}`s name, one process each, as JSON or `message_format`.

mod run_support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use run_support::{temp_dir, Run};
use serde_json::Value as J;

fn lines(text: &str) -> Vec<J> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn pipe_input_reads_lines_and_ends_the_command_at_a_stop() {
    let dir = temp_dir("pipe", "input");
    let out = dir.join("out.json");
    let command = r"printf 'one\ntwo\r\n'; exec sleep 60";
    // Logstash's strings keep backslashes as they are (config.support_escapes is off).
    let config = format!(
        r#"input {{ pipe {{ command => "{command}" }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    let events = lines(&r.wait_lines(&out, 2, 30));
    let messages: Vec<&str> = events
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages, ["one", "two"]);
    for e in &events {
        assert_eq!(e["process"]["command_line"], command, "{e}");
        assert!(e["host"]["name"].is_string(), "{e}");
    }
    // The command still runs (sleep); a stop ends it, and sluice with it, at once.
    let stop = Instant::now();
    r.signal("-TERM");
    assert!(r.exit(20).success(), "{}", r.log());
    assert!(
        stop.elapsed() < Duration::from_secs(15),
        "{:?}",
        stop.elapsed()
    );
}

#[test]
fn pipe_input_starts_an_ended_command_again() {
    let dir = temp_dir("pipe", "restart");
    let out = dir.join("out.json");
    let config = format!(
        r#"input {{ pipe {{ command => "echo ran" ecs_compatibility => disabled }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    let first = Instant::now();
    lines(&r.wait_lines(&out, 1, 30));
    let events = lines(&r.wait_lines(&out, 2, 40));
    let gap = first.elapsed();
    assert!(gap >= Duration::from_secs(8), "started again after {gap:?}");
    for e in &events {
        assert_eq!(e["message"], "ran", "{e}");
        assert_eq!(e["command"], "echo ran", "{e}");
        assert!(e["host"].is_string(), "{e}");
    }
    r.signal("-TERM");
    assert!(r.exit(20).success(), "{}", r.log());
}

#[test]
fn pipe_output_writes_to_the_command_each_event_names() {
    let dir = temp_dir("pipe", "output");
    let d = dir.display();
    let config = format!(
        r#"input {{ generator {{ count => 3 lines => ["a", "b"] }} }}
           filter {{ mutate {{ add_field => {{ "[@metadata][file]" => "%{{message}}" }} }} }}
           output {{
             pipe {{ command => "cat >> {d}/%{{[@metadata][file]}}.txt" message_format => "%{{message}} %{{[event][sequence]}}" }}
             pipe {{ command => "cat > {d}/all.json" }}
           }}"#
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    assert!(r.exit(60).success(), "{}", r.log());
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    assert_eq!(read("a.txt"), "a 0\na 1\na 2\n");
    assert_eq!(read("b.txt"), "b 0\nb 1\nb 2\n");
    let all = lines(&read("all.json"));
    assert_eq!(all.len(), 6);
    assert!(all
        .iter()
        .all(|e| e["host"]["name"].is_string() && e.get("@metadata").is_none()));
}

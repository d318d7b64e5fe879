//! Several pipelines in one process (`pipelines.yml`) and pipeline-to-pipeline links, through
//! the real binary: the distributor, output-isolator, forked-path and collector patterns, a
//! chain of three, upstream-first shutdown, and reload with good and broken configs.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-pipelines-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("settings")).unwrap();
    d
}

/// Writes `pipelines.yml` (and an optional sluice.yml) into `<dir>/settings`.
fn settings(dir: &Path, pipelines: &str, sluice_yml: &str) -> PathBuf {
    let s = dir.join("settings");
    std::fs::write(s.join("pipelines.yml"), pipelines).unwrap();
    std::fs::write(
        s.join("sluice.yml"),
        format!("path.data: {}\n{sluice_yml}", dir.join("data").display()),
    )
    .unwrap();
    s
}

fn sluice(settings: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.args(["--log.level", "warn", "--path.settings"])
        .arg(settings)
        .stdin(Stdio::null());
    c
}

fn run(settings: &Path) -> Output {
    let out = sluice(settings).output().unwrap();
    assert!(
        out.status.success(),
        "sluice failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    // Complete lines only: the last may be half written while the test reads.
    text.rfind('\n')
        .map_or("", |end| &text[..end])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn messages(path: &Path) -> Vec<String> {
    let mut m: Vec<String> = lines(path)
        .iter()
        .map(|e| e["message"].as_str().unwrap().to_owned())
        .collect();
    m.sort();
    m
}

/// Polls `done` every 20 ms; fails the test after 60 s, naming what it waited for.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `sig` (`-TERM`, `-HUP`, ...) to the child.
fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} failed");
}

/// `- pipeline.id: ID\n  config.string: "..."` with the config on one line.
fn entry(id: &str, config: &str) -> String {
    format!(
        "- pipeline.id: {id}\n  config.string: '{}'\n",
        config.replace('\'', "''")
    )
}

fn file_out(dir: &Path, name: &str) -> String {
    format!("file {{ path => \"{}\" }}", dir.join(name).display())
}

#[test]
fn distributor_routes_each_event_once() {
    let dir = temp_dir("distributor");
    let yml = [
        entry(
            "intake",
            r#"input { generator { lines => ["red", "blue"] count => 500 } }
               output { if [message] == "red" { pipeline { send_to => ["red"] } } else { pipeline { send_to => ["blue"] } } }"#,
        ),
        entry("red", &format!("input {{ pipeline {{ address => red }} }} output {{ {} }}", file_out(&dir, "red.log"))),
        entry("blue", &format!("input {{ pipeline {{ address => blue }} }} output {{ {} }}", file_out(&dir, "blue.log"))),
    ]
    .concat();
    run(&settings(&dir, &yml, ""));
    let red = messages(&dir.join("red.log"));
    let blue = messages(&dir.join("blue.log"));
    assert_eq!(red.len(), 500);
    assert_eq!(blue.len(), 500);
    assert!(red.iter().all(|m| m == "red") && blue.iter().all(|m| m == "blue"));
}

#[test]
fn output_isolator_and_forked_path_copy_every_event() {
    let dir = temp_dir("fork");
    let yml = [
        entry("intake", "input { generator { count => 1000 } } output { pipeline { send_to => [es, archive] } }"),
        // forked path: each branch filters differently
        entry(
            "es",
            &format!(
                "input {{ pipeline {{ address => es }} }} filter {{ mutate {{ add_field => {{ \"dest\" => \"es\" }} }} }} output {{ {} }}",
                file_out(&dir, "es.log")
            ),
        ),
        entry(
            "archive",
            &format!(
                "input {{ pipeline {{ address => archive }} }} filter {{ mutate {{ remove_field => [\"host\"] }} }} output {{ {} }}",
                file_out(&dir, "archive.log")
            ),
        ),
    ]
    .concat();
    run(&settings(&dir, &yml, ""));
    let es = lines(&dir.join("es.log"));
    let archive = lines(&dir.join("archive.log"));
    assert_eq!(es.len(), 1000);
    assert_eq!(archive.len(), 1000);
    assert!(es
        .iter()
        .all(|e| e["dest"] == "es" && e["host"].is_object()));
    assert!(archive
        .iter()
        .all(|e| e.get("dest").is_none() && e.get("host").is_none()));
    let mut seqs: Vec<i64> = es
        .iter()
        .map(|e| e["event"]["sequence"].as_i64().unwrap())
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..1000).collect::<Vec<_>>());
}

#[test]
fn collector_and_chain_of_three_deliver_once_and_exit() {
    let dir = temp_dir("collector");
    let yml = [
        entry("beats", "input { generator { count => 700 message => beats } } output { pipeline { send_to => [mid] } }"),
        entry("syslog", "input { generator { count => 300 message => syslog } } output { pipeline { send_to => [mid] } }"),
        entry("mid", "input { pipeline { address => mid } } filter { mutate { add_tag => [\"mid\"] } } output { pipeline { send_to => [last] } }"),
        entry("last", &format!("input {{ pipeline {{ address => last }} }} output {{ {} }}", file_out(&dir, "all.log"))),
    ]
    .concat();
    let started = Instant::now();
    run(&settings(&dir, &yml, ""));
    assert!(started.elapsed() < Duration::from_secs(60));
    let all = lines(&dir.join("all.log"));
    assert_eq!(all.len(), 1000);
    assert_eq!(all.iter().filter(|e| e["message"] == "beats").count(), 700);
    assert!(all.iter().all(|e| e["tags"] == serde_json::json!(["mid"])));
}

#[test]
fn sigterm_shuts_down_upstream_first_and_loses_nothing() {
    let dir = temp_dir("order");
    let yml = [
        entry(
            "up",
            &format!(
                "input {{ generator {{ }} }} output {{ {} pipeline {{ send_to => [down] }} }}",
                file_out(&dir, "up.log")
            ),
        ),
        entry(
            "down",
            &format!(
                "input {{ pipeline {{ address => down }} }} filter {{ mutate {{ add_field => {{ \"slow\" => \"%{{message}}\" }} }} }} output {{ {} }}",
                file_out(&dir, "down.log")
            ),
        ),
    ]
    .concat();
    let s = settings(&dir, &yml, "pipeline.batch.size: 50\n");
    let mut child: Child = sluice(&s).spawn().unwrap();
    wait_until("200 KB of downstream output", || {
        std::fs::metadata(dir.join("down.log")).map_or(0, |m| m.len()) >= 200_000
    });
    signal(&child, "-TERM");
    assert!(child.wait().unwrap().success());
    let up = lines(&dir.join("up.log")).len();
    let down = lines(&dir.join("down.log")).len();
    assert!(up > 0);
    assert_eq!(
        up, down,
        "every event the upstream output saw reached the downstream pipeline"
    );
}

#[test]
fn cycles_and_bad_entries_are_rejected_with_clear_errors() {
    let dir = temp_dir("cycle");
    let yml = [
        entry(
            "a",
            "input { pipeline { address => aa } } output { pipeline { send_to => [bb] } }",
        ),
        entry(
            "b",
            "input { pipeline { address => bb } } output { pipeline { send_to => [aa] } }",
        ),
    ]
    .concat();
    let out = sluice(&settings(&dir, &yml, "")).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cycle"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = sluice(&settings(
        &dir,
        &entry("x", "input { generator { bogus => 1 } }"),
        "",
    ))
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("config.string of pipeline x:1:21: unknown setting \"bogus\""),
        "{err}"
    );
}

#[test]
fn reload_applies_good_configs_keeps_old_on_broken_ones_and_loses_nothing() {
    let dir = temp_dir("reload");
    let out = dir.join("out.log");
    let config = |version: &str, extra: &str| {
        format!(
            "input {{ generator {{ add_field => {{ \"version\" => \"{version}\" }} {extra} }} }} output {{ file {{ path => \"{}\" }} }}",
            out.display()
        )
    };
    let s = settings(
        &dir,
        &entry("main", &config("1", "")),
        "queue.type: persisted\n",
    );
    let mut child = sluice(&s).spawn().unwrap();
    let wait_for = |pred: &dyn Fn(&[serde_json::Value]) -> bool, what: &str| {
        wait_until(what, || {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            let events: Vec<serde_json::Value> = text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            pred(&events)
        })
    };
    wait_for(&|e| e.len() > 1000, "first events");
    // Broken configs: the running pipeline keeps running. One has an unknown option; one
    // nests 10,000 `if`s (it used to overflow the stack and take the process down).
    let deep = format!(
        "input {{ generator {{ }} }} filter {{ {} mutate {{ }} {} }} output {{ null {{ }} }}",
        "if [a] { ".repeat(10_000),
        "} ".repeat(10_000)
    );
    let size = || std::fs::metadata(&out).map_or(0, |m| m.len());
    for broken in [config("2", "bogus => 1"), deep] {
        std::fs::write(s.join("pipelines.yml"), entry("main", &broken)).unwrap();
        signal(&child, "-HUP");
        std::thread::sleep(Duration::from_millis(300));
        let before = size();
        // About 1,000 more events.
        wait_until("the old pipeline to keep running", || {
            size() > before + 200_000
        });
    }
    // A good config: the pipeline restarts with it.
    std::fs::write(s.join("pipelines.yml"), entry("main", &config("3", ""))).unwrap();
    signal(&child, "-HUP");
    wait_for(
        &|e| e.iter().any(|e| e["version"] == "3"),
        "the reloaded pipeline",
    );
    signal(&child, "-TERM");
    let status = child.wait().unwrap();
    assert!(status.success());
    let events = lines(&out);
    assert!(!events.iter().any(|e| e["version"] == "2"));
    // Each generation's sequences are gap-free: nothing queued was lost across the reload.
    for v in ["1", "3"] {
        let mut seqs: Vec<i64> = events
            .iter()
            .filter(|e| e["version"] == v)
            .map(|e| e["event"]["sequence"].as_i64().unwrap())
            .collect();
        seqs.sort_unstable();
        seqs.dedup();
        assert!(!seqs.is_empty());
        assert_eq!(
            seqs.len() as i64,
            seqs.last().unwrap() + 1,
            "version {v} has gaps"
        );
    }
}

#[test]
fn automatic_reload_picks_up_a_changed_config_without_a_signal() {
    let dir = temp_dir("autoreload");
    let out = dir.join("out.log");
    let config = |version: &str| {
        format!(
            "input {{ generator {{ add_field => {{ \"version\" => \"{version}\" }} }} }} output {{ file {{ path => \"{}\" }} }}",
            out.display()
        )
    };
    let s = settings(
        &dir,
        &entry("main", &config("1")),
        "config.reload.automatic: true\nconfig.reload.interval: 200ms\n",
    );
    let mut child = sluice(&s).spawn().unwrap();
    let has_version = |v: &str| {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .contains(&format!("\"version\":\"{v}\""))
    };
    wait_until("events from version 1", || has_version("1"));
    std::fs::write(s.join("pipelines.yml"), entry("main", &config("2"))).unwrap();
    wait_until("the changed config to be picked up", || has_version("2"));
    signal(&child, "-TERM");
    assert!(child.wait().unwrap().success());
}

//! Elastic's own monitoring reads sluice: Metricbeat 7.17.29's `logstash` module, the one
//! Kibana's Stack Monitoring uses (`xpack.enabled: true`, metricsets `node` and `node_stats`),
//! runs against a live sluice with two pipelines and writes its documents to a file. Every
//! metricset must run without an error (it used to panic on `node` and refuse `node_stats`:
//! "only supported with Logstash >= 7.3.0. You are currently running Logstash 0.1.0"), and the
//! documents must carry sluice's pipeline ids, graphs, vertices and event counts.
//!
//! The binary comes from `scripts/build-metricbeat` (Elastic's code, from the Go module proxy,
//! cached outside the checkout); `scripts/test` builds it and passes its path in
//! `SLUICE_METRICBEAT`. Without it the test skips, except under `CI=true`.

mod api_support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use api_support::{temp_dir, Sluice};
use serde_json::Value;

fn metricbeat() -> Option<PathBuf> {
    let found = std::env::var_os("SLUICE_METRICBEAT")
        .map(PathBuf::from)
        .filter(|p| p.is_file());
    if found.is_none() {
        let why = "no Metricbeat (SLUICE_METRICBEAT unset or not a file; scripts/build-metricbeat builds one)";
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{why}");
        }
        eprintln!("SKIP: {why}");
    }
    found
}

/// Every document Metricbeat's file output wrote to `dir` (files `mb`, `mb.1`, ...).
fn documents(dir: &std::path::Path) -> Vec<Value> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("mb"))
        .flat_map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn metricbeats_logstash_module_reads_sluice_without_errors() {
    let Some(metricbeat) = metricbeat() else {
        return;
    };
    let dir = temp_dir("metricbeat");
    let pipelines = "\
- pipeline.id: main
  config.string: 'input { generator { id => \"gen\" } } filter { if [message] == \"x\" { drop { } } else { mutate { id => \"tag\" add_tag => [\"t\"] } } } output { null { id => \"sink\" } }'
- pipeline.id: second
  config.string: 'input { generator { } } output { null { } }'
";
    let sluice = Sluice::start(&dir, "api.http.port: 9700-9800\n", pipelines, &[]);
    sluice.wait_for(30, "events in both pipelines", |s| {
        ["main", "second"]
            .iter()
            .all(|id| s["pipelines"][id]["events"]["out"].as_u64().unwrap_or(0) > 0)
    });

    let home = dir.join("metricbeat");
    let out = home.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let config = home.join("metricbeat.yml");
    std::fs::write(
        &config,
        format!(
            "metricbeat.modules:
  - module: logstash
    metricsets: [node, node_stats]
    hosts: [\"http://127.0.0.1:{port}\"]
    xpack.enabled: true
    period: 1s
metricbeat.max_start_delay: 0s
output.file:
  path: {out}
  filename: mb
setup.template.enabled: false
setup.ilm.enabled: false
monitoring.enabled: false
http.enabled: false
logging.level: info
",
            port = sluice.port,
            out = out.display()
        ),
    )
    .unwrap();
    let mut mb = Command::new(&metricbeat)
        .args(["-e", "--strict.perms=false", "--path.home"])
        .arg(&home)
        .arg("-c")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = mb.stderr.take().unwrap();
    let log = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    // Both metricsets, several periods each.
    let deadline = Instant::now() + Duration::from_secs(60);
    let enough = |docs: &[Value]| {
        ["logstash_state", "logstash_stats"]
            .iter()
            .all(|t| docs.iter().filter(|d| d["type"] == *t).count() >= 4)
    };
    while !enough(&documents(&out)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = Command::new("kill")
        .args(["-INT", &mb.id().to_string()])
        .status();
    let _ = mb.wait();
    let log = log.join().unwrap();
    let docs = documents(&out);
    let sluice_log = sluice.log();
    sluice.stop();

    // No metricset failed, panicked or refused sluice: no line at the ERROR level (the second
    // tab-separated field of Metricbeat's log), and no recovered panic.
    let errors: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.split('\t')
                .nth(1)
                .is_some_and(|level| level.trim() == "ERROR")
                || l.contains("panic")
        })
        .collect();
    assert!(
        errors.is_empty(),
        "Metricbeat reported errors:\n{}\n--- sluice:\n{sluice_log}",
        errors.join("\n")
    );
    assert!(enough(&docs), "too few documents: {docs:#?}\n{log}");

    // node: one logstash_state document per pipeline, with its graph.
    for id in ["main", "second"] {
        let state = docs
            .iter()
            .find(|d| d["type"] == "logstash_state" && d["logstash_state"]["pipeline"]["id"] == id)
            .unwrap_or_else(|| panic!("no logstash_state for {id}: {docs:#?}"));
        let p = &state["logstash_state"]["pipeline"];
        assert!(p["hash"].as_str().is_some_and(|h| !h.is_empty()), "{p:#}");
        assert!(p["ephemeral_id"].is_string(), "{p:#}");
        let vertices = p["representation"]["graph"]["vertices"].as_array().unwrap();
        assert!(vertices.iter().any(|v| v["type"] == "queue"), "{p:#}");
        assert!(!p["representation"]["graph"]["edges"]
            .as_array()
            .unwrap()
            .is_empty());
        if id == "main" {
            for (vid, name) in [("gen", "generator"), ("tag", "mutate"), ("sink", "null")] {
                assert!(
                    vertices.iter().any(|v| v["id"] == vid
                        && v["config_name"] == name
                        && v["explicit_id"] == true),
                    "vertex {vid} missing: {vertices:#?}"
                );
            }
            assert!(vertices.iter().any(|v| v["type"] == "if"), "{vertices:#?}");
        }
    }

    // node_stats: the pipelines with their vertices and counts.
    let stats = docs
        .iter()
        .rev()
        .find(|d| d["type"] == "logstash_stats")
        .unwrap();
    let ls = &stats["logstash_stats"];
    assert_eq!(
        ls["logstash"]["version"]
            .as_str()
            .map(|v| v.starts_with("9.")),
        Some(true),
        "{ls:#}"
    );
    let pipelines = ls["pipelines"].as_array().unwrap();
    for id in ["main", "second"] {
        let p = pipelines
            .iter()
            .find(|p| p["id"] == id)
            .unwrap_or_else(|| panic!("pipeline {id} missing: {ls:#}"));
        // (Metricbeat writes the counters it passes through as floats.)
        assert!(p["events"]["out"].as_f64().unwrap_or(0.0) > 0.0, "{p:#}");
        assert!(!p["vertices"].as_array().unwrap().is_empty(), "{p:#}");
    }
    let main = pipelines.iter().find(|p| p["id"] == "main").unwrap();
    let sink = main["vertices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == "sink")
        .unwrap_or_else(|| panic!("{main:#}"));
    assert!(sink["events_in"].as_f64().unwrap_or(0.0) > 0.0, "{sink:#}");
    assert!(ls["events"]["out"].as_f64().unwrap_or(0.0) > 0.0, "{ls:#}");
}

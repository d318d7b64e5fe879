//! The `kafka` input and output through the real binary against a real broker: Apache Kafka
//! 4 in KRaft mode from Maven Central, started by `scripts/kafka-node/run` (scripts/test
//! starts it and writes `target/kafka-node/env`; under `CI=true` its absence fails).
#![cfg(feature = "kafka")]

mod run_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use run_support::{complete_text, sequences, temp_dir, Run};

/// The shared broker's `host:port`, or `None` (skipped) outside CI when it is not running.
fn broker(test: &str) -> Option<String> {
    broker_env(test, "KAFKA_BOOTSTRAP")
}

/// `name` from the shared broker's env file (see `scripts/kafka-node/run`).
fn broker_env(test: &str, name: &str) -> Option<String> {
    let env = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/kafka-node/env");
    let text = std::fs::read_to_string(&env).unwrap_or_default();
    let found = text
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
        .map(str::to_owned);
    if found.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{test}: no Kafka broker ({} missing: scripts/kafka-node/run start target/kafka-node failed or was not run)", env.display());
        }
        eprintln!(
            "SKIP {test}: no Kafka broker; run scripts/kafka-node/run start target/kafka-node"
        );
    }
    found
}

/// Creates `topic` with `partitions` partitions (Kafka's own topics tool).
fn create_topic(broker: &str, topic: &str, partitions: u32) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/kafka-node/run");
    let out = Command::new(script)
        .args([
            "tool",
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            broker,
            "--create",
            "--topic",
            topic,
            "--partitions",
            &partitions.to_string(),
            "--replication-factor",
            "1",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "creating {topic}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn unique(name: &str) -> String {
    format!("sluice-{name}-{}", std::process::id())
}

/// Runs sluice to its end (generator inputs finish) and checks it succeeded.
fn produce(dir: &Path, broker: &str, topic: &str, count: u64, extra: &str) {
    let config = format!(
        "input {{ generator {{ count => {count} message => 'an event of about the size of a short log line, padded a little' }} }} \
         output {{ kafka {{ bootstrap_servers => '{broker}' topic_id => '{topic}' codec => json {extra} }} }}"
    );
    let mut r = Run::start(dir, "", &[], &config, Stdio::null(), Stdio::null());
    let status = r.exit(300);
    assert!(status.success(), "producer: {status:?}\n{}", r.log());
}

/// A consumer writing what it reads to `out` (json_lines), with the kafka metadata kept.
fn consumer(dir: &Path, broker: &str, topic: &str, group: &str, out: &Path, yml: &str) -> Run {
    consumer_with(dir, broker, topic, group, out, yml, "")
}

fn consumer_with(
    dir: &Path,
    broker: &str,
    topic: &str,
    group: &str,
    out: &Path,
    yml: &str,
    filter: &str,
) -> Run {
    let config = format!(
        "input {{ kafka {{ bootstrap_servers => '{broker}' topics => ['{topic}'] group_id => '{group}' \
                  auto_offset_reset => 'earliest' codec => json decorate_events => basic }} }} \
         filter {{ mutate {{ copy => {{ '[@metadata][kafka]' => 'kafka' }} }} {filter} }} \
         output {{ file {{ path => '{}' codec => json_lines }} }}",
        out.display()
    );
    let yml = format!("path.data: {}\n{yml}", dir.join("data").display());
    Run::start(dir, &yml, &[], &config, Stdio::null(), Stdio::null())
}

fn complete_lines(out: &Path) -> usize {
    complete_text(out).lines().count()
}

/// A graceful stop (SIGTERM) that must succeed.
fn stop(r: &mut Run) {
    r.signal("-TERM");
    assert!(r.exit(60).success(), "{}", r.log());
}

fn out_file(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

#[test]
fn round_trip_100k_events_every_one_once_with_metadata() {
    let Some(broker) = broker("round_trip") else {
        return;
    };
    let topic = unique("round-trip");
    create_topic(&broker, &topic, 6);
    let dir = temp_dir("kafka", "round-trip");
    produce(
        &dir,
        &broker,
        &topic,
        100_000,
        "message_key => '%{[event][sequence]}'",
    );
    let out = out_file(&dir, "out.jsonl");
    let mut r = consumer(&dir, &broker, &topic, &unique("rt-group"), &out, "");
    r.wait_lines(&out, 100_000, 300);
    stop(&mut r);
    let seqs = sequences(&out);
    assert_eq!(seqs.len(), 100_000);
    assert!(seqs.values().all(|&n| n == 1), "duplicates in a clean run");
    // Metadata: the topic, a partition of the six, and the key the output wrote.
    let mut partitions = BTreeMap::new();
    for line in std::fs::read_to_string(&out).unwrap().lines().step_by(97) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let k = &v["kafka"];
        assert_eq!(k["topic"], topic.as_str());
        assert_eq!(k["key"], v["event"]["sequence"].to_string(), "{v}");
        assert!(
            k["offset"].as_i64().is_some() && k["timestamp"].as_i64().is_some(),
            "{v}"
        );
        *partitions
            .entry(k["partition"].as_i64().unwrap())
            .or_insert(0) += 1;
    }
    assert_eq!(partitions.len(), 6, "{partitions:?}");
}

#[test]
fn offsets_are_committed_at_the_stop_and_a_restart_reads_only_what_is_new() {
    let Some(broker) = broker("offsets") else {
        return;
    };
    let topic = unique("offsets");
    create_topic(&broker, &topic, 2);
    let dir = temp_dir("kafka", "offsets");
    let group = unique("offsets-group");
    produce(&dir, &broker, &topic, 1000, "");
    let out = out_file(&dir, "first.jsonl");
    let mut r = consumer(&dir, &broker, &topic, &group, &out, "");
    r.wait_lines(&out, 1000, 120);
    stop(&mut r);
    // 10 more, then the same group again: only those.
    produce(&dir, &broker, &topic, 10, "");
    let again = out_file(&dir, "second.jsonl");
    let mut r = consumer(&dir, &broker, &topic, &group, &again, "");
    r.wait_lines(&again, 10, 120);
    // Nothing else comes.
    std::thread::sleep(Duration::from_secs(3));
    stop(&mut r);
    assert_eq!(
        complete_lines(&again),
        10,
        "{}",
        std::fs::read_to_string(&again).unwrap()
    );
}

/// Offsets are committed only once events are in sluice's queue: SIGKILL mid-stream with the
/// persisted queue, restart, and every event is there (some twice: the uncommitted window).
#[test]
fn sigkill_mid_stream_loses_nothing_with_the_persisted_queue() {
    let Some(broker) = broker("sigkill") else {
        return;
    };
    let topic = unique("sigkill");
    create_topic(&broker, &topic, 3);
    let dir = temp_dir("kafka", "sigkill");
    let group = unique("sigkill-group");
    let total = 60_000;
    produce(&dir, &broker, &topic, total, "");
    let out = out_file(&dir, "before.jsonl");
    // A slowed pipeline keeps events in the queue and offsets uncommitted when the kill comes.
    let yml = "queue.type: persisted\npipeline.batch.size: 100\n";
    let slow = "sleep { time => '0.01' every => 100 }";
    let mut r = consumer_with(&dir, &broker, &topic, &group, &out, yml, slow);
    r.wait_lines(&out, 5_000, 120);
    r.signal("-KILL");
    let _ = r.exit(30);
    let before = sequences_complete(&out);
    assert!((before.len() as u64) < total, "the kill came after the end");
    let after = out_file(&dir, "after.jsonl");
    let mut r = consumer(&dir, &broker, &topic, &group, &after, yml);
    let deadline = Instant::now() + Duration::from_secs(300);
    let union = loop {
        let mut all = before.clone();
        for (s, n) in sequences_complete(&after) {
            *all.entry(s).or_default() += n;
        }
        if all.len() as u64 == total {
            break all;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {total} after the restart\n{}",
            all.len(),
            r.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    stop(&mut r);
    assert_eq!(union.len() as u64, total, "lost events");
    assert_eq!(*union.keys().next_back().unwrap() as u64, total - 1);
    let twice = union.values().filter(|&&n| n > 1).count();
    eprintln!(
        "sigkill: {} events out before the kill; {twice} delivered twice (the uncommitted window)",
        before.len()
    );
}

/// [`sequences`] over complete lines only (the file may be mid-write).
fn sequences_complete(out: &Path) -> BTreeMap<i64, usize> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    let mut seqs = BTreeMap::new();
    for line in text[..text.rfind('\n').map_or(0, |i| i + 1)].lines() {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            if let Some(s) = v["event"]["sequence"].as_i64() {
                *seqs.entry(s).or_default() += 1;
            }
        }
    }
    seqs
}

/// Waits until every run's log shows a partition assignment, then a little more for the
/// group to settle.
fn wait_assigned(runs: &[&Run]) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !runs.iter().all(|r| r.log().contains("assigned partitions")) {
        assert!(
            Instant::now() < deadline,
            "a consumer never got partitions:\n{}",
            runs.iter()
                .map(|r| r.log())
                .collect::<Vec<_>>()
                .join("\n----\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(3));
}

fn union(files: &[PathBuf]) -> BTreeMap<i64, usize> {
    let mut all = BTreeMap::new();
    for f in files {
        for (s, n) in sequences_complete(f) {
            *all.entry(s).or_default() += n;
        }
    }
    all
}

/// Three instances in one group on a 6-partition topic share it: every event once; each
/// instance gets some.
#[test]
fn three_instances_in_one_group_share_a_topic() {
    let Some(broker) = broker("group") else {
        return;
    };
    let topic = unique("group");
    create_topic(&broker, &topic, 6);
    let group = unique("group-g");
    let dirs: Vec<PathBuf> = (0..3)
        .map(|i| temp_dir("kafka", &format!("group-{i}")))
        .collect();
    let outs: Vec<PathBuf> = dirs.iter().map(|d| out_file(d, "out.jsonl")).collect();
    let runs: Vec<Run> = (0..3)
        .map(|i| consumer(&dirs[i], &broker, &topic, &group, &outs[i], ""))
        .collect();
    wait_assigned(&runs.iter().collect::<Vec<_>>());
    let total = 30_000u64;
    produce(&dirs[0], &broker, &topic, total, "");
    let deadline = Instant::now() + Duration::from_secs(180);
    while (union(&outs).len() as u64) < total {
        assert!(
            Instant::now() < deadline,
            "{} of {total}",
            union(&outs).len()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(1));
    for mut r in runs {
        stop(&mut r);
    }
    let all = union(&outs);
    assert_eq!(all.len() as u64, total);
    assert!(
        all.values().all(|&n| n == 1),
        "duplicates in normal operation"
    );
    for o in &outs {
        assert!(complete_lines(o) > 0, "{} got nothing", o.display());
    }
}

/// One of three instances is SIGKILLed mid-stream: the others take its partitions, and once
/// it restarts (its persisted queue replays what it held) nothing is lost; events of its
/// uncommitted window come twice, and are counted.
#[test]
fn a_killed_instance_partitions_go_to_the_others_and_nothing_is_lost() {
    let Some(broker) = broker("group-kill") else {
        return;
    };
    let topic = unique("group-kill");
    create_topic(&broker, &topic, 6);
    let group = unique("group-kill-g");
    let total = 40_000u64;
    let dirs: Vec<PathBuf> = (0..3)
        .map(|i| temp_dir("kafka", &format!("kill-{i}")))
        .collect();
    // Small queues and a slowed pipeline: no instance can take the whole topic into its queue,
    // so the dead one's partitions still hold records for the others.
    let yml = "queue.type: persisted\nqueue.max_events: 1000\npipeline.batch.size: 100\n";
    let slow = "sleep { time => '0.1' every => 100 }";
    let start = |i: usize, name: &str| {
        let out = out_file(&dirs[i], name);
        let config = format!(
            "input {{ kafka {{ bootstrap_servers => '{broker}' topics => ['{topic}'] group_id => '{group}' \
                      auto_offset_reset => 'earliest' codec => json session_timeout_ms => 6000 }} }} \
             filter {{ {slow} }} \
             output {{ file {{ path => '{}' codec => json_lines }} }}",
            out.display()
        );
        let yml = format!("path.data: {}\n{yml}", dirs[i].join("data").display());
        (
            Run::start(&dirs[i], &yml, &[], &config, Stdio::null(), Stdio::null()),
            out,
        )
    };
    let mut runs: Vec<(Run, PathBuf)> = (0..3).map(|i| start(i, "out.jsonl")).collect();
    wait_assigned(&runs.iter().map(|(r, _)| r).collect::<Vec<_>>());
    // The group is settled (each has its partitions): the records come now.
    produce(&dirs[0], &broker, &topic, total, "");
    let mut files: Vec<PathBuf> = runs.iter().map(|(_, o)| o.clone()).collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while union(&files).len() < 8_000 {
        assert!(
            Instant::now() < deadline,
            "too slow: {}",
            union(&files).len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (mut killed, _) = runs.remove(0);
    let assignments = |r: &Run| r.log().matches("assigned partitions").count();
    let before: Vec<usize> = runs.iter().map(|(r, _)| assignments(r)).collect();
    killed.signal("-KILL");
    let _ = killed.exit(30);
    drop(killed);
    let at_kill = union(&files).len();
    // The other two take the dead one's partitions after its session times out.
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let taken_over = runs
            .iter()
            .zip(&before)
            .any(|((r, _), &n)| assignments(r) > n);
        if taken_over && union(&files).len() > at_kill + 1_000 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no takeover ({} out, {at_kill} at the kill)\n{}\n----\n{}",
            union(&files).len(),
            runs[0].0.log(),
            runs[1].0.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The killed instance comes back on its queue (a new file: its old one may end torn).
    let back = start(0, "after-restart.jsonl");
    files.push(back.1.clone());
    runs.push(back);
    let deadline = Instant::now() + Duration::from_secs(300);
    while (union(&files).len() as u64) < total {
        assert!(
            Instant::now() < deadline,
            "{} of {total}",
            union(&files).len()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    for (mut r, _) in runs {
        stop(&mut r);
    }
    let all = union(&files);
    assert_eq!(all.len() as u64, total, "lost events");
    let twice = all.values().filter(|&&n| n > 1).count();
    eprintln!("group kill: {at_kill} events out at the kill; {twice} delivered twice");
}

/// SASL over TLS on the broker's second listener: the output logs in with PLAIN, the input with
/// SCRAM-SHA-256, both trusting the broker's CA from a PEM file; the output's headers come
/// back in `[@metadata][kafka][headers]`. A wrong password is logged and reads nothing.
#[test]
fn sasl_plain_and_scram_over_tls_with_headers() {
    let (Some(broker), Some(sasl), Some(ca)) = (
        broker("sasl"),
        broker_env("sasl", "KAFKA_SASL_SSL"),
        broker_env("sasl", "KAFKA_CA"),
    ) else {
        return;
    };
    let dir = temp_dir("kafka", "sasl");
    let topic = unique("sasl");
    create_topic(&broker, &topic, 2);
    let tls = format!(
        "bootstrap_servers => '{sasl}' security_protocol => 'SASL_SSL' \
         ssl_truststore_location => '{ca}' ssl_truststore_type => 'PEM'"
    );
    let count = 500;
    produce(
        &dir,
        &sasl,
        &topic,
        count,
        &format!(
            "{tls} sasl_mechanism => 'PLAIN' \
             sasl_jaas_config => \"org.apache.kafka.common.security.plain.PlainLoginModule required username='alice' password='alice-secret';\" \
             message_headers => {{ 'origin' => '%{{[host][name]}}' 'fixed' => 'yes' }}"
        ),
    );
    let read = |name: &str, password: &str| {
        let out = out_file(&dir, &format!("{name}.json"));
        let config = format!(
            "input {{ kafka {{ {tls} topics => ['{topic}'] group_id => '{name}' auto_offset_reset => 'earliest' \
                      sasl_mechanism => 'SCRAM-SHA-256' \
                      sasl_jaas_config => \"org.apache.kafka.common.security.scram.ScramLoginModule required username='bob' password='{password}';\" \
                      codec => json decorate_events => extended }} }} \
             filter {{ mutate {{ copy => {{ '[@metadata][kafka]' => 'kafka' }} }} }} \
             output {{ file {{ path => '{}' codec => json_lines }} }}",
            out.display()
        );
        let d = dir.join(name);
        std::fs::create_dir_all(d.join("settings")).unwrap();
        let yml = format!("path.data: {}\n", d.join("data").display());
        (
            Run::start(&d, &yml, &[], &config, Stdio::null(), Stdio::null()),
            out,
        )
    };
    let (mut good, out) = read("scram", "bob-secret");
    good.wait_lines(&out, count as usize, 120);
    stop(&mut good);
    let text = std::fs::read_to_string(&out).unwrap();
    let mut seen = BTreeMap::new();
    for line in text.lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        let headers = &e["kafka"]["headers"];
        assert_eq!(headers["fixed"], "yes", "{line}");
        assert_eq!(headers["origin"], e["host"]["name"], "{line}");
        assert_eq!(e["kafka"]["topic"], topic.as_str());
        *seen
            .entry(e["event"]["sequence"].as_i64().unwrap())
            .or_insert(0) += 1;
    }
    assert_eq!(seen.len(), count as usize, "every event once");
    assert!(seen.values().all(|&n| n == 1));

    let (mut bad, out) = read("wrong", "not-bobs");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !bad.log().to_lowercase().contains("authentication") {
        assert!(
            Instant::now() < deadline,
            "no authentication error logged:\n{}",
            bad.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    stop(&mut bad);
    assert_eq!(complete_lines(&out), 0, "read with a wrong password");
}

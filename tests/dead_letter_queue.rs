//! The dead letter queue through the real binary: filters sending their failures to it
//! (`dlq_on_failure`), its `/_node/stats` figures, the `dead_letter_queue` input reading it
//! back, and what a SIGKILL, flipped bytes and a torn tail leave of it. (Entries from the
//! `elasticsearch` output are tested in `tests/elasticsearch.rs`, against real nodes.)

mod api_support;
mod run_support;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use run_support::{read_dead_letters, read_dead_letters_with, temp_dir, Run};

const GROK: &str =
    r#"grok { match => { "message" => "^ok %{NUMBER:n}$" } dlq_on_failure => true id => "parse" }"#;

#[test]
fn filter_failures_go_to_the_dlq_counted_in_stats_and_read_back() {
    let dir = api_support::temp_dir("dlq-stats");
    let config = format!(
        r#"input {{ generator {{ lines => ["ok 1", "no 2"] count => 50 }} stdin {{}} }}
           filter {{ {GROK} }}
           output {{ null {{}} }}"#
    );
    let s = api_support::Sluice::start(
        &dir,
        "dead_letter_queue.enable: true\ndead_letter_queue.storage_policy: drop_older\n",
        "",
        &["-e", &config],
    );
    let stats = s.wait_for(60, "50 events in the DLQ", |v| {
        v["pipelines"]["main"]["plugins"]["filters"][0]["dlq_routed"] == 50
    });
    let p = &stats["pipelines"]["main"];
    assert_eq!(p["plugins"]["filters"][0]["events"]["in"], 100, "{p:#}");
    assert_eq!(p["plugins"]["filters"][0]["events"]["out"], 50, "{p:#}");
    let dlq = &p["dead_letter_queue"];
    assert!(
        dlq["queue_size_in_bytes"].as_u64().unwrap() > 50 * 100,
        "{dlq}"
    );
    assert_eq!(dlq["max_queue_size_in_bytes"], 1u64 << 30, "{dlq}");
    assert_eq!(dlq["storage_policy"], "drop_older", "{dlq}");
    assert_eq!(dlq["dropped_events"], 0, "{dlq}");
    assert_eq!(dlq["expired_events"], 0, "{dlq}");
    assert_eq!(dlq["last_error"], "no errors", "{dlq}");
    let info = s.json("/_node/pipelines/main");
    assert_eq!(
        info["pipelines"]["main"]["dead_letter_queue_enabled"], true,
        "{info}"
    );
    s.stop();

    let entries = read_dead_letters(&dir.join("data/dead_letter_queue"), "main", 50, 60);
    assert_eq!(entries.len(), 50);
    for e in &entries {
        assert_eq!(e["message"], "no 2", "{e}");
        assert_eq!(e["tags"][0], "_grokparsefailure", "{e}");
        assert_eq!(e["dlq"]["plugin_type"], "grok", "{e}");
        assert_eq!(e["dlq"]["plugin_id"], "parse", "{e}");
        assert_eq!(
            e["dlq"]["reason"], "grok: no pattern matched message",
            "{e}"
        );
    }
}

#[test]
fn dlq_on_failure_needs_the_pipelines_dlq() {
    let dir = temp_dir("dlq", "needs");
    let config = format!("input {{ stdin {{}} }}\nfilter {{ {GROK} }}\noutput {{ null {{}} }}");
    let mut r = Run::start(
        &dir,
        "",
        &["--config.test_and_exit"],
        &config,
        Stdio::null(),
        Stdio::null(),
    );
    assert!(!r.exit(30).success());
    let log = r.log();
    assert!(
        log.contains("config string:2:")
            && log.contains("dlq_on_failure")
            && log.contains("dead_letter_queue.enable: true"),
        "{log}"
    );
}

/// Lines `ok i` and `no i` for i in `range`; the `no` ones fail the grok.
fn lines(range: std::ops::Range<u32>) -> String {
    range
        .map(|i| {
            if i % 2 == 0 {
                format!("ok {i}\n")
            } else {
                format!("no {i}\n")
            }
        })
        .collect()
}

/// `message` → times read back.
fn messages(entries: &[serde_json::Value]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for e in entries {
        *m.entry(e["message"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    m
}

/// The start offset and length of each record of a DLQ segment (32-byte header, then
/// crc u32 | payload length u32 | sequence u64 | payload).
fn records(segment: &Path) -> Vec<(usize, usize)> {
    let b = std::fs::read(segment).unwrap_or_default();
    let mut out = Vec::new();
    let mut at = 32;
    while at + 16 <= b.len() {
        let len = u32::from_le_bytes(b[at + 4..at + 8].try_into().unwrap()) as usize;
        if at + 16 + len > b.len() {
            break;
        }
        out.push((at, 16 + len));
        at += 16 + len;
    }
    out
}

#[test]
fn dlq_entries_survive_a_sigkill_then_flipped_bytes_and_a_torn_tail() {
    let dir = temp_dir("dlq", "kill");
    let data = dir.join("data");
    let dlq = data.join("dead_letter_queue");
    let yml = format!(
        "path.data: {}\nqueue.type: persisted\nqueue.drain: true\ndead_letter_queue.enable: true\npipeline.batch.size: 50\n",
        data.display()
    );
    let config = format!(
        "input {{ stdin {{}} }}\nfilter {{ {GROK} }}\noutput {{ stdout {{ codec => json_lines }} }}"
    );
    const N: u32 = 4000;

    // 1. Every line queued, the output blocked on a pipe nobody reads: some batches are in
    //    the DLQ and unacknowledged when sluice is killed.
    let mut r = Run::start(&dir, &yml, &[], &config, Stdio::piped(), Stdio::piped());
    let mut stdin = r.child.stdin.take().unwrap();
    stdin.write_all(lines(0..N).as_bytes()).unwrap();
    drop(stdin);
    let segment1 = dlq.join("main/segment.1");
    r.wait_until("dead letters", 60, || records(&segment1).len() >= 100);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        r.child.try_wait().unwrap().is_none(),
        "sluice ended before the kill:\n{}",
        r.log()
    );
    r.signal("-KILL");
    r.exit(30);
    let written_before_kill = records(&segment1).len();
    assert!(
        written_before_kill < (N / 2) as usize,
        "everything was written before the kill ({written_before_kill})"
    );

    // 2. Restarted: the queue replays what was not acknowledged, and every failing line ends
    //    up in the DLQ at least once.
    let mut r = Run::start(&dir, &yml, &[], &config, Stdio::null(), Stdio::null());
    let status = r.exit(300);
    assert!(status.success(), "restart failed ({status}):\n{}", r.log());
    let before = read_dead_letters(&dlq, "main", (N / 2) as usize, 120);
    let seen = messages(&before);
    let missing: Vec<u32> = (0..N)
        .filter(|i| i % 2 == 1 && !seen.contains_key(&format!("no {i}")))
        .collect();
    assert!(missing.is_empty(), "lost dead letters: {missing:?}");
    assert!(seen.keys().all(|m| m.starts_with("no ")), "{seen:?}");

    // 3. One flipped byte in a record of the first segment, a torn last record in the newest:
    //    the DLQ still opens for writing (a new segment) and reading, and only those two
    //    entries are lost.
    let mut segments: Vec<u64> = std::fs::read_dir(dlq.join("main"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_prefix("segment.")?.parse().ok()
        })
        .collect();
    segments.sort_unstable();
    assert!(segments.len() >= 2, "{segments:?}");
    let first = dlq.join(format!("main/segment.{}", segments[0]));
    let last = dlq.join(format!("main/segment.{}", segments[segments.len() - 1]));
    let recs = records(&first);
    let (at, len) = recs[recs.len() / 2];
    let mut bytes = std::fs::read(&first).unwrap();
    bytes[at + 16 + (len - 16) / 2] ^= 0x5a;
    std::fs::write(&first, bytes).unwrap();
    let (at, _) = *records(&last).last().unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&last).unwrap();
    f.set_len(at as u64 + 10).unwrap();
    drop(f);

    let mut r = Run::start(&dir, &yml, &[], &config, Stdio::piped(), Stdio::null());
    let mut stdin = r.child.stdin.take().unwrap();
    stdin.write_all(lines(N..N + 20).as_bytes()).unwrap();
    drop(stdin);
    let status = r.exit(120);
    assert!(
        status.success(),
        "run after damage failed ({status}):\n{}",
        r.log()
    );
    let after = read_dead_letters(&dlq, "main", before.len() - 2 + 10, 120);
    assert_eq!(after.len(), before.len() - 2 + 10, "{}", r.log());
    let seen = messages(&after);
    for i in (N..N + 20).filter(|i| i % 2 == 1) {
        assert_eq!(seen.get(&format!("no {i}")), Some(&1), "no {i}");
    }
}

/// Runs a pipeline whose grok sends `n` events `message` to the DLQ under `data`.
fn dead_letter(dir: &Path, message: &str, n: u32) {
    let config = format!(
        r#"input {{ generator {{ lines => ["{message}"] count => {n} }} }}
           filter {{ {GROK} }}
           output {{ null {{}} }}"#
    );
    let yml = format!(
        "path.data: {}\ndead_letter_queue.enable: true\n",
        dir.join("data").display()
    );
    let mut r = Run::start(dir, &yml, &[], &config, Stdio::null(), Stdio::null());
    let status = r.exit(60);
    assert!(status.success(), "{status}:\n{}", r.log());
}

fn segment_numbers(dir: &Path) -> Vec<u64> {
    let mut n: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_prefix("segment.")?.parse().ok()
        })
        .collect();
    n.sort_unstable();
    n
}

#[test]
fn the_input_resumes_where_it_stopped_cleans_consumed_segments_and_starts_at_a_time() {
    let dir = temp_dir("dlq", "input");
    let dlq = dir.join("data/dead_letter_queue");
    dead_letter(&dir, "no 1", 5);
    dead_letter(&dir, "no 2", 3);
    assert_eq!(segment_numbers(&dlq.join("main")), [1, 2]);

    // Offsets committed (the default) and consumed segments cleaned.
    let reader = dir.join("reader");
    let options = "clean_consumed => true";
    let got = read_dead_letters_with(&reader, &dlq, options, 8, 60);
    assert_eq!(
        messages(&got),
        BTreeMap::from([("no 1".to_owned(), 5), ("no 2".to_owned(), 3)])
    );
    assert_eq!(segment_numbers(&dlq.join("main")), [2]);

    std::thread::sleep(Duration::from_millis(20));
    let between = sluice_event_time_now();
    std::thread::sleep(Duration::from_millis(20));
    dead_letter(&dir, "no 3", 2);
    // The same reader goes on after what it read.
    let got = read_dead_letters_with(&reader, &dlq, options, 2, 60);
    assert_eq!(messages(&got), BTreeMap::from([("no 3".to_owned(), 2)]));

    // From a time (which wins over the saved position, as in Logstash): the older entries
    // still there are skipped, the newer ones read again.
    let options = format!(r#"start_timestamp => "{between}""#);
    let got = read_dead_letters_with(&reader, &dlq, &options, 2, 60);
    assert_eq!(messages(&got), BTreeMap::from([("no 3".to_owned(), 2)]));
}

/// Now as ISO-8601 UTC with milliseconds (what `start_timestamp` takes).
fn sluice_event_time_now() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let out = std::process::Command::new("date")
        .args([
            "-u",
            "-d",
            &format!("@{}.{:03}", ms / 1000, ms % 1000),
            "+%Y-%m-%dT%H:%M:%S.%3NZ",
        ])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn a_full_dlq_drops_and_counts_what_it_refuses() {
    let dir = api_support::temp_dir("dlq-full");
    let config = format!(
        r#"input {{ generator {{ lines => ["no 1"] count => 200 }} stdin {{}} }}
           filter {{ {GROK} }}
           output {{ null {{}} }}"#
    );
    let s = api_support::Sluice::start(
        &dir,
        "dead_letter_queue.enable: true\ndead_letter_queue.max_bytes: 8kb\n",
        "",
        &["-e", &config],
    );
    let stats = s.wait_for(60, "every failure routed or dropped", |v| {
        let p = &v["pipelines"]["main"];
        let routed = p["plugins"]["filters"][0]["dlq_routed"]
            .as_u64()
            .unwrap_or(0);
        let dropped = p["dead_letter_queue"]["dropped_events"]
            .as_u64()
            .unwrap_or(0);
        routed + dropped == 200
    });
    let dlq = &stats["pipelines"]["main"]["dead_letter_queue"];
    let dropped = dlq["dropped_events"].as_u64().unwrap();
    assert!(dropped > 0 && dropped < 200, "{dlq}");
    assert!(
        dlq["queue_size_in_bytes"].as_u64().unwrap() <= 8192,
        "{dlq}"
    );
    assert!(
        dlq["last_error"]
            .as_str()
            .unwrap()
            .contains("reached its max size of 8192 bytes"),
        "{dlq}"
    );
    s.stop();
}

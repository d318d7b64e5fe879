//! The persisted queue through the real binary: events survive SIGKILL (at-least-once, no
//! gaps), a SIGTERM restart delivers each event exactly once, and two processes never share
//! a queue directory.

mod run_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-pq-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_settings(dir: &Path, extra: &str) -> PathBuf {
    let settings = dir.join("settings");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("sluice.yml"),
        format!(
            "queue.type: persisted\npath.data: {}\nqueue.page_capacity: 1mb\nqueue.max_bytes: 64mb\n{extra}",
            dir.join("data").display()
        ),
    )
    .unwrap();
    settings
}

fn start(settings: &Path, config: &str) -> Child {
    start_with_workers(settings, config, 2)
}

fn start_with_workers(settings: &Path, config: &str, workers: usize) -> Child {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "--log.level",
            "warn",
            "-w",
            &workers.to_string(),
            "--path.settings",
        ])
        .arg(settings)
        .args(["-e", config])
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

fn generator_config(out: &Path, run: usize) -> String {
    format!(
        "input {{ generator {{ add_field => {{ \"run\" => \"{run}\" }} }} }}
         output {{ file {{ path => \"{}\" }} }}",
        out.display()
    )
}

/// Waits until `out` has grown by at least `bytes` since `from`.
fn wait_for_growth(out: &Path, from: u64, bytes: u64) {
    let started = Instant::now();
    while std::fs::metadata(out).map_or(0, |m| m.len()) < from + bytes {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no progress in 60 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// run → sequence → times delivered. A SIGKILL can tear the file output's last write (the
/// kernel stops copying between pages), leaving a fragment that the next run's first line is
/// appended to: such a line is parsed from its last complete event, and the number of torn
/// lines is returned so the caller can bound it by the number of kills.
fn delivered(out: &Path) -> (BTreeMap<usize, BTreeMap<i64, usize>>, usize) {
    let mut runs: BTreeMap<usize, BTreeMap<i64, usize>> = BTreeMap::new();
    let mut torn = 0;
    let text = std::fs::read_to_string(out).unwrap();
    for line in text.lines() {
        let v: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                torn += 1;
                let start = line
                    .rfind("{\"@timestamp\"")
                    .unwrap_or_else(|| panic!("{e}: {line}"));
                match serde_json::from_str(&line[start..]) {
                    Ok(v) => v,
                    // The fragment was the file's last line: nothing after it.
                    Err(_) => continue,
                }
            }
        };
        let run: usize = v["run"].as_str().unwrap().parse().unwrap();
        let seq = v["event"]["sequence"].as_i64().unwrap();
        *runs.entry(run).or_default().entry(seq).or_default() += 1;
    }
    (runs, torn)
}

/// What `out` holds after runs ended by `kills` kills and a drain: every one of `runs` runs
/// delivered something, at most one torn line per kill, and each run's sequences arrived
/// without a gap up to its highest. Returns run → sequence → times delivered.
fn gap_free_runs(out: &Path, runs: usize, kills: usize) -> BTreeMap<usize, BTreeMap<i64, usize>> {
    let (delivered, torn) = delivered(out);
    assert!(torn <= kills, "{torn} torn lines from {kills} kills");
    assert_eq!(delivered.len(), runs, "every run delivered something");
    for (run, seqs) in &delivered {
        let max = *seqs.keys().last().unwrap();
        assert_eq!(seqs.len() as i64, max + 1, "run {run}: gaps in 0..={max}");
    }
    delivered
}

/// Sends `signal` (`-KILL`, `-TERM`) to the child and waits for it to end.
fn signal_and_wait(child: &mut Child, signal: &str) -> std::process::ExitStatus {
    assert!(Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    child.wait().unwrap()
}

fn drain(settings_dir: &Path, out: &Path) {
    let settings = write_settings(settings_dir, "queue.drain: true\n");
    let config = format!(
        "input {{ stdin {{ }} }} output {{ file {{ path => \"{}\" }} }}",
        out.display()
    );
    let status = start(&settings, &config).wait().unwrap();
    assert!(status.success(), "drain run failed: {status}");
}

#[test]
fn sigkill_loses_nothing_and_sigterm_duplicates_nothing() {
    let dir = temp_dir("crash");
    let out = dir.join("out.log");
    let settings = write_settings(&dir, "");
    let mut size = 0;
    // Several runs killed at varying points, then one stopped gracefully. One worker: after
    // a kill, the batches that were in flight are replayed one event at a time before
    // anything else, so each kill lands after that replay (a kill during it would count as
    // the event's second crash and set it aside as a poison event; with two workers the
    // other worker's output could reach the kill point while the replay was still going).
    for run in 0..5 {
        let mut child = start_with_workers(&settings, &generator_config(&out, run), 1);
        wait_for_growth(&out, size, 50_000 + 37_000 * run as u64);
        std::thread::sleep(Duration::from_millis(17 * run as u64));
        let signal = if run == 4 { "-TERM" } else { "-KILL" };
        let status = signal_and_wait(&mut child, signal);
        if run == 4 {
            assert!(status.success(), "SIGTERM exit: {status}");
        }
        size = std::fs::metadata(&out).unwrap().len();
    }
    drain(&dir, &out);

    let runs = gap_free_runs(&out, 5, 4);
    for (run, seqs) in &runs {
        let max = *seqs.keys().last().unwrap();
        let dups = seqs.values().filter(|&&n| n > 1).count();
        eprintln!("run {run}: sequences 0..={max}, {dups} delivered more than once");
        if *run == 4 {
            let dups: Vec<_> = seqs.iter().filter(|(_, &n)| n > 1).collect();
            assert!(
                dups.is_empty(),
                "graceful run delivered duplicates: {:?}",
                &dups[..dups.len().min(5)]
            );
        }
    }
    // Nothing left in the queue after the drain.
    let again = dir.join("again.log");
    drain(&dir, &again);
    assert!(
        std::fs::metadata(&again).map_or(0, |m| m.len()) == 0,
        "drained queue still held events"
    );
}

#[test]
fn two_processes_cannot_share_a_queue() {
    let dir = temp_dir("lock");
    let settings = write_settings(&dir, "");
    let out = dir.join("out.log");
    let mut first = start(&settings, &generator_config(&out, 0));
    wait_for_growth(&out, 0, 1000);
    let second = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--log.level", "warn", "--path.settings"])
        .arg(&settings)
        .args([
            "-e",
            "input { generator { count => 1 } } output { null {} }",
        ])
        .output()
        .unwrap();
    let _ = Command::new("kill")
        .args(["-TERM", &first.id().to_string()])
        .status();
    first.wait().unwrap();
    assert_eq!(second.status.code(), Some(1));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("in use by another process"), "{err}");
}

fn sluice_out(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn inspect_verify_and_repair_a_damaged_queue() {
    let dir = temp_dir("repair");
    // A backlog of 5000 events written straight into the queue directory, as a pipeline
    // that stopped before its workers took them would leave it.
    let qdir = dir.join("data/queue/main");
    run_support::push_backlog(&qdir, 5000, 64 << 10, "event");
    let q = qdir.to_str().unwrap();

    let inspect = sluice_out(&["queue", "inspect", q]);
    assert!(inspect.status.success());
    let text = String::from_utf8_lossy(&inspect.stdout);
    let unacked: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("unacked events: "))
        .unwrap_or_else(|| panic!("{text}"))
        .parse()
        .unwrap();
    assert_eq!(unacked, 5000, "{text}");
    let ok = sluice_out(&["queue", "verify", q]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );

    // Damage a record in the middle of the first page.
    run_support::corrupt_oldest_page(&qdir);

    let bad = sluice_out(&["queue", "verify", q]);
    assert_eq!(
        bad.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&bad.stdout)
    );
    assert!(String::from_utf8_lossy(&bad.stdout).contains("checksum"));

    let repaired = sluice_out(&["queue", "repair", q, "--queue.page_capacity", "1mb"]);
    assert!(
        repaired.status.success(),
        "{}",
        String::from_utf8_lossy(&repaired.stderr)
    );
    let report = String::from_utf8_lossy(&repaired.stdout);
    assert!(report.contains("kept "), "{report}");
    let ok = sluice_out(&["queue", "verify", q]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );

    // The repaired queue drains: at most the records around the damage are lost.
    let out = dir.join("out.log");
    drain(&dir, &out);
    let n = std::fs::read_to_string(&out).unwrap().lines().count();
    assert!(
        n < unacked && n + 20 >= unacked,
        "{n} events after repair of {unacked}"
    );
}

/// A run that ends (its input finished) with events still in the persisted queue
/// (`queue.drain: false`) says how many, where, and what processes them; `queue inspect`
/// agrees.
#[test]
fn a_run_that_leaves_events_in_the_queue_says_so() {
    let dir = temp_dir("left");
    let settings = write_settings(&dir, "");
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--log.level", "warn", "-w", "1", "--path.settings"])
        .arg(&settings)
        .args([
            "-e",
            "input { generator { count => 200000 } } output { stdout { codec => rubydebug } }",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let qdir = dir.join("data/queue/main");
    let line = err
        .lines()
        .find(|l| l.contains("stay in the persisted queue"))
        .unwrap_or_else(|| panic!("no word about the events left:\n{err}"));
    assert!(line.contains(&qdir.display().to_string()), "{line}");
    assert!(line.contains("queue.drain: true"), "{line}");
    let left: u64 = line
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    let inspect = sluice_out(&["queue", "inspect", qdir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&inspect.stdout);
    assert!(
        text.contains(&format!("unacked events: {left}")),
        "{line}\n{text}"
    );
}

/// `queue.compression`: records written under `size` and `speed` (each run SIGKILLed
/// mid-stream, so they stay in the queue) are all delivered by a run under `none`, and
/// `queue inspect` reports them compressed.
#[test]
fn compressed_records_survive_kills_and_open_under_any_setting() {
    let dir = temp_dir("compression");
    let out = dir.join("out.log");
    let line = "GET /images/web/2009/banner.png HTTP/1.1 200 52315 ".repeat(6);
    let mut size = 0;
    for (run, setting) in ["size", "speed"].into_iter().enumerate() {
        let settings = write_settings(&dir, &format!("queue.compression: {setting}\n"));
        let config = format!(
            "input {{ generator {{ message => \"{line}\" add_field => {{ \"run\" => \"{run}\" }} }} }}
             output {{ file {{ path => \"{}\" }} }}",
            out.display()
        );
        let mut child = start(&settings, &config);
        wait_for_growth(&out, size, 200_000);
        signal_and_wait(&mut child, "-KILL");
        size = std::fs::metadata(&out).unwrap().len();
    }
    let qdir = dir.join("data/queue/main");
    let inspect = sluice_out(&["queue", "inspect", qdir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&inspect.stdout);
    let stats = text
        .lines()
        .find(|l| l.starts_with("compression: "))
        .unwrap_or_else(|| panic!("no compression line:\n{text}"));
    let words: Vec<&str> = stats.split_whitespace().collect();
    let (packed, records): (u64, u64) = (words[1].parse().unwrap(), words[3].parse().unwrap());
    assert!(packed > 0 && packed == records, "{stats}");
    let ratio: f64 = words.last().unwrap().parse().unwrap();
    assert!(ratio > 2.0, "{stats}");

    drain(&dir, &out);
    gap_free_runs(&out, 2, 2);
    // The message came back whole from compressed records.
    let text = std::fs::read_to_string(&out).unwrap();
    let last = text.lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    assert_eq!(v["message"].as_str(), Some(line.as_str()));
}

/// Acked page files are kept as spares and written over as later pages (the old records stay
/// after the new ones until the page is cut). A SIGKILL while the head page is such a reused
/// file loses nothing, and the restart delivers no old record: every sequence of the run
/// arrives, without gaps, and a second drain finds the queue empty.
#[test]
fn a_kill_while_writing_over_a_reused_page_loses_nothing() {
    use std::os::unix::fs::MetadataExt;
    let dir = temp_dir("spare");
    let out = dir.join("out.log");
    let settings = write_settings(&dir, "");
    let queue = dir.join("data/queue/main");
    let mut child = start(&settings, &generator_config(&out, 0));
    // Inode → the page number it was first seen as; a later page with a known inode and
    // already full-sized is a reused file.
    let mut seen: BTreeMap<u64, u64> = BTreeMap::new();
    let started = Instant::now();
    let reused = 'watch: loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no page was reused in 60 s: {seen:?}"
        );
        for entry in std::fs::read_dir(&queue).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(num) = name
                .strip_prefix("page.")
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            let Ok(meta) = entry.metadata() else { continue };
            match seen.get(&meta.ino()) {
                // A reused file is full-sized from the start (its old records); a new file
                // that got a deleted page's inode number grows from nothing.
                Some(&first) if first != num && meta.len() >= 512 << 10 => {
                    break 'watch (first, num)
                }
                Some(_) => {}
                None => {
                    seen.insert(meta.ino(), num);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    eprintln!("page {} was written over as page {}", reused.0, reused.1);
    signal_and_wait(&mut child, "-KILL");
    drain(&dir, &out);
    let runs = gap_free_runs(&out, 1, 1);
    let seqs = &runs[&0];
    let dups = seqs.values().filter(|&&n| n > 1).count();
    eprintln!(
        "sequences 0..={}, {dups} delivered twice",
        seqs.keys().last().unwrap()
    );
    // A kill replays what was delivered but not yet acked in a checkpoint (queue.checkpoint.acks
    // 1024, plus the batches in flight); a page's worth of old records (about 7,000 of these
    // events in 1 MB) coming back would pass that.
    assert!(dups < 4096, "{dups} events delivered twice");
    let again = dir.join("again.log");
    drain(&dir, &again);
    assert!(
        std::fs::metadata(&again).map_or(0, |m| m.len()) == 0,
        "drained queue still held events"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

//! The file input through the real binary: tailing appends, rename and copytruncate rotation,
//! deletion, new files found by the glob, restart from the sincedb, read mode with `.gz`,
//! `exclude` and completion actions, multiline per file, 10,000 files within `max_open_files`,
//! `ignore_older`, the order of files in read mode, and the crash test (a persisted queue, a
//! writer appending numbered lines, SIGKILL at random moments, every line present).

mod run_support;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use run_support::{temp_dir, Run};

/// The `<N>` markers in the output file, counted (robust to a line torn by a kill).
fn markers(out: &Path) -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    let re = regex::Regex::new(r"<([^<>]*)>").unwrap();
    let mut seen = BTreeMap::new();
    for c in re.captures_iter(&text) {
        *seen.entry(c[1].to_owned()).or_default() += 1;
    }
    seen
}

/// Waits until every one of `want` is in the output, then a little more so that duplicates
/// show; returns the counts.
fn wait_for(run: &Run, out: &Path, want: &[&str], secs: u64) -> BTreeMap<String, usize> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let seen = markers(out);
        if want.iter().all(|w| seen.contains_key(*w)) {
            std::thread::sleep(Duration::from_millis(400));
            return markers(out);
        }
        assert!(
            Instant::now() < deadline,
            "waiting for {want:?}; have {seen:?}\nlog:\n{}",
            run.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn set_mtime(path: &Path, t: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// An output writing `<message>` per event (and the file it came from, `<path|message>`).
fn output(out: &Path) -> String {
    format!(
        r#"output {{ file {{ path => "{}" codec => line {{ format => "<%{{message}}> <%{{[log][file][path]}}|%{{message}}>" }} }} }}"#,
        out.display()
    )
}

fn once(seen: &BTreeMap<String, usize>, items: &[&str]) {
    for i in items {
        assert_eq!(seen.get(*i), Some(&1), "{i} not exactly once: {seen:?}");
    }
}

#[test]
fn tail_follows_appends_rotations_truncation_deletion_and_new_files() {
    let dir = temp_dir("file", "tail");
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let app = logs.join("app.log");
    append(&app, "before\n");
    append(&logs.join("skip.gz"), "excluded\n");
    let out = dir.join("out.txt");
    let config = format!(
        r#"input {{ file {{ path => ["{}/*.log*", "{}/other/**/*.log"] exclude => "*.gz" start_position => end stat_interval => "100 ms" discover_interval => 1 }} }} {}"#,
        logs.display(),
        logs.display(),
        output(&out)
    );
    let data = format!("path.data: {}\n", dir.join("data").display());
    let run = Run::start(&dir, &data, &[], &config, Stdio::null(), Stdio::null());
    // start_position => end: what was there before is not read; the file is watched.
    std::thread::sleep(Duration::from_millis(800));
    append(&app, "a1\na2\n");
    wait_for(&run, &out, &["a1", "a2"], 20);
    // A line is read once it has its delimiter.
    append(&app, "a3 part");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!markers(&out).contains_key("a3 part"));
    append(&app, "ial\n");
    wait_for(&run, &out, &["a3 partial"], 20);

    // Rename rotation: the old file's last lines, then the new file from its start.
    std::fs::rename(&app, logs.join("app.log.1")).unwrap();
    append(&logs.join("app.log.1"), "a4\n");
    append(&app, "b1\n");
    wait_for(&run, &out, &["a4", "b1"], 20);
    append(&logs.join("app.log.1"), "a5 after rotation\n");
    append(&app, "b2\n");
    wait_for(&run, &out, &["a5 after rotation", "b2"], 20);

    // copytruncate: the file starts over.
    std::fs::write(&app, "").unwrap();
    std::thread::sleep(Duration::from_millis(400));
    append(&app, "c1\n");
    wait_for(&run, &out, &["c1"], 20);

    // Deleted while open: finished; a new file under the other glob is found.
    append(&logs.join("app.log.1"), "a6 last\n");
    std::fs::remove_file(logs.join("app.log.1")).unwrap();
    std::fs::create_dir_all(logs.join("other/deep")).unwrap();
    append(&logs.join("other/deep/new.log"), "n1\n");
    let seen = wait_for(&run, &out, &["n1"], 20);
    once(
        &seen,
        &[
            "a1",
            "a2",
            "a3 partial",
            "a4",
            "b1",
            "a5 after rotation",
            "b2",
            "c1",
            "n1",
        ],
    );
    assert!(
        !seen.contains_key("before") && !seen.contains_key("excluded"),
        "{seen:?}"
    );
    // Each event says which file it came from.
    let new = logs.join("other/deep/new.log");
    assert!(
        seen.contains_key(&format!("{}|n1", new.display())),
        "{seen:?}"
    );
    assert!(
        seen.contains_key(&format!("{}|b1", app.display())),
        "{seen:?}"
    );
    drop(run);
    let _ = std::fs::remove_dir_all(&dir);
}

/// inotify: with a stat interval of a minute, a written line and a new file are still
/// picked up at once (polling alone would wait the minute).
#[test]
fn changes_wake_the_input_between_stat_passes() {
    let dir = temp_dir("file", "inotify");
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    append(&logs.join("a.log"), "");
    let out = dir.join("out.txt");
    let config = format!(
        r#"input {{ file {{ path => "{}/*.log" stat_interval => 60 discover_interval => 1 sincedb_path => "/dev/null" }} }} {}"#,
        logs.display(),
        output(&out)
    );
    let run = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    std::thread::sleep(Duration::from_millis(500));
    append(&logs.join("a.log"), "written\n");
    wait_for(&run, &out, &["written"], 20);
    append(&logs.join("b.log"), "new file\n");
    let seen = wait_for(&run, &out, &["new file"], 20);
    once(&seen, &["written", "new file"]);
    drop(run);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_restart_continues_from_the_sincedb() {
    let dir = temp_dir("file", "restart");
    let log = dir.join("app.log");
    let lines: String = (0..100).map(|i| format!("first-{i}\n")).collect();
    append(&log, &lines);
    let out = dir.join("out.txt");
    let sincedb = dir.join("sincedb");
    let config = format!(
        r#"input {{ file {{ path => "{}" start_position => beginning stat_interval => "100 ms" sincedb_path => "{}" }} }} {}"#,
        log.display(),
        sincedb.display(),
        output(&out)
    );
    let mut run = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    wait_for(&run, &out, &["first-99"], 20);
    run.signal("-TERM");
    assert!(run.exit(20).success(), "{}", run.log());
    // Logstash's v2 line: inode, device major and minor, position, time, path.
    let text = std::fs::read_to_string(&sincedb).unwrap();
    let fields: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(fields.len(), 6, "{text}");
    assert_eq!(fields[3], lines.len().to_string(), "{text}");
    assert_eq!(fields[5], log.display().to_string());

    let more: String = (0..50).map(|i| format!("second-{i}\n")).collect();
    append(&log, &more);
    let run = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    let seen = wait_for(&run, &out, &["second-49"], 20);
    for i in 0..100 {
        assert_eq!(
            seen.get(&format!("first-{i}")),
            Some(&1),
            "first-{i}: read twice?"
        );
    }
    for i in 0..50 {
        assert_eq!(seen.get(&format!("second-{i}")), Some(&1), "second-{i}");
    }
    drop(run);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn read_mode_reads_gz_and_plain_files_then_logs_and_deletes_them() {
    let dir = temp_dir("file", "read");
    let logs = dir.join("in");
    std::fs::create_dir_all(&logs).unwrap();
    append(&logs.join("plain.log"), "p1\r\np2\nlast without newline");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"g1\r\ng2\rg3\n").unwrap();
    std::fs::write(logs.join("packed.log.gz"), gz.finish().unwrap()).unwrap();
    append(&logs.join("ignored.txt"), "x\n");
    let done = dir.join("done.log");
    let out = dir.join("out.txt");
    let config = format!(
        r#"input {{ file {{ path => "{}/*" exclude => ["*.txt"] mode => read exit_after_read => true file_completed_action => log_and_delete file_completed_log_path => "{}" }} }} {}"#,
        logs.display(),
        done.display(),
        output(&out)
    );
    let data = format!("path.data: {}\n", dir.join("data").display());
    let mut run = Run::start(&dir, &data, &[], &config, Stdio::null(), Stdio::null());
    // exit_after_read: the pipeline ends by itself once both files are done.
    assert!(run.exit(30).success(), "{}", run.log());
    let seen = markers(&out);
    once(
        &seen,
        &["p1\r", "p2", "last without newline", "g1", "g2", "g3"],
    );
    assert!(!seen.contains_key("x"));
    let mut logged: Vec<String> = std::fs::read_to_string(&done)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    logged.sort();
    assert_eq!(
        logged,
        [
            logs.join("packed.log.gz").display().to_string(),
            logs.join("plain.log").display().to_string()
        ]
    );
    assert!(!logs.join("plain.log").exists() && !logs.join("packed.log.gz").exists());
    assert!(logs.join("ignored.txt").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn multiline_stack_traces_stay_with_their_file() {
    let dir = temp_dir("file", "multiline");
    let logs = dir.join("in");
    std::fs::create_dir_all(&logs).unwrap();
    for name in ["a", "b"] {
        append(
            &logs.join(format!("{name}.log")),
            &format!(
                "2026-11-24 10:00:00 ERROR {name} failed\njava.lang.IllegalStateException: {name}\n\tat x.Y.z(Y.java:1)\n2026-11-24 10:00:01 INFO {name} done\n"
            ),
        );
    }
    let out = dir.join("out.txt");
    let config = format!(
        r#"input {{ file {{ path => "{}/*.log" mode => read exit_after_read => true file_completed_action => log file_completed_log_path => "{}" sincedb_path => "/dev/null" codec => multiline {{ pattern => "^%{{TIMESTAMP_ISO8601}} " negate => true what => previous }} }} }}
           output {{ file {{ path => "{}" codec => json_lines }} }}"#,
        logs.display(),
        dir.join("done.log").display(),
        out.display()
    );
    let mut run = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    assert!(run.exit(30).success(), "{}", run.log());
    let events: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 4, "{events:#?}");
    for name in ["a", "b"] {
        let path = logs.join(format!("{name}.log")).display().to_string();
        let mine: Vec<&serde_json::Value> = events
            .iter()
            .filter(|e| e["log"]["file"]["path"] == path.as_str())
            .collect();
        assert_eq!(mine.len(), 2);
        let trace = mine.iter().find(|e| e["tags"][0] == "multiline").unwrap();
        assert_eq!(
            trace["message"],
            format!("2026-11-24 10:00:00 ERROR {name} failed\njava.lang.IllegalStateException: {name}\n\tat x.Y.z(Y.java:1)")
        );
        // The last record of the file is given out at its end.
        assert!(mine
            .iter()
            .any(|e| e["message"] == format!("2026-11-24 10:00:01 INFO {name} done")));
    }
    // sincedb_path => "/dev/null" keeps nothing: nothing to clean up, no file made.
    let _ = std::fs::remove_dir_all(&dir);
}

/// Entries of a directory under /proc/PID (open descriptors, threads).
fn proc_count(pid: u32, what: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/{what}"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// 10,000 files: one thread reads them all, never holding more than `max_open_files` open
/// (files nothing is written to close after `close_older`, and the waiting ones open then).
#[test]
fn ten_thousand_files_take_one_thread_and_at_most_max_open_files() {
    let dir = temp_dir("file", "many");
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    const FILES: usize = 10_000;
    for i in 0..FILES {
        std::fs::write(logs.join(format!("f{i:05}.log")), format!("file-{i}\n")).unwrap();
    }
    let out = dir.join("out.txt");
    let config = format!(
        r#"input {{ file {{ path => "{}/*.log" start_position => beginning max_open_files => 500
             close_older => "100 ms" stat_interval => "50 ms" sincedb_path => "/dev/null" }} }} {}"#,
        logs.display(),
        output(&out)
    );
    let run = Run::start(
        &dir,
        "",
        &["-w", "1"],
        &config,
        Stdio::null(),
        Stdio::null(),
    );
    let pid = run.child.id();
    let (mut max_fds, mut max_threads) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        max_fds = max_fds.max(proc_count(pid, "fd"));
        max_threads = max_threads.max(proc_count(pid, "task"));
        let lines = std::fs::read(&out).map_or(0, |t| t.iter().filter(|&&b| b == b'\n').count());
        if lines >= FILES {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{lines} of {FILES} files read\n{}",
            run.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let seen = markers(&out);
    for i in (0..FILES).step_by(997) {
        once(&seen, &[&format!("file-{i}")]);
    }
    assert_eq!(
        seen.len(),
        2 * FILES,
        "each file's line and its path marker"
    );
    // 500 files, plus the process's own: stdio, the output, inotify, the runtime's.
    assert!(max_fds <= 500 + 40, "{max_fds} descriptors open at once");
    assert!(max_threads < 40, "{max_threads} threads");
    assert!(
        run.log().contains("max_open_files"),
        "the limit is reported:\n{}",
        run.log()
    );
    drop(run);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `ignore_older` skips what a file held when it was found (its mtime older than the limit)
/// and reads what is appended later; `file_sort_by`/`file_sort_direction` order read mode.
#[test]
fn ignore_older_and_the_order_of_files_in_read_mode() {
    let dir = temp_dir("file", "older");
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
    let old = logs.join("old.log");
    append(&old, "stale\n");
    set_mtime(&old, two_hours_ago);
    append(&logs.join("new.log"), "fresh\n");
    let out = dir.join("out.txt");
    let config = format!(
        r#"input {{ file {{ path => "{}/*.log" start_position => beginning ignore_older => 3600
             stat_interval => "100 ms" sincedb_path => "/dev/null" }} }} {}"#,
        logs.display(),
        output(&out)
    );
    let run = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    wait_for(&run, &out, &["fresh"], 20);
    append(&old, "appended\n");
    let seen = wait_for(&run, &out, &["appended"], 20);
    once(&seen, &["fresh", "appended"]);
    assert!(!seen.contains_key("stale"), "{seen:?}");
    drop(run);

    // Read mode: one file after the other, in the order asked for.
    let names = ["b", "c", "a"];
    let mut mtime = std::time::SystemTime::now() - Duration::from_secs(300);
    for n in names {
        let f = logs.join(format!("{n}.txt"));
        append(&f, &format!("{n}1\n{n}2\n"));
        set_mtime(&f, mtime);
        mtime += Duration::from_secs(60);
    }
    for (sort, want) in [
        ("", "b1 b2 c1 c2 a1 a2"),
        (
            r#"file_sort_by => path file_sort_direction => desc"#,
            "c1 c2 b1 b2 a1 a2",
        ),
        (r#"file_sort_by => path"#, "a1 a2 b1 b2 c1 c2"),
        (r#"file_sort_direction => desc"#, "a1 a2 c1 c2 b1 b2"),
    ] {
        let out = dir.join(format!("order{}.txt", sort.len()));
        let config = format!(
            r#"input {{ file {{ path => "{}/*.txt" mode => read {sort} exit_after_read => true
                 file_completed_action => log file_completed_log_path => "{}"
                 sincedb_path => "/dev/null" }} }}
               output {{ file {{ path => "{}" codec => line {{ format => "%{{message}}" }} }} }}"#,
            logs.display(),
            dir.join("done.log").display(),
            out.display()
        );
        let mut run = Run::start(
            &dir,
            "",
            &["-w", "1"],
            &config,
            Stdio::null(),
            Stdio::null(),
        );
        assert!(run.exit(30).success(), "{}", run.log());
        let got = std::fs::read_to_string(&out).unwrap();
        assert_eq!(
            got.split_whitespace().collect::<Vec<_>>().join(" "),
            want,
            "{sort}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn options_are_checked() {
    let dir = temp_dir("file", "options");
    for (config, want) in [
        (r#"file { path => "relative/x.log" }"#, "must be absolute"),
        (r#"file { }"#, "needs `path`"),
        (
            r#"file { path => "/x" mode => tail exit_after_read => true }"#,
            "mode => read",
        ),
        (
            r#"file { path => "/x" mode => read file_completed_action => log }"#,
            "file_completed_log_path",
        ),
        (
            r#"file { path => "/x" stat_interval => "soon" }"#,
            "not a duration",
        ),
        (
            r#"file { path => "/x" sincedb_path => "/tmp" }"#,
            "directory",
        ),
        (r#"file { path => "/x" follow => true }"#, "follow"),
        (
            r#"file { path => "/x" exclude => "[a" }"#,
            "not a valid pattern",
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["--log.level", "error", "--path.data"])
            .arg(dir.join("data"))
            .args([
                "-t",
                "-e",
                &format!("input {{ {config} }} output {{ null {{}} }}"),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(want),
            "{config}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The durability claim: with a persisted queue, SIGKILL at random moments while a writer
/// appends numbered lines (and rotates the file once) loses no line.
#[test]
fn sigkill_at_random_moments_loses_no_line() {
    let dir = temp_dir("file", "crash");
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let log = logs.join("app.log");
    std::fs::write(&log, "").unwrap();
    let out = dir.join("out.txt");
    let config = format!(
        r#"input {{ file {{ path => "{}/app.log*" start_position => beginning stat_interval => "100 ms" discover_interval => 1 sincedb_write_interval => "200 ms" }} }} {}"#,
        logs.display(),
        output(&out)
    );
    let settings = format!(
        "path.data: {}\nqueue.type: persisted\n",
        dir.join("data").display()
    );
    const TOTAL: usize = 20_000;
    let writer = {
        let logs = logs.clone();
        std::thread::spawn(move || {
            let log = logs.join("app.log");
            for i in 0..TOTAL {
                append(&log, &format!("{i}\n"));
                if i == TOTAL / 2 {
                    std::fs::rename(&log, logs.join("app.log.1")).unwrap();
                }
                // About 5 s of writing: the kills land while lines come.
                if i % 100 == 0 {
                    std::thread::sleep(Duration::from_millis(25));
                }
            }
        })
    };
    let mut seed = std::process::id() as u64;
    let mut random_ms = move |max: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        100 + seed % max
    };
    for _ in 0..4 {
        let mut run = Run::start(&dir, &settings, &[], &config, Stdio::null(), Stdio::null());
        std::thread::sleep(Duration::from_millis(random_ms(900)));
        run.signal("-KILL");
        run.exit(10);
    }
    writer.join().unwrap();
    let mut run = Run::start(&dir, &settings, &[], &config, Stdio::null(), Stdio::null());
    let want: Vec<String> = (0..TOTAL).map(|i| i.to_string()).collect();
    let want_refs: Vec<&str> = want.iter().map(String::as_str).collect();
    let seen = wait_for(&run, &out, &want_refs, 60);
    run.signal("-TERM");
    assert!(run.exit(20).success(), "{}", run.log());
    let duplicates: usize = want.iter().map(|w| seen[w] - 1).sum();
    eprintln!("{TOTAL} lines, all delivered; {duplicates} duplicates from the kills");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 46: copytruncate as logrotate does it (copy, then truncate in place) while a writer
/// goes on at ~1.4 MB/s. The truncation was seen only at the next stat pass, by when the file
/// had grown past the old position: reading went on from there, mid-line, and lost everything
/// before it (3–4 of 5 rotations missed, tens of thousands of lines). Here the writer pauses
/// for the copy and the truncation only (so logrotate's own race loses nothing), and sluice is
/// given time to read what came before: every line must arrive once and whole.
#[test]
fn copytruncate_under_a_fast_writer_loses_no_line() {
    let dir = temp_dir("file-input", "copytruncate");
    let log = dir.join("app.log");
    let out = dir.join("out.log");
    std::fs::write(&log, "").unwrap();
    let config = format!(
        r#"input {{ file {{ path => "{}" start_position => beginning sincedb_path => "/dev/null" }} }}
           output {{ file {{ path => "{}" codec => line {{ format => "%{{message}}" }} }} }}"#,
        log.display(),
        out.display()
    );
    let mut run = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    run.wait_log("starting pipeline", 60);
    std::thread::sleep(Duration::from_millis(500));
    let mut writer = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let pad = "x".repeat(80);
    let mut next = 0u64;
    let mut write_for = |writer: &mut std::fs::File, d: Duration| {
        // ~14 KB every 10 ms: ~1.4 MB/s.
        let end = Instant::now() + d;
        while Instant::now() < end {
            let mut chunk = String::new();
            for _ in 0..140 {
                chunk.push_str(&format!("line-{next:08} {pad}\n"));
                next += 1;
            }
            writer.write_all(chunk.as_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(10));
        }
        next
    };
    let rotations = 5;
    for round in 0..rotations {
        let written = write_for(&mut writer, Duration::from_millis(300));
        run.wait_lines(&out, written as usize, 60);
        std::fs::copy(&log, dir.join(format!("app.log.{round}"))).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&log)
            .unwrap()
            .set_len(0)
            .unwrap();
        // The writer goes on at once, faster than a stat pass comes round.
    }
    let written = write_for(&mut writer, Duration::from_millis(300));
    let text = run.wait_lines(&out, written as usize, 60);
    std::thread::sleep(Duration::from_millis(300));
    run.signal("-TERM");
    assert!(run.exit(30).success(), "{}", run.log());
    let text = std::fs::read_to_string(&out).unwrap_or(text);
    let mut seen = vec![0u32; written as usize];
    for line in text.lines() {
        let n: usize = line
            .strip_prefix("line-")
            .and_then(|l| l.strip_suffix(pad.as_str()))
            .and_then(|l| l.trim_end().parse().ok())
            .unwrap_or_else(|| panic!("garbled line {line:?}\n{}", run.log()));
        seen[n] += 1;
    }
    let missing = seen.iter().filter(|&&c| c == 0).count();
    let twice = seen.iter().filter(|&&c| c > 1).count();
    assert_eq!(
        (missing, twice),
        (0, 0),
        "of {written} lines\n{}",
        run.log()
    );
    assert_eq!(
        run.log().matches("file shrank").count(),
        rotations as usize,
        "{}",
        run.log()
    );
}

/// Issue 45: with a persisted queue, the file input records its position after every push
/// (what a push queued survives a kill), not only every `sincedb_write_interval` (15 s by
/// default): a SIGKILL after every line was queued reads none of them again (before, a kill
/// read up to 15 s of lines again: 40,000 duplicates in a rotation test).
#[test]
fn a_kill_after_lines_are_queued_reads_none_again() {
    let dir = temp_dir("file-input", "sincedb-durable");
    let log = dir.join("app.log");
    let out = dir.join("out.log");
    std::fs::write(&log, "").unwrap();
    let config = format!(
        r#"input {{ file {{ path => "{}" start_position => beginning stat_interval => "100 ms" }} }} {}"#,
        log.display(),
        output(&out)
    );
    let settings = format!(
        "path.data: {}\nqueue.type: persisted\n",
        dir.join("data").display()
    );
    let mut run = Run::start(&dir, &settings, &[], &config, Stdio::null(), Stdio::null());
    run.wait_log("starting pipeline", 60);
    let lines: Vec<String> = (0..3000).map(|i| format!("line-{i}")).collect();
    for chunk in lines.chunks(300) {
        append(&log, &(chunk.join("\n") + "\n"));
        std::thread::sleep(Duration::from_millis(50));
    }
    let want: Vec<&str> = lines.iter().map(String::as_str).collect();
    wait_for(&run, &out, &want, 60);
    std::thread::sleep(Duration::from_millis(500));
    run.signal("-KILL");
    run.exit(10);
    let mut run = Run::start(&dir, &settings, &[], &config, Stdio::null(), Stdio::null());
    run.wait_log("starting pipeline", 60);
    append(&log, "last\n");
    let seen = wait_for(&run, &out, &["last"], 60);
    run.signal("-TERM");
    assert!(run.exit(20).success(), "{}", run.log());
    let twice: Vec<_> = seen.iter().filter(|(_, &n)| n > 1).take(5).collect();
    assert!(twice.is_empty(), "read again after the kill: {twice:?}");
}

//! A sluice process for fault tests: started with a settings file and a config, its log
//! (stderr) collected, signalled, and waited for with a bound (a process that does not exit
//! is a hang: killed, and the test fails with its log).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A fresh directory for one test, with a `settings` folder.
pub fn temp_dir(prefix: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("settings")).unwrap();
    d
}

pub struct Run {
    pub child: Child,
    log: Arc<Mutex<String>>,
}

impl Run {
    /// `sluice --path.settings <dir>/settings <args> -e <config>`, with `sluice_yml` (after
    /// `api.enabled: false`) as its settings.
    pub fn start(
        dir: &Path,
        sluice_yml: &str,
        args: &[&str],
        config: &str,
        stdin: Stdio,
        stdout: Stdio,
    ) -> Run {
        let mut all = args.to_vec();
        all.extend(["-e", config]);
        Run::spawn(dir, sluice_yml, &all, stdin, stdout)
    }

    /// `sluice --path.settings <dir>/settings <args>` (pipelines from `pipelines.yml` there
    /// when `args` give no config).
    pub fn spawn(dir: &Path, sluice_yml: &str, args: &[&str], stdin: Stdio, stdout: Stdio) -> Run {
        std::fs::write(
            dir.join("settings/sluice.yml"),
            format!("api.enabled: false\n{sluice_yml}"),
        )
        .unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["--log.level", "info", "--path.settings"])
            .arg(dir.join("settings"))
            .args(args)
            .stdin(stdin)
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&log);
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        Run { child, log }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub fn wait_log(&self, what: &str, secs: u64) {
        self.wait_until(&format!("{what:?} in the log"), secs, || {
            self.log().contains(what)
        });
    }

    /// Polls `cond` every 50 ms; fails with `what` and this process's log if it does not hold
    /// within `secs`.
    pub fn wait_until(&self, what: &str, secs: u64, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !cond() {
            assert!(
                Instant::now() < deadline,
                "no {what} within {secs} s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Reads the process's stdout (started with `Stdio::piped()`) to its end on a thread of
    /// its own; the handle gives the text.
    pub fn read_stdout(&mut self) -> std::thread::JoinHandle<String> {
        self.read_stdout_counting().0
    }

    /// Reads stdout as [`Run::read_stdout`] does, also counting the lines read so far.
    pub fn read_stdout_counting(
        &mut self,
    ) -> (
        std::thread::JoinHandle<String>,
        std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let mut stdout = self.child.stdout.take().expect("stdout is piped");
        let lines = std::sync::Arc::new(AtomicUsize::new(0));
        let counted = std::sync::Arc::clone(&lines);
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            let mut buf = vec![0u8; 64 << 10];
            loop {
                let n = std::io::Read::read(&mut stdout, &mut buf).unwrap();
                if n == 0 {
                    break;
                }
                all.extend_from_slice(&buf[..n]);
                let new = buf[..n].iter().filter(|&&b| b == b'\n').count();
                counted.fetch_add(new, Ordering::Relaxed);
            }
            String::from_utf8(all).unwrap()
        });
        (reader, lines)
    }

    /// Sends `sig` (`-TERM`, `-INT`, ...).
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig}");
    }

    /// Waits for the exit; a process still running after `secs` is a hang (killed, failed).
    pub fn exit(&mut self, secs: u64) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Let the log reader take the last lines.
                std::thread::sleep(Duration::from_millis(50));
                return status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!("sluice did not exit within {secs} s:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The complete lines of `out` (a line still being written is left out); empty when absent.
pub fn complete_text(out: &Path) -> String {
    let mut text = std::fs::read_to_string(out).unwrap_or_default();
    text.truncate(text.rfind('\n').map_or(0, |i| i + 1));
    text
}

impl Run {
    /// Waits until `out` holds `n` complete lines (at most `secs`, else fails with the count
    /// and this process's log); returns them.
    pub fn wait_lines(&self, out: &Path, n: usize, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let text = complete_text(out);
            let count = text.lines().count();
            if count >= n {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "{count} of {n} lines in {secs} s\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Writes `n` events (`<prefix> <i>`) straight into the persisted queue in `qdir` (pages of
/// `page_capacity` bytes), as a pipeline whose workers had not taken them would leave them.
pub fn push_backlog(qdir: &Path, n: usize, page_capacity: u64, prefix: &str) {
    let storage = Arc::new(sluice_queue::FsStorage::new(qdir).unwrap());
    let cfg = sluice_queue::QueueConfig {
        page_capacity,
        ..Default::default()
    };
    let q = sluice_queue::PersistedQueue::open(storage, cfg).unwrap();
    let mut batch = sluice_queue::RecordBatch::new();
    for i in 0..n {
        let e = sluice_event::Event::with_message(format!("{prefix} {i}"));
        batch.push_with(|b| sluice_event::binary::encode(&e, b));
    }
    q.push(&mut batch).unwrap();
    q.shutdown();
}

/// Overwrites 8 bytes in the middle of the oldest page file of the queue in `qdir`.
pub fn corrupt_oldest_page(qdir: &Path) {
    let page = std::fs::read_dir(qdir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().ok()?;
            name.strip_prefix("page.")?.parse::<u64>().ok()
        })
        .min()
        .map(|n| qdir.join(format!("page.{n}")))
        .expect("a page file");
    let mut bytes = std::fs::read(&page).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid..mid + 8].copy_from_slice(b"CORRUPT!");
    std::fs::write(&page, bytes).unwrap();
}

/// Sequences 0..`count` were each delivered exactly once (`seqs`: sequence → times).
pub fn assert_exactly_once(seqs: &BTreeMap<i64, usize>, count: i64) {
    let dups: Vec<_> = seqs.iter().filter(|(_, &n)| n > 1).take(5).collect();
    assert!(dups.is_empty(), "delivered twice: {dups:?}");
    let missing: Vec<i64> = (0..count)
        .filter(|i| !seqs.contains_key(i))
        .take(5)
        .collect();
    assert!(missing.is_empty(), "events missing, e.g. {missing:?}");
    assert_eq!(
        seqs.len() as i64,
        count,
        "sequences beyond {count} delivered"
    );
}

/// Sequence → times delivered, from a file of `json_lines` generator events; every line must
/// be a whole event.
pub fn sequences(out: &Path) -> BTreeMap<i64, usize> {
    let mut seqs = BTreeMap::new();
    for line in std::fs::read_to_string(out).unwrap_or_default().lines() {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("torn or glued line ({e}): {line:?}"));
        *seqs
            .entry(v["event"]["sequence"].as_i64().unwrap())
            .or_default() += 1;
    }
    seqs
}

/// Reads the dead letter queue of pipeline `pipeline_id` under `dlq_root`
/// (`path.dead_letter_queue`) back through the `dead_letter_queue` input, until at least
/// `expected` entries have come (at most `secs` seconds) and then half a second more, so that
/// extra entries show. Each entry is its event as JSON, with `[@metadata][dead_letter_queue]`
/// copied to `dlq`.
pub fn read_dead_letters(
    dlq_root: &Path,
    pipeline_id: &str,
    expected: usize,
    secs: u64,
) -> Vec<serde_json::Value> {
    let dir = dlq_root.with_extension(format!("reader-{pipeline_id}"));
    let _ = std::fs::remove_dir_all(&dir);
    let options = format!(r#"pipeline_id => "{pipeline_id}" commit_offsets => false"#);
    read_dead_letters_with(&dir, dlq_root, &options, expected, secs)
}

/// [`read_dead_letters`] with the input's other `options`, run in `dir` (its `path.data` is
/// `<dir>/data`, where the input keeps its position between calls).
pub fn read_dead_letters_with(
    dir: &Path,
    dlq_root: &Path,
    options: &str,
    expected: usize,
    secs: u64,
) -> Vec<serde_json::Value> {
    std::fs::create_dir_all(dir.join("settings")).unwrap();
    let out = dir.join("out.json");
    let _ = std::fs::remove_file(&out);
    let config = format!(
        r#"input {{ dead_letter_queue {{ path => "{}" {options} }} }}
           filter {{ mutate {{ copy => {{ "[@metadata][dead_letter_queue]" => "dlq" }} }} }}
           output {{ file {{ path => "{}" }} }}"#,
        dlq_root.display(),
        out.display()
    );
    let yml = format!("path.data: {}\n", dir.join("data").display());
    let mut r = Run::start(dir, &yml, &[], &config, Stdio::null(), Stdio::null());
    let lines = || {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(secs);
    while lines() < expected && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    r.signal("-TERM");
    let status = r.exit(30);
    assert!(
        status.success(),
        "DLQ reader failed ({status}):\n{}",
        r.log()
    );
    let entries: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    assert!(
        entries.len() >= expected,
        "{} of {expected} dead letters read back within {secs} s:\n{}",
        entries.len(),
        r.log()
    );
    entries
}

/// Runs `cmd` with `stdin` written to its standard input, until it ends: its status and
/// what it wrote (standard output and error piped).
pub fn output_with_stdin(cmd: &mut Command, stdin: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// `sluice -w 1 -e config` with `input` on its standard input until it ends: whether it
/// exited 0, its standard output as JSON lines, and its log.
pub fn pipe_through(config: &str, input: &str) -> (bool, Vec<serde_json::Value>, String) {
    let out = output_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_sluice")).args(["-w", "1", "-e", config]),
        input.as_bytes(),
    );
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (
        out.status.success(),
        events,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

//! Full disks, through the real binary, on small tmpfs file systems the tests mount (root
//! needed; under `CI=true` a mount that fails is a failure).
//!
//! - The persisted queue's disk fills while the output is down: writers wait (one log line,
//!   not thousands), and once the output is back the queue drains, frees its pages and takes
//!   the rest, with no manual step (Logstash #8098: acked pages never freed on a full disk).
//! - A stop on a full queue disk ends the process, and a restart on the still-full disk opens
//!   the queue and drains it: nothing lost, nothing twice (Logstash #16389: cannot start).
//! - The file output on a full disk never leaves a torn line or a duplicate batch.

mod run_support;
mod tmpfs;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use run_support::{assert_exactly_once, sequences, Run};
use tmpfs::Tmpfs;

fn temp_dir(name: &str) -> PathBuf {
    run_support::temp_dir("full", name)
}

fn start(dir: &Path, settings: &str, config: &str) -> Run {
    Run::start(dir, settings, &[], config, Stdio::null(), Stdio::null())
}

fn queue_settings(data: &Path) -> String {
    format!(
        "path.data: {}\nqueue.type: persisted\nqueue.page_capacity: 1mb\nqueue.max_bytes: 1gb\n",
        data.display()
    )
}

fn file_output(input: &str, out: &Path) -> String {
    format!(
        "input {{ {input} }} output {{ file {{ path => \"{}\" }} }}",
        out.display()
    )
}

#[test]
fn full_queue_disk_drains_and_resumes_without_a_manual_step_logstash_8098() {
    let dir = temp_dir("fill-drain");
    let Some(data) = Tmpfs::mount(&dir.join("data"), "24m", "") else {
        return;
    };
    let Some(out_fs) = Tmpfs::mount(&dir.join("out"), "256m", "ro") else {
        return;
    };
    let out = out_fs.path.join("out.log");
    let count = 200_000;
    let mut run = start(
        &dir,
        &format!("{}queue.drain: true\n", queue_settings(&data.path)),
        &file_output(&format!("generator {{ count => {count} }}"), &out),
    );
    run.wait_log("No space left on device", 120);
    // Stalled on a full disk for a while: one line about it, not one per retry.
    std::thread::sleep(Duration::from_secs(3));
    let log = run.log();
    assert!(data.free() < 1 << 20, "the queue disk is not full");
    assert!(
        log.matches("No space left on device").count() <= 2,
        "repeated errors are not rate-limited:\n{log}"
    );
    out_fs.remount("rw");
    let status = run.exit(300);
    assert!(status.success(), "{status}\n{}", run.log());
    assert_exactly_once(&sequences(&out), count);
    // The queue freed its pages: the disk has room again.
    assert!(data.free() > 16 << 20, "acked pages were not freed");
}

#[test]
fn stop_on_a_full_queue_disk_then_restart_on_it_loses_nothing_logstash_16389() {
    let dir = temp_dir("restart-full");
    let Some(data) = Tmpfs::mount(&dir.join("data"), "16m", "") else {
        return;
    };
    let Some(out_fs) = Tmpfs::mount(&dir.join("out"), "1m", "ro") else {
        return;
    };
    let mut run = start(
        &dir,
        &queue_settings(&data.path),
        &file_output("generator { }", &out_fs.path.join("out.log")),
    );
    run.wait_log("No space left on device", 120);
    // The input waits on the full disk, the output fails: a stop ends both.
    run.signal("-TERM");
    let status = run.exit(30);
    assert!(status.success(), "{status}\n{}", run.log());
    assert!(data.free() < 1 << 20, "the queue disk is not full any more");

    let out = dir.join("out.log");
    let mut drain = start(
        &dir,
        &format!("{}queue.drain: true\n", queue_settings(&data.path)),
        &file_output("stdin { }", &out),
    );
    let status = drain.exit(300);
    assert!(status.success(), "{status}\n{}", drain.log());
    let seqs = sequences(&out);
    let count = seqs.len() as i64;
    assert!(count > 10_000, "only {count} events were queued");
    assert_exactly_once(&seqs, count);
}

#[test]
fn file_output_never_leaves_a_torn_line_after_a_full_disk() {
    let dir = temp_dir("file-output");
    let Some(fs) = Tmpfs::mount(&dir.join("out"), "2m", "") else {
        return;
    };
    // Ballast leaves little room; the output runs into the full disk mid-batch.
    let ballast = fs.path.join("ballast");
    std::fs::write(&ballast, vec![0u8; 1900 << 10]).unwrap();
    let out = fs.path.join("out.log");
    let count = 6000;
    let mut run = start(
        &dir,
        &format!("path.data: {}\n", dir.join("data").display()),
        &file_output(&format!("generator {{ count => {count} }}"), &out),
    );
    run.wait_log("No space left on device", 60);
    std::fs::remove_file(&ballast).unwrap();
    let status = run.exit(120);
    assert!(status.success(), "{status}\n{}", run.log());
    assert_exactly_once(&sequences(&out), count);
}

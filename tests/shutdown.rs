//! Stopping, through the real binary, when I/O is blocked: a closed standard output, an output
//! that fails (retrying), an output that never returns, an input blocked on its source. A stop
//! must always end the process; a persisted queue must keep what was not delivered; a memory
//! queue must say what was lost.

mod run_support;
mod tmpfs;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use run_support::{sequences, Run};

fn temp_dir(name: &str) -> PathBuf {
    run_support::temp_dir("stop", name)
}

/// Two workers (the tests block both), data under `<dir>/data`.
fn start(dir: &Path, settings: &str, config: &str, stdin: Stdio, stdout: Stdio) -> Run {
    let yml = format!("path.data: {}\n{settings}", dir.join("data").display());
    Run::start(dir, &yml, &["-w", "2"], config, stdin, stdout)
}

/// `sluice ... | head -1`: the reader goes away, writing to standard output fails with EPIPE,
/// and the pipeline ends cleanly instead of retrying forever.
#[test]
fn closed_standard_output_ends_the_pipeline() {
    let dir = temp_dir("head");
    let mut run = start(
        &dir,
        "",
        "input { generator { count => 1000000 } } output { stdout { codec => json_lines } }",
        Stdio::null(),
        Stdio::piped(),
    );
    let mut stdout = run.child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let status = run.exit(10);
    let log = run.log();
    assert!(log.contains("standard output is closed"), "{log}");
    // A memory queue: what was not delivered is counted, and the exit says so (issue 46: it
    // was 0).
    assert!(log.contains("were not delivered and are lost"), "{log}");
    assert_eq!(status.code(), Some(1), "{log}");
}

/// The same with a persisted queue and `queue.drain: true`: the batches given up stay
/// unacked, and no worker waits for them to drain (that used to hang the exit).
#[test]
fn closed_standard_output_ends_a_draining_persisted_pipeline() {
    let dir = temp_dir("head-persisted");
    let mut run = start(
        &dir,
        "queue.type: persisted\nqueue.drain: true\n",
        "input { generator { count => 100 } } output { stdout { codec => json_lines } }",
        Stdio::null(),
        Stdio::piped(),
    );
    // Closed before anything is written: one worker gives the only batch up, the other waits
    // for more.
    drop(run.child.stdout.take());
    let status = run.exit(30);
    assert!(status.success(), "{status}\n{}", run.log());
    assert!(
        run.log().contains("stay in the persisted queue"),
        "{}",
        run.log()
    );
}

/// A pipeline that sends to another whose output closed: the halted receiver leaves the bus,
/// the sender's output fails (no receiver) and retries, and a stop signal ends both, with
/// persisted queues keeping what was not delivered.
#[test]
fn a_sender_to_a_halted_pipeline_stops_at_a_signal() {
    let dir = temp_dir("halted-receiver");
    std::fs::write(
        dir.join("settings/pipelines.yml"),
        "- pipeline.id: up\n  config.string: 'input { generator { } } output { pipeline { send_to => [down] } }'\n\
         - pipeline.id: down\n  config.string: 'input { pipeline { address => down } } output { stdout { codec => json_lines } }'\n",
    )
    .unwrap();
    let yml = format!(
        "path.data: {}\nqueue.type: persisted\nqueue.page_capacity: 1mb\nqueue.max_bytes: 16mb\n",
        dir.join("data").display()
    );
    let mut run = Run::spawn(&dir, &yml, &["-w", "2"], Stdio::null(), Stdio::piped());
    drop(run.child.stdout.take());
    run.wait_log("standard output is closed", 30);
    run.wait_log("no running pipeline listens on address", 30);
    run.signal("-TERM");
    let status = run.exit(10);
    assert!(status.success(), "{status}\n{}", run.log());
}

/// An output writing to a read-only file system fails on every try. A stop signal makes it
/// give its batch up; the persisted queue keeps every event, and the next start (with the
/// output fixed) delivers each exactly once.
#[test]
fn stop_signal_ends_a_failing_output_and_the_persisted_queue_keeps_its_events() {
    let dir = temp_dir("failing-persisted");
    let Some(ro) = tmpfs::Tmpfs::mount(&dir.join("ro"), "1m", "ro") else {
        return;
    };
    let settings = "queue.type: persisted\nqueue.page_capacity: 1mb\n";
    let config = |out: &Path| {
        format!(
            "input {{ generator {{ count => 3000 }} }} output {{ file {{ path => \"{}\" }} }}",
            out.display()
        )
    };
    let mut run = start(
        &dir,
        settings,
        &config(&ro.path.join("out.log")),
        Stdio::null(),
        Stdio::null(),
    );
    run.wait_log("Read-only file system", 30);
    run.signal("-TERM");
    let status = run.exit(10);
    assert!(status.success(), "{status}\n{}", run.log());
    let log = run.log();
    assert!(log.contains("giving up the batch"), "{log}");
    assert!(log.contains("stay in the persisted queue"), "{log}");
    // Retried many times, logged once per worker (then a count a minute), plus the give-up.
    let lines = log.matches("Read-only file system").count();
    assert!(lines <= 2 + 2, "{lines} lines:\n{log}");

    let out = dir.join("out.log");
    let mut drain = start(
        &dir,
        &format!("{settings}queue.drain: true\n"),
        &config(&out).replace("generator { count => 3000 }", "stdin { }"),
        Stdio::null(),
        Stdio::null(),
    );
    assert!(drain.exit(60).success(), "{}", drain.log());
    // The stop also ends the generator, which may not have made all 3000 by then: what the
    // queue kept is the first `queued`, and each of them is delivered once.
    let queued: usize = drain
        .log()
        .split("unacked_events=")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no queue figures in the log:\n{}", drain.log()));
    assert!(queued > 0 && queued <= 3000, "{queued}");
    let seqs = sequences(&out);
    assert_eq!(seqs.len(), queued, "{}", drain.log());
    assert!(seqs.values().all(|&n| n == 1), "duplicates");
    assert_eq!(*seqs.keys().last().unwrap(), queued as i64 - 1);
}

/// The same with a memory queue: the stop still ends the process, the log counts the events
/// that are lost, and the exit status is 1.
#[test]
fn stop_signal_ends_a_failing_output_and_a_memory_queue_counts_its_loss() {
    let dir = temp_dir("failing-memory");
    let Some(ro) = tmpfs::Tmpfs::mount(&dir.join("ro"), "1m", "ro") else {
        return;
    };
    let mut run = start(
        &dir,
        "",
        &format!(
            "input {{ generator {{ }} }} output {{ file {{ path => \"{}\" }} }}",
            ro.path.join("out.log").display()
        ),
        Stdio::null(),
        Stdio::null(),
    );
    run.wait_log("Read-only file system", 30);
    run.signal("-INT");
    let status = run.exit(10);
    assert_eq!(status.code(), Some(1), "{status}\n{}", run.log());
    assert!(
        run.log().contains("were not delivered and are lost"),
        "{}",
        run.log()
    );
}

/// An input blocked reading its source (a terminal, a pipe nobody writes to) does not keep a
/// stop signal from ending the process.
#[test]
fn stop_signal_does_not_wait_for_an_input_blocked_on_its_source() {
    let dir = temp_dir("stdin");
    let mut run = start(
        &dir,
        "queue.type: persisted\n",
        "input { stdin { } } output { null { } }",
        Stdio::piped(),
        Stdio::null(),
    );
    run.wait_log("starting pipeline", 30);
    run.signal("-TERM");
    let status = run.exit(10);
    assert!(status.success(), "{status}\n{}", run.log());
}

/// An output that never returns (standard output into a pipe nobody reads) cannot be
/// interrupted. The stalled shutdown is reported, naming the plugin; with a memory queue (and
/// no `pipeline.unsafe_shutdown`) the process waits, and a second signal forces the exit.
#[test]
fn stalled_shutdown_names_the_blocking_output_and_a_second_signal_forces_exit() {
    let dir = temp_dir("stalled-memory");
    let mut run = start(
        &dir,
        "",
        "input { generator { } } output { stdout { id => \"blocked_out\" codec => json_lines } }",
        Stdio::null(),
        Stdio::piped(),
    );
    run.wait_log("starting pipeline", 30);
    // Fill the pipe: nobody reads it, so the output's write blocks.
    std::thread::sleep(Duration::from_millis(500));
    run.signal("-TERM");
    run.wait_log("shutdown stalled", 30);
    let log = run.log();
    assert!(log.contains("in output stdout (id blocked_out)"), "{log}");
    assert!(run.child.try_wait().unwrap().is_none(), "exited by itself");
    run.signal("-TERM");
    let status = run.exit(10);
    assert_eq!(status.code(), Some(128 + 15), "{}", run.log());
}

/// With a persisted queue, ending a stalled shutdown loses nothing: after the stall reports
/// the process exits by itself, and the next start delivers what the blocked output never
/// took.
#[test]
fn stalled_shutdown_with_a_persisted_queue_exits_and_loses_nothing() {
    let dir = temp_dir("stalled-persisted");
    let settings = "queue.type: persisted\nqueue.page_capacity: 1mb\n";
    let mut run = start(
        &dir,
        settings,
        "input { generator { count => 20000 } } output { stdout { codec => json_lines } }",
        Stdio::null(),
        Stdio::piped(),
    );
    // Read a little, then stop reading: the output blocks with batches in flight.
    let mut stdout = run.child.stdout.take().unwrap();
    let mut some = vec![0u8; 4096];
    stdout.read_exact(&mut some).unwrap();
    run.wait_log("starting pipeline", 30);
    std::thread::sleep(Duration::from_millis(500));
    run.signal("-TERM");
    let status = run.exit(60);
    assert_eq!(status.code(), Some(1), "{}", run.log());
    assert!(run.log().contains("forcing exit"), "{}", run.log());
    // What the pipe took (read or buffered) was delivered; the rest is in the queue.
    let mut taken = some;
    stdout.read_to_end(&mut taken).unwrap();
    let text = String::from_utf8_lossy(&taken).into_owned();
    let mut seen: BTreeMap<i64, usize> = BTreeMap::new();
    for line in text.lines().filter(|l| l.ends_with('}')) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            *seen
                .entry(v["event"]["sequence"].as_i64().unwrap())
                .or_default() += 1;
        }
    }

    let out = dir.join("out.log");
    let mut drain = start(
        &dir,
        &format!("{settings}queue.drain: true\n"),
        &format!(
            "input {{ stdin {{ }} }} output {{ file {{ path => \"{}\" }} }}",
            out.display()
        ),
        Stdio::null(),
        Stdio::null(),
    );
    assert!(drain.exit(60).success(), "{}", drain.log());
    for (seq, n) in sequences(&out) {
        *seen.entry(seq).or_default() += n;
    }
    // At-least-once: every generated event, some (the batches in flight) twice.
    let max = *seen.keys().last().unwrap();
    assert_eq!(seen.len() as i64, max + 1, "gaps in 0..={max}");
    assert!(max > 1000, "only {max} events generated");
}

/// `pipeline.unsafe_shutdown: true`: a stalled shutdown with a memory queue exits after the
/// reports, and says what it lost.
#[test]
fn unsafe_shutdown_ends_a_stalled_memory_pipeline() {
    let dir = temp_dir("unsafe");
    let mut run = start(
        &dir,
        "pipeline.unsafe_shutdown: true\n",
        "input { generator { } } output { stdout { codec => json_lines } }",
        Stdio::null(),
        Stdio::piped(),
    );
    run.wait_log("starting pipeline", 30);
    std::thread::sleep(Duration::from_millis(500));
    run.signal("-INT");
    let status = run.exit(60);
    assert_eq!(status.code(), Some(1), "{}", run.log());
    let log = run.log();
    assert!(log.contains("in memory queues are lost"), "{log}");
}

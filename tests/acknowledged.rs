//! Nothing acknowledged is ever lost: the defects a fault probe found through the binary
//! (issue 46), each pinned by a test that drives the real `sluice` from the outside.
//!
//! - A full disk with the default 64 MB page: a queue whose records are all acked goes on.
//! - An event larger than a queue page is stored (on a page of its own), not acked and dropped
//!   (in `tests/http_input.rs`).
//! - `sluice queue repair` never gives a sequence (a replay-safe id) to a second event.
//! - A stop that gives up on a slow filter delivers none of its batch (nor acks it).
//! - Automatic reload to an empty or cut-short config keeps the running pipeline.
//! - `1e999` fails a JSON text whatever its neighbours.
//! - An event that crashes the process twice is set aside, never replayed into a crash loop.

mod run_support;
mod tmpfs;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use run_support::{assert_exactly_once, sequences, Run};
use tmpfs::Tmpfs;

fn temp_dir(name: &str) -> PathBuf {
    run_support::temp_dir("acked", name)
}

fn start(dir: &Path, settings: &str, config: &str) -> Run {
    Run::start(dir, settings, &[], config, Stdio::null(), Stdio::null())
}

/// The default page (64 MB) on a disk with less free space than one page: the head page fills
/// the disk while its records are delivered and acked. The queue must go on (a fully acked head
/// page is let go and the next page written over it), not wait for space forever.
#[test]
fn full_disk_smaller_than_one_default_page_goes_on_once_everything_is_acked() {
    let dir = temp_dir("small-disk");
    let Some(data) = Tmpfs::mount(&dir.join("data"), "12m", "") else {
        return;
    };
    let out = dir.join("out.log");
    let count = 150_000;
    let settings = format!(
        "path.data: {}\nqueue.type: persisted\nqueue.drain: true\n",
        data.path.display()
    );
    let config = format!(
        "input {{ generator {{ count => {count} }} }} output {{ file {{ path => \"{}\" }} }}",
        out.display()
    );
    let mut run = start(&dir, &settings, &config);
    let status = run.exit(240);
    assert!(status.success(), "{status}\n{}", run.log());
    assert_exactly_once(&sequences(&out), count);

    // A restart on the same (still small) disk takes more events.
    let out2 = dir.join("out2.log");
    let config = format!(
        "input {{ generator {{ count => {count} }} }} output {{ file {{ path => \"{}\" }} }}",
        out2.display()
    );
    let mut run = start(&dir, &settings, &config);
    let status = run.exit(240);
    assert!(status.success(), "{status}\n{}", run.log());
    assert_exactly_once(&sequences(&out2), count);
}

fn sluice(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .unwrap()
}

/// The replay-safe ids `out` holds (one per line).
fn ids(out: &Path) -> Vec<String> {
    std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Issue 46: a repaired queue numbered its records from 0 again under the same queue id, so
/// events after the repair got the replay-safe ids of events delivered before it (5,001 reused
/// in the probe): Elasticsearch would overwrite those documents.
#[test]
fn repair_never_gives_a_replay_safe_id_to_a_second_event() {
    let dir = temp_dir("repair-ids");
    let qdir = dir.join("data/queue/main");
    let settings = format!(
        "path.data: {}\nqueue.type: persisted\nqueue.page_capacity: 64kb\nqueue.drain: true\n",
        dir.join("data").display()
    );
    let run = |input: &str, out: &Path| {
        let config = format!(
            r#"input {{ {input} }} output {{ file {{ path => "{}" codec => line {{ format => "%{{[@metadata][replay_safe_id]}}" }} }} }}"#,
            out.display()
        );
        let mut r = start(&dir, &settings, &config);
        let status = r.exit(120);
        assert!(status.success(), "{status}\n{}", r.log());
    };
    // Delivered before the damage.
    let before = dir.join("before.log");
    run("generator { count => 2000 }", &before);
    let delivered = ids(&before);
    assert_eq!(delivered.len(), 2000);
    // A backlog, as a pipeline whose outputs were down would leave it; damage in its oldest
    // page, then a repair.
    run_support::push_backlog(&qdir, 3000, 64 << 10, "backlog");
    run_support::corrupt_oldest_page(&qdir);
    let repaired = sluice(&["queue", "repair", qdir.to_str().unwrap()]);
    assert!(
        repaired.status.success(),
        "{}{}",
        String::from_utf8_lossy(&repaired.stdout),
        String::from_utf8_lossy(&repaired.stderr)
    );
    let after = dir.join("after.log");
    run("generator { count => 500 }", &after);
    let after = ids(&after);
    assert!(
        after.len() > 3000,
        "{} events after the repair",
        after.len()
    );
    let mut seen: std::collections::HashSet<&String> = delivered.iter().collect();
    let reused: Vec<&String> = after.iter().filter(|id| !seen.insert(id)).take(5).collect();
    assert!(reused.is_empty(), "replay-safe ids given twice: {reused:?}");
}

/// Issue 46: Ruby code that sleeps, and a SIGTERM: the stop gave up on the filter after 5 s,
/// and the batch's events that had not run through it were written with `message` still
/// there, then acked (14 of 20 in the probe). Now the batch is neither delivered nor acked: the
/// next start replays it through the filter.
#[test]
#[cfg(feature = "ruby")]
fn a_stop_that_gives_up_on_a_filter_delivers_none_of_its_batch() {
    let dir = temp_dir("slow-filter");
    let out = dir.join("out.json");
    let settings = format!(
        "path.data: {}\nqueue.type: persisted\npipeline.workers: 1\npipeline.batch.size: 20\nqueue.drain: true\n",
        dir.join("data").display()
    );
    let config = |input: &str, code: &str| {
        format!(
            r#"input {{ {input} }} filter {{ ruby {{ code => "{code}" }} }} output {{ file {{ path => "{}" }} }}"#,
            out.display()
        )
    };
    let mut run = start(
        &dir,
        &settings,
        &config(
            "generator { count => 20 }",
            "sleep 1; event.remove('message')",
        ),
    );
    run.wait_log("starting pipeline", 60);
    std::thread::sleep(std::time::Duration::from_secs(2));
    run.signal("-TERM");
    run.exit(60);
    let log = run.log();
    let delivered = sequences(&out);
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(
        !text.contains("\"message\""),
        "events that skipped the filter were delivered:\n{text}\n{log}"
    );
    // The next start runs the batch through the filter (now quick) and delivers all of it.
    let mut run = start(
        &dir,
        &settings,
        &config("stdin { }", "event.remove('message')"),
    );
    let status = run.exit(120);
    assert!(status.success(), "{status}\n{}", run.log());
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(!text.contains("\"message\""), "{text}");
    let all = sequences(&out);
    assert_eq!(
        all.keys().copied().collect::<Vec<_>>(),
        (0..20).collect::<Vec<i64>>(),
        "{log}"
    );
    assert!(
        all.values().all(|&n| n == 1),
        "delivered twice: {all:?} (first run {delivered:?})"
    );
}

/// Issue 46: automatic reload to an empty config file made the pipeline empty, and the process
/// exited 0. A reload to a config with no input or no output (an empty file, one cut short)
/// or that does not parse keeps the running pipeline, says why, and a good config still
/// reloads afterwards.
#[test]
fn reload_to_an_empty_or_cut_short_config_keeps_the_running_pipeline() {
    let dir = temp_dir("reload-empty");
    let conf = dir.join("pipeline.conf");
    let out = dir.join("out.log");
    let config = |version: &str| {
        format!(
            "input {{ generator {{ add_field => {{ \"version\" => \"{version}\" }} }} }}\noutput {{ file {{ path => \"{}\" codec => line {{ format => \"%{{version}}\" }} }} }}\n",
            out.display()
        )
    };
    std::fs::write(&conf, config("1")).unwrap();
    let mut run = Run::spawn(
        &dir,
        &format!(
            "path.data: {}\nconfig.reload.automatic: true\nconfig.reload.interval: 1s\n",
            dir.join("data").display()
        ),
        &["-f", conf.to_str().unwrap()],
        Stdio::null(),
        Stdio::null(),
    );
    run.wait_until("events", 60, || out.exists());
    let full = config("2");
    let cut = &full[..full.find("output").unwrap()];
    let broken = &full[..full.len() - 4];
    for (what, text) in [("empty", ""), ("no output", cut), ("syntax error", broken)] {
        std::fs::write(&conf, text).unwrap();
        let failures = run.log().matches("reload failed").count();
        run.wait_until(&format!("a refused reload ({what})"), 30, || {
            run.log().matches("reload failed").count() > failures
        });
        let size = std::fs::metadata(&out).unwrap().len();
        run.wait_until(&format!("events after the {what} config"), 30, || {
            std::fs::metadata(&out).unwrap().len() > size + 1000
        });
        assert!(run.child.try_wait().unwrap().is_none(), "{}", run.log());
    }
    std::fs::write(&conf, config("3")).unwrap();
    run.wait_until("the good config", 60, || {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .contains("3\n")
    });
    run.signal("-TERM");
    let status = run.exit(60);
    assert!(status.success(), "{status}\n{}", run.log());
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.lines().any(|l| l == "2"), "a broken config ran");
    let log = run.log();
    assert!(log.contains("has no input plugin"), "{log}");
    assert!(log.contains("has no output plugin"), "{log}");
}

/// Issue 46: `1e999` beside an integer past 64 bits became Infinity, written as `null`, with
/// no tag (alone it was `_jsonparsefailure`). Now the same text fails the same way whatever
/// its neighbours, in the json filter and the json codec.
#[test]
fn a_number_no_float_holds_fails_the_json_whatever_its_neighbours() {
    let dir = temp_dir("json-range");
    let big = "123456789012345678901234567890";
    let lines = [
        r#"{"a":1e999}"#.to_owned(),
        format!(r#"{{"a":1e999,"b":{big}}}"#),
        format!(r#"{{"b":{big},"a":1e999}}"#),
    ];
    let input = dir.join("in.log");
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    for (name, config) in [
        (
            "filter",
            r#"input { stdin { } } filter { json { source => "message" } } output { stdout { codec => json_lines } }"#,
        ),
        (
            "codec",
            r#"input { stdin { codec => json_lines } } output { stdout { codec => json_lines } }"#,
        ),
    ] {
        let mut run = Run::start(
            &dir,
            "",
            &[],
            config,
            Stdio::from(std::fs::File::open(&input).unwrap()),
            Stdio::piped(),
        );
        let out = run.read_stdout();
        assert!(run.exit(60).success(), "{}", run.log());
        let events: Vec<serde_json::Value> = out
            .join()
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(events.len(), 3, "{name}: {events:?}");
        for e in &events {
            assert_eq!(
                e["tags"],
                serde_json::json!(["_jsonparsefailure"]),
                "{name}: {e}"
            );
            assert!(e.get("a").is_none() && e.get("b").is_none(), "{name}: {e}");
        }
    }
}

/// Issue 46: Ruby code that kills the process on one event (`Process.kill(:KILL, Process.pid)`
/// killed sluice with no log line, and with a persisted queue every start replayed the event
/// and died again). Signalling sluice itself is refused now (tested in `tests/ruby_filter.rs`);
/// a process killed from outside by an event (here a `kill -9` the code runs) is met by the
/// in-flight journal: the batch in flight at the first crash is processed one event at a
/// time, the second crash names the event, and the third start sets it aside (the dead letter
/// queue, or a logged skip) and delivers everything else.
#[test]
#[cfg(feature = "ruby")]
fn an_event_that_crashes_the_process_twice_is_set_aside() {
    for dlq in [true, false] {
        let dir = temp_dir(&format!("poison-{dlq}"));
        let out = dir.join("out.log");
        let input = dir.join("in.log");
        let lines: Vec<String> = (0..30)
            .map(|i| match i {
                17 => "poison".to_owned(),
                i => format!("line-{i}"),
            })
            .collect();
        std::fs::write(&input, lines.join("\n") + "\n").unwrap();
        let settings = format!(
            "path.data: {}\nqueue.type: persisted\nqueue.drain: true\npipeline.workers: 1\npipeline.batch.size: 10\ndead_letter_queue.enable: {dlq}\n",
            dir.join("data").display()
        );
        let config = format!(
            r#"input {{ stdin {{ }} }}
               filter {{ ruby {{ code => "system('kill', '-9', Process.pid.to_s) if event.get('message') == 'poison'" }} }}
               output {{ file {{ path => "{}" codec => line {{ format => "%{{message}}" }} }} }}"#,
            out.display()
        );
        let run = |stdin: Stdio| {
            let mut r = Run::start(&dir, &settings, &[], &config, stdin, Stdio::null());
            let status = r.exit(120);
            (status, r.log())
        };
        let (first, log) = run(Stdio::from(std::fs::File::open(&input).unwrap()));
        assert_eq!(first.code(), None, "not killed: {first}\n{log}");
        let (second, log) = run(Stdio::null());
        assert_eq!(second.code(), None, "not killed again: {second}\n{log}");
        assert!(log.contains("one at a time"), "{log}");
        let (third, log) = run(Stdio::null());
        assert!(third.success(), "{third}\n{log}");
        assert!(log.contains("crashed the process twice"), "{log}");
        let text = std::fs::read_to_string(&out).unwrap();
        let got: std::collections::BTreeSet<&str> = text.lines().collect();
        let want: std::collections::BTreeSet<&str> = lines
            .iter()
            .map(String::as_str)
            .filter(|l| *l != "poison")
            .collect();
        assert_eq!(got, want, "{log}");
        if dlq {
            let entries =
                run_support::read_dead_letters(&dir.join("data/dead_letter_queue"), "main", 1, 60);
            assert_eq!(entries.len(), 1, "{entries:?}");
            assert_eq!(entries[0]["message"], "poison");
        } else {
            assert!(log.contains("skipped (no dead letter queue)"), "{log}");
        }
        // A fourth start has nothing left to do, and no crash.
        let (fourth, log) = run(Stdio::null());
        assert!(fourth.success(), "{fourth}\n{log}");
    }
}

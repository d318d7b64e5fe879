//! Output lanes through the binary: an output whose destination fails (an HTTP server of the
//! test's own answering 503) stalls neither the other output nor the input, its lane holds
//! what it could not write, and everything reaches it once the destination is back, after a
//! graceful end and after a SIGKILL during the outage; the same with an Elasticsearch node of
//! the test's own that is killed for about 30 s mid-stream.

mod api_support;
mod http_server;
mod net_support;
mod run_support;
mod search_support;
mod tmpfs;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use api_support::Sluice;
use http_server::{Reply, Server};

/// A server that takes `json_batch` bodies (answering 503 while `down` is set); the bodies
/// it took with 200 are in `Destination::taken`.
struct Destination {
    server: Server,
    taken: Arc<Mutex<Vec<Vec<u8>>>>,
}

fn destination(down: &Arc<AtomicBool>) -> Destination {
    let down = Arc::clone(down);
    let taken = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&taken);
    let server = Server::start(move |r| {
        if down.load(Ordering::SeqCst) {
            Reply::new(503, "text/plain", "down")
        } else {
            sink.lock().unwrap().push(r.body.clone());
            Reply::new(200, "application/json", "{}")
        }
    });
    Destination { server, taken }
}

/// Sequences the destination took (each body a JSON array), with their counts.
fn received(d: &Destination) -> BTreeMap<i64, usize> {
    let mut seqs = BTreeMap::new();
    for body in d.taken.lock().unwrap().iter() {
        let Ok(serde_json::Value::Array(events)) = serde_json::from_slice(body) else {
            panic!("not a JSON array: {}", String::from_utf8_lossy(body));
        };
        for e in events {
            *seqs.entry(seq_of(&e).expect("a sequence")).or_insert(0) += 1;
        }
    }
    seqs
}

fn seq_of(e: &serde_json::Value) -> Option<i64> {
    e["event"]["sequence"]
        .as_i64()
        .or_else(|| e["sequence"].as_i64())
        .or_else(|| e["message"].as_str()?.parse().ok())
}

/// Lines of `out` (whole ones), by sequence.
fn in_file(out: &Path) -> BTreeMap<i64, usize> {
    let mut seqs = BTreeMap::new();
    for l in run_support::complete_text(out).lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        *seqs.entry(seq_of(&v).unwrap()).or_insert(0) += 1;
    }
    seqs
}

/// Output `id`'s `lane` object in `/_node/stats/pipelines` (null when it has none).
fn lane_of(stats: &serde_json::Value, id: &str) -> serde_json::Value {
    stats["pipelines"]["main"]["plugins"]["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == id)
        .map(|o| o["lane"].clone())
        .unwrap_or_default()
}

/// After a SIGKILL: the same config again, with nothing on its input and the persisted queue
/// (under `dir/data`) drained, until it exits; it must exit 0 within `secs`.
fn drain_again(dir: &Path, config: &str, secs: u64) -> run_support::Run {
    let mut again = run_support::Run::spawn(
        dir,
        &format!(
            "path.data: {}\nqueue.type: persisted\nqueue.drain: true\n",
            dir.join("data").display()
        ),
        &["-e", config],
        Stdio::null(),
        Stdio::null(),
    );
    let status = again.exit(secs);
    assert!(status.success(), "{status}\n{}", again.log());
    again
}

/// Lines the file output wrote per second over `span`.
fn file_rate(out: &Path, span: Duration) -> f64 {
    let before = run_support::complete_text(out).lines().count();
    std::thread::sleep(span);
    let after = run_support::complete_text(out).lines().count();
    (after - before) as f64 / span.as_secs_f64()
}

#[test]
fn an_output_that_fails_stalls_neither_the_other_output_nor_the_input() {
    const N: i64 = 30_000;
    let dir = api_support::temp_dir("lanes-outage");
    let down = Arc::new(AtomicBool::new(false));
    let server = destination(&down);
    let out = dir.join("out.json");
    // About 5,000 events a second from one worker, so that the run spans the outage.
    let config = format!(
        r#"input {{ generator {{ count => {N} }} }}
           filter {{ sleep {{ time => "0.01" every => 50 }} }}
           output {{
             file {{ path => "{}" }}
             http {{ id => "web" url => "{}/bulk" http_method => "post" format => "json_batch"
                     retry_failed => true
                     lane => {{ type => persisted max_bytes => "256mb" page_capacity => "1mb" }} }}
           }}"#,
        out.display(),
        server.server.url
    );
    let mut sluice = Sluice::start(
        &dir,
        "api.http.port: 9600-9700\npipeline.workers: 1\n",
        "",
        &["-e", &config],
    );
    sluice.wait_for(30, "events flowing", |v| {
        v["pipelines"]["main"]["events"]["out"].as_u64() > Some(2_000)
    });
    let before = file_rate(&out, Duration::from_secs(1));
    down.store(true, Ordering::SeqCst);
    let stats = sluice.wait_for(30, "the lane to store events", |v| {
        lane_of(v, "web")["events"].as_u64() > Some(1_000)
    });
    let during = file_rate(&out, Duration::from_secs(2));
    eprintln!("file output: {before:.0} events/s before the outage, {during:.0} during it");
    assert!(
        during >= before / 2.0,
        "the file output slowed from {before:.0} to {during:.0} events/s during the outage"
    );
    let l = lane_of(&stats, "web");
    assert_eq!(l["type"], "persisted", "{l}");
    assert!(l["stored"].as_u64() > Some(0), "{l}");
    let metrics = sluice.get("/metrics").body;
    assert!(
        metrics.lines().any(|m| m.starts_with("sluice_lane_events{")
            && m.contains("plugin_id=\"web\"")
            && !m.ends_with(" 0")),
        "no lane in /metrics:\n{metrics}"
    );
    assert!(
        dir.join("data/queue/main/lanes/web").is_dir(),
        "the lane's directory"
    );
    std::thread::sleep(Duration::from_secs(1));
    down.store(false, Ordering::SeqCst);
    // The generator ends; a graceful end empties the lane before the process exits.
    let status = sluice.exit(120);
    assert!(status.success(), "{status}\n{}", sluice.log());
    run_support::assert_exactly_once(&in_file(&out), N);
    let got = received(&server);
    let missing: Vec<_> = (0..N).filter(|n| !got.contains_key(n)).collect();
    assert!(
        missing.is_empty(),
        "{} events never reached the http output: {:?}...",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// SIGKILL while the destination is down and the lane holds events; the next start (the
/// destination back) delivers every event to both outputs: what the lane held, what the
/// persisted main queue held, nothing lost.
#[test]
fn a_sigkill_during_the_outage_loses_nothing() {
    const N: usize = 20_000;
    let dir = api_support::temp_dir("lanes-kill");
    let down = Arc::new(AtomicBool::new(true));
    let server = destination(&down);
    let out = dir.join("out.json");
    let config = format!(
        r#"input {{ stdin {{ }} }}
           output {{
             file {{ path => "{}" }}
             http {{ id => "web" url => "{}/bulk" http_method => "post" format => "json_batch"
                     lane => {{ type => persisted max_bytes => "256mb" page_capacity => "1mb" }} }}
           }}"#,
        out.display(),
        server.server.url
    );
    let settings = "api.http.port: 9600-9700\nqueue.type: persisted\nqueue.drain: true\n";
    let mut sluice = Sluice::start(&dir, settings, "", &["-e", &config]);
    {
        use std::io::Write;
        let mut stdin = sluice.child.stdin.take().unwrap();
        let lines: String = (0..N).map(|i| format!("{i}\n")).collect();
        stdin.write_all(lines.as_bytes()).unwrap();
        // stdin stays open: the run is killed, not ended.
        std::mem::forget(stdin);
    }
    sluice.wait_for(60, "the file output to have everything", |_| {
        in_file(&out).len() >= N
    });
    sluice.wait_for(30, "the lane to hold events", |v| {
        lane_of(v, "web")["events"].as_u64() > Some(0)
    });
    let _ = sluice.child.kill();
    let _ = sluice.child.wait();
    assert!(received(&server).is_empty(), "the destination was down");
    down.store(false, Ordering::SeqCst);
    // Again, with no input: the queue and the lane are emptied, then the run ends.
    let again = drain_again(&dir, &config, 120);
    let got = received(&server);
    let missing: Vec<_> = (0..N as i64).filter(|n| !got.contains_key(n)).collect();
    assert!(
        missing.is_empty(),
        "{} events never reached the http output after the restart: {:?}...\n{}",
        missing.len(),
        &missing[..missing.len().min(10)],
        again.log()
    );
    let file = in_file(&out);
    assert!(
        (0..N as i64).all(|n| file.contains_key(&n)),
        "the file output lost events"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `lane` is an output option: on an input or a filter it is unknown; a persisted lane needs
/// the output's own id; bad values name the option.
#[test]
fn lane_option_errors_are_named() {
    let check = |config: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["-t", "-e", config])
            .output()
            .unwrap()
    };
    for (config, says) in [
        (
            r#"input { generator { lane => { type => memory } } } output { null {} }"#,
            "unknown setting \"lane\"",
        ),
        (
            r#"input { generator { } } filter { mutate { lane => { type => memory } } } output { null {} }"#,
            "unknown setting \"lane\"",
        ),
        (
            r#"input { generator { } } output { null { lane => { type => persisted } } }"#,
            "needs the output's own `id`",
        ),
        (
            r#"input { generator { } } output { null { id => "n" lane => { type => disk } } }"#,
            "not one of persisted, memory",
        ),
        (
            r#"input { generator { } } output { null { lane => { type => memory overflow => never } } }"#,
            "not one of block, drop_oldest",
        ),
    ] {
        let o = check(config);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "accepted: {config}\n{err}");
        assert!(err.contains(says) && err.contains("1:"), "{config}: {err}");
    }
    for config in [
        r#"input { generator { } } output { null { lane => { type => memory max_events => 100 } } }"#,
        r#"input { generator { } } output { null { id => "n" lane => { max_bytes => "4gb" overflow => drop_oldest } } }"#,
    ] {
        let o = check(config);
        assert!(
            o.status.success(),
            "{config}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// Elasticsearch and a file: the node is killed mid-stream and started again about 30 s
/// later (its start-up takes most of that). The file output keeps at least half its rate
/// during the outage, the lane grows, drains once the node is back, and every event is in
/// both (in the file once; in the index once, the document id being the sequence). Then
/// the same again with a SIGKILL of sluice during the outage and a restart: nothing lost.
#[test]
fn elasticsearch_down_for_30_s_stalls_nothing_and_loses_nothing() {
    use search_support::{count, Kind, PrivateNode};
    // Documents in `index` (0 while it does not exist or the node is down).
    let indexed = |url: &str, index: &str| {
        search_support::get(&format!("{url}/{index}/_count"))
            .ok()
            .and_then(|(_, b)| b["count"].as_u64())
            .unwrap_or(0)
    };
    let Some(mut node) = PrivateNode::start(Kind::Elasticsearch, "lanes", &[]) else {
        return;
    };
    const N: i64 = 40_000;
    let dir = api_support::temp_dir("lanes-es");
    let out = dir.join("out.json");
    let url = node.url.clone();
    let config = |index: &str, input: &str, filter: &str| {
        format!(
            r#"input {{ {input} }}
               filter {{ {filter} }}
               output {{
                 file {{ path => "{}" }}
                 elasticsearch {{ id => "es" hosts => ["{}"] index => "{index}"
                   document_id => "%{{[event][sequence]}}-%{{message}}"
                   retry_initial_interval => 0.2 retry_max_interval => 1
                   lane => {{ type => persisted max_bytes => "512mb" page_capacity => "4mb" }} }}
               }}"#,
            out.display(),
            url
        )
    };
    // About 2,000 events a second: the generator outlasts the outage's start.
    let mut sluice = Sluice::start(
        &dir,
        "api.http.port: 9600-9700\npipeline.workers: 1\n",
        "",
        &[
            "-e",
            &config(
                "lanes",
                &format!("generator {{ count => {N} message => \"g\" }}"),
                r#"sleep { time => "0.01" every => 20 }"#,
            ),
        ],
    );
    sluice.wait_for(60, "events indexed", |_| indexed(&url, "lanes") > 2_000);
    let before = file_rate(&out, Duration::from_secs(2));
    node.kill();
    let down_at = Instant::now();
    sluice.wait_for(60, "the lane to store events", |v| {
        lane_of(v, "es")["events"].as_u64() > Some(500)
    });
    let during = file_rate(&out, Duration::from_secs(3));
    eprintln!("file output: {before:.0} events/s before the outage, {during:.0} during it");
    assert!(
        during >= before / 2.0,
        "the file output slowed from {before:.0} to {during:.0} events/s while Elasticsearch was down"
    );
    // The outage lasts 30 s: the rest of the generator's events (about 20 s of them) go to
    // the file at once and to the lane.
    std::thread::sleep(Duration::from_secs(30).saturating_sub(down_at.elapsed()));
    node.restart();
    eprintln!(
        "Elasticsearch was down for {:.0} s",
        down_at.elapsed().as_secs_f64()
    );
    let status = sluice.exit(300);
    assert!(status.success(), "{status}\n{}", sluice.log());
    run_support::assert_exactly_once(&in_file(&out), N);
    assert_eq!(count(&node.url, "lanes"), N as u64, "{}", sluice.log());
    drop(sluice);

    // SIGKILL during an outage: stdin into a persisted queue, the node killed once the file
    // output has everything and the lane holds events.
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_dir_all(dir.join("data"));
    const M: usize = 10_000;
    let settings = "api.http.port: 9600-9700\nqueue.type: persisted\nqueue.drain: true\n";
    let stdin_config = config("lanes-kill", "stdin { }", "");
    let mut sluice = Sluice::start(&dir, settings, "", &["-e", &stdin_config]);
    {
        use std::io::Write;
        let mut stdin = sluice.child.stdin.take().unwrap();
        let half: String = (0..M / 2).map(|i| format!("{i}\n")).collect();
        stdin.write_all(half.as_bytes()).unwrap();
        sluice.wait_for(60, "the first half indexed", |_| {
            indexed(&url, "lanes-kill") >= (M / 2) as u64
        });
        node.kill();
        let rest: String = (M / 2..M).map(|i| format!("{i}\n")).collect();
        stdin.write_all(rest.as_bytes()).unwrap();
        std::mem::forget(stdin);
    }
    sluice.wait_for(60, "the file output to have everything", |_| {
        in_file(&out).len() >= M
    });
    sluice.wait_for(60, "the lane to hold the rest", |v| {
        lane_of(v, "es")["events"].as_u64() > Some(0)
    });
    let _ = sluice.child.kill();
    let _ = sluice.child.wait();
    drop(sluice);
    node.restart();
    let again = drain_again(&dir, &stdin_config, 300);
    assert_eq!(count(&node.url, "lanes-kill"), M as u64, "{}", again.log());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two file outputs, one on a read-only tmpfs (it fails until remounted read-write) with a
/// lane on the small tmpfs that holds `path.data`.
fn two_files(good: &Path, bad: &Path, lane: &str, input: &str) -> String {
    format!(
        r#"input {{ {input} }}
           output {{
             file {{ path => "{}" }}
             file {{ id => "bad" path => "{}" lane => {{ {lane} }} }}
           }}"#,
        good.display(),
        bad.display()
    )
}

/// The lane's disk fills while its output is down: the workers wait on it (back-pressure;
/// the other output stops growing, nothing is dropped), and once the output is back the lane
/// drains, frees its pages and the pipeline resumes by itself: every event once in each file.
#[test]
fn a_lane_on_a_full_disk_applies_back_pressure_then_resumes() {
    let dir = run_support::temp_dir("lanes", "full");
    let Some(data) = tmpfs::Tmpfs::mount(&dir.join("data"), "16m", "") else {
        return;
    };
    let Some(ro) = tmpfs::Tmpfs::mount(&dir.join("ro"), "256m", "ro") else {
        return;
    };
    const N: i64 = 150_000;
    let good = dir.join("good.json");
    let config = two_files(
        &good,
        &ro.path.join("bad.json"),
        r#"type => persisted page_capacity => "1mb" max_bytes => "1gb""#,
        &format!("generator {{ count => {N} }}"),
    );
    let mut run = run_support::Run::start(
        &dir,
        &format!("path.data: {}\n", data.path.display()),
        &[],
        &config,
        Stdio::null(),
        Stdio::null(),
    );
    run.wait_log("No space left on device", 120);
    let stalled = run_support::complete_text(&good).lines().count();
    std::thread::sleep(Duration::from_secs(2));
    let later = run_support::complete_text(&good).lines().count();
    assert!(
        later < N as usize && later <= stalled + 2 * 125,
        "the pipeline did not wait on the full lane: {stalled} then {later} events"
    );
    assert!(data.free() < 1 << 20, "the lane's disk is not full");
    ro.remount("rw");
    let status = run.exit(300);
    assert!(status.success(), "{status}\n{}", run.log());
    run_support::assert_exactly_once(&run_support::sequences(&good), N);
    run_support::assert_exactly_once(&run_support::sequences(&ro.path.join("bad.json")), N);
    assert!(data.free() > 12 << 20, "the lane did not free its pages");
}

/// `overflow => drop_oldest`: a lane at its `max_bytes` drops its oldest events instead of
/// waiting; the other output gets everything at full speed, the drops are counted in the
/// stats and logged, and what the lane kept reaches its output once it is back.
#[test]
fn drop_oldest_counts_what_it_drops() {
    let dir = api_support::temp_dir("lanes-drop");
    let Some(ro) = tmpfs::Tmpfs::mount(&dir.join("ro"), "256m", "ro") else {
        return;
    };
    const N: i64 = 60_000;
    let good = dir.join("good.json");
    let bad = ro.path.join("bad.json");
    let config = two_files(
        &good,
        &bad,
        r#"type => persisted page_capacity => "512kb" max_bytes => "4mb" overflow => drop_oldest"#,
        &format!("generator {{ count => {N} }}"),
    );
    let mut sluice = Sluice::start(&dir, "api.http.port: 9600-9700\n", "", &["-e", &config]);
    sluice.wait_for(120, "the good output to have everything", |_| {
        in_file(&good).len() as i64 >= N
    });
    let stats = sluice.json("/_node/stats/pipelines");
    let lane = lane_of(&stats, "bad");
    let dropped = lane["dropped"].as_i64().unwrap();
    assert!(dropped > 0, "nothing dropped: {lane}");
    assert!(
        lane["queue_size_in_bytes"].as_u64() <= Some(5 << 20),
        "the lane grew past its max_bytes: {lane}"
    );
    assert!(
        sluice.log().contains("oldest events were dropped"),
        "{}",
        sluice.log()
    );
    ro.remount("rw");
    let status = sluice.exit(120);
    assert!(status.success(), "{status}\n{}", sluice.log());
    run_support::assert_exactly_once(&in_file(&good), N);
    let kept = in_file(&bad);
    assert!(
        kept.values().all(|&n| n == 1),
        "an event reached the lane's output twice"
    );
    assert_eq!(
        kept.len() as i64 + dropped,
        N,
        "kept {} + dropped {dropped} is not every event",
        kept.len()
    );
    // The oldest went: what is left is the newest.
    assert!(kept.contains_key(&(N - 1)), "the newest event was dropped");
}

/// A damaged lane page costs only the damaged records, reported as the main queue reports
/// them; the rest reaches the output at the next start.
#[test]
fn a_damaged_lane_page_loses_only_the_damaged_records() {
    let dir = run_support::temp_dir("lanes", "damaged");
    let Some(ro) = tmpfs::Tmpfs::mount(&dir.join("ro"), "64m", "ro") else {
        return;
    };
    const N: i64 = 20_000;
    let good = dir.join("good.json");
    let bad = ro.path.join("bad.json");
    let settings = format!("path.data: {}\n", dir.join("data").display());
    let lane = r#"type => persisted page_capacity => "256kb""#;
    let mut run = run_support::Run::start(
        &dir,
        &settings,
        &[],
        &two_files(&good, &bad, lane, &format!("generator {{ count => {N} }}")),
        Stdio::null(),
        Stdio::null(),
    );
    run.wait_until("the good output to have everything", 120, || {
        run_support::complete_text(&good).lines().count() as i64 >= N
    });
    run.signal("-TERM");
    let status = run.exit(60);
    assert!(status.success(), "{status}\n{}", run.log());
    let lane_dir = dir.join("data/queue/main/lanes/bad");
    run_support::corrupt_oldest_page(&lane_dir);
    ro.remount("rw");
    let mut again = run_support::Run::start(
        &dir,
        &settings,
        &[],
        &two_files(&good, &bad, lane, "stdin { }"),
        Stdio::null(),
        Stdio::null(),
    );
    let (lost, log) = loop {
        let log = again.log();
        if let Some(i) = log.find("lost") {
            break (log[i..].lines().next().unwrap_or("").to_owned(), log);
        }
        assert!(again.child.try_wait().unwrap().is_none(), "{log}");
        std::thread::sleep(Duration::from_millis(100));
    };
    again.wait_until("the lane to be delivered", 120, || {
        run_support::complete_text(&bad).lines().count() as i64 >= N - 200
    });
    std::thread::sleep(Duration::from_secs(1));
    let kept = in_file(&bad);
    assert!(kept.values().all(|&n| n == 1), "delivered twice");
    let missing = N - kept.len() as i64;
    assert!(
        missing > 0 && missing < 100,
        "{missing} events missing after one damaged record:\n{lost}\n{log}"
    );
    drop(again);
}

/// A memory lane: the same isolation without a disk; what it holds at a stop is lost, said
/// in the log and in the exit status, as for a memory queue.
#[test]
fn a_memory_lane_isolates_and_says_what_a_stop_loses() {
    let dir = api_support::temp_dir("lanes-memory");
    let down = Arc::new(AtomicBool::new(true));
    let server = destination(&down);
    let out = dir.join("out.json");
    const N: i64 = 5_000;
    let config = format!(
        r#"input {{ generator {{ count => {N} }} }}
           output {{
             file {{ path => "{}" }}
             http {{ id => "web" url => "{}/bulk" http_method => "post" format => "json_batch"
                     lane => {{ type => memory max_events => 100000 }} }}
           }}"#,
        out.display(),
        server.server.url
    );
    // Down the whole time: the file output still gets everything.
    let mut sluice = Sluice::start(&dir, "api.http.port: 9600-9700\n", "", &["-e", &config]);
    sluice.wait_for(60, "the file output to have everything", |_| {
        in_file(&out).len() as i64 >= N
    });
    let stats = sluice.wait_for(30, "the lane to hold events", |v| {
        lane_of(v, "web")["events"].as_u64() > Some(0)
    });
    assert_eq!(lane_of(&stats, "web")["type"], "memory");
    assert!(
        !dir.join("data/queue/main/lanes/web").exists(),
        "a memory lane wrote to disk"
    );
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &sluice.child.id().to_string()])
        .status();
    let status = sluice.exit(30);
    let log = sluice.log();
    assert_eq!(
        status.code(),
        Some(1),
        "a loss must show in the exit status\n{log}"
    );
    assert!(
        log.contains("in the output's memory lane are lost"),
        "{log}"
    );
    assert!(received(&server).is_empty());
    run_support::assert_exactly_once(&in_file(&out), N);
}

/// `pipeline.output_lanes: persisted` gives every output a persisted lane: each output needs
/// its own id (the lane's directory), and a lane directory no output uses any more is said.
#[test]
fn pipeline_output_lanes_gives_every_output_a_lane() {
    let dir = run_support::temp_dir("lanes", "setting");
    let out = dir.join("out.json");
    let settings = format!(
        "path.data: {}\npipeline.output_lanes: persisted\n",
        dir.join("data").display()
    );
    let run = |config: &str| {
        let mut r =
            run_support::Run::start(&dir, &settings, &[], config, Stdio::null(), Stdio::null());
        let status = r.exit(60);
        (status, r.log())
    };
    let (status, log) = run(&format!(
        r#"input {{ generator {{ count => 10 }} }} output {{ file {{ path => "{}" }} }}"#,
        out.display()
    ));
    assert!(!status.success(), "{log}");
    assert!(log.contains("add `id =>"), "{log}");
    let (status, log) = run(&format!(
        r#"input {{ generator {{ count => 1000 }} }}
           output {{ file {{ id => "archive" path => "{}" }} null {{ id => "nothing" }} }}"#,
        out.display()
    ));
    assert!(status.success(), "{log}");
    run_support::assert_exactly_once(&run_support::sequences(&out), 1000);
    for id in ["archive", "nothing"] {
        assert!(dir.join("data/queue/main/lanes").join(id).is_dir(), "{id}");
    }
    // The null output renamed: its old lane directory is said.
    let (status, log) = run(&format!(
        r#"input {{ generator {{ count => 1 }} }}
           output {{ file {{ id => "archive" path => "{}" }} null {{ id => "renamed" }} }}"#,
        out.display()
    ));
    assert!(status.success(), "{log}");
    assert!(
        log.contains("belongs to no output") && log.contains("lanes/nothing"),
        "{log}"
    );
}

/// A destination that accepts requests and never answers (a hung server, not a refusing one):
/// the senders wait in their requests, the workers stop waiting for them after a moment and
/// the lane takes the shares; the other output keeps its rate. Once the server answers
/// again, everything arrives.
#[test]
fn a_hung_destination_stalls_nothing_either() {
    const N: i64 = 30_000;
    let dir = api_support::temp_dir("lanes-hung");
    let hung = Arc::new(AtomicBool::new(false));
    let taken = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
    let server = {
        let (hung, sink) = (Arc::clone(&hung), Arc::clone(&taken));
        Server::start(move |r| {
            while hung.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
            sink.lock().unwrap().push(r.body.clone());
            Reply::new(200, "application/json", "{}")
        })
    };
    let out = dir.join("out.json");
    let config = format!(
        r#"input {{ generator {{ count => {N} }} }}
           filter {{ sleep {{ time => "0.01" every => 50 }} }}
           output {{
             file {{ path => "{}" }}
             http {{ id => "web" url => "{}/bulk" http_method => "post" format => "json_batch"
                     lane => {{ type => persisted max_bytes => "256mb" page_capacity => "1mb" }} }}
           }}"#,
        out.display(),
        server.url
    );
    let mut sluice = Sluice::start(
        &dir,
        "api.http.port: 9600-9700\npipeline.workers: 1\n",
        "",
        &["-e", &config],
    );
    sluice.wait_for(30, "events flowing", |v| {
        v["pipelines"]["main"]["events"]["out"].as_u64() > Some(2_000)
    });
    let before = file_rate(&out, Duration::from_secs(1));
    hung.store(true, Ordering::SeqCst);
    sluice.wait_for(30, "the lane to store events", |v| {
        lane_of(v, "web")["events"].as_u64() > Some(1_000)
    });
    let during = file_rate(&out, Duration::from_secs(2));
    eprintln!("file output: {before:.0} events/s before, {during:.0} while the destination hangs");
    assert!(
        during >= before / 2.0,
        "the file output slowed from {before:.0} to {during:.0} events/s"
    );
    hung.store(false, Ordering::SeqCst);
    let status = sluice.exit(120);
    assert!(status.success(), "{status}\n{}", sluice.log());
    run_support::assert_exactly_once(&in_file(&out), N);
    let got = received(&Destination {
        server,
        taken: Arc::clone(&taken),
    });
    let missing = (0..N).filter(|n| !got.contains_key(n)).count();
    assert_eq!(
        missing, 0,
        "events never reached the hung destination once it answered"
    );
}

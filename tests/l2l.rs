//! Sluice to sluice through the real binaries: the `logstash` output into the `logstash` input
//! (Logstash-to-Logstash over HTTPS, with basic auth), and the `lumberjack` output into the
//! `beats` input over TLS. Acknowledgement is end to end: a sender killed with SIGKILL while
//! the receiver is away sends its queued events once restarted; a receiver killed mid-stream
//! loses nothing the sender had (each event arrives at least once).

mod net_support;
mod run_support;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use run_support::{temp_dir, Run};

fn lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn receiver(certs: &net_support::Certs, port: u16, out: &std::path::Path) -> String {
    format!(
        r#"input {{ logstash {{ host => "127.0.0.1" port => {port} username => "ls" password => "s3cret"
                               ssl_certificate => "{}" ssl_key => "{}" add_field => {{ "hop" => "2" }} }} }}
           output {{ file {{ path => "{}" }} }}"#,
        certs.server_cert.display(),
        certs.server_key.display(),
        out.display()
    )
}

fn sender_output(certs: &net_support::Certs, ports: &[u16]) -> String {
    let hosts: Vec<String> = ports.iter().map(|p| format!("\"127.0.0.1:{p}\"")).collect();
    format!(
        r#"logstash {{ hosts => [{}] username => "ls" password => "s3cret"
                      ssl_certificate_authorities => ["{}"] }}"#,
        hosts.join(", "),
        certs.ca.display()
    )
}

/// Events go over as they were (no field added on the way but the receiver's own
/// `add_field`), each once, shared between two receivers.
#[test]
fn logstash_output_into_two_logstash_inputs() {
    let dir = temp_dir("l2l", "pair");
    let Some(c) = net_support::certs(&dir.join("certs")) else {
        return;
    };
    let (p1, p2) = (net_support::free_port(), net_support::free_port());
    let (o1, o2) = (dir.join("r1.json"), dir.join("r2.json"));
    let mut r1 = Run::start(
        &temp_dir("l2l", "r1"),
        "",
        &[],
        &receiver(&c, p1, &o1),
        Stdio::null(),
        Stdio::null(),
    );
    let mut r2 = Run::start(
        &temp_dir("l2l", "r2"),
        "",
        &[],
        &receiver(&c, p2, &o2),
        Stdio::null(),
        Stdio::null(),
    );
    net_support::wait_listening(p1, 30);
    net_support::wait_listening(p2, 30);
    let total = 2000;
    let sender = format!(
        r#"input {{ generator {{ count => {total} message => "m" add_field => {{ "[nested][k]" => "v" }} }} }}
           output {{ {} }}"#,
        sender_output(&c, &[p1, p2])
    );
    let mut s = Run::start(
        &dir,
        "pipeline.batch.size: 50\n",
        &[],
        &sender,
        Stdio::null(),
        Stdio::null(),
    );
    assert!(s.exit(60).success(), "{}", s.log());
    let read = |p: &std::path::Path| lines(&std::fs::read_to_string(p).unwrap_or_default());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while read(&o1).len() + read(&o2).len() < total && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    for r in [&mut r1, &mut r2] {
        r.signal("-TERM");
        assert!(r.exit(30).success(), "{}", r.log());
    }
    let (a, b) = (read(&o1), read(&o2));
    assert!(
        !a.is_empty() && !b.is_empty(),
        "both receivers got batches: {} and {}",
        a.len(),
        b.len()
    );
    let mut seen = BTreeMap::new();
    for e in a.iter().chain(&b) {
        *seen
            .entry(e["event"]["sequence"].as_i64().unwrap())
            .or_insert(0) += 1;
        assert_eq!(e["message"], "m", "{e}");
        assert_eq!(e["nested"]["k"], "v", "{e}");
        assert_eq!(e["hop"], "2", "{e}");
        // The http input underneath adds nothing of its own.
        assert!(
            e.get("headers").is_none() && e["host"].get("ip").is_none(),
            "{e}"
        );
    }
    run_support::assert_exactly_once(&seen, total as i64);
}

/// Wrong credentials are refused (401) and the batch dropped, as Logstash does; the log
/// says so.
#[test]
fn wrong_credentials_are_refused() {
    let dir = temp_dir("l2l", "auth");
    let Some(c) = net_support::certs(&dir.join("certs")) else {
        return;
    };
    let port = net_support::free_port();
    let out = dir.join("r.json");
    let mut r = Run::start(
        &temp_dir("l2l", "auth-r"),
        "",
        &[],
        &receiver(&c, port, &out),
        Stdio::null(),
        Stdio::null(),
    );
    net_support::wait_listening(port, 30);
    let sender = format!(
        r#"input {{ generator {{ count => 5 }} }} output {{ {} }}"#,
        sender_output(&c, &[port]).replace("s3cret", "wrong")
    );
    let mut s = Run::start(&dir, "", &[], &sender, Stdio::null(), Stdio::null());
    assert!(s.exit(60).success(), "{}", s.log());
    assert!(s.log().contains("401"), "{}", s.log());
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    assert!(std::fs::read_to_string(&out).unwrap_or_default().is_empty());
}

/// The sender's persisted queue holds what the absent receiver has not acknowledged: a
/// SIGKILL loses none of it, and the restarted sender delivers every event once the receiver
/// comes.
#[test]
fn a_killed_sender_delivers_its_queue_once_the_receiver_comes() {
    let dir = temp_dir("l2l", "sigkill");
    let Some(c) = net_support::certs(&dir.join("certs")) else {
        return;
    };
    let port = net_support::free_port();
    let settings = format!(
        "queue.type: persisted\npath.data: {}\npipeline.batch.size: 20\n",
        dir.join("data").display()
    );
    let total = 500;
    let first = format!(
        r#"input {{ generator {{ count => {total} message => "queued" }} }} output {{ {} }}"#,
        sender_output(&c, &[port])
    );
    let mut s = Run::start(&dir, &settings, &[], &first, Stdio::null(), Stdio::null());
    s.wait_log("could not send the batch", 60);
    std::thread::sleep(Duration::from_secs(1));
    s.signal("-KILL");
    let _ = s.exit(10);
    // The same pipeline, its input now silent: only the queue has events.
    let again = format!(
        r#"input {{ stdin {{ }} }} output {{ {} }}"#,
        sender_output(&c, &[port])
    );
    let mut s = Run::start(&dir, &settings, &[], &again, Stdio::piped(), Stdio::null());
    std::thread::sleep(Duration::from_secs(2));
    let out = dir.join("r.json");
    let mut r = Run::start(
        &temp_dir("l2l", "sigkill-r"),
        "",
        &[],
        &receiver(&c, port, &out),
        Stdio::null(),
        Stdio::null(),
    );
    let events = lines(&r.wait_lines(&out, total, 90));
    drop(s.child.stdin.take());
    assert!(s.exit(60).success(), "{}", s.log());
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let mut seen = BTreeMap::new();
    for e in &events {
        assert_eq!(e["message"], "queued");
        *seen
            .entry(e["event"]["sequence"].as_i64().unwrap())
            .or_insert(0) += 1;
    }
    // Every event came; a batch in flight at the kill may come twice.
    assert_eq!(
        seen.len(),
        total,
        "missing: {:?}",
        (0..total as i64)
            .filter(|i| !seen.contains_key(i))
            .collect::<Vec<_>>()
    );
}

fn beats_receiver(certs: &net_support::Certs, port: u16, out: &std::path::Path) -> String {
    format!(
        r#"input {{ beats {{ host => "127.0.0.1" port => {port} ssl_enabled => true
                            ssl_certificate => "{}" ssl_key => "{}" }} }}
           output {{ file {{ path => "{}" }} }}"#,
        certs.server_cert.display(),
        certs.server_key.display(),
        out.display()
    )
}

/// The lumberjack output into the beats input over TLS, the receiver (with a persisted queue)
/// killed mid-stream and started again: every event arrives.
#[test]
fn lumberjack_output_into_the_beats_input_survives_a_killed_receiver() {
    let dir = temp_dir("lumberjack", "out");
    let Some(c) = net_support::certs(&dir.join("certs")) else {
        return;
    };
    let port = net_support::free_port();
    let out = dir.join("r.json");
    let rdir = temp_dir("lumberjack", "receiver");
    let rsettings = format!(
        "queue.type: persisted\npath.data: {}\n",
        rdir.join("data").display()
    );
    let mut r = Run::start(
        &rdir,
        &rsettings,
        &[],
        &beats_receiver(&c, port, &out),
        Stdio::null(),
        Stdio::null(),
    );
    net_support::wait_listening(port, 30);
    let total = 20_000;
    let sender = format!(
        r#"input {{ generator {{ count => {total} message => "lj" }} }}
           output {{ lumberjack {{ hosts => ["127.0.0.1"] port => {port} ssl_certificate => "{}" flush_size => 100
                                  codec => plain {{ format => "%{{message}} %{{[event][sequence]}}" }} }} }}"#,
        c.ca.display()
    );
    let mut s = Run::start(
        &dir,
        "pipeline.batch.size: 250\n",
        &[],
        &sender,
        Stdio::null(),
        Stdio::null(),
    );
    r.wait_lines(&out, 2000, 60);
    r.signal("-KILL");
    let _ = r.exit(10);
    std::thread::sleep(Duration::from_secs(1));
    let mut r = Run::start(
        &rdir,
        &rsettings,
        &[],
        &beats_receiver(&c, port, &out),
        Stdio::null(),
        Stdio::null(),
    );
    assert!(s.exit(120).success(), "{}", s.log());
    let text = r.wait_lines(&out, total, 60);
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let mut seen = BTreeMap::new();
    for e in lines(&text) {
        let m = e["message"].as_str().unwrap();
        let (word, n) = m.split_once(' ').unwrap();
        assert_eq!(word, "lj", "{e}");
        *seen.entry(n.parse::<i64>().unwrap()).or_insert(0) += 1;
    }
    assert_eq!(seen.len(), total, "every event arrived at least once");
    assert!(
        s.log().contains("sending the window again"),
        "the kill was seen: {}",
        s.log()
    );
}

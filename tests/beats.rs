//! The `beats` input through the real binary, driven by Elastic's go-lumber client (the
//! library inside libbeat's Logstash output; `tests/lumber`): windows of every size, compressed
//! or not, TLS with and without client certificates, a malformed frame, a full queue (keep-alives
//! instead of a resend), a graceful stop while windows wait for the queue (each event once
//! across two runs), and a SIGKILL with the persisted queue (the client's resend loses nothing).

mod api_support;
mod net_support;
mod run_support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use net_support::{certs, free_port, lumber_client, wait_listening};
use run_support::{temp_dir, Run};

/// Runs the client to the end: `-addr 127.0.0.1:<port>` and `args`.
fn client(bin: &Path, port: u16, args: &[&str]) -> Output {
    Command::new(bin)
        .arg("-addr")
        .arg(format!("127.0.0.1:{port}"))
        .args(args)
        .output()
        .unwrap()
}

fn acked(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// (prefix, n) → times seen, from a file of JSON lines.
fn seen(path: &Path) -> BTreeMap<(String, i64), usize> {
    let mut m = BTreeMap::new();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    // Complete lines only: the last may be half written while the test reads.
    for line in text.rfind('\n').map_or("", |end| &text[..end]).lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        let msg = v["message"].as_str().unwrap_or_default();
        let prefix = msg.split(' ').next().unwrap_or_default().to_owned();
        *m.entry((prefix, v["n"].as_i64().unwrap())).or_default() += 1;
    }
    m
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn wait_lines(path: &Path, n: usize, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while lines(path) < n {
        assert!(
            Instant::now() < deadline,
            "{} of {n} lines in {secs} s",
            lines(path)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn windows_from_1_to_2048_compressed_or_not_deliver_every_event_once() {
    let Some(bin) = lumber_client() else { return };
    let dir = api_support::temp_dir("beats-windows");
    let out = dir.join("out.json");
    let port = free_port();
    let config = format!(
        r#"input {{ beats {{ port => {port} host => "127.0.0.1" id => "in" }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let s = api_support::Sluice::start(&dir, "", "", &["-e", &config]);
    wait_listening(port, 30);
    let runs: [(&str, &[&str], i64); 5] = [
        ("w1", &["-window", "1", "-n", "50"], 50),
        ("w7", &["-window", "7", "-n", "500"], 500),
        (
            "w2048z",
            &["-window", "2048", "-n", "5000", "-compress", "3"],
            5000,
        ),
        ("w2048", &["-window", "2048", "-n", "5000"], 5000),
        (
            "c4",
            &[
                "-window",
                "512",
                "-n",
                "4000",
                "-conns",
                "4",
                "-compress",
                "1",
            ],
            4000,
        ),
    ];
    let mut total = 0;
    for (prefix, args, n) in runs {
        let mut all = args.to_vec();
        all.extend(["-prefix", prefix]);
        let o = client(&bin, port, &all);
        assert!(o.status.success(), "{prefix}: {}", acked(&o));
        assert!(acked(&o).contains(&format!("acked {n}")), "{}", acked(&o));
        total += n as usize;
    }
    wait_lines(&out, total, 60);
    let stats = s.json("/_node/stats/pipelines/main");
    let input = &stats["pipelines"]["main"]["plugins"]["inputs"][0];
    assert_eq!(input["events"]["out"], total as u64, "{input}");
    assert_eq!(input["current_connections"], 0, "{input}");
    assert!(input["peak_connections"].as_u64().unwrap() >= 1, "{input}");
    s.stop();

    let got = seen(&out);
    for (prefix, _, n) in runs {
        for i in 0..n {
            assert_eq!(
                got.get(&(prefix.to_owned(), i)),
                Some(&1),
                "{prefix} {i} delivered {:?} times",
                got.get(&(prefix.to_owned(), i))
            );
        }
    }
    assert_eq!(got.values().sum::<usize>(), total);
    let first: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        first["tags"][0], "beats_input_codec_plain_applied",
        "{first}"
    );
    assert!(first["event"]["original"].is_string(), "{first}");
}

#[test]
fn tls_with_and_without_client_certificates() {
    let Some(bin) = lumber_client() else { return };
    let dir = temp_dir("beats", "tls");
    let Some(c) = certs(&dir.join("certs")) else {
        return;
    };
    let out = dir.join("out.json");
    let p = |p: &PathBuf| p.display().to_string();
    for (required, port) in [(true, free_port()), (false, free_port())] {
        let auth = if required {
            format!(
                r#"ssl_certificate_authorities => ["{}"] ssl_client_authentication => "required" enrich => "all""#,
                p(&c.ca)
            )
        } else {
            String::new()
        };
        let config = format!(
            r#"input {{ beats {{ port => {port} host => "127.0.0.1" ssl_enabled => true ssl_certificate => "{}" ssl_key => "{}" {auth} }} }}
               filter {{ mutate {{ copy => {{ "[@metadata][input][beats][tls]" => "tls" "[@metadata][tls_peer][status]" => "tls_status" }} }} }}
               output {{ file {{ path => "{}" }} }}"#,
            p(&c.server_cert),
            p(&c.server_key),
            out.display()
        );
        let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
        wait_listening(port, 30);
        let tls = ["-tls", "-ca", &p(&c.ca)].map(String::from).to_vec();
        let with = |extra: &[String], prefix: &str| {
            let mut args: Vec<String> = tls.clone();
            args.extend(extra.iter().cloned());
            args.extend(
                [
                    "-n", "300", "-window", "100", "-retry", "2s", "-timeout", "5s", "-prefix",
                    prefix,
                ]
                .map(String::from),
            );
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            client(&bin, port, &args)
        };
        let cert = [
            "-cert".to_owned(),
            p(&c.client_cert),
            "-key".to_owned(),
            p(&c.client_key),
        ];
        let stranger = [
            "-cert".to_owned(),
            p(&c.stranger_cert),
            "-key".to_owned(),
            p(&c.stranger_key),
        ];
        let tag = if required { "req" } else { "open" };
        let o = with(&cert, &format!("{tag}cert"));
        assert!(
            o.status.success(),
            "{tag}: with a certificate: {}\n{}",
            acked(&o),
            r.log()
        );
        let o = with(&[], &format!("{tag}none"));
        assert_eq!(
            o.status.success(),
            !required,
            "{tag}: without a certificate: {}",
            acked(&o)
        );
        if required {
            let o = with(&stranger, "stranger");
            assert!(
                !o.status.success(),
                "a stranger's certificate was accepted: {}",
                acked(&o)
            );
            // Plain text to a TLS port: refused, and the server goes on.
            let o = client(&bin, port, &["-n", "10", "-retry", "1s", "-timeout", "2s"]);
            assert!(
                !o.status.success(),
                "plain text was accepted: {}",
                acked(&o)
            );
        }
        let o = with(&cert, &format!("{tag}after"));
        assert!(
            o.status.success(),
            "{tag}: after the refusals: {}",
            acked(&o)
        );
        r.signal("-TERM");
        assert!(r.exit(30).success(), "{}", r.log());
    }
    let got = seen(&out);
    let count = |prefix: &str| got.keys().filter(|(p, _)| p == prefix).count();
    for prefix in ["reqcert", "reqafter", "opencert", "opennone", "openafter"] {
        assert_eq!(count(prefix), 300, "{prefix}");
    }
    assert_eq!(count("reqnone") + count("stranger"), 0);
    // enrich => all: the client's TLS details, as Logstash's ssl_peer_metadata.
    let text = std::fs::read_to_string(&out).unwrap();
    let e: serde_json::Value = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["message"].as_str().unwrap_or("").starts_with("reqcert"))
        .unwrap();
    assert_eq!(e["tls_status"], "verified", "{e}");
    assert_eq!(e["tls"]["client"]["subject"], "CN=client", "{e}");
    assert!(
        e["tls"]["version_protocol"]
            .as_str()
            .unwrap()
            .starts_with("TLSv1."),
        "{e}"
    );
    assert!(
        e["tls"]["cipher"].as_str().unwrap().starts_with("TLS_"),
        "{e}"
    );
}

#[test]
fn a_malformed_frame_closes_only_its_connection() {
    let Some(bin) = lumber_client() else { return };
    let dir = temp_dir("beats", "malformed");
    let out = dir.join("out.json");
    let port = free_port();
    let config = format!(
        r#"input {{ beats {{ port => {port} host => "127.0.0.1" }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    wait_listening(port, 30);
    // A well-behaved connection stays open meanwhile.
    let good = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    for garbage in [
        &b"GET / HTTP/1.1\r\n\r\n"[..],
        b"2J\0\0\0\x01\x7f\0\0\0",
        b"2W\0\0\0\x01" as &[u8],
    ] {
        let mut bad = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        bad.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        bad.write_all(garbage).unwrap();
        if garbage.starts_with(b"2W") {
            // A window and then a JSON frame that is not an object.
            let text = b"[1,2]";
            let mut f = b"2J\0\0\0\x01".to_vec();
            f.extend_from_slice(&(text.len() as u32).to_be_bytes());
            f.extend_from_slice(text);
            bad.write_all(&f).unwrap();
        }
        let mut rest = Vec::new();
        let _ = bad.read_to_end(&mut rest);
        assert!(rest.is_empty(), "got {rest:?} for a malformed frame");
    }
    let o = client(&bin, port, &["-n", "100", "-window", "10"]);
    assert!(o.status.success(), "{}", acked(&o));
    wait_lines(&out, 100, 30);
    drop(good);
    r.signal("-TERM");
    assert!(r.exit(30).success());
    let log = r.log();
    assert!(log.contains("malformed frame"), "{log}");
    assert!(log.contains("over the limit"), "{log}");
    assert!(log.contains("does not hold a JSON object"), "{log}");
    assert_eq!(lines(&out), 100);
}

/// The queue stays full for longer than the client's timeout: keep-alive ACKs make it wait
/// instead of giving up and sending again, so nothing is duplicated.
#[test]
fn a_full_queue_gets_keep_alives_not_a_resend() {
    let Some(bin) = lumber_client() else { return };
    let dir = temp_dir("beats", "full");
    let port = free_port();
    let config = format!(
        r#"input {{ beats {{ port => {port} host => "127.0.0.1" }} }}
           output {{ stdout {{ codec => json_lines }} }}"#
    );
    let mut r = Run::start(
        &dir,
        "pipeline.workers: 1\npipeline.batch.size: 10\n",
        &[],
        &config,
        Stdio::null(),
        Stdio::piped(),
    );
    wait_listening(port, 30);
    let total = 3000;
    let mut c = Command::new(&bin)
        .args(["-addr", &format!("127.0.0.1:{port}")])
        .args([
            "-n",
            &total.to_string(),
            "-window",
            "500",
            "-timeout",
            "7s",
            "-retry",
            "1s",
        ])
        .args(["-pad", "200"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Nobody reads sluice's output for longer than the client's timeout.
    std::thread::sleep(Duration::from_secs(12));
    assert!(
        c.try_wait().unwrap().is_none(),
        "the client finished while the output was blocked"
    );
    let reader = r.read_stdout();
    let status = c.wait().unwrap();
    let mut msg = String::new();
    c.stderr.take().unwrap().read_to_string(&mut msg).unwrap();
    assert!(status.success(), "client: {msg}\n{}", r.log());
    r.signal("-TERM");
    assert!(r.exit(60).success(), "{}", r.log());
    let all = reader.join().unwrap();
    let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
    for line in all.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        *counts.entry(v["n"].as_i64().unwrap()).or_default() += 1;
    }
    assert_eq!(counts.len(), total, "events missing");
    assert!(
        counts.values().all(|n| *n == 1),
        "duplicates: the client sent again"
    );
}

/// A graceful stop while windows wait for room in the queue: each window is either queued and
/// acknowledged, or refused and sent again to the next sluice, so that across the two runs every
/// event comes out exactly once.
#[test]
fn a_graceful_stop_mid_window_neither_loses_nor_repeats() {
    let Some(bin) = lumber_client() else { return };
    let dir = temp_dir("beats", "term");
    let port = free_port();
    let config = format!(
        r#"input {{ beats {{ port => {port} host => "127.0.0.1" }} }}
           output {{ stdout {{ codec => json_lines }} }}"#
    );
    let yml = "pipeline.workers: 1\npipeline.batch.size: 10\n";
    let start = || {
        let r = Run::start(&dir, yml, &[], &config, Stdio::null(), Stdio::piped());
        wait_listening(port, 30);
        r
    };
    let mut first = start();
    let total = 4000;
    let c = Command::new(&bin)
        .args(["-addr", &format!("127.0.0.1:{port}")])
        .args(["-n", &total.to_string(), "-window", "400", "-conns", "2"])
        .args(["-retry", "60s", "-timeout", "20s", "-pad", "200"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Nobody reads the output: the pipe and the queue fill, and windows wait to be queued.
    std::thread::sleep(Duration::from_secs(3));
    first.signal("-TERM");
    // The output drains once the stop is under way: the waiting windows get room then.
    std::thread::sleep(Duration::from_millis(100));
    let reader = first.read_stdout();
    assert!(first.exit(60).success(), "{}", first.log());
    let mut all = reader.join().unwrap();
    let mut second = start();
    let reader = second.read_stdout();
    let o = c.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "client: {}\n{}",
        acked(&o),
        second.log()
    );
    second.signal("-TERM");
    assert!(second.exit(60).success(), "{}", second.log());
    all.push_str(&reader.join().unwrap());
    let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
    for line in all.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        *counts.entry(v["n"].as_i64().unwrap()).or_default() += 1;
    }
    let missing: Vec<i64> = (0..total).filter(|n| !counts.contains_key(n)).collect();
    assert!(missing.is_empty(), "lost: {missing:?}");
    let repeated: Vec<&i64> = (counts.iter().filter(|(_, c)| **c > 1))
        .map(|(n, _)| n)
        .collect();
    assert!(
        repeated.is_empty(),
        "{} events came twice (a window queued but not acknowledged), from n = {:?}",
        repeated.len(),
        repeated.first()
    );
}

/// With the persisted queue (every write durable before the ACK), sluice is SIGKILLed while
/// the client sends and restarted: the client reconnects and sends the unacknowledged windows
/// again, and no event is lost.
#[test]
fn a_sigkill_with_the_persisted_queue_loses_no_event() {
    let Some(bin) = lumber_client() else { return };
    let dir = temp_dir("beats", "kill");
    // Each run writes its own file: the SIGKILL can tear the first run's last write (the
    // kernel stops copying between pages), and `seen` reads complete lines only.
    let out = dir.join("out.json");
    let out2 = dir.join("out2.json");
    let port = free_port();
    let yml = format!(
        "path.data: {}\nqueue.type: persisted\nqueue.checkpoint.writes: 1\nqueue.drain: true\n",
        dir.join("data").display()
    );
    let config = |out: &Path| {
        format!(
            r#"input {{ beats {{ port => {port} host => "127.0.0.1" }} }}
               output {{ file {{ path => "{}" }} }}"#,
            out.display()
        )
    };
    let mut r = Run::start(&dir, &yml, &[], &config(&out), Stdio::null(), Stdio::null());
    wait_listening(port, 30);
    let total = 30_000;
    let c = Command::new(&bin)
        .args(["-addr", &format!("127.0.0.1:{port}")])
        .args([
            "-n",
            &total.to_string(),
            "-window",
            "250",
            "-retry",
            "120s",
            "-timeout",
            "10s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while lines(&out) < 2_000 {
        assert!(Instant::now() < deadline, "nothing came in:\n{}", r.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    r.signal("-KILL");
    r.exit(30);
    let before = lines(&out);
    assert!(before < total, "everything was in before the kill");
    std::thread::sleep(Duration::from_millis(500));
    let mut r = Run::start(
        &dir,
        &yml,
        &[],
        &config(&out2),
        Stdio::null(),
        Stdio::null(),
    );
    let o = c.wait_with_output().unwrap();
    assert!(o.status.success(), "client: {}\n{}", acked(&o), r.log());
    wait_lines(&out2, total - before, 120);
    r.signal("-TERM");
    assert!(r.exit(60).success(), "{}", r.log());
    let mut got = seen(&out);
    for (k, n) in seen(&out2) {
        *got.entry(k).or_default() += n;
    }
    let missing: Vec<i64> = (0..total as i64)
        .filter(|i| !got.contains_key(&("event".to_owned(), *i)))
        .collect();
    assert!(missing.is_empty(), "lost: {missing:?}");
}

/// Thousands of idle connections (as many as the file descriptor limit allows, up to 1,500 per
/// input) cost little memory and hold nobody up: a client still gets its events through.
#[test]
fn idle_connections_cost_little_and_hold_nobody_up() {
    let Some(bin) = lumber_client() else { return };
    let limit: usize = Command::new("sh")
        .args(["-c", "ulimit -n"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(1024);
    let per_input = (limit.saturating_sub(300) / 2).min(1500);
    let dir = temp_dir("beats", "idle");
    let out = dir.join("out.json");
    let (beats, tcp) = (free_port(), free_port());
    let config = format!(
        r#"input {{ beats {{ port => {beats} host => "127.0.0.1" }} tcp {{ port => {tcp} host => "127.0.0.1" }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    wait_listening(beats, 30);
    wait_listening(tcp, 30);
    let rss = || {
        std::fs::read_to_string(format!("/proc/{}/status", r.child.id()))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let before = rss();
    let mut idle = Vec::new();
    for _ in 0..per_input {
        idle.push(std::net::TcpStream::connect(("127.0.0.1", beats)).unwrap());
        idle.push(std::net::TcpStream::connect(("127.0.0.1", tcp)).unwrap());
    }
    // Half-open: some send half a frame or half a line and stop.
    for s in idle.iter_mut().step_by(7) {
        let _ = s.write_all(b"2W\0");
    }
    std::thread::sleep(Duration::from_secs(1));
    let o = client(&bin, beats, &["-n", "2000", "-window", "100"]);
    assert!(o.status.success(), "{}", acked(&o));
    let mut s = std::net::TcpStream::connect(("127.0.0.1", tcp)).unwrap();
    s.write_all(b"through the tcp input\n").unwrap();
    drop(s);
    wait_lines(&out, 2001, 30);
    let grown_kb = rss().saturating_sub(before);
    let per_connection = grown_kb * 1024 / (2 * per_input as u64);
    eprintln!(
        "{} idle connections: {per_connection} bytes each",
        2 * per_input
    );
    assert!(
        per_connection < 64 * 1024,
        "{per_connection} bytes per idle connection ({} connections)",
        2 * per_input
    );
    drop(idle);
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
}

//! The `tcp` input through the real binary: lines and JSON lines from several connections, the
//! peer's fields, a partial last line, an oversized line, TLS with a client certificate (sent
//! by openssl's s_client), a full queue (the client is held back, nothing is dropped), and
//! client mode reconnecting to a server.

mod net_support;
mod run_support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use net_support::{certs, connect, free_port};
use run_support::{temp_dir, Run};

/// The complete lines of the output file (the last one may be half written while the test
/// reads).
fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect()
}

fn wait_for(path: &Path, n: usize, secs: u64) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let got = json_lines(path);
        if got.len() >= n {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {n} events in {secs} s",
            got.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn lines_and_json_lines_from_several_connections_with_the_peers_fields() {
    let dir = temp_dir("tcp", "lines");
    let out = dir.join("out.json");
    let (p1, p2) = (free_port(), free_port());
    let config = format!(
        r#"input {{
             tcp {{ port => {p1} host => "127.0.0.1" dns_reverse_lookup_enabled => false }}
             tcp {{ port => {p2} host => "127.0.0.1" codec => json ecs_compatibility => disabled }}
           }}
           filter {{ mutate {{ copy => {{ "[@metadata][input][tcp][source]" => "source" }} }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    let senders: Vec<_> = (0..4)
        .map(|c| {
            std::thread::spawn(move || {
                let mut s = connect(p1, 30);
                let mut text = String::new();
                for i in 0..5000 {
                    text.push_str(&format!("conn{c} line {i}\n"));
                }
                text.push_str(&format!("conn{c} partial"));
                s.write_all(text.as_bytes()).unwrap();
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    let mut s = connect(p2, 30);
    s.write_all(b"{\"a\":1}\n{\"a\":2}\n").unwrap();
    drop(s);
    let got = wait_for(&out, 4 * 5001 + 2, 60);
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for e in &got {
        if let Some(m) = e["message"].as_str() {
            *counts.entry(m.to_owned()).or_default() += 1;
            assert_eq!(e["source"]["ip"], "127.0.0.1", "{e}");
            assert_eq!(e["source"]["name"], "127.0.0.1", "{e}");
            assert!(e["source"]["port"].as_u64().unwrap() > 0, "{e}");
        } else {
            // Reverse DNS (on by default), as the system resolves it.
            let hosts = Command::new("getent")
                .args(["hosts", "127.0.0.1"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            let name = hosts.split_whitespace().nth(1).unwrap_or("127.0.0.1");
            assert_eq!(e["host"], name, "{e}");
            assert!(e["port"].is_u64(), "{e}");
        }
    }
    for c in 0..4 {
        for i in 0..5000 {
            assert_eq!(counts.get(&format!("conn{c} line {i}")), Some(&1));
        }
        assert_eq!(counts.get(&format!("conn{c} partial")), Some(&1));
    }
    assert_eq!(got.iter().filter(|e| e["a"].is_u64()).count(), 2);
}

#[test]
fn an_oversized_line_closes_only_its_connection_and_invalid_utf8_is_replaced() {
    let dir = temp_dir("tcp", "oversized");
    let out = dir.join("out.json");
    let port = free_port();
    let config = format!(
        r#"input {{ tcp {{ port => {port} host => "127.0.0.1" max_line_size => "64kb" }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    let mut good = connect(port, 30);
    good.write_all(b"before\n").unwrap();
    let mut bad = connect(port, 30);
    bad.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let big = vec![b'x'; 1 << 20];
    // The server closes the connection: writing fails or reading sees the end.
    let _ = bad.write_all(&big);
    let mut rest = Vec::new();
    let _ = bad.read_to_end(&mut rest);
    good.write_all(b"after\n").unwrap();
    drop(good);
    // Bytes that are not UTF-8 are escaped as Logstash escapes them (Ruby's inspect); the
    // line still comes through.
    let mut odd = connect(port, 30);
    odd.write_all(b"bad \xff\xfe bytes\n").unwrap();
    drop(odd);
    let got = wait_for(&out, 3, 30);
    r.signal("-TERM");
    assert!(r.exit(30).success());
    let messages: Vec<&str> = got.iter().filter_map(|e| e["message"].as_str()).collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(messages.contains(&"before") && messages.contains(&"after"));
    assert!(messages.contains(&"bad \\xFF\\xFE bytes"), "{messages:?}");
    assert!(r.log().contains("max_line_size"), "{}", r.log());
}

#[test]
fn tls_reports_the_client_certificates_subject() {
    let dir = temp_dir("tcp", "tls");
    let Some(c) = certs(&dir.join("certs")) else {
        return;
    };
    let out = dir.join("out.json");
    let port = free_port();
    let config = format!(
        r#"input {{ tcp {{ port => {port} host => "127.0.0.1" ecs_compatibility => disabled
             ssl_enabled => true ssl_certificate => "{}" ssl_key => "{}"
             ssl_certificate_authorities => ["{}"] ssl_client_authentication => "required" }} }}
           output {{ file {{ path => "{}" }} }}"#,
        c.server_cert.display(),
        c.server_key.display(),
        c.ca.display(),
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    drop(connect(port, 30));
    let send = |cert: &Path, key: &Path, text: &str| {
        let mut s = c
            .s_client(port, cert, key)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        s.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while s.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = s.kill();
        s.wait().unwrap()
    };
    send(&c.client_cert, &c.client_key, "secret one\nsecret two\n");
    send(&c.stranger_cert, &c.stranger_key, "from a stranger\n");
    let got = wait_for(&out, 2, 30);
    std::thread::sleep(Duration::from_millis(500));
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let got_all = json_lines(&out);
    assert_eq!(got_all.len(), 2, "{got_all:?}");
    for e in &got {
        assert_eq!(e["sslsubject"], "CN=client", "{e}");
    }
    assert!(r.log().contains("TLS handshake"), "{}", r.log());
}

/// The output is blocked: the queue fills, the connection is no longer read, the client's
/// writes stall; once the output drains, every line arrives once.
#[test]
fn a_full_queue_holds_the_client_back_and_drops_nothing() {
    let dir = temp_dir("tcp", "full");
    let port = free_port();
    let config = format!(
        r#"input {{ tcp {{ port => {port} host => "127.0.0.1" }} }}
           output {{ stdout {{ codec => line {{ format => "%{{message}}" }} }} }}"#
    );
    let mut r = Run::start(
        &dir,
        "pipeline.workers: 1\npipeline.batch.size: 10\n",
        &[],
        &config,
        Stdio::null(),
        Stdio::piped(),
    );
    let total = 200_000;
    let writer = std::thread::spawn(move || {
        let mut s = connect(port, 30);
        let mut text = String::new();
        for i in 0..total {
            text.push_str(&format!("line {i} with some padding to make it longer\n"));
        }
        let started = Instant::now();
        s.write_all(text.as_bytes()).unwrap();
        started.elapsed()
    });
    std::thread::sleep(Duration::from_secs(3));
    assert!(!writer.is_finished(), "the client was not held back");
    let (reader, lines) = r.read_stdout_counting();
    writer.join().unwrap();
    // Plain TCP has no acknowledgement: what the client wrote may still be in the sockets'
    // buffers (megabytes) when its write returns, and a stop loses what sluice has not read
    // yet, as Logstash's does. So the stop comes once every line is out.
    r.wait_until(&format!("{total} lines on stdout"), 60, || {
        lines.load(std::sync::atomic::Ordering::Relaxed) >= total
    });
    std::thread::sleep(Duration::from_millis(500));
    r.signal("-TERM");
    assert!(r.exit(60).success(), "{}", r.log());
    let all = reader.join().unwrap();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for l in all.lines() {
        *counts.entry(l).or_default() += 1;
    }
    assert_eq!(counts.len(), total, "lines lost");
    assert!(counts.values().all(|n| *n == 1));
}

#[test]
fn client_mode_reads_from_a_server_and_reconnects() {
    let dir = temp_dir("tcp", "client");
    let out = dir.join("out.json");
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let config = format!(
        r#"input {{ tcp {{ mode => "client" port => {port} host => "127.0.0.1" }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    for round in 0..2 {
        let (mut s, _) = server.accept().unwrap();
        for i in 0..100 {
            s.write_all(format!("round {round} line {i}\n").as_bytes())
                .unwrap();
        }
    }
    let got = wait_for(&out, 200, 30);
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    assert_eq!(got.len(), 200);
}

/// Client mode over TLS, against openssl's s_server: the server's certificate is verified
/// against our authority and its subject reported.
#[test]
fn client_mode_over_tls_verifies_the_server() {
    let dir = temp_dir("tcp", "client-tls");
    let Some(c) = certs(&dir.join("certs")) else {
        return;
    };
    let out = dir.join("out.json");
    let port = free_port();
    let mut server = c.s_server(port);
    let config = format!(
        r#"input {{ tcp {{ mode => "client" host => "127.0.0.1" port => {port} ecs_compatibility => disabled
             ssl_enabled => true ssl_certificate_authorities => ["{}"] }} }}
           output {{ file {{ path => "{}" }} }}"#,
        c.ca.display(),
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    // Time for sluice to connect (s_server takes one connection at a time).
    std::thread::sleep(Duration::from_secs(3));
    let mut stdin = server.stdin.take().unwrap();
    stdin.write_all(b"over tls one\nover tls two\n").unwrap();
    stdin.flush().unwrap();
    let got = wait_for(&out, 2, 30);
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let _ = server.kill();
    let _ = server.wait();
    let messages: Vec<&str> = got.iter().filter_map(|e| e["message"].as_str()).collect();
    assert_eq!(messages, ["over tls one", "over tls two"]);
    assert_eq!(got[0]["sslsubject"], "CN=server", "{}", got[0]);
}

#[test]
fn multiline_keeps_one_record_per_connection_and_flushes_a_quiet_one() {
    let dir = temp_dir("tcp", "multiline");
    let out = dir.join("out.json");
    let port = free_port();
    let config = format!(
        r#"input {{ tcp {{ port => {port} host => "127.0.0.1" dns_reverse_lookup_enabled => false
             codec => multiline {{ pattern => "^\s" what => "previous" auto_flush_interval => 1 }} }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    let mut a = connect(port, 30);
    let mut b = connect(port, 30);
    // Interleaved: each connection's continuation lines join its own record.
    for (to_a, text) in [
        (true, "a one\n"),
        (false, "b one\n"),
        (true, "  a two\n"),
        (false, "  b two\n"),
        (true, "  a three\n"),
    ] {
        let s = if to_a { &mut a } else { &mut b };
        s.write_all(text.as_bytes()).unwrap();
        s.flush().unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    // Both connections stay open: only the quiet spell releases their records.
    let got = wait_for(&out, 2, 30);
    let mut messages: Vec<&str> = got.iter().map(|e| e["message"].as_str().unwrap()).collect();
    messages.sort();
    assert_eq!(messages, ["a one\n  a two\n  a three", "b one\n  b two"]);
    // A record held at the end of a connection is flushed when it closes.
    b.write_all(b"b three\n  b four").unwrap();
    drop(b);
    let got = wait_for(&out, 3, 30);
    assert_eq!(got[2]["message"], "b three\n  b four", "{got:?}");
    drop(a);
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
}

//! The `http` input through the real binary: JSON (arrays split), NDJSON and plain bodies with
//! the request's fields, basic auth, a body over the limit, and 429 instead of an unbounded
//! wait while the pipeline is blocked.

mod net_support;
mod run_support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use net_support::free_port;
use run_support::{temp_dir, Run};

fn post(port: u16, path: &str, content_type: &str, body: &[u8], auth: Option<&str>) -> u16 {
    use base64::Engine;
    let encode = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let mut req = ureq::http::Request::builder()
        .method("POST")
        .uri(format!("http://127.0.0.1:{port}{path}"))
        .header("Content-Type", content_type);
    if let Some(a) = auth {
        req = req.header("Authorization", format!("Basic {}", encode(a.as_bytes())));
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    match agent.run(req.body(body.to_vec()).unwrap()) {
        Ok(r) => r.status().as_u16(),
        Err(e) => panic!("POST {path}: {e}"),
    }
}

#[test]
fn bodies_become_events_with_the_requests_fields() {
    let dir = temp_dir("http", "bodies");
    let out = dir.join("out.json");
    let port = free_port();
    let config = format!(
        r#"input {{ http {{ port => {port} host => "127.0.0.1" user => "u" password => "secret" max_content_length => 1000 }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    net_support::wait_listening(port, 30);
    let auth = Some("u:secret");
    assert_eq!(
        post(
            port,
            "/in?x=1",
            "application/json",
            br#"[{"a":1},{"a":2}]"#,
            auth
        ),
        200
    );
    assert_eq!(
        post(
            port,
            "/",
            "application/x-ndjson",
            b"{\"b\":1}\n{\"b\":2}\n",
            auth
        ),
        200
    );
    assert_eq!(post(port, "/", "text/plain", b"hello", auth), 200);
    assert_eq!(post(port, "/", "text/plain", b"nope", Some("u:wrong")), 401);
    assert_eq!(post(port, "/", "text/plain", b"nope", None), 401);
    assert_eq!(post(port, "/", "text/plain", &[b'x'; 5000], auth), 413);
    let deadline = Instant::now() + Duration::from_secs(30);
    let read = || std::fs::read_to_string(&out).unwrap_or_default();
    while read().lines().count() < 5 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let all: Vec<serde_json::Value> = read()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(all.len(), 5, "{all:#?}");
    let a: Vec<_> = all.iter().filter(|e| e["a"].is_u64()).collect();
    assert_eq!(a.len(), 2);
    assert_eq!(a[0]["url"]["path"], "/in", "{}", a[0]);
    assert_eq!(a[0]["url"]["query"], "x=1", "{}", a[0]);
    assert_eq!(a[0]["http"]["method"], "POST", "{}", a[0]);
    assert_eq!(a[0]["host"]["ip"], "127.0.0.1", "{}", a[0]);
    assert_eq!(all.iter().filter(|e| e["b"].is_u64()).count(), 2);
    assert!(all.iter().any(|e| e["message"] == "hello"));
}

/// The output is blocked: the first requests wait, the ones past threads +
/// max_pending_requests get 429 at once; once the output drains, every accepted event is there.
#[test]
fn a_blocked_pipeline_answers_429_past_the_pending_limit() {
    let dir = temp_dir("http", "busy");
    let port = free_port();
    let config = format!(
        r#"input {{ http {{ port => {port} host => "127.0.0.1" threads => 1 max_pending_requests => 2 }} }}
           output {{ stdout {{ codec => line {{ format => "%{{message}}" }} }} }}"#
    );
    let mut r = Run::start(
        &dir,
        net_support::BLOCKING_SETTINGS,
        &[],
        &config,
        Stdio::null(),
        Stdio::piped(),
    );
    net_support::wait_listening(port, 30);
    // Fill the pipe and the queue.
    let big = "x".repeat(60_000);
    let fill = net_support::fill_slowly(move |i| {
        let body = format!("{i} {big}");
        post(port, "/", "text/plain", body.as_bytes(), None)
    });
    let busy = post(port, "/", "text/plain", b"one too many", None);
    assert_eq!(busy, 429, "{}", r.log());
    let reader = r.read_stdout();
    let accepted = net_support::accepted(fill);
    std::thread::sleep(Duration::from_millis(500));
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let out = reader.join().unwrap();
    assert_eq!(out.lines().count(), accepted, "accepted events lost");
}

/// Issue 46: a body larger than a persisted queue's page was answered 200, then its event
/// dropped ("larger than a queue page"). It is stored now (on a page of its own) and delivered.
#[test]
fn an_event_larger_than_a_queue_page_is_stored_not_acked_and_dropped() {
    let dir = temp_dir("http", "larger-than-a-page");
    let out = dir.join("out.json");
    let port = free_port();
    let settings = format!(
        "path.data: {}\nqueue.type: persisted\nqueue.page_capacity: 1mb\nqueue.max_bytes: 8mb\n",
        dir.join("data").display()
    );
    let config = format!(
        r#"input {{ http {{ port => {port} host => "127.0.0.1" }} }}
           output {{ file {{ path => "{}" codec => line {{ format => "%{{[message]}}" }} }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, &settings, &[], &config, Stdio::null(), Stdio::null());
    net_support::wait_listening(port, 30);
    let big: Vec<u8> = (0..3_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    assert_eq!(post(port, "/", "text/plain", b"before", None), 200);
    assert_eq!(post(port, "/", "text/plain", &big, None), 200);
    assert_eq!(post(port, "/", "text/plain", b"after", None), 200);
    let lines = r.wait_lines(&out, 3, 60);
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let lines: Vec<&str> = lines.lines().collect();
    assert!(
        lines.contains(&"before") && lines.contains(&"after"),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.as_bytes() == big.as_slice()),
        "the large event is missing:\n{}",
        r.log()
    );
    assert!(!r.log().contains("dropped"), "{}", r.log());
}

/// The peak resident memory of process `pid`, in bytes (`VmHWM`).
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    kb << 10
}

/// Issue 46: 100 concurrent 10 MB POSTs took the process to 3.96 GB (each body held several
/// times over). The bodies held at once are bounded now (`max_pending_bytes`): past it a
/// request gets 429 at once, and every request answered 200 has its event delivered.
#[test]
fn request_bodies_held_at_once_are_bounded() {
    let dir = temp_dir("http", "memory-cap");
    let out = dir.join("out.log");
    let port = free_port();
    let config = format!(
        r#"input {{ http {{ port => {port} host => "127.0.0.1" threads => 4 max_content_length => 11000000 max_pending_bytes => 50000000 }} }}
           output {{ file {{ path => "{}" codec => line {{ format => "%{{[http][request][body][bytes]}}" }} }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    net_support::wait_listening(port, 30);
    let body: &'static [u8] = Box::leak(vec![b'x'; 10_000_000].into_boxed_slice());
    let codes: Vec<u16> = (0..100)
        .map(|_| {
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(120)))
                    .build()
                    .into();
                agent
                    .post(format!("http://127.0.0.1:{port}/"))
                    .header("Content-Type", "text/plain")
                    .send(body)
                    .map_or(0, |r| r.status().as_u16())
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    let accepted = codes.iter().filter(|&&c| c == 200).count();
    assert!(accepted >= 4, "{codes:?}\n{}", r.log());
    assert!(codes.iter().all(|&c| c == 200 || c == 429), "{codes:?}");
    let lines = r.wait_lines(&out, accepted, 60);
    let peak = peak_rss(r.child.id());
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    assert!(lines.lines().all(|l| l == "10000000"), "{lines}");
    assert_eq!(lines.lines().count(), accepted);
    // 50 MB of bodies at once, each held about four times over (body, message,
    // event.original, the output's line) and the allocator's slack: well under 1 GB.
    assert!(
        peak < 1 << 30,
        "peak RSS {} MB with {accepted} of 100 accepted",
        peak >> 20
    );
}

/// `Content-Encoding: gzip` and `deflate` bodies are decoded (as Logstash's http input does);
/// a decoded body over `max_content_length` gets 413 (a small bomb cannot fill memory).
#[test]
fn compressed_bodies_are_decoded_and_bounded() {
    use std::io::Write;
    let dir = temp_dir("http", "gzip");
    let out = dir.join("out.json");
    let port = free_port();
    let config = format!(
        r#"input {{ http {{ port => {port} host => "127.0.0.1" max_content_length => 100000 }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    net_support::wait_listening(port, 30);
    let send = |encoding: &str, body: Vec<u8>| {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        agent
            .post(format!("http://127.0.0.1:{port}/"))
            .header("Content-Type", "application/json")
            .header("Content-Encoding", encoding)
            .send(&body[..])
            .map_or(0, |r| r.status().as_u16())
    };
    let gzip = |data: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    };
    let zlib = |data: &[u8]| {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    };
    assert_eq!(send("gzip", gzip(br#"{"via":"gzip"}"#)), 200);
    assert_eq!(send("deflate", zlib(br#"{"via":"deflate"}"#)), 200);
    // 1 MB of spaces: a small request, too large once decoded.
    let mut bomb = b"{\"a\":1".to_vec();
    bomb.extend(std::iter::repeat_n(b' ', 1 << 20));
    bomb.push(b'}');
    assert_eq!(send("gzip", gzip(&bomb)), 413);
    assert_eq!(send("br", b"{}".to_vec()), 415);
    assert_eq!(send("gzip", b"not gzip".to_vec()), 400);
    let lines = r.wait_lines(&out, 2, 30);
    std::thread::sleep(Duration::from_millis(300));
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let all: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut via: Vec<&str> = all.iter().filter_map(|e| e["via"].as_str()).collect();
    via.sort();
    assert_eq!(via, ["deflate", "gzip"], "{all:?}");
}

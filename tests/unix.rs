//! The `unix` input through the real binary: a server socket that clients write lines to, a
//! stale socket file taken over with `force_unlink`, client mode reconnecting, and
//! `data_timeout` closing an idle connection.

mod run_support;

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::Stdio;
use std::time::{Duration, Instant};

use run_support::{temp_dir, Run};

fn lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn connect(path: &std::path::Path) -> UnixStream {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match UnixStream::connect(path) {
            Ok(s) => return s,
            Err(e) => {
                assert!(Instant::now() < deadline, "{}: {e}", path.display());
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

#[test]
fn server_mode_reads_every_client() {
    let dir = temp_dir("unix", "server");
    let sock = dir.join("in.sock");
    let out = dir.join("out.json");
    let config = format!(
        r#"input {{ unix {{ path => "{}" }} }} output {{ file {{ path => "{}" }} }}"#,
        sock.display(),
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    let mut a = connect(&sock);
    let mut b = connect(&sock);
    for i in 0..50 {
        writeln!(a, "a {i}").unwrap();
        writeln!(b, "b {i}").unwrap();
    }
    // A line cut across writes comes out whole.
    a.write_all(b"split ").unwrap();
    a.flush().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    a.write_all(b"line\n").unwrap();
    drop((a, b));
    let events = lines(&r.wait_lines(&out, 101, 30));
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let mut messages: Vec<&str> = events
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    messages.sort();
    assert!(messages.contains(&"split line"), "{messages:?}");
    assert_eq!(messages.iter().filter(|m| m.starts_with("a ")).count(), 50);
    assert_eq!(messages.iter().filter(|m| m.starts_with("b ")).count(), 50);
    for e in &events {
        assert_eq!(e["file"]["path"], sock.display().to_string(), "{e}");
        assert!(
            e["host"]["name"].as_str().is_some_and(|h| !h.is_empty()),
            "{e}"
        );
    }
    assert!(!sock.exists(), "the socket file is removed at the stop");
}

#[test]
fn a_stale_socket_file_needs_force_unlink() {
    let dir = temp_dir("unix", "stale");
    let sock = dir.join("in.sock");
    drop(UnixListener::bind(&sock).unwrap());
    assert!(sock.exists());
    let config = format!(
        r#"input {{ unix {{ path => "{}" ecs_compatibility => disabled }} }} output {{ stdout {{ codec => json_lines }} }}"#,
        sock.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    // The input fails (and with it the pipeline, which has no other).
    r.exit(30);
    assert!(
        r.log().contains("Address already in use") && r.log().contains("force_unlink"),
        "{}",
        r.log()
    );

    let config = config.replace(
        "ecs_compatibility",
        "force_unlink => true ecs_compatibility",
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::piped());
    let out = r.read_stdout();
    let mut c = connect(&sock);
    c.write_all(b"hello\n").unwrap();
    drop(c);
    std::thread::sleep(Duration::from_millis(500));
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let events = lines(&out.join().unwrap());
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["message"], "hello");
    assert_eq!(events[0]["path"], sock.display().to_string());
    assert!(events[0]["host"].is_string());
}

#[test]
fn client_mode_waits_for_the_socket_and_connects_again() {
    let dir = temp_dir("unix", "client");
    let sock = dir.join("server.sock");
    let out = dir.join("out.json");
    let config = format!(
        r#"input {{ unix {{ path => "{}" mode => "client" socket_not_present_retry_interval_seconds => 1 }} }}
           output {{ file {{ path => "{}" }} }}"#,
        sock.display(),
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    std::thread::sleep(Duration::from_millis(1500));
    let server = UnixListener::bind(&sock).unwrap();
    for round in 0..2 {
        let (mut c, _) = server.accept().unwrap();
        writeln!(c, "round {round}").unwrap();
        // Closed: sluice connects again.
    }
    let events = lines(&r.wait_lines(&out, 2, 30));
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let messages: Vec<&str> = events
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages, ["round 0", "round 1"]);
    assert!(r.log().contains("no socket there"), "{}", r.log());
}

#[test]
fn data_timeout_closes_an_idle_connection() {
    let dir = temp_dir("unix", "timeout");
    let sock = dir.join("in.sock");
    let config = format!(
        r#"input {{ unix {{ path => "{}" data_timeout => 1 }} }} output {{ null {{ }} }}"#,
        sock.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    let mut c = connect(&sock);
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 1];
    // The server closes its end: the read sees the end of the stream.
    assert_eq!(c.read(&mut buf).unwrap(), 0);
    assert!(started.elapsed() < Duration::from_secs(15));
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
}

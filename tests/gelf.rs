//! The `gelf` input and output through the real binary, with real GELF peers: Python's
//! graypy and pygelf log into the input over UDP (zlib, chunked) and TCP; the output sends to
//! a receiver of the test's own (Python, reassembling chunks) and to sluice's own input.

mod api_support;
mod net_support;
mod run_support;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use run_support::{temp_dir, Run};
use serde_json::Value;

fn script(name: &str) -> String {
    format!("{}/tests/gelf/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn send(python: &Path, library: &str, proto: &str, port: u16, n: usize) {
    let out = Command::new(python)
        .args([
            &script("send.py"),
            library,
            proto,
            &port.to_string(),
            &n.to_string(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "send.py {library} {proto}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

/// graypy and pygelf each log 40 records over UDP (every fifth in chunks) and over TCP; each
/// arrives once, as Logstash's gelf input makes it.
#[test]
fn graypy_and_pygelf_records_arrive_over_udp_and_tcp() {
    let Some(python) = net_support::peers_python() else {
        return;
    };
    let dir = temp_dir("gelf", "peers");
    let out = dir.join("out.json");
    let (udp, tcp) = (net_support::free_udp_port(), net_support::free_port());
    let config = format!(
        r#"input {{ gelf {{ host => "127.0.0.1" port_udp => {udp} port_tcp => {tcp} use_tcp => true }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    net_support::wait_listening(tcp, 30);
    let n = 40;
    let runs = [
        ("graypy", "udp", udp),
        ("graypy", "tcp", tcp),
        ("pygelf", "udp", udp),
        ("pygelf", "tcp", tcp),
    ];
    for (library, proto, port) in runs {
        send(&python, library, proto, port, n);
    }
    let events = lines(&r.wait_lines(&out, runs.len() * n, 60));
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    for (library, proto, _) in runs {
        let via = format!("{library}/{proto}");
        let mut ids: Vec<i64> = Vec::new();
        for e in events.iter().filter(|e| e["via"] == via.as_str()) {
            let id = e["order_id"].as_i64().unwrap_or_else(|| panic!("{e}"));
            ids.push(id);
            // short_message remapped to message, `_` stripped, the sender's address kept.
            assert_eq!(e["message"], format!("order {id} shipped"), "{e}");
            assert!(e.get("short_message").is_none(), "{e}");
            assert!(e.get("_order_id").is_none(), "{e}");
            assert_eq!(e["source_host"], "127.0.0.1", "{e}");
            assert_eq!(e["level"], 4, "WARNING is syslog's 4: {e}");
            assert!(e["host"].as_str().is_some_and(|h| !h.is_empty()), "{e}");
            // GELF's seconds became @timestamp; the field itself is gone.
            assert!(e.get("timestamp").is_none(), "{e}");
            let ts = e["@timestamp"].as_str().unwrap();
            assert!(ts.starts_with("20") && ts.ends_with('Z'), "{e}");
            if id % 5 == 0 {
                assert_eq!(e["blob"].as_str().map(str::len), Some(3000), "{e}");
            }
        }
        ids.sort();
        assert_eq!(ids, (0..n as i64).collect::<Vec<_>>(), "{via}");
    }
    let graypy = events.iter().find(|e| e["via"] == "graypy/udp").unwrap();
    assert_eq!(graypy["facility"], "shop.orders", "{graypy}");
    assert_eq!(graypy["function"], "<module>", "{graypy}");
    assert!(
        graypy["file"].as_str().unwrap().ends_with("send.py"),
        "{graypy}"
    );
}

/// Hand-made datagrams: gzip and plain messages, `full_message`, a non-JSON one (kept,
/// tagged), and broken ones (counted in the stats, the input going on); on TCP, a
/// non-JSON message is skipped and counted, and the last message needs no zero byte.
#[test]
fn compressions_remapping_and_bad_input() {
    let dir = api_support::temp_dir("gelf-bad");
    let out = dir.join("out.json");
    let (udp, tcp) = (net_support::free_udp_port(), net_support::free_port());
    let config = format!(
        r#"input {{ gelf {{ host => "127.0.0.1" port_udp => {udp} port_tcp => {tcp} use_tcp => true }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let s = api_support::Sluice::start(&dir, "", "", &["-e", &config]);
    net_support::wait_listening(tcp, 30);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = ("127.0.0.1", udp);
    let full = br#"{"version":"1.1","host":"web1","short_message":"short","full_message":"the long story","timestamp":1700000000.1234,"_user":"ann","_id2":7}"#;
    sock.send_to(&gzip(full), to).unwrap();
    sock.send_to(br#"{"short_message":"plain one","level":3}"#, to)
        .unwrap();
    sock.send_to(b"not json at all", to).unwrap();
    // Broken: a truncated chunk header, zlib that is not, a chunk count over 128.
    sock.send_to(&[0x1e, 0x0f, 1, 2, 3], to).unwrap();
    sock.send_to(&[0x78, 0x9c, 1, 2, 3, 4], to).unwrap();
    let mut over = vec![0x1e, 0x0f, 1, 2, 3, 4, 5, 6, 7, 8, 0, 200];
    over.extend_from_slice(b"{}");
    sock.send_to(&over, to).unwrap();
    sock.send_to(&zlib(br#"{"short_message":"after the bad ones"}"#), to)
        .unwrap();
    let mut c = TcpStream::connect(("127.0.0.1", tcp)).unwrap();
    c.write_all(b"{\"short_message\":\"tcp one\"}\0garbage\0{\"short_message\":\"tcp last\"}")
        .unwrap();
    drop(c);
    let stats = s.wait_for(30, "all messages read", |v| {
        let p = &v["pipelines"]["main"];
        p["events"]["out"].as_u64() == Some(6)
            && p["plugins"]["inputs"][0]["invalid_messages"].as_u64() == Some(5)
    });
    let input = &stats["pipelines"]["main"]["plugins"]["inputs"][0];
    assert_eq!(input["incomplete_messages"], 0, "{input}");
    s.stop();
    let events = lines(&std::fs::read_to_string(&out).unwrap());
    let by = |m: &str| {
        events
            .iter()
            .find(|e| e["message"] == m)
            .unwrap_or_else(|| panic!("no {m:?} in {events:?}"))
    };
    let e = by("the long story");
    // full_message won; a different short_message stays.
    assert_eq!(e["short_message"], "short", "{e}");
    assert_eq!(e["@timestamp"], "2023-11-14T22:13:20.123Z", "{e}");
    assert_eq!(e["user"], "ann", "{e}");
    assert_eq!(e["id2"], 7, "{e}");
    assert_eq!(e["host"], "web1", "{e}");
    assert_eq!(by("plain one")["level"], 3);
    let bad = by("not json at all");
    assert_eq!(
        bad["tags"],
        serde_json::json!(["_jsonparsefailure", "_fromjsonparser"])
    );
    by("after the bad ones");
    by("tcp one");
    by("tcp last");
}

/// Partial chunked messages that never complete: memory stays bounded (64 MiB of them at
/// most) however many come, they are counted when dropped, and a whole message still gets in.
#[test]
fn a_flood_of_partial_chunks_stays_bounded() {
    let dir = api_support::temp_dir("gelf-flood");
    let out = dir.join("out.json");
    let udp = net_support::free_udp_port();
    let config = format!(
        r#"input {{ gelf {{ host => "127.0.0.1" port => {udp} }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let s = api_support::Sluice::start(&dir, "", "", &["-e", &config]);
    std::thread::sleep(Duration::from_millis(500));
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    // 24,000 first chunks of 8 KB, each of a message of 2: 190 MB if all were kept.
    let mut chunk = vec![0x1e, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    chunk.resize(12 + 8000, b'x');
    let sent = 24_000u64;
    for i in 0..sent {
        chunk[2..10].copy_from_slice(&i.to_le_bytes());
        sock.send_to(&chunk, ("127.0.0.1", udp)).unwrap();
        if i % 8 == 7 {
            // Paced in bursts smaller than the kernel's socket buffer (about 16 of these), so
            // that most get through: the input's bound is what is tested, not the kernel's.
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    // Every partial message is dropped by the bound or after its 5 s.
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut last = (0, Instant::now());
    loop {
        let v = s.json("/_node/stats/pipelines");
        let n = v["pipelines"]["main"]["plugins"]["inputs"][0]["incomplete_messages"]
            .as_u64()
            .unwrap();
        if n != last.0 {
            last = (n, Instant::now());
        } else if n > 0 && last.1.elapsed() > Duration::from_secs(7) {
            break;
        }
        assert!(Instant::now() < deadline, "incomplete messages: {n}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Most came through the kernel: far more than the bound's 64 MiB.
    assert!(
        last.0 >= sent * 5 / 6 && last.0 <= sent,
        "{} of {sent} counted",
        last.0
    );
    sock.send_to(
        &zlib(br#"{"short_message":"still here"}"#),
        ("127.0.0.1", udp),
    )
    .unwrap();
    s.wait_for(20, "the whole message", |v| {
        v["pipelines"]["main"]["events"]["out"].as_u64() == Some(1)
    });
    let peak = peak_memory(s.child.id());
    assert!(
        peak < 160 << 20,
        "peak resident memory {} MiB while 190 MB of partial chunks came",
        peak >> 20
    );
    s.stop();
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("still here"));
}

fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

/// The output over UDP to a receiver of the test's own: every event arrives once, the big ones
/// in chunks, with Logstash's GELF fields.
#[test]
fn the_output_sends_what_a_gelf_receiver_reads() {
    let Some(python) = net_support::peers_python() else {
        return;
    };
    let port = net_support::free_udp_port();
    let n = 30;
    let mut receiver = Command::new(&python)
        .args([&script("receive.py"), &port.to_string(), &n.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut got = BufReader::new(receiver.stdout.take().unwrap());
    let mut ready = String::new();
    got.read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), "ready");
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
           filter {{ if [n] == 3 {{ mutate {{ add_tag => ["hot", "new"] }} }} }}
           output {{ gelf {{ host => "127.0.0.1" port => {port} chunksize => 500
                            sender => "%{{[app][name]}}" level => ["%{{sev}}", "notice"]
                            custom_fields => {{ "team" => "ops" "id" => "x" }} }} }}"#
    );
    let mut input = String::new();
    for i in 0..n {
        let sev = ["error", "debug", "2", "W"][i % 4];
        let mut e = serde_json::json!({"message": format!("line {i}"), "n": i, "sev": sev,
            "app": {"name": "shop", "ver": 2}, "_private": true, "id": i,
            "@timestamp": "2026-11-28T10:00:00.250Z"});
        if i == 5 {
            e.as_object_mut().unwrap().remove("sev");
        }
        if i % 10 == 0 {
            // ~4 KB that deflate cannot shrink: chunks of 500.
            let noise: String = (0..2000u32)
                .map(|k| {
                    format!(
                        "{:02x}",
                        (k.wrapping_mul(2654435761) >> 13) as u8 ^ (i as u8)
                    )
                })
                .collect();
            e["noise"] = noise.into();
        }
        input.push_str(&e.to_string());
        input.push('\n');
    }
    let (ok, _, log) = run_support::pipe_through(&config, &input);
    assert!(ok, "{log}");
    let mut messages = Vec::new();
    for _ in 0..n {
        let mut l = String::new();
        got.read_line(&mut l).unwrap();
        messages.push(serde_json::from_str::<Value>(&l).unwrap());
    }
    let _ = receiver.kill();
    let _ = receiver.wait();
    messages.sort_by_key(|m| m["_n"].as_i64());
    for (i, m) in messages.iter().enumerate() {
        assert_eq!(m["_n"], i as i64, "{m}");
        assert_eq!(m["version"], "1.1");
        assert_eq!(m["short_message"], format!("line {i}"), "{m}");
        assert_eq!(m["full_message"], format!("line {i}"), "{m}");
        assert_eq!(m["host"], "shop", "{m}");
        assert_eq!(m["timestamp"], 1795860000.25, "{m}");
        // Objects flattened one level, `_` stripped then added, `id` as `__id`.
        assert_eq!(m["_app_name"], "shop", "{m}");
        assert_eq!(m["_app_ver"], 2, "{m}");
        assert_eq!(m["_private"], true, "{m}");
        assert_eq!(m["__id"], i as i64, "{m}");
        assert_eq!(m["_team"], "ops", "{m}");
        assert!(
            m.get("_@timestamp").is_none() && m.get("_message").is_none(),
            "{m}"
        );
        let level = match i {
            5 => 5,
            _ => [3, 7, 2, 4][i % 4],
        };
        assert_eq!(m["level"], level, "{m}");
        assert_eq!(m["chunks"].as_u64().unwrap() > 1, i % 10 == 0, "{m}");
    }
    assert_eq!(messages[3]["_tags"], "hot, new");
}

/// The output over TCP into sluice's own gelf input, the receiver starting late: the batch
/// waits and every event arrives once, fields round-tripped.
#[test]
fn the_output_over_tcp_into_the_input_waits_for_it() {
    let dir = temp_dir("gelf", "tcp-late");
    let out = dir.join("out.json");
    let port = net_support::free_port();
    let sender = format!(
        r#"input {{ generator {{ count => 100 lines => ["one", "two"] }} }}
           output {{ gelf {{ host => "127.0.0.1" port => {port} protocol => "TCP" }} }}"#
    );
    let sdir = temp_dir("gelf", "tcp-sender");
    let mut a = Run::start(&sdir, "", &[], &sender, Stdio::null(), Stdio::null());
    std::thread::sleep(Duration::from_secs(3));
    let receiver = format!(
        r#"input {{ gelf {{ host => "127.0.0.1" port => {port} use_tcp => true use_udp => false }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut b = Run::start(&dir, "", &[], &receiver, Stdio::null(), Stdio::null());
    let events = lines(&b.wait_lines(&out, 200, 90));
    assert!(a.exit(60).success(), "{}", a.log());
    b.signal("-TERM");
    assert!(b.exit(30).success(), "{}", b.log());
    assert!(a.log().contains("cannot connect"), "{}", a.log());
    let mut seqs: Vec<i64> = events
        .iter()
        .map(|e| {
            e["event_sequence"]
                .as_i64()
                .unwrap_or_else(|| panic!("{e}"))
        })
        .collect();
    seqs.sort();
    // Each of the generator's 100 rounds gives both lines.
    assert_eq!(seqs, (0..200).map(|i| i / 2).collect::<Vec<_>>());
    for e in &events {
        assert!(
            ["one", "two"].contains(&e["message"].as_str().unwrap()),
            "{e}"
        );
        assert_eq!(e["level"], 6, "INFO: {e}");
        assert_eq!(e["version"], "1.1", "{e}");
        assert_eq!(e["source_host"], "127.0.0.1", "{e}");
    }
}

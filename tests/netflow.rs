//! The `netflow` codec on the `udp` input through the real binary: softflowd (Debian) exports
//! the flows of a capture the test writes (tests/netflow/mkpcap.py) as NetFlow v5, v9 and
//! IPFIX, and each flow arrives with Logstash's field names; hand-made v9 datagrams show data
//! before its template counted, and templates kept across a restart with `cache_save_path`.

mod api_support;
mod net_support;
mod run_support;

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Command, Stdio};

use run_support::{temp_dir, Run};
use serde_json::Value;

const FLOWS: usize = 20;

fn softflowd() -> Option<&'static str> {
    let p = ["/usr/sbin/softflowd", "/usr/bin/softflowd"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    if p.is_none() {
        net_support::missing("softflowd (Debian's softflowd)");
    }
    p
}

/// A capture of FLOWS one-way flows of 3 packets each: even ones TCP to port 80, odd ones UDP
/// to port 53, from 10.0.0.(i+1) port 40000+i to 192.168.1.10, IP payloads of 100+i bytes.
fn capture(dir: &Path) -> std::path::PathBuf {
    let pcap = dir.join("flows.pcap");
    let ok = Command::new("python3")
        .arg(format!(
            "{}/tests/netflow/mkpcap.py",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg(&pcap)
        .arg(FLOWS.to_string())
        .arg("3")
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkpcap.py");
    pcap
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn softflowd_exports_in_every_version() {
    let Some(softflowd) = softflowd() else {
        return;
    };
    let dir = temp_dir("netflow", "softflowd");
    let pcap = capture(&dir);
    let port = net_support::free_udp_port();
    let out = dir.join("out.json");
    let config = format!(
        r#"input {{ udp {{ host => "127.0.0.1" port => {port} codec => netflow {{ }} }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    std::thread::sleep(std::time::Duration::from_millis(1500));
    for (round, v) in ["5", "9", "10"].into_iter().enumerate() {
        let status = Command::new(softflowd)
            .args(["-r"])
            .arg(&pcap)
            .args(["-n", &format!("127.0.0.1:{port}"), "-v", v, "-d"])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "softflowd -v {v}");
        r.wait_lines(&out, FLOWS * (round + 1), 30);
    }
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let events = lines(&std::fs::read_to_string(&out).unwrap());
    for version in [5, 9, 10] {
        let all: Vec<&Value> = events
            .iter()
            .filter(|e| e["netflow"]["version"] == version)
            .collect();
        // v9 and IPFIX: softflowd's options record (its sampling) besides the flows.
        let (flows, options): (Vec<&Value>, Vec<&Value>) = all.iter().partition(|e| {
            e["netflow"].get("ipv4_src_addr").is_some()
                || e["netflow"].get("sourceIPv4Address").is_some()
        });
        assert_eq!(
            options.len(),
            usize::from(version != 5),
            "v{version}: {options:?}"
        );
        let mut seen = Vec::new();
        for e in flows {
            let n = &e["netflow"];
            assert_eq!(n["version"], version, "{e}");
            assert_eq!(e["host"]["ip"], "127.0.0.1", "{e}");
            let (src, dst, sport, dport, proto, pkts, bytes) = if version == 10 {
                (
                    &n["sourceIPv4Address"],
                    &n["destinationIPv4Address"],
                    &n["sourceTransportPort"],
                    &n["destinationTransportPort"],
                    &n["protocolIdentifier"],
                    &n["packetDeltaCount"],
                    &n["octetDeltaCount"],
                )
            } else {
                (
                    &n["ipv4_src_addr"],
                    &n["ipv4_dst_addr"],
                    &n["l4_src_port"],
                    &n["l4_dst_port"],
                    &n["protocol"],
                    &n["in_pkts"],
                    &n["in_bytes"],
                )
            };
            let i = sport.as_i64().unwrap() - 40000;
            seen.push(i);
            assert_eq!(src.as_str().unwrap(), format!("10.0.0.{}", i + 1), "{e}");
            assert_eq!(dst, "192.168.1.10", "{e}");
            let tcp = i % 2 == 0;
            assert_eq!(dport, if tcp { 80 } else { 53 }, "{e}");
            assert_eq!(proto, if tcp { 6 } else { 17 }, "{e}");
            assert_eq!(pkts, 3, "{e}");
            // IP length: header 20, TCP 20 or UDP 8, payload 100+i.
            let per = 20 + if tcp { 20 } else { 8 } + 100 + i;
            assert_eq!(bytes.as_i64().unwrap(), 3 * per, "{e}");
            if version != 10 {
                let first = n["first_switched"].as_str().unwrap();
                assert!(first.starts_with("20") && first.ends_with('Z'), "{e}");
            }
        }
        seen.sort();
        assert_eq!(seen, (0..FLOWS as i64).collect::<Vec<_>>(), "v{version}");
    }
}

/// A v9 datagram: header, then the given flowsets.
fn v9(source_id: u32, flowsets: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut d = Vec::new();
    d.extend_from_slice(&9u16.to_be_bytes());
    d.extend_from_slice(&(flowsets.len() as u16).to_be_bytes());
    d.extend_from_slice(&60_000u32.to_be_bytes()); // uptime, ms
    d.extend_from_slice(&1_795_860_000u32.to_be_bytes()); // 2026-11-28T10:00:00Z
    d.extend_from_slice(&7u32.to_be_bytes());
    d.extend_from_slice(&source_id.to_be_bytes());
    for (id, body) in flowsets {
        d.extend_from_slice(&id.to_be_bytes());
        d.extend_from_slice(&(body.len() as u16 + 4).to_be_bytes());
        d.extend_from_slice(body);
    }
    d
}

/// Template 300: ipv4_src_addr, l4_dst_port, in_bytes (8 bytes), last_switched.
fn template() -> (u16, Vec<u8>) {
    let mut b = Vec::new();
    for v in [300u16, 4, 8, 4, 11, 2, 1, 8, 21, 4] {
        b.extend_from_slice(&v.to_be_bytes());
    }
    (0, b)
}

fn data(n: u8) -> (u16, Vec<u8>) {
    let mut b = Vec::new();
    for i in 0..n {
        b.extend_from_slice(&[10, 1, 1, i]);
        b.extend_from_slice(&443u16.to_be_bytes());
        b.extend_from_slice(&(5_000_000_000u64 + i as u64).to_be_bytes());
        b.extend_from_slice(&59_000u32.to_be_bytes());
    }
    (300, b)
}

#[test]
fn templates_unknown_then_known_and_kept_across_a_restart() {
    let dir = api_support::temp_dir("netflow-cache");
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let out = dir.join("out.json");
    let port = net_support::free_udp_port();
    let config = format!(
        r#"input {{ udp {{ host => "127.0.0.1" port => {port} codec => netflow {{ cache_save_path => "{}" }} }} }}
           output {{ file {{ path => "{}" }} }}"#,
        cache.display(),
        out.display()
    );
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let send = |d: Vec<u8>| sock.send_to(&d, ("127.0.0.1", port)).unwrap();
    let s = api_support::Sluice::start(&dir, "", "", &["-e", &config]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    // Data before its template: dropped and counted; then the template and data together.
    // (One after the other: the udp input's workers read datagrams side by side, so a template
    // sent at once could be decoded first.)
    send(v9(1, &[data(2)]));
    s.wait_for(20, "one unknown flowset", |v| {
        v["pipelines"]["main"]["plugins"]["inputs"][0]["netflow_unknown_template_flowsets"] == 1
    });
    send(v9(1, &[template(), data(2)]));
    s.wait_for(20, "two events and one unknown flowset", |v| {
        let p = &v["pipelines"]["main"];
        p["events"]["out"] == 2
            && p["plugins"]["inputs"][0]["netflow_unknown_template_flowsets"] == 1
    });
    s.stop();
    let saved: Value = serde_json::from_str(
        &std::fs::read_to_string(cache.join("netflow_templates.cache")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        saved["1|300"],
        serde_json::json!([
            ["ip4_addr", "ipv4_src_addr"],
            ["uint16", "l4_dst_port"],
            ["uint64", "in_bytes"],
            ["uint32", "last_switched"]
        ])
    );
    // A new process knows the template from the file: data alone decodes.
    let s = api_support::Sluice::start(&dir, "", "", &["-e", &config]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    send(v9(1, &[data(3)]));
    s.wait_for(20, "three events", |v| {
        v["pipelines"]["main"]["events"]["out"] == 3
    });
    s.stop();
    let events = lines(&std::fs::read_to_string(&out).unwrap());
    assert_eq!(events.len(), 5);
    let e = &events[4];
    assert_eq!(e["@timestamp"], "2026-11-28T10:00:00.000Z");
    let n = &e["netflow"];
    assert_eq!(n["version"], 9);
    assert_eq!(n["flow_seq_num"], 7);
    assert_eq!(n["flowset_id"], 300);
    assert_eq!(n["ipv4_src_addr"], "10.1.1.2");
    assert_eq!(n["l4_dst_port"], 443);
    assert_eq!(n["in_bytes"], 5_000_000_002u64);
    // Logstash's arithmetic: unix_sec*1000 - (uptime - value) + 1000.
    assert_eq!(n["last_switched"], "2026-11-28T10:00:00.000Z");
}

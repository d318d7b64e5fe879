//! The `syslog` input (UDP and TCP, RFC 3164 as Logstash parses it, RFC 5424, the failure
//! tag) and the `syslog_pri` filter, through the real binary.

mod net_support;
mod run_support;

use std::io::Write;
use std::net::{TcpStream, UdpSocket};
use std::process::Stdio;
use std::time::{Duration, Instant};

use net_support::free_port;
use run_support::{temp_dir, Run};

fn events(path: &std::path::Path, n: usize) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        // Complete lines only: the last may be half written while the test reads.
        let text = text.rfind('\n').map_or("", |end| &text[..end]);
        if text.lines().count() >= n || Instant::now() > deadline {
            return text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn by_original<'a>(all: &'a [serde_json::Value], start: &str) -> &'a serde_json::Value {
    all.iter()
        .find(|e| {
            e["event"]["original"]
                .as_str()
                .is_some_and(|o| o.starts_with(start))
        })
        .unwrap_or_else(|| panic!("no event for {start:?} in {all:?}"))
}

#[test]
fn rfc3164_and_rfc5424_over_udp_and_tcp() {
    let dir = temp_dir("syslog", "both");
    let out = dir.join("out.json");
    let (ecs_port, legacy_port) = (free_port(), free_port());
    let config = format!(
        r#"input {{
             syslog {{ port => {ecs_port} host => "127.0.0.1" timezone => "UTC" }}
             syslog {{ port => {legacy_port} host => "127.0.0.1" ecs_compatibility => disabled timezone => "UTC" }}
           }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    net_support::wait_listening(legacy_port, 30);
    net_support::wait_listening(ecs_port, 30);
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let send = |port: u16, text: &str| {
        udp.send_to(text.as_bytes(), ("127.0.0.1", port)).unwrap();
    };
    send(
        ecs_port,
        "<164>Oct 11 22:14:15 precision sshd[1234]: Failed password for root",
    );
    send(
        ecs_port,
        r#"<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3"] An application event"#,
    );
    send(legacy_port, "not syslog at all");
    let mut tcp = TcpStream::connect(("127.0.0.1", legacy_port)).unwrap();
    tcp.write_all(b"<13>Nov 24 10:00:00 web1 nginx: over tcp\n<14>Nov 24 10:00:01 web1 nginx: second\npartial")
        .unwrap();
    drop(tcp);
    let all = events(&out, 5);
    std::thread::sleep(Duration::from_millis(300));
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    assert_eq!(all.len(), 5, "{all:#?}");

    let e = by_original(&all, "<164>");
    assert_eq!(e["log"]["syslog"]["priority"], 164, "{e}");
    assert_eq!(e["log"]["syslog"]["facility"]["code"], 20, "{e}");
    assert_eq!(e["log"]["syslog"]["facility"]["name"], "local4", "{e}");
    assert_eq!(e["log"]["syslog"]["severity"]["name"], "Warning", "{e}");
    assert_eq!(e["host"]["hostname"], "precision", "{e}");
    assert_eq!(e["host"]["ip"], "127.0.0.1", "{e}");
    assert_eq!(e["process"]["name"], "sshd", "{e}");
    assert_eq!(e["process"]["pid"], 1234, "{e}");
    assert_eq!(e["message"], "Failed password for root", "{e}");
    assert_eq!(e["service"]["type"], "system", "{e}");
    assert!(
        e["@timestamp"]
            .as_str()
            .unwrap()
            .contains("-10-11T22:14:15.000Z"),
        "{e}"
    );
    assert!(e.get("timestamp").is_none(), "{e}");

    let e = by_original(&all, "<165>1");
    assert_eq!(e["@timestamp"], "2003-10-11T22:14:15.003Z", "{e}");
    assert_eq!(e["log"]["syslog"]["msgid"], "ID47", "{e}");
    assert_eq!(
        e["log"]["syslog"]["structured_data"], r#"[exampleSDID@32473 iut="3"]"#,
        "{e}"
    );
    assert_eq!(e["process"]["name"], "evntslog", "{e}");
    assert_eq!(e["message"], "An application event", "{e}");
    assert!(e.get("tags").is_none(), "{e}");

    let e = by_original(&all, "not syslog");
    assert_eq!(e["tags"][0], "_grokparsefailure_sysloginput", "{e}");
    assert_eq!(
        (e["priority"].clone(), e["severity_label"].clone()),
        (13.into(), "Notice".into()),
        "{e}"
    );
    assert_eq!(e["host"], "127.0.0.1", "{e}");

    let e = by_original(&all, "<13>");
    assert_eq!(
        e["message"], "over tcp\n",
        "as Logstash, TCP lines keep their newline: {e}"
    );
    assert_eq!(e["logsource"], "web1", "{e}");
    assert_eq!(e["program"], "nginx", "{e}");
    assert_eq!(e["timestamp"], "Nov 24 10:00:00", "{e}");
    assert!(
        e["@timestamp"]
            .as_str()
            .unwrap()
            .ends_with("-11-24T10:00:00.000Z"),
        "{e}"
    );
    assert!(
        all.iter().all(|e| e["message"] != "partial"),
        "a partial TCP line is dropped"
    );
}

#[test]
fn syslog_pri_decodes_priorities() {
    let dir = temp_dir("syslog", "pri");
    let out = dir.join("out.json");
    let config = format!(
        r#"input {{ generator {{ lines => ['{{"syslog_pri": "165"}}', '{{"other": 1}}', '{{"syslog_pri": 250}}'] count => 1 codec => json }} }}
           filter {{ syslog_pri {{ ecs_compatibility => disabled }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(
        &dir,
        "pipeline.workers: 1\n",
        &[],
        &config,
        Stdio::null(),
        Stdio::null(),
    );
    assert!(r.exit(60).success(), "{}", r.log());
    let all = events(&out, 3);
    assert_eq!(all[0]["syslog_facility_code"], 20);
    assert_eq!(all[0]["syslog_severity_code"], 5);
    assert_eq!(all[0]["syslog_facility"], "local4");
    assert_eq!(all[0]["syslog_severity"], "notice");
    // Missing: 13 (user-level, notice).
    assert_eq!(all[1]["syslog_facility"], "user-level");
    assert_eq!(all[1]["syslog_severity"], "notice");
    // Facility 31: no label, a tag.
    assert_eq!(all[2]["syslog_facility_code"], 31);
    assert_eq!(all[2]["tags"][0], "_syslogpriparsefailure");
    assert!(all[2].get("syslog_severity").is_none());
}

#[test]
fn proxy_protocol_names_the_client() {
    let dir = temp_dir("syslog", "proxy");
    let out = dir.join("out.json");
    let port = free_port();
    let config = format!(
        r#"input {{ syslog {{ port => {port} host => "127.0.0.1" proxy_protocol => true }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    );
    let mut r = Run::start(&dir, "", &[], &config, Stdio::null(), Stdio::null());
    let mut tcp = net_support::connect(port, 30);
    tcp.write_all(
        b"PROXY TCP4 10.9.8.7 10.0.0.1 5555 514\r\n<13>Nov 24 10:00:00 web1 app: via proxy\n",
    )
    .unwrap();
    drop(tcp);
    // Without the header: closed, nothing read.
    let mut bad = TcpStream::connect(("127.0.0.1", port)).unwrap();
    bad.write_all(b"<13>Nov 24 10:00:00 web1 app: no header\n")
        .unwrap();
    drop(bad);
    let all = events(&out, 1);
    std::thread::sleep(Duration::from_millis(500));
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let all_now = events(&out, 1);
    assert_eq!(all_now.len(), 1, "{all_now:?}");
    assert_eq!(all[0]["host"]["ip"], "10.9.8.7", "{}", all[0]);
    assert_eq!(all[0]["message"], "via proxy\n", "{}", all[0]);
}

//! The memcached filter through the binary against real memcached servers (the Debian
//! package, started here on free 127.0.0.1 ports): set then get, namespaces, TTL, keys spread
//! over two servers as Dalli's ring spreads them, and a server that goes away and comes back.

mod net_support;
mod run_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Memcached {
    child: Child,
    port: u16,
}

impl Memcached {
    fn start(port: u16) -> Option<Memcached> {
        let Ok(child) = Command::new("memcached")
            .args([
                "-l",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-U",
                "0",
                "-u",
                "root",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        else {
            net_support::missing("memcached (apt-get install memcached)");
            return None;
        };
        net_support::wait_listening(port, 10);
        Some(Memcached { child, port })
    }

    /// A raw `get`: the value, if any.
    fn get(&self, key: &str) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(s, "get {key}\r\n").unwrap();
        let mut r = BufReader::new(s);
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let parts: Vec<&str> = line.trim_end().split(' ').collect();
        if parts[0] != "VALUE" {
            return None;
        }
        let n: usize = parts[3].parse().unwrap();
        let mut data = vec![0; n + 2];
        r.read_exact(&mut data).unwrap();
        Some(String::from_utf8_lossy(&data[..n]).into_owned())
    }

    fn set(&self, key: &str, value: &str) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(s, "set {key} 0 0 {}\r\n{value}\r\n", value.len()).unwrap();
        let mut r = BufReader::new(s);
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert_eq!(line.trim_end(), "STORED");
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sluice(config: &str, input: &str) -> (Vec<serde_json::Value>, String) {
    let (ok, events, log) = run_support::pipe_through(config, input);
    assert!(ok, "{log}");
    (events, log)
}

#[test]
fn sets_gets_namespaces_and_ttl() {
    let Some(m) = Memcached::start(net_support::free_port()) else {
        return;
    };
    m.set("ns:color:7", "blue");
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
        filter {{
          if [op] == "set" {{ memcached {{ hosts => ["127.0.0.1:{p}"] namespace => "ns"
              set => {{ "name" => "user:%{{id}}" "n" => "count:%{{id}}" }} add_tag => ["stored"] }} }}
          if [op] == "ttl" {{ memcached {{ hosts => ["127.0.0.1:{p}"] ttl => 1 set => {{ "name" => "short" }} }} }}
          if [op] == "get" {{ memcached {{ hosts => ["127.0.0.1:{p}"] namespace => "ns"
              get => {{ "user:%{{id}}" => "[found][name]" "color:%{{id}}" => "color" "nothing:%{{id}}" => "none" }}
              add_tag => ["hit"] }} }}
          if [op] == "miss" {{ memcached {{ hosts => ["127.0.0.1:{p}"] get => {{ "nothing" => "none" }} add_tag => ["hit"] }} }}
        }}
        output {{ stdout {{ codec => json_lines }} }}"#,
        p = m.port
    );
    let input = r#"{"op":"set","id":7,"name":"ada","n":3}
{"op":"ttl","name":"brief"}
{"op":"get","id":7}
{"op":"miss"}
"#;
    let (events, log) = sluice(&config, input);
    let by = |op: &str| events.iter().find(|e| e["op"] == op).unwrap().clone();
    assert_eq!(by("set")["tags"], serde_json::json!(["stored"]), "{log}");
    let got = by("get");
    assert_eq!(got["found"]["name"], "ada", "{got}");
    assert_eq!(got["color"], "blue");
    assert!(got.get("none").is_none());
    assert_eq!(got["tags"], serde_json::json!(["hit"]));
    let miss = by("miss");
    assert!(miss.get("tags").is_none(), "{miss}");
    // What the servers hold: namespaced keys, text values, numbers as JSON.
    assert_eq!(m.get("ns:user:7").as_deref(), Some("ada"));
    assert_eq!(m.get("ns:count:7").as_deref(), Some("3"));
    assert_eq!(m.get("short").as_deref(), Some("brief"));
    std::thread::sleep(Duration::from_millis(2100));
    assert_eq!(m.get("short"), None, "ttl => 1 expires");
}

#[test]
fn keys_spread_over_two_servers_and_a_lost_server_is_tagged_then_used_again() {
    let (Some(a), Some(b)) = (
        Memcached::start(net_support::free_port()),
        Memcached::start(net_support::free_port()),
    ) else {
        return;
    };
    let hosts = format!(r#"["127.0.0.1:{}", "127.0.0.1:{}"]"#, a.port, b.port);
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
        filter {{
          if [op] == "set" {{ memcached {{ hosts => {hosts} set => {{ "v" => "k%{{i}}" }} }} }}
          else {{ memcached {{ hosts => {hosts} get => {{ "k%{{i}}" => "got" }} }} }}
        }}
        output {{ stdout {{ codec => json_lines }} }}"#
    );
    let mut input = String::new();
    for i in 0..100 {
        input.push_str(&format!("{{\"op\":\"set\",\"i\":{i},\"v\":\"v{i}\"}}\n"));
    }
    for i in 0..100 {
        input.push_str(&format!("{{\"op\":\"get\",\"i\":{i}}}\n"));
    }
    let (events, log) = sluice(&config, &input);
    let got: Vec<_> = events.iter().filter(|e| e["op"] == "get").collect();
    assert_eq!(got.len(), 100, "{log}");
    for e in &got {
        assert_eq!(e["got"], format!("v{}", e["i"]), "{e}");
    }
    let on_a = (0..100)
        .filter(|i| a.get(&format!("k{i}")).is_some())
        .count();
    let on_b = (0..100)
        .filter(|i| b.get(&format!("k{i}")).is_some())
        .count();
    assert_eq!(on_a + on_b, 100);
    assert!(on_a > 10 && on_b > 10, "{on_a} / {on_b}");

    // One server gone: its events are tagged; back: used again.
    let port = a.port;
    drop(a);
    let config = format!(
        r#"input {{ stdin {{ codec => json_lines }} }}
        filter {{ memcached {{ hosts => ["127.0.0.1:{port}"] get => {{ "k" => "got" }} }} }}
        output {{ stdout {{ codec => json_lines }} }}"#
    );
    let (events, log) = sluice(&config, "{\"n\":1}\n");
    assert_eq!(
        events[0]["tags"],
        serde_json::json!(["_memcached_failure"]),
        "{log}"
    );
    assert!(log.contains("memcached communication error"), "{log}");
    let a = Memcached::start(port).unwrap();
    a.set("k", "back");
    let (events, _) = sluice(&config, "{\"n\":1}\n");
    assert_eq!(events[0]["got"], "back");
}

#[test]
fn option_errors_are_named() {
    for (config, want) in [
        ("memcached { hosts => [] }", "hosts"),
        ("memcached { ttl => -1 }", "ttl"),
        ("memcached { hosts => [\"a:b\"] }", "port"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args([
                "-t",
                "-e",
                &format!("input {{ stdin {{}} }} filter {{ {config} }} output {{ null {{}} }}"),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{config}: {err}");
        assert!(err.contains(want), "{config}: {err}");
    }
}

//! The `relp` input through the real binary with rsyslog as its peer: rsyslog takes syslog
//! lines on a TCP port of its own and forwards them with `omrelp` (Debian's rsyslog-relp) to
//! sluice. Every message arrives; and with a persisted queue, a sluice killed with SIGKILL
//! mid-stream and started again loses none (rsyslog sends again what was not acknowledged).

mod net_support;
mod run_support;

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use run_support::{temp_dir, Run};

struct Rsyslog {
    child: Child,
    port: u16,
}

impl Rsyslog {
    /// rsyslogd in the foreground, listening on a port of its own and forwarding to
    /// `relp_port`, retrying every second while sluice is away.
    fn start(dir: &Path, relp_port: u16) -> Option<Rsyslog> {
        let rsyslogd = ["/usr/sbin/rsyslogd", "/sbin/rsyslogd"]
            .into_iter()
            .find(|p| Path::new(p).exists());
        let omrelp = std::fs::read_dir("/usr/lib")
            .into_iter()
            .flatten()
            .flatten()
            .any(|d| d.path().join("rsyslog/omrelp.so").exists());
        let Some(rsyslogd) = rsyslogd.filter(|_| omrelp) else {
            net_support::missing("rsyslogd with omrelp (Debian's rsyslog and rsyslog-relp)");
            return None;
        };
        let port = net_support::free_port();
        let work = dir.join("rsyslog");
        std::fs::create_dir_all(&work).unwrap();
        let conf = work.join("rsyslog.conf");
        std::fs::write(
            &conf,
            format!(
                r#"global(workDirectory="{work}")
module(load="imtcp")
module(load="omrelp")
input(type="imtcp" address="127.0.0.1" port="{port}")
action(type="omrelp" target="127.0.0.1" port="{relp_port}"
       queue.type="LinkedList" queue.size="100000"
       action.resumeRetryCount="-1" action.resumeInterval="1")
"#,
                work = work.display()
            ),
        )
        .unwrap();
        let child = Command::new(rsyslogd)
            .arg("-n")
            .arg("-f")
            .arg(&conf)
            .arg("-i")
            .arg(work.join("rsyslogd.pid"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        net_support::wait_listening(port, 30);
        Some(Rsyslog { child, port })
    }
}

/// Sends orders `from..to` as syslog lines into rsyslog's TCP port, paced.
fn send(port: u16, from: usize, to: usize) {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    for i in from..to {
        writeln!(c, "<13>Nov 28 10:00:00 web1 shop: order {i} shipped").unwrap();
        if i % 100 == 99 {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Rsyslog {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Order numbers in the output file, with how many times each came.
fn orders(text: &str) -> BTreeMap<usize, usize> {
    let mut seen = BTreeMap::new();
    for l in text.lines() {
        let e: serde_json::Value = serde_json::from_str(l).unwrap();
        let m = e["message"].as_str().unwrap();
        let n = m
            .split("order ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{e}"));
        *seen.entry(n).or_insert(0) += 1;
    }
    seen
}

fn config(port: u16, out: &Path) -> String {
    format!(
        r#"input {{ relp {{ host => "127.0.0.1" port => {port} }} }}
           output {{ file {{ path => "{}" }} }}"#,
        out.display()
    )
}

#[test]
fn rsyslog_forwards_every_message() {
    let dir = temp_dir("relp", "forward");
    let out = dir.join("out.json");
    let port = net_support::free_port();
    let mut r = Run::start(
        &dir,
        "",
        &[],
        &config(port, &out),
        Stdio::null(),
        Stdio::null(),
    );
    net_support::wait_listening(port, 30);
    let Some(rs) = Rsyslog::start(&dir, port) else {
        return;
    };
    let total = 1000;
    send(rs.port, 0, total);
    let text = r.wait_lines(&out, total, 60);
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let seen = orders(&text);
    assert_eq!(seen.len(), total);
    assert!(
        seen.values().all(|n| *n == 1),
        "duplicates without a failure"
    );
    let e: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let m = e["message"].as_str().unwrap();
    // rsyslog's forwarding format: PRI, time, host, tag, message.
    assert!(m.starts_with("<13>") && m.contains("web1 shop:"), "{e}");
    assert!(e["host"].as_str().unwrap().starts_with("127.0.0.1:"), "{e}");
}

#[test]
fn a_killed_sluice_loses_nothing_rsyslog_sent() {
    let dir = temp_dir("relp", "sigkill");
    let out = dir.join("out.json");
    let port = net_support::free_port();
    let settings = format!(
        "queue.type: persisted\npath.data: {}\npipeline.batch.size: 50\n",
        dir.join("data").display()
    );
    let mut r = Run::start(
        &dir,
        &settings,
        &[],
        &config(port, &out),
        Stdio::null(),
        Stdio::null(),
    );
    net_support::wait_listening(port, 30);
    let Some(rs) = Rsyslog::start(&dir, port) else {
        return;
    };
    let total = 6000;
    let sender = std::thread::spawn({
        let port = rs.port;
        move || {
            let rs = Rsyslog {
                child: Command::new("true").spawn().unwrap(),
                port,
            };
            send(rs.port, 0, total);
        }
    });
    r.wait_lines(&out, 1000, 60);
    r.signal("-KILL");
    let _ = r.exit(10);
    let at_kill = orders(&run_support::complete_text(&out)).len();
    assert!(at_kill < total, "the kill came after the stream: {at_kill}");
    std::thread::sleep(Duration::from_millis(1500));
    let mut r = Run::start(
        &dir,
        &settings,
        &[],
        &config(port, &out),
        Stdio::null(),
        Stdio::null(),
    );
    sender.join().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let mut seen = BTreeMap::new();
    while std::time::Instant::now() < deadline {
        seen = orders(&run_support::complete_text(&out));
        if seen.len() == total {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    r.signal("-TERM");
    assert!(r.exit(30).success(), "{}", r.log());
    let missing: Vec<usize> = (0..total).filter(|i| !seen.contains_key(i)).collect();
    let again: usize = seen.values().map(|n| n - 1).sum();
    eprintln!("{at_kill} written at the kill; {again} sent twice (in flight at the kill)");
    assert!(
        missing.is_empty(),
        "{} lost: {:?}",
        missing.len(),
        &missing[..missing.len().min(20)]
    );
}

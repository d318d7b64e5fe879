//! What the redis tests share: a `redis-server` of their own on a free 127.0.0.1 port (killed on
//! drop), just enough RESP to set up and inspect them, sluice processes, and counting what
//! came out. Without `redis-server` the tests are skipped with a message, except under
//! `CI=true`, where its absence is a failure (`scripts/test` installs it).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::net_support;

// ---------------------------------------------------------------- redis-server and a client

pub fn redis_available() -> bool {
    let found = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("redis-server is not installed (scripts/test installs it: apt-get install redis-server)");
        }
        eprintln!("skipping: redis-server is not installed (apt-get install redis-server)");
    }
    found
}

pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-redis-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A redis-server of our own, killed on drop.
pub struct Redis {
    pub child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    pub args: Vec<String>,
    pub password: Option<String>,
}

impl Redis {
    pub fn start(dir: &Path, args: &[&str]) -> Redis {
        let password = args
            .iter()
            .position(|a| *a == "--requirepass")
            .map(|i| args[i + 1].to_owned());
        let mut r = Redis {
            child: None,
            port: net_support::free_port(),
            dir: dir.join("redis"),
            args: args.iter().map(|s| s.to_string()).collect(),
            password,
        };
        std::fs::create_dir_all(&r.dir).unwrap();
        r.spawn();
        r
    }

    pub fn spawn(&mut self) {
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--daemonize", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--logfile", ""]);
        if !self.args.iter().any(|a| a == "--appendonly") {
            cmd.args(["--appendonly", "no"]);
        }
        cmd.args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        self.child = Some(cmd.spawn().expect("starting redis-server"));
        let started = Instant::now();
        loop {
            if let Ok(mut c) = self.try_client() {
                if c.cmd(&["PING"]) == Reply::Simple("PONG".into()) {
                    return;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM (redis writes its append-only file and exits), then wait.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            signal(c.id(), "-TERM");
            wait_exit(&mut c, Duration::from_secs(20));
        }
    }

    pub fn try_client(&self) -> std::io::Result<Resp> {
        let mut c = Resp::connect(self.port)?;
        if let Some(p) = &self.password {
            c.cmd(&["AUTH", p]);
        }
        Ok(c)
    }

    pub fn client(&self) -> Resp {
        self.try_client().expect("connecting to redis-server")
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    pub fn int(&self) -> i64 {
        match self {
            Reply::Int(i) => *i,
            other => panic!("expected an integer, got {other:?}"),
        }
    }
    pub fn strings(&self) -> Vec<String> {
        match self {
            Reply::Array(Some(items)) => items
                .iter()
                .map(|i| match i {
                    Reply::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
                    other => panic!("expected bulk strings, got {other:?}"),
                })
                .collect(),
            Reply::Array(None) => Vec::new(),
            other => panic!("expected an array, got {other:?}"),
        }
    }
}

/// Just enough RESP to set up and inspect the tests.
pub struct Resp {
    pub r: BufReader<TcpStream>,
    pub w: TcpStream,
}

pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

impl Resp {
    /// A connection to 127.0.0.1:`port` (a server or a Sentinel), replies within 30 s.
    pub fn connect(port: u16) -> std::io::Result<Resp> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Resp {
            r: BufReader::new(s.try_clone()?),
            w: s,
        })
    }

    pub fn cmd(&mut self, args: &[&str]) -> Reply {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.pipeline(&[args]).pop().unwrap()
    }

    pub fn pipeline(&mut self, cmds: &[Vec<&[u8]>]) -> Vec<Reply> {
        let mut buf = Vec::new();
        for c in cmds {
            encode(&mut buf, c);
        }
        self.w.write_all(&buf).unwrap();
        cmds.iter().map(|_| self.read()).collect()
    }

    pub fn read(&mut self) -> Reply {
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        let line = line.trim_end_matches("\r\n");
        let (kind, rest) = line.split_at(1);
        match kind {
            "+" => Reply::Simple(rest.to_owned()),
            "-" => Reply::Error(rest.to_owned()),
            ":" => Reply::Int(rest.parse().unwrap()),
            "$" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return Reply::Bulk(None);
                }
                let mut b = vec![0; n as usize + 2];
                self.r.read_exact(&mut b).unwrap();
                b.truncate(n as usize);
                Reply::Bulk(Some(b))
            }
            "*" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return Reply::Array(None);
                }
                Reply::Array(Some((0..n).map(|_| self.read()).collect()))
            }
            _ => panic!("bad reply line {line:?}"),
        }
    }

    pub fn llen(&mut self, key: &str) -> i64 {
        self.cmd(&["LLEN", key]).int()
    }

    /// RPUSHes `{"n":i,...}` for every i in `range`, 1000 values per command.
    pub fn seed(&mut self, key: &str, range: std::ops::Range<usize>) {
        let values: Vec<String> = range
            .map(|i| {
                format!(
                    "{{\"n\":{i},\"message\":\"seeded event number {i} with some padding to make it about two hundred bytes long, as log lines often are\",\"host\":\"test\"}}"
                )
            })
            .collect();
        for chunk in values.chunks(20_000) {
            let cmds: Vec<Vec<&[u8]>> = chunk
                .chunks(1000)
                .map(|c| {
                    let mut args: Vec<&[u8]> = vec![b"RPUSH", key.as_bytes()];
                    args.extend(c.iter().map(|v| v.as_bytes()));
                    args
                })
                .collect();
            for r in self.pipeline(&cmds) {
                assert!(matches!(r, Reply::Int(_)), "{r:?}");
            }
        }
    }
}

// ---------------------------------------------------------------- sluice processes

pub fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill").args([sig, &pid.to_string()]).status();
}

pub fn wait_exit(child: &mut Child, limit: Duration) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("process {} did not exit within {limit:?}", child.id());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running sluice; its standard error goes to `log`. Killed on drop.
pub struct Sluice {
    pub child: Child,
    pub log: PathBuf,
}

impl Sluice {
    pub fn start(dir: &Path, name: &str, config: &str, extra: &[&str]) -> Sluice {
        let log = dir.join(format!("{name}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["--log.level", "warn", "-w", "2"])
            .args(extra)
            .args(["-e", config])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Sluice { child, log }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for the process to end by itself; it must succeed.
    pub fn wait_success(&mut self, limit: Duration) {
        let s = wait_exit(&mut self.child, limit);
        assert!(s.success(), "sluice exited with {s}:\n{}", self.log());
    }

    /// SIGTERM: it must drain and exit 0.
    pub fn term(&mut self) {
        signal(self.child.id(), "-TERM");
        self.wait_success(Duration::from_secs(30));
    }

    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Sluice {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn line_count(path: &Path) -> usize {
    std::fs::read(path).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}

pub fn events(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    // Complete lines only: the last may be half written while the test reads.
    let text = text.rfind('\n').map_or("", |end| &text[..end]);
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Polls `cond` every 50 ms for at most `limit`; panics with `what` if it never holds.
pub fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let started = Instant::now();
    while !cond() {
        assert!(
            started.elapsed() < limit,
            "timed out after {limit:?}: {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How many times each value of field `f` (an integer) was delivered, over several files.
pub fn tally(paths: &[&Path], f: impl Fn(&serde_json::Value) -> i64) -> BTreeMap<i64, usize> {
    let mut seen = BTreeMap::new();
    for p in paths {
        for e in events(p) {
            *seen.entry(f(&e)).or_insert(0) += 1;
        }
    }
    seen
}

pub fn seq(e: &serde_json::Value) -> i64 {
    e["event"]["sequence"].as_i64().unwrap()
}

pub fn n(e: &serde_json::Value) -> i64 {
    e["n"].as_i64().unwrap_or_else(|| panic!("no n in {e}"))
}

pub fn assert_exactly_once(seen: &BTreeMap<i64, usize>, count: i64) {
    let dups: Vec<_> = seen.iter().filter(|(_, &c)| c > 1).take(5).collect();
    assert!(dups.is_empty(), "delivered more than once: {dups:?}");
    let missing: Vec<_> = (0..count)
        .filter(|i| !seen.contains_key(i))
        .take(5)
        .collect();
    assert!(missing.is_empty(), "never delivered: {missing:?}...");
    assert_eq!(seen.len() as i64, count, "unexpected values delivered");
}

pub fn output_file(path: &Path) -> String {
    format!("file {{ path => \"{}\" }}", path.display())
}

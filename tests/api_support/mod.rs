//! Shared by the monitoring API tests: a sluice process whose API port is read from its log,
//! a minimal HTTP/1.1 client (127.0.0.1 only), and the shared corpus directory.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A fresh directory for one test, with a `settings` folder.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-api-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("settings")).unwrap();
    d
}

/// The shared corpus (`$SLUICE_SHARED`, else `../shared` beside the project); `None` (after
/// saying so) when absent, a failure under `CI=true`.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("SLUICE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    if dir.join("compat").is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "shared corpus not found at {} (set SLUICE_SHARED); required under CI=true",
            dir.display()
        );
    }
    eprintln!(
        "SKIP: shared corpus not found at {}; set SLUICE_SHARED to run this test",
        dir.display()
    );
    None
}

/// A running sluice, killed when dropped.
pub struct Sluice {
    pub child: Child,
    pub port: u16,
    pub tls: bool,
    log: Arc<Mutex<Vec<String>>>,
}

impl Sluice {
    /// Starts `sluice --path.settings <dir>/settings` with `sluice_yml` (path.data is added)
    /// and `pipelines_yml` (when not empty) and waits (bounded) for the API to listen.
    pub fn start(dir: &Path, sluice_yml: &str, pipelines_yml: &str, args: &[&str]) -> Sluice {
        Sluice::start_with(dir, sluice_yml, pipelines_yml, args, Stdio::null())
    }

    /// [`Sluice::start`] with its standard output going to `stdout`.
    pub fn start_with(
        dir: &Path,
        sluice_yml: &str,
        pipelines_yml: &str,
        args: &[&str],
        stdout: Stdio,
    ) -> Sluice {
        let settings = dir.join("settings");
        std::fs::write(
            settings.join("sluice.yml"),
            format!("path.data: {}\n{sluice_yml}", dir.join("data").display()),
        )
        .unwrap();
        if !pipelines_yml.is_empty() {
            std::fs::write(settings.join("pipelines.yml"), pipelines_yml).unwrap();
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["--log.level", "info", "--path.settings"])
            .arg(&settings)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let found = log.lock().unwrap().iter().find_map(|l| {
                let i = l.find("monitoring API listening on ")?;
                let url = l[i..].split_whitespace().nth(4)?.to_owned();
                let tls = url.starts_with("https://");
                let port = url.rsplit(':').next()?.parse::<u16>().ok()?;
                Some((port, tls))
            });
            if let Some((port, tls)) = found {
                return Sluice {
                    child,
                    port,
                    tls,
                    log,
                };
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "sluice exited ({status}) before its API listened:\n{}",
                    log.lock().unwrap().join("\n")
                );
            }
            assert!(
                Instant::now() < deadline,
                "the API did not start within 30 s:\n{}",
                log.lock().unwrap().join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    pub fn get(&self, path: &str) -> HttpResponse {
        http_get(self.port, path, None)
    }

    pub fn get_auth(&self, path: &str, user_pass: &str) -> HttpResponse {
        http_get(self.port, path, Some(user_pass))
    }

    /// GET returning JSON (asserting 200).
    pub fn json(&self, path: &str) -> serde_json::Value {
        let r = self.get(path);
        assert_eq!(r.status, 200, "GET {path}: {}", r.body);
        serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("GET {path}: {e}: {}", r.body))
    }

    /// Polls `/_node/stats/pipelines` until `ready` holds (at most `secs` seconds).
    pub fn wait_for(
        &self,
        secs: u64,
        what: &str,
        ready: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let v = self.json("/_node/stats/pipelines");
            if ready(&v) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; last stats: {v:#}\nlog:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGTERM, then wait (bounded) for exit 0.
    pub fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let status = self.exit(30);
        assert!(status.success(), "sluice exit: {status}\n{}", self.log());
    }

    /// Waits (at most `secs` seconds, else fails the test) for sluice to exit by itself.
    pub fn exit(&mut self, secs: u64) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "sluice did not exit within {secs} s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Sluice {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn base64(input: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `GET path` on 127.0.0.1:port with `Connection: close`, bounded by timeouts.
pub fn http_get(port: u16, path: &str, basic: Option<&str>) -> HttpResponse {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = basic.map_or(String::new(), |up| {
        format!("Authorization: Basic {}\r\n", base64(up.as_bytes()))
    });
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    HttpResponse {
        status,
        headers,
        body,
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

/// Writes the API's keystore file at `path`: the PEM certificate followed by its PEM key,
/// the bundle `api.ssl.keystore.path` reads.
pub fn write_keystore(path: &Path, cert: &Path, key: &Path) {
    let mut pem = std::fs::read(cert).unwrap();
    pem.extend(std::fs::read(key).unwrap());
    std::fs::write(path, pem).unwrap();
}

/// Every key path of a JSON document: objects' keys joined with `.`, array elements as `[]`.
pub fn key_paths(
    v: &serde_json::Value,
    prefix: &str,
    out: &mut std::collections::BTreeSet<String>,
) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.insert(p.clone());
                key_paths(v, &p, out);
            }
        }
        serde_json::Value::Array(items) => {
            for i in items {
                key_paths(i, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

//! For the network input tests: free ports, the go-lumber test client (`tests/lumber`, built
//! by `scripts/test`, or here when Go is installed), and TLS certificates made with openssl.
//! A missing tool skips the test, except under `CI=true`, where it fails it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A connection to 127.0.0.1:`port`, retried until something listens there (at most
/// `secs` seconds).
/// A UDP port free on 127.0.0.1 when asked.
#[allow(dead_code)]
pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn connect(port: u16, secs: u64) -> std::net::TcpStream {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => return s,
            Err(e) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "nothing listens on {port} after {secs} s: {e}"
                );
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
    }
}

/// Waits until something listens on 127.0.0.1:`port` (at most `secs` seconds).
pub fn wait_listening(port: u16, secs: u64) {
    drop(connect(port, secs));
}

fn ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// Says why a test cannot run: a failure under CI, a skip otherwise.
pub fn missing(what: &str) {
    assert!(!ci(), "{what}");
    eprintln!("skipping: {what}");
}

/// The OpenTelemetry Python SDK's python (`SLUICE_OTEL_PYTHON`, else the cache
/// `scripts/otel-python` fills); `None` (after [`missing`]) when absent.
#[allow(dead_code)]
pub fn otel_python() -> Option<PathBuf> {
    let p = std::env::var_os("SLUICE_OTEL_PYTHON")
        .map(PathBuf::from)
        .or_else(|| {
            let home = std::env::var_os("HOME")?;
            Some(PathBuf::from(home).join(".cache/sluice/otel-python-1.45.2-grpc/bin/python"))
        })
        .filter(|p| p.exists());
    if p.is_none() {
        missing("the OpenTelemetry Python SDK (scripts/otel-python)");
    }
    p
}

/// The python of the peer libraries (graypy, pygelf, aiosmtpd): `SLUICE_PEERS_PYTHON`, else
/// what `scripts/python-peers` makes; `None` (after [`missing`]) when it cannot be had.
#[allow(dead_code)]
pub fn peers_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SLUICE_PEERS_PYTHON").map(PathBuf::from) {
        if p.exists() {
            return Some(p);
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let made = Command::new(root.join("scripts/python-peers"))
        .stderr(std::process::Stdio::inherit())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.trim()
                .strip_prefix("SLUICE_PEERS_PYTHON=")
                .map(PathBuf::from)
        })
        .filter(|p| p.exists());
    if made.is_none() {
        missing("the Python peer libraries (scripts/python-peers)");
    }
    made
}

/// The go-lumber client binary, built when missing; `None` (after [`missing`]) without Go.
pub fn lumber_client() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = root.join("target/test-clients/lumber-client");
    if bin.is_file() {
        return Some(bin);
    }
    static BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    if bin.is_file() {
        return Some(bin);
    }
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(root.join("tests/lumber"))
        .output();
    match built {
        Ok(o) if o.status.success() => Some(bin),
        Ok(o) => {
            missing(&format!(
                "cannot build tests/lumber: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
            None
        }
        Err(e) => {
            missing(&format!("go is not installed ({e}): no beats test client"));
            None
        }
    }
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate, in `dir`.
pub struct Certs {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    /// A client certificate from another authority.
    pub stranger_cert: PathBuf,
    pub stranger_key: PathBuf,
}

pub fn certs(dir: &Path) -> Option<Certs> {
    if Command::new("openssl").arg("version").output().is_err() {
        missing("openssl is not installed");
        return None;
    }
    std::fs::create_dir_all(dir).unwrap();
    let run = |args: &[&str]| {
        let o = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    for ca in ["ca", "other-ca"] {
        run(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &format!("{ca}.key"),
            "-out",
            &format!("{ca}.crt"),
            "-days",
            "2",
            "-subj",
            &format!("/CN=sluice test {ca}"),
        ]);
    }
    std::fs::write(
        dir.join("server.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("client.cnf"),
        "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n",
    )
    .unwrap();
    for (name, ca, ext) in [
        ("server", "ca", "server.cnf"),
        ("client", "ca", "client.cnf"),
        ("stranger", "other-ca", "client.cnf"),
    ] {
        run(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
            "-subj",
            &format!("/CN={name}"),
        ]);
        run(&[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{ca}.crt"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-out",
            &format!("{name}.crt"),
            "-days",
            "2",
            "-extfile",
            ext,
        ]);
    }
    Some(Certs {
        ca: dir.join("ca.crt"),
        server_cert: dir.join("server.crt"),
        server_key: dir.join("server.key"),
        client_cert: dir.join("client.crt"),
        client_key: dir.join("client.key"),
        stranger_cert: dir.join("stranger.crt"),
        stranger_key: dir.join("stranger.key"),
    })
}

impl Certs {
    /// openssl's `s_server` on 127.0.0.1:`port` with the server certificate: what comes on its
    /// stdin goes to the client, what the client sends comes out on its stdout (piped). Waits
    /// until it listens (and that probe connection is done).
    pub fn s_server(&self, port: u16) -> std::process::Child {
        let server = Command::new("openssl")
            .args(["s_server", "-quiet", "-accept", &port.to_string()])
            .arg("-cert")
            .arg(&self.server_cert)
            .arg("-key")
            .arg(&self.server_key)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        wait_listening(port, 20);
        // s_server takes one connection at a time: let it be done with the probe.
        std::thread::sleep(std::time::Duration::from_millis(300));
        server
    }

    /// openssl's `s_client` to 127.0.0.1:`port`, trusting our authority and presenting `cert`
    /// and `key`, its stdin piped; the caller says where its output goes and spawns it.
    pub fn s_client(&self, port: u16, cert: &Path, key: &Path) -> Command {
        let mut c = Command::new("openssl");
        c.args([
            "s_client",
            "-quiet",
            "-connect",
            &format!("127.0.0.1:{port}"),
        ])
        .arg("-CAfile")
        .arg(&self.ca)
        .arg("-cert")
        .arg(cert)
        .arg("-key")
        .arg(key)
        .stdin(std::process::Stdio::piped());
        c
    }
}

/// Settings for a pipeline blocked by its output (a stdout nobody reads): one worker, batches
/// of one, so that a few requests fill it.
pub const BLOCKING_SETTINGS: &str = "pipeline.workers: 1\npipeline.batch.size: 1\n";

/// Sends eight requests to a blocked HTTP input, 300 ms apart, each on a thread of its own
/// (`send(i)` sends the i-th and gives its status): the first few fit in the pipe and the
/// queue, the next ones wait and hold the input's slots, the rest are refused. Waits a second
/// more, so that the slots are taken when it returns.
pub fn fill_slowly<F>(send: F) -> Vec<std::thread::JoinHandle<u16>>
where
    F: Fn(usize) -> u16 + Clone + Send + 'static,
{
    let fill = (0..8)
        .map(|i| {
            std::thread::sleep(std::time::Duration::from_millis(300));
            let send = send.clone();
            std::thread::spawn(move || send(i))
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_secs(1));
    fill
}

/// How many of `fill`'s requests were accepted (200), once the pipeline drains: at least
/// three, and every other one refused with 429.
pub fn accepted(fill: Vec<std::thread::JoinHandle<u16>>) -> usize {
    let codes: Vec<u16> = fill.into_iter().map(|t| t.join().unwrap()).collect();
    let accepted = codes.iter().filter(|c| **c == 200).count();
    assert!(accepted >= 3, "{codes:?}");
    assert!(codes.iter().all(|c| *c == 200 || *c == 429), "{codes:?}");
    accepted
}

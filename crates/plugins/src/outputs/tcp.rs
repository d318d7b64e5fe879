//! `tcp`: writes encoded events to TCP connections, as Logstash's tcp output. In client mode
//! (the default) to `host:port`, connecting again `reconnect_interval` seconds after a failure,
//! over TLS with `ssl_enabled` (`ssl_certificate_authorities` or the system's,
//! `ssl_certificate`/`ssl_key`, `ssl_verification_mode`). In server mode (`mode => server`) it
//! listens on `host:port` and sends every event to every client connected at the time (none
//! connected: the events go nowhere, as in Logstash); a client that cannot take a batch is
//! dropped. Server mode takes the inputs' server TLS options (`ssl_enabled`,
//! `ssl_certificate`/`ssl_key`, `ssl_client_authentication` with
//! `ssl_certificate_authorities`, `ssl_supported_protocols`, `ssl_handshake_timeout`); each
//! client's handshake runs on its own thread, and only a client that completed it is sent to. The codec is `json` by default
//! (events back to back, as Logstash writes them; `json_lines` puts one per line). A batch is
//! encoded into one buffer and written with one call; when the write fails, the connection is
//! dropped and the batch retried, so events go out at least once.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sluice_event::Event;
use sluice_pipeline::{Codec, ConfigError, Options, Output, OutputError, WriteContext};

/// How long a write may block before the connection counts as broken.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Server mode's TLS handshakes under way at once (a thread each); connections past it are
/// closed.
const MAX_HANDSHAKES: usize = 64;

/// Connects with a bounded wait to each of `target`'s addresses.
pub(crate) fn connect(target: &str) -> std::io::Result<TcpStream> {
    use std::net::ToSocketAddrs;
    let mut last = None;
    for addr in target.to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(10)) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no address")))
}

/// A connection, plain or TLS.
type Stream = Box<dyn Write + Send>;

/// Server mode's connected clients.
type Clients = Arc<Mutex<Vec<Stream>>>;

pub struct TcpOutput {
    /// The plugin, in log lines ("tcp output", "syslog output").
    name: &'static str,
    target: String,
    codec: Mutex<Box<dyn Codec>>,
    reconnect: Duration,
    /// The connection, and when the last attempt failed.
    conn: Mutex<(Option<Stream>, Option<Instant>)>,
    tls: Option<(
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
    /// Server mode: the connected clients, and the accepting thread's stop flag.
    server: Option<(Clients, Arc<AtomicBool>)>,
}

/// Server mode's accepting thread: binds (retrying while the address is taken: a reloaded
/// pipeline's predecessor may still hold it) and takes clients until `stop`.
fn accept_clients(
    target: String,
    tls: Option<crate::tls::ServerTls>,
    clients: Clients,
    stop: Arc<AtomicBool>,
) {
    let mut warned = false;
    let listener = loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        match TcpListener::bind(&target) {
            Ok(l) => break l,
            Err(e) => {
                if !warned {
                    tracing::warn!("tcp output: cannot listen on {target}: {e}; retrying");
                    warned = true;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    if listener.set_nonblocking(true).is_err() {
        return;
    }
    tracing::info!("tcp output listening on {target}");
    let handshaking = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((s, peer)) => {
                let _ = s.set_nonblocking(false);
                let _ = s.set_nodelay(true);
                // A client that stops reading is dropped, not waited for.
                let _ = s.set_write_timeout(Some(WRITE_TIMEOUT));
                let Some(tls) = &tls else {
                    clients
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(Box::new(s));
                    continue;
                };
                if handshaking.fetch_add(1, Ordering::Relaxed) >= MAX_HANDSHAKES {
                    handshaking.fetch_sub(1, Ordering::Relaxed);
                    tracing::warn!("tcp output: {MAX_HANDSHAKES} TLS handshakes under way; closing {peer}'s connection");
                    continue;
                }
                let (tls, clients) = (tls.clone(), Arc::clone(&clients));
                let count = Arc::clone(&handshaking);
                let spawned = std::thread::Builder::new()
                    .name("tcp-out-tls".into())
                    .spawn(move || {
                        match handshake(s, &tls) {
                            Ok(stream) => clients
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(stream),
                            Err(e) => {
                                tracing::warn!("tcp output: TLS handshake with {peer} failed: {e}")
                            }
                        }
                        count.fetch_sub(1, Ordering::Relaxed);
                    });
                if let Err(e) = spawned {
                    handshaking.fetch_sub(1, Ordering::Relaxed);
                    tracing::warn!("tcp output: no thread for {peer}'s TLS handshake: {e}");
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// A server-mode client's TLS handshake, within `ssl_handshake_timeout`.
fn handshake(mut s: TcpStream, tls: &crate::tls::ServerTls) -> std::io::Result<Stream> {
    let deadline = Instant::now() + tls.handshake_timeout;
    let mut conn =
        rustls::ServerConnection::new(Arc::clone(&tls.config)).map_err(std::io::Error::other)?;
    while conn.is_handshaking() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "not done within ssl_handshake_timeout",
            ));
        }
        s.set_read_timeout(Some(left))?;
        s.set_write_timeout(Some(left))?;
        conn.complete_io(&mut s)?;
    }
    s.set_read_timeout(None)?;
    s.set_write_timeout(Some(WRITE_TIMEOUT))?;
    Ok(Box::new(rustls::StreamOwned::new(conn, s)))
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let host = opts.required_string("host")?;
    let port = crate::net::port(opts, "port", None)?;
    let server_mode = opts.choice("mode", &["client", "server"], "client")? == "server";
    let reconnect = opts.int("reconnect_interval")?.unwrap_or(10);
    if reconnect < 0 {
        return Err(opts.error("reconnect_interval", "must be 0 or more seconds"));
    }
    opts.reject_obsolete(&[
        ("ssl_enable", "ssl_enabled"),
        ("ssl_cacert", "ssl_certificate_authorities"),
        ("ssl_cert", "ssl_certificate"),
        ("ssl_verify", "ssl_verification_mode"),
    ])?;
    let server_tls = if server_mode {
        if let Some(name) = ["ssl_verification_mode"].into_iter().find(|n| opts.has(n)) {
            opts.take(name);
            return Err(opts.error(name, "is for client mode (in server mode, ssl_client_authentication says whether clients need a certificate)"));
        }
        crate::tls::read_server(opts)?
    } else {
        if let Some(name) = ["ssl_client_authentication", "ssl_handshake_timeout"]
            .into_iter()
            .find(|n| opts.has(n))
        {
            opts.take(name);
            return Err(opts.error(name, "is for server mode (mode => server)"));
        }
        None
    };
    let tls = if server_mode {
        None
    } else {
        crate::tls::read(opts, crate::tls::Names::Elasticsearch, false)?
    };
    let tls = client_tls(opts, tls, &host)?;
    let codec = opts.codec("json")?;
    let target = format!("{host}:{port}");
    let server = if server_mode {
        let clients: Clients = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (c, st, t) = (Arc::clone(&clients), Arc::clone(&stop), target.clone());
        std::thread::Builder::new()
            .name(format!("tcp-out-{port}"))
            .spawn(move || accept_clients(t, server_tls, c, st))
            .map_err(|e| opts.plugin_error(format!("tcp output: {e}")))?;
        Some((clients, stop))
    } else {
        None
    };
    Ok(Box::new(TcpOutput {
        name: "tcp output",
        target,
        codec: Mutex::new(codec),
        reconnect: Duration::from_secs(reconnect as u64),
        conn: Mutex::new((None, None)),
        tls,
        server,
    }))
}

/// The rustls client configuration of `tls` for connecting to `host`, as [`client`] takes it.
pub fn client_tls(
    opts: &Options,
    tls: Option<crate::tls::Tls>,
    host: &str,
) -> Result<
    Option<(
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
    ConfigError,
> {
    let Some(t) = tls else { return Ok(None) };
    let config = crate::tls::client_config(&t).map_err(|e| opts.plugin_error(e))?;
    let name = rustls::pki_types::ServerName::try_from(host.to_owned())
        .map_err(|e| opts.error("host", format!("not a TLS server name: {e}")))?;
    Ok(Some((config, name)))
}

/// A client to `target` writing each batch as `codec` encodes it, over TLS when `tls` is
/// given, connecting again `reconnect` after a failure: what the syslog and gelf outputs send
/// over TCP with. `name` is theirs, for the log.
pub fn client(
    name: &'static str,
    target: String,
    codec: Box<dyn Codec>,
    reconnect: Duration,
    tls: Option<(
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
) -> TcpOutput {
    TcpOutput {
        name,
        target,
        codec: Mutex::new(codec),
        reconnect,
        conn: Mutex::new((None, None)),
        tls,
        server: None,
    }
}

impl Output for TcpOutput {
    fn write(&self, events: &[&Event], _ctx: &WriteContext) -> Result<(), OutputError> {
        let mut buf = Vec::with_capacity(events.len() * 256);
        {
            let mut codec = self.codec.lock().unwrap_or_else(|e| e.into_inner());
            for e in events {
                codec.encode(e, &mut buf);
            }
        }
        if let Some((clients, _)) = &self.server {
            let mut clients = clients.lock().unwrap_or_else(|e| e.into_inner());
            clients.retain_mut(|s| s.write_all(&buf).and_then(|()| s.flush()).is_ok());
            return Ok(());
        }
        let mut c = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if c.0.is_none() {
            if let Some(failed) = c.1 {
                let wait = self.reconnect.saturating_sub(failed.elapsed());
                if !wait.is_zero() {
                    return Err(OutputError::retryable(format!(
                        "{}: {} unreachable; next attempt in {} s",
                        self.name,
                        self.target,
                        wait.as_secs()
                    )));
                }
            }
            match connect(&self.target) {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    let _ = s.set_write_timeout(Some(WRITE_TIMEOUT));
                    let w: Stream = match &self.tls {
                        None => Box::new(s),
                        Some((config, name)) => {
                            match rustls::ClientConnection::new(Arc::clone(config), name.clone()) {
                                Ok(session) => Box::new(rustls::StreamOwned::new(session, s)),
                                Err(e) => {
                                    c.1 = Some(Instant::now());
                                    return Err(OutputError::retryable(format!(
                                        "{}: TLS with {}: {e}",
                                        self.name, self.target
                                    )));
                                }
                            }
                        }
                    };
                    *c = (Some(w), None);
                }
                Err(e) => {
                    c.1 = Some(Instant::now());
                    return Err(OutputError::retryable(format!(
                        "{}: cannot connect to {}: {e}",
                        self.name, self.target
                    )));
                }
            }
        }
        let stream = c.0.as_mut().expect("connected above");
        if let Err(e) = stream.write_all(&buf).and_then(|()| stream.flush()) {
            *c = (None, Some(Instant::now()));
            return Err(OutputError::retryable(format!(
                "{}: writing to {}: {e}",
                self.name, self.target
            )));
        }
        Ok(())
    }

    fn close(&self) -> Result<(), OutputError> {
        if let Some((_, stop)) = &self.server {
            stop.store(true, Ordering::Relaxed);
        }
        Ok(())
    }
}

impl Drop for TcpOutput {
    fn drop(&mut self) {
        if let Some((_, stop)) = &self.server {
            stop.store(true, Ordering::Relaxed);
        }
    }
}

//! `tcp`: events from TCP connections, as Logstash's tcp input: a server (`mode => server`, the
//! default) that accepts connections, or a client (`mode => client`) that connects to
//! `host:port` and reconnects (over TLS with `ssl_enabled`: `ssl_certificate_authorities`,
//! `ssl_certificate`/`ssl_key` for a client certificate, `ssl_verification_mode`). Each
//! connection decodes with its own copy of the codec (`line`
//! by default; `plain` and `json` become `line` and `json_lines`, as Logstash does for stream
//! inputs), and what is left at its end is flushed. The bytes of each read become one batch.
//! A `multiline` codec keeps one record per connection, and its `auto_flush_interval` releases
//! a held record when the connection has been quiet that long.
//!
//! Fields (set unless the event has them): the peer's name, address and port, and the client
//! certificate's subject when TLS checks clients: `host`, `[@metadata][ip_address]`, `port`,
//! `sslsubject` without ECS; `[@metadata][input][tcp][source][name|ip|port]` and
//! `[@metadata][input][tcp][tls][client][subject]` with it. `proxy_protocol => true` reads a
//! PROXY v1 header first and reports the address it names (and the proxy's, in `proxy_host` /
//! `proxy_port` or `[@metadata][input][tcp][proxy][ip|port]`).
//!
//! A line that grows past `max_line_size` (default 16 MiB; beyond Logstash, which has no
//! limit) without its delimiter closes the connection with a log line: memory stays bounded
//! whatever a client sends.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};
use tokio::io::AsyncReadExt;

use crate::ecs::Ecs;
use crate::net::{self, Conn, Peer};

pub struct TcpInput {
    /// Server mode's address and TLS; client mode's server (`host`, `port`).
    listen: net::Listen,
    client_mode: bool,
    /// Client mode over TLS: the configuration and the server's name.
    client_tls: Option<(
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
        bool,
    )>,
    shared: Arc<Shared>,
}

struct Shared {
    codec: std::sync::Mutex<Box<dyn Codec>>,
    fields: Fields,
    reverse_dns: bool,
    keep_alive: bool,
    proxy_protocol: bool,
    /// TLS asks clients for a certificate: its subject is reported.
    subject: bool,
    max_line: usize,
    counters: Arc<NamedCounters>,
}

struct Fields {
    name: FieldRef,
    ip: FieldRef,
    port: FieldRef,
    proxy_ip: FieldRef,
    proxy_port: FieldRef,
    subject: FieldRef,
}

/// Where a connection's events say they came from.
#[derive(Clone, Default)]
struct Source {
    name: String,
    ip: String,
    port: Option<Value>,
    proxy: Option<(String, String)>,
    subject: Option<String>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    opts.reject_obsolete(&[
        ("ssl_enable", "ssl_enabled"),
        ("ssl_cert", "ssl_certificate"),
        ("ssl_verify", "ssl_client_authentication"),
    ])?;
    if opts.has("ssl_extra_chain_certs") {
        opts.take("ssl_extra_chain_certs");
        return Err(opts.error(
            "ssl_extra_chain_certs",
            "is not supported: put the whole chain in the ssl_certificate PEM file",
        ));
    }
    let host = opts.string_or("host", "0.0.0.0")?;
    let port = net::port(opts, "port", None)?;
    let client_mode = opts.choice("mode", &["server", "client"], "server")? == "client";
    let ecs = Ecs::from_options(opts)?;
    let codec = opts.codec_streaming("line", &[("plain", "line"), ("json", "json_lines")])?;
    let keep_alive = opts.boolean_or("tcp_keep_alive", false)?;
    let proxy_protocol = opts.boolean_or("proxy_protocol", false)?;
    let reverse_dns = opts.boolean_or("dns_reverse_lookup_enabled", true)?;
    let max_line = match opts.string("max_line_size")? {
        None => 16 << 20,
        Some(t) => sluice_config::parse_size(&t)
            .map_err(|e| opts.error("max_line_size", e))?
            .max(1) as usize,
    };
    let mut client_tls = None;
    if client_mode {
        if opts.has("ssl_client_authentication") {
            opts.take("ssl_client_authentication");
            return Err(opts.error(
                "ssl_client_authentication",
                "applies to server mode (use ssl_verification_mode in client mode)",
            ));
        }
        if let Some(t) = crate::tls::read(opts, crate::tls::Names::Elasticsearch, false)? {
            let config = crate::tls::client_config(&t).map_err(|e| opts.plugin_error(e))?;
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|e| opts.error("host", format!("not a TLS server name: {e}")))?;
            client_tls = Some((config, name, t.verify));
        }
    } else if opts.has("ssl_verification_mode") {
        opts.take("ssl_verification_mode");
        return Err(opts.error(
            "ssl_verification_mode",
            "applies to client mode (use ssl_client_authentication in server mode)",
        ));
    }
    let tls = if client_mode {
        None
    } else {
        crate::tls::read_server(opts)?
    };
    // The client certificate's subject is reported when TLS asks for one; in client mode,
    // the server's when it is verified.
    let subject = tls
        .as_ref()
        .is_some_and(|t| t.client_auth != crate::tls::ClientAuth::None)
        || client_tls.as_ref().is_some_and(|(_, _, verify)| *verify);
    let f = |s: &str| FieldRef::parse(s).expect("a valid field reference");
    let fields = if ecs.enabled() {
        Fields {
            name: f("[@metadata][input][tcp][source][name]"),
            ip: f("[@metadata][input][tcp][source][ip]"),
            port: f("[@metadata][input][tcp][source][port]"),
            proxy_ip: f("[@metadata][input][tcp][proxy][ip]"),
            proxy_port: f("[@metadata][input][tcp][proxy][port]"),
            subject: f("[@metadata][input][tcp][tls][client][subject]"),
        }
    } else {
        Fields {
            name: f("host"),
            ip: f("[@metadata][ip_address]"),
            port: f("port"),
            proxy_ip: f("proxy_host"),
            proxy_port: f("proxy_port"),
            subject: f("sslsubject"),
        }
    };
    Ok(Box::new(TcpInput {
        listen: net::Listen {
            input: "tcp",
            host,
            port,
            tls,
            keep_alive,
            threads: 2,
        },
        client_mode,
        client_tls,
        shared: Arc::new(Shared {
            codec: std::sync::Mutex::new(codec),
            fields,
            reverse_dns,
            keep_alive,
            proxy_protocol,
            subject,
            max_line,
            counters: Arc::new(NamedCounters::with_paths(&[
                "current_connections",
                "peak_connections",
            ])),
        }),
    }))
}

impl Input for TcpInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        if self.client_mode {
            let rt = net::runtime("tcp", 1)?;
            let result = rt.block_on(self.run_client(ctx));
            rt.shutdown_timeout(Duration::from_secs(1));
            return result;
        }
        let shared = Arc::clone(&self.shared);
        self.listen.run(ctx, move |conn, peer, ctx| {
            connection(conn, peer, Arc::clone(&shared), ctx)
        })
    }

    fn counters(&self) -> Option<Arc<NamedCounters>> {
        Some(Arc::clone(&self.shared.counters))
    }
}

impl TcpInput {
    /// Client mode: connects, reads until the server closes, connects again (after a second,
    /// so that a server that is down is not hammered), until the pipeline stops.
    async fn run_client(&self, ctx: &InputContext) -> Result<(), String> {
        let outage = crate::retry::Outage::new("tcp input (client mode)", "the server");
        let (host, port) = (&self.listen.host, self.listen.port);
        let target = format!("{host}:{port}");
        while !ctx.is_stopping() {
            let attempt = tokio::time::timeout(Duration::from_secs(10), net::connect(host, port));
            let attempt = tokio::select! {
                r = attempt => r.unwrap_or_else(|_| Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "connecting timed out"))),
                _ = ctx.stopped() => return Ok(()),
            };
            match attempt {
                Ok(stream) => {
                    if self.shared.keep_alive {
                        net::set_keep_alive(&stream);
                    }
                    let addr = stream
                        .peer_addr()
                        .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], port)));
                    let (conn, certificate): (Box<dyn Conn>, _) = match &self.client_tls {
                        None => (Box::new(stream), None),
                        Some((config, name, _)) => {
                            let connector = tokio_rustls::TlsConnector::from(Arc::clone(config));
                            let handshake = tokio::time::timeout(
                                Duration::from_secs(10),
                                connector.connect(name.clone(), stream),
                            );
                            let handshake = tokio::select! {
                                r = handshake => r.unwrap_or_else(|_| Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out"))),
                                _ = ctx.stopped() => return Ok(()),
                            };
                            match handshake {
                                Ok(tls) => {
                                    let cert = (tls.get_ref().1.peer_certificates())
                                        .and_then(|c| c.first())
                                        .map(|c| c.as_ref().to_vec());
                                    (Box::new(tls), cert)
                                }
                                Err(e) => {
                                    outage.failed(&target, &format!("TLS handshake: {e}"));
                                    tokio::select! {
                                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                                        _ = ctx.stopped() => {}
                                    }
                                    continue;
                                }
                            }
                        }
                    };
                    outage.recovered(&target);
                    let peer = Peer {
                        addr,
                        certificate,
                        tls: None,
                    };
                    connection(conn, peer, Arc::clone(&self.shared), ctx.clone()).await;
                }
                Err(e) => outage.failed(&target, &e),
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = ctx.stopped() => {}
            }
        }
        Ok(())
    }
}

async fn connection(conn: Box<dyn Conn>, peer: Peer, shared: Arc<Shared>, ctx: InputContext) {
    let c = &shared.counters;
    c.add_with_peak("current_connections", 1, "peak_connections");
    match read_connection(conn, &peer, &shared, &ctx).await {
        Ok(()) => tracing::debug!(client = %peer.addr, "tcp connection closed"),
        Err(e) => tracing::warn!(client = %peer.addr, "tcp input: closing the connection: {e}"),
    }
    c.sub("current_connections", 1);
}

async fn read_connection(
    mut conn: Box<dyn Conn>,
    peer: &Peer,
    shared: &Shared,
    ctx: &InputContext,
) -> Result<(), String> {
    let mut codec = (shared.codec.lock())
        .unwrap_or_else(|e| e.into_inner())
        .clone_box();
    let mut chunk = net::ReadBuffer::default();
    let mut stop = std::pin::pin!(ctx.stopped());
    let mut first: Vec<u8> = Vec::new();
    let mut source = source_of(peer.addr.ip(), peer.addr.port(), shared).await;
    source.subject = peer
        .certificate
        .as_deref()
        .filter(|_| shared.subject)
        .and_then(subject_of);
    if shared.proxy_protocol {
        // The PROXY header: a line of at most 107 bytes.
        loop {
            let n = read(&mut conn, chunk.space(), &mut stop).await?;
            if n == 0 {
                return Ok(());
            }
            first.extend_from_slice(chunk.get(n));
            if let Some(end) = first.windows(2).position(|w| w == b"\r\n") {
                let header = String::from_utf8_lossy(&first[..end]).into_owned();
                let parts: Vec<&str> = header.split_whitespace().collect();
                if parts.first() != Some(&"PROXY") || parts.len() < 6 {
                    return Err(format!("expected a PROXY protocol header, got {header:?}"));
                }
                source.proxy = Some((parts[3].to_owned(), parts[5].to_owned()));
                let ip: Option<IpAddr> = parts[2].parse().ok();
                source.ip = parts[2].to_owned();
                source.name = match (ip, shared.reverse_dns) {
                    (Some(ip), true) => reverse_lookup(ip).await,
                    _ => parts[2].to_owned(),
                };
                source.port = Some(Value::String(parts[4].into()));
                first.drain(..end + 2);
                break;
            }
            if first.len() > 107 {
                return Err("no PROXY protocol header in the first 107 bytes".to_owned());
            }
        }
    }
    let mut events = Vec::new();
    let idle_flush = codec.idle_flush_interval();
    if !first.is_empty() {
        codec.decode(&first, &mut events);
    }
    loop {
        if !events.is_empty() {
            for e in &mut events {
                stamp(e, &source, shared, true);
            }
            if net::push(ctx, std::mem::take(&mut events)).await.is_err() {
                return Ok(());
            }
        }
        if codec.pending_bytes() > shared.max_line {
            return Err(format!(
                "a line of more than {} bytes without its delimiter (max_line_size); the partial line is dropped",
                shared.max_line
            ));
        }
        // A codec that releases a held record after a quiet spell (multiline's
        // `auto_flush_interval`) gets that spell as the read's time limit.
        let n = match idle_flush.filter(|_| codec.pending_bytes() > 0) {
            Some(every) => {
                match tokio::time::timeout(every, read(&mut conn, chunk.space(), &mut stop)).await {
                    Ok(n) => n?,
                    Err(_) => {
                        codec.flush_idle(std::time::Instant::now(), &mut events);
                        continue;
                    }
                }
            }
            None => read(&mut conn, chunk.space(), &mut stop).await?,
        };
        chunk.filled(n);
        if n == 0 {
            codec.flush(&mut events);
            for e in &mut events {
                // As Logstash: what the flush releases gets no proxy fields.
                stamp(e, &source, shared, false);
            }
            let _ = net::push(ctx, events).await;
            return Ok(());
        }
        codec.decode(chunk.get(n), &mut events);
    }
}

/// Reads into `chunk`; 0 at the end of the stream or once `stop` (the pipeline stopping, one
/// waiter for the whole connection) resolves.
async fn read(
    conn: &mut Box<dyn Conn>,
    chunk: &mut [u8],
    stop: &mut Pin<&mut impl Future<Output = ()>>,
) -> Result<usize, String> {
    tokio::select! {
        r = conn.read(chunk) => r.map_err(|e| format!("reading: {e}")),
        _ = stop => Ok(0),
    }
}

fn stamp(e: &mut Event, s: &Source, shared: &Shared, proxy: bool) {
    let f = &shared.fields;
    let mut set = |r: &FieldRef, v: Value| {
        if e.get(r).is_none() {
            e.set(r, v);
        }
    };
    set(&f.name, Value::String(s.name.as_str().into()));
    set(&f.ip, Value::String(s.ip.as_str().into()));
    if let Some(p) = &s.port {
        set(&f.port, p.clone());
    }
    if let (true, Some((ip, port))) = (proxy, &s.proxy) {
        set(&f.proxy_ip, Value::String(ip.as_str().into()));
        set(&f.proxy_port, Value::String(port.as_str().into()));
    }
    if let Some(subject) = &s.subject {
        set(&f.subject, Value::String(subject.as_str().into()));
    }
}

async fn source_of(ip: IpAddr, port: u16, shared: &Shared) -> Source {
    let name = if shared.reverse_dns {
        reverse_lookup(ip).await
    } else {
        ip.to_string()
    };
    Source {
        name,
        ip: ip.to_string(),
        port: Some(Value::Int(port as i64)),
        proxy: None,
        subject: None,
    }
}

/// The host name of `ip` (reverse DNS, through the system's resolver), or its text.
pub async fn reverse_lookup(ip: IpAddr) -> String {
    tokio::task::spawn_blocking(move || reverse_lookup_blocking(ip))
        .await
        .unwrap_or_else(|_| ip.to_string())
}

fn reverse_lookup_blocking(ip: IpAddr) -> String {
    let mut host = [0 as libc::c_char; 1025];
    // SAFETY: the sockaddr is built for the address family it names, and getnameinfo writes
    // at most `host.len()` bytes, NUL-terminated, into `host`.
    let rc = unsafe {
        match ip {
            IpAddr::V4(v4) => {
                let mut sa: libc::sockaddr_in = std::mem::zeroed();
                sa.sin_family = libc::AF_INET as libc::sa_family_t;
                sa.sin_addr.s_addr = u32::from_ne_bytes(v4.octets());
                libc::getnameinfo(
                    &sa as *const _ as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                    host.as_mut_ptr(),
                    host.len() as libc::socklen_t,
                    std::ptr::null_mut(),
                    0,
                    libc::NI_NAMEREQD,
                )
            }
            IpAddr::V6(v6) => {
                let mut sa: libc::sockaddr_in6 = std::mem::zeroed();
                sa.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                sa.sin6_addr.s6_addr = v6.octets();
                libc::getnameinfo(
                    &sa as *const _ as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                    host.as_mut_ptr(),
                    host.len() as libc::socklen_t,
                    std::ptr::null_mut(),
                    0,
                    libc::NI_NAMEREQD,
                )
            }
        }
    };
    if rc != 0 {
        return ip.to_string();
    }
    // SAFETY: getnameinfo succeeded, so `host` holds a NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(host.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// A certificate's subject as Java's `getPeerPrincipal().getName()` writes it (RFC 2253:
/// `CN=client,O=Example`, the last element first), from its DER.
fn subject_of(der: &[u8]) -> Option<String> {
    crate::tls::subject(der)
}

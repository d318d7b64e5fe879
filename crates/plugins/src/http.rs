//! The HTTP clients of the plugins: [`Client`], Logstash's `http_client` mixin (one URL per
//! request: the http filter, the http_poller input), and [`Pool`], a pool of endpoints for
//! plugins that talk to a cluster (Elasticsearch, OpenSearch).
//!
//! Every worker calls [`Pool::request`] at once: each request goes to the live endpoint with
//! the fewest requests in flight (ties rotate), over a shared keep-alive connection pool
//! (`ureq`, rustls underneath). An endpoint that cannot be reached is marked dead; a dead
//! endpoint gets a health check (`HEAD` of the health-check path, a 2xx brings it back) once
//! per `resurrect_delay`, run by whichever request comes along first, so no thread of its own
//! is needed. When every endpoint is dead the request fails at once with
//! [`HttpError::NoneAlive`]; the caller retries with back-off.
//!
//! Responses of any status are returned as they are: what a status means is the caller's
//! business. Only failures to get a response at all are errors. [`gzip`] compresses request
//! bodies for the outputs that send them compressed.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ureq::http;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use sluice_pipeline::{ConfigError, Options};

use crate::tls::Tls;

/// One base URL of the pool (`https://es1:9200`, or with a path prefix behind a proxy).
struct Endpoint {
    /// Without a trailing slash.
    url: String,
    alive: AtomicBool,
    in_flight: AtomicUsize,
    /// When it was last marked dead or checked; a health check is due `resurrect_delay` later.
    checked: Mutex<Instant>,
}

/// A response: its status and body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
    /// The endpoint that answered (for messages).
    pub url: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// No response from this endpoint (refused, reset, timed out, TLS failure); it is now
    /// marked dead.
    Unreachable { url: String, message: String },
    /// Every endpoint is marked dead and none passed a health check.
    NoneAlive { urls: Vec<String> },
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Unreachable { url, message } => write!(f, "{url} unreachable: {message}"),
            HttpError::NoneAlive { urls } => {
                write!(
                    f,
                    "no host is reachable (all marked dead: {})",
                    urls.join(", ")
                )
            }
        }
    }
}

/// How to reach the endpoints.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    pub urls: Vec<String>,
    pub tls: Option<Tls>,
    /// Sent with every request (authorization, custom headers).
    pub headers: Vec<(String, String)>,
    /// Whole-request timeout.
    pub timeout: Duration,
    pub resurrect_delay: Duration,
    pub healthcheck_path: String,
    /// Idle keep-alive connections kept per host (one per worker is enough).
    pub max_idle_per_host: usize,
    /// A proxy every request goes through (`http://host:port`).
    pub proxy: Option<String>,
}

/// Header names (as ureq gives them) and values (as text).
pub type Headers = Vec<(String, String)>;

/// A response's headers and its body, read up to `limit` bytes.
pub fn read_response(
    response: &mut http::Response<ureq::Body>,
    limit: u64,
) -> Result<(Headers, Vec<u8>), ureq::Error> {
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = response
        .body_mut()
        .with_config()
        .limit(limit)
        .read_to_vec()?;
    Ok((headers, body))
}

/// How long a host name's addresses are reused: the JVM's default DNS cache time, which is
/// what Logstash's clients see.
const DNS_CACHE: Duration = Duration::from_secs(30);

/// The agent every plugin's HTTP goes through: `config` with [`CachingResolver`].
pub fn new_agent(config: ureq::config::Config) -> ureq::Agent {
    ureq::Agent::with_parts(config, DefaultConnector::new(), CachingResolver::default())
}

/// ureq asks its resolver for the addresses before every request, pooled connection or not,
/// and its default resolver starts a thread per lookup whenever a timeout applies (always,
/// here). This one answers an IP address at once and keeps a host name's addresses for
/// [`DNS_CACHE`], so a request on a kept connection costs no thread and no lookup.
#[derive(Debug, Default)]
pub struct CachingResolver {
    inner: DefaultResolver,
    cache: Mutex<HashMap<(String, u16), (Instant, ResolvedSocketAddrs)>>,
}

impl Resolver for CachingResolver {
    fn resolve(
        &self,
        uri: &http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let (Some(host), Some(port)) = (
            uri.host(),
            uri.port_u16().or(match uri.scheme_str() {
                Some("http") => Some(80),
                Some("https") => Some(443),
                _ => None,
            }),
        ) else {
            return self.inner.resolve(uri, config, timeout);
        };
        if let Ok(ip) = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            let mut addrs = self.inner.empty();
            addrs.push(SocketAddr::new(ip, port));
            return Ok(addrs);
        }
        let key = (host.to_owned(), port);
        let lock = || self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, addrs)) = lock().get(&key) {
            if at.elapsed() < DNS_CACHE {
                return Ok(addrs.clone());
            }
        }
        let addrs = self.inner.resolve(uri, config, timeout)?;
        lock().insert(key, (Instant::now(), addrs.clone()));
        Ok(addrs)
    }
}

/// An HTTP client: statuses are answers, not errors; `timeout` bounds each whole request;
/// `idle_per_host` keep-alive connections are kept for each of `hosts` hosts.
pub fn agent(
    tls: Option<&Tls>,
    timeout: Duration,
    idle_per_host: usize,
    hosts: usize,
) -> Result<ureq::Agent, String> {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .max_idle_connections_per_host(idle_per_host.max(1))
        .max_idle_connections(idle_per_host.max(1) * hosts.max(1))
        .user_agent(concat!("sluice/", env!("CARGO_PKG_VERSION")))
        .tls_config(tls_config(tls)?)
        .build();
    Ok(new_agent(config))
}

/// Every byte but RFC 3986's unreserved ones (`A-Z a-z 0-9 - _ . ~`) as `%XX`: a query
/// parameter's value, a path segment.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `%XX` escapes undone (a `%` not followed by two hex digits stays as it is); bytes that
/// are not UTF-8 become U+FFFD.
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).and_then(|c| hex(*c)),
            b.get(i + 2).and_then(|c| hex(*c)),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A GET whose answer is a stream read as it comes (`sluice tap`): no overall timeout (a
/// connection one of 10 s), HTTP Basic auth when given. A status other than 200 is an error
/// with the server's message.
pub fn stream_get(
    url: &str,
    basic: Option<(&str, &str)>,
    tls: &Tls,
) -> Result<impl std::io::Read, String> {
    use base64::Engine as _;
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(10)))
        .user_agent(concat!("sluice/", env!("CARGO_PKG_VERSION")))
        .tls_config(tls_config(Some(tls))?)
        .build();
    let mut req = new_agent(config).get(url);
    if let Some((user, pass)) = basic {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
        req = req.header("Authorization", format!("Basic {token}"));
    }
    let mut resp = req.call().map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    if status != 200 {
        let body = resp
            .body_mut()
            .with_config()
            .limit(1 << 20)
            .read_to_string()
            .unwrap_or_default();
        let message = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
            .unwrap_or(body);
        return Err(format!("HTTP {status}: {message}"));
    }
    Ok(resp.into_body().into_reader())
}

/// Logstash's `http_client` mixin (the http filter, the http_poller input): its options read
/// once into a client that the plugin's workers share. `request_timeout` bounds a whole
/// request, `connect_timeout` the connection, `socket_timeout` each wait for the server;
/// `follow_redirects`, `pool_max`/`pool_max_per_route` (idle connections kept), `keepalive`,
/// `user`/`password` (sent with every request, as the mixin's eager auth), `proxy` (a URL, or
/// a hash of `host`, `port`, `scheme`), the `ssl_*` options, and `automatic_retries` (requests
/// that got no response are sent again that many times; only idempotent ones unless
/// `retry_non_idempotent`). `cookies` may be set but no cookie is kept between requests;
/// `validate_after_inactivity` has nothing to do (a stale pooled connection is replaced).
#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    auth: Option<String>,
    retries: u32,
    retry_non_idempotent: bool,
}

/// What a server answered.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// The status line's reason phrase (`OK`), as the status's standard one.
    pub reason: String,
    /// Lower-case names, in the order received; a repeated header has several entries.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// How many times the request was sent again before this answer.
    pub retried: u32,
}

impl Response {
    /// The headers as Logstash's plugins set them in events: a hash of lower-case names, a
    /// repeated header's values in a list.
    pub fn headers_value(&self) -> sluice_event::Value {
        use sluice_event::Value;
        let mut map = sluice_event::Map::new();
        for (k, v) in &self.headers {
            let key = sluice_event::Key::from(k.as_str());
            match map.get_mut(&key) {
                Some(Value::Array(items)) => items.push(Value::from(v.as_str())),
                Some(one) => {
                    let first = std::mem::take(one);
                    *one = Value::Array(vec![first, Value::from(v.as_str())]);
                }
                None => {
                    map.insert(key, Value::from(v.as_str()));
                }
            }
        }
        Value::Object(map)
    }

    /// The first value of a header (by lower-case name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Client {
    /// Reads the mixin's options. TLS is on for `https://` URLs; the `ssl_*` options say how.
    pub fn read(opts: &mut Options) -> Result<Client, ConfigError> {
        let secs =
            |opts: &mut Options, name: &str, default: f64| -> Result<Duration, ConfigError> {
                let v = opts.float(name)?.unwrap_or(default);
                if !(v > 0.0 && v.is_finite()) {
                    return Err(opts.error(name, "must be a positive number of seconds"));
                }
                Ok(Duration::from_secs_f64(v))
            };
        let request_timeout = secs(opts, "request_timeout", 60.0)?;
        let socket_timeout = secs(opts, "socket_timeout", 10.0)?;
        let connect_timeout = secs(opts, "connect_timeout", 10.0)?;
        let follow_redirects = opts.boolean_or("follow_redirects", true)?;
        let count = |opts: &mut Options, name: &str, default: i64| -> Result<usize, ConfigError> {
            match opts.int(name)?.unwrap_or(default) {
                n if n >= 0 => Ok(n as usize),
                _ => Err(opts.error(name, "must not be negative")),
            }
        };
        let pool_max = count(opts, "pool_max", 50)?.max(1);
        let per_route = count(opts, "pool_max_per_route", 25)?.max(1);
        let keepalive = opts.boolean_or("keepalive", true)?;
        let retries = count(opts, "automatic_retries", 1)? as u32;
        let retry_non_idempotent = opts.boolean_or("retry_non_idempotent", false)?;
        let _ = opts.int("validate_after_inactivity")?;
        if opts.boolean("cookies")? == Some(true) {
            tracing::info!(
                plugin = opts.plugin_name(),
                "cookies => true: sluice keeps no cookies between requests"
            );
        }
        let proxy = match opts.take("proxy") {
            None => None,
            Some((_, v)) => Some(proxy_url(&v).map_err(|e| opts.error("proxy", e))?),
        };
        let user = opts.string("user")?;
        let password = opts.string("password")?;
        let auth = match (user, password) {
            (Some(u), Some(p)) => {
                use base64::Engine;
                Some(format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
                ))
            }
            (Some(u), None) => {
                return Err(opts.error("user", format!("{u:?} is given without a password")))
            }
            (None, Some(_)) => return Err(opts.error("password", "is given without a user")),
            (None, None) => None,
        };
        let tls = crate::tls::read(opts, crate::tls::Names::Elasticsearch, true)?;
        let proxy = match proxy {
            Some(url) => {
                Some(ureq::Proxy::new(&url).map_err(|e| opts.error("proxy", e.to_string()))?)
            }
            None => None,
        };
        let idle = if keepalive { per_route } else { 0 };
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(request_timeout))
            .timeout_connect(Some(connect_timeout))
            .timeout_recv_response(Some(socket_timeout))
            .timeout_recv_body(Some(socket_timeout))
            .max_redirects(if follow_redirects { 10 } else { 0 })
            .max_idle_connections_per_host(idle)
            .max_idle_connections(if keepalive { pool_max } else { 0 })
            .user_agent(concat!("sluice/", env!("CARGO_PKG_VERSION")))
            .proxy(proxy)
            .tls_config(tls_config(tls.as_ref()).map_err(|e| opts.plugin_error(e))?)
            .build();
        Ok(Client {
            agent: new_agent(config),
            auth,
            retries,
            retry_non_idempotent,
        })
    }

    /// Sends a request (`method` in upper case); an answer of any status is a response, no
    /// answer at all (after the retries) an error.
    pub fn request(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Option<&[u8]>,
    ) -> Result<Response, String> {
        let idempotent = matches!(method, "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS");
        let tries = if idempotent || self.retry_non_idempotent {
            self.retries + 1
        } else {
            1
        };
        let mut last = String::new();
        for attempt in 0..tries {
            match self.send_once(method, url, headers, body) {
                Ok(mut r) => {
                    r.retried = attempt;
                    return Ok(r);
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn send_once(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Option<&[u8]>,
    ) -> Result<Response, String> {
        let mut req = http::Request::builder().method(method).uri(url);
        if let Some(a) = &self.auth {
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
            {
                req = req.header("Authorization", a.as_str());
            }
        }
        for (k, v) in headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let result = match body {
            Some(b) => req.body(b).map(|r| self.agent.run(r)),
            None => req.body(()).map(|r| self.agent.run(r)),
        };
        let mut response = result
            .map_err(|e| format!("bad request: {e}"))?
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let (headers, body) = read_response(&mut response, 1 << 30)
            .map_err(|e| format!("reading the response: {e}"))?;
        Ok(Response {
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or("").to_owned(),
            headers,
            body,
            retried: 0,
        })
    }
}

/// The mixin's `proxy`: a URL, or a hash of `host`, `port` and `scheme` (`http`).
fn proxy_url(v: &sluice_config::Value) -> Result<String, String> {
    use sluice_config::Value as Ast;
    let text = |v: &Ast| match v {
        Ast::String(s) | Ast::Bareword(s) => Some(s.clone()),
        Ast::Number(n) => Some(match n {
            sluice_config::Number::Int(i) => i.to_string(),
            sluice_config::Number::Float(f) => f.to_string(),
        }),
        _ => None,
    };
    match v {
        Ast::Hash(entries) => {
            let get = |k: &str| {
                entries
                    .iter()
                    .find(|e| e.key == k)
                    .and_then(|e| text(&e.value))
            };
            let host = get("host").ok_or("a proxy hash needs host (and port, scheme)")?;
            let scheme = get("scheme").unwrap_or_else(|| "http".to_owned());
            Ok(match get("port") {
                Some(port) => format!("{scheme}://{host}:{port}"),
                None => format!("{scheme}://{host}"),
            })
        }
        other => text(other)
            .ok_or_else(|| "expected a URL or a hash of host, port and scheme".to_owned()),
    }
}

pub struct Pool {
    endpoints: Vec<Endpoint>,
    agent: ureq::Agent,
    headers: Vec<(String, String)>,
    resurrect_delay: Duration,
    healthcheck_path: String,
    next: AtomicUsize,
}

/// A request in flight on an endpoint; counts down when dropped.
struct InFlight<'a>(&'a Endpoint);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The certificates of a PEM file (other items, such as keys, are skipped).
fn certificates(pem: &[u8], option: &str) -> Result<Vec<ureq::tls::Certificate<'static>>, String> {
    let mut out = Vec::new();
    for item in ureq::tls::parse_pem(pem) {
        match item {
            Ok(ureq::tls::PemItem::Certificate(c)) => out.push(c),
            Ok(_) => {}
            Err(e) => return Err(format!("{option}: {e}")),
        }
    }
    Ok(out)
}

fn tls_config(tls: Option<&Tls>) -> Result<ureq::tls::TlsConfig, String> {
    use ureq::tls::{ClientCert, RootCerts, TlsConfig};
    let mut b = TlsConfig::builder();
    let Some(tls) = tls else {
        return Ok(b.build());
    };
    crate::tls::install_crypto_provider();
    if let Some(pem) = &tls.ca {
        let roots = certificates(pem, "ssl_certificate_authorities")?;
        if roots.is_empty() {
            return Err("ssl_certificate_authorities: no certificate in the file".into());
        }
        b = b.root_certs(RootCerts::Specific(Arc::new(roots)));
    }
    if let Some((cert, key)) = &tls.client {
        let chain = certificates(cert, "ssl_certificate")?;
        let key = ureq::tls::PrivateKey::from_pem(key).map_err(|e| format!("ssl_key: {e}"))?;
        b = b.client_cert(Some(ClientCert::new_with_certs(&chain, key)));
    }
    Ok(b.disable_verification(!tls.verify).build())
}

impl Pool {
    pub fn new(config: PoolConfig) -> Result<Pool, String> {
        let agent = match &config.proxy {
            None => agent(
                config.tls.as_ref(),
                config.timeout,
                config.max_idle_per_host,
                config.urls.len(),
            )?,
            Some(url) => {
                let proxy = ureq::Proxy::new(url).map_err(|e| format!("proxy {url:?}: {e}"))?;
                let c = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(config.timeout))
                    .max_idle_connections_per_host(config.max_idle_per_host.max(1))
                    .user_agent(concat!("sluice/", env!("CARGO_PKG_VERSION")))
                    .proxy(Some(proxy))
                    .tls_config(tls_config(config.tls.as_ref())?)
                    .build();
                new_agent(c)
            }
        };
        let now = Instant::now();
        Ok(Pool {
            endpoints: config
                .urls
                .iter()
                .map(|u| Endpoint {
                    url: u.trim_end_matches('/').to_owned(),
                    alive: AtomicBool::new(true),
                    in_flight: AtomicUsize::new(0),
                    checked: Mutex::new(now),
                })
                .collect(),
            agent,
            headers: config.headers,
            resurrect_delay: config.resurrect_delay,
            healthcheck_path: config.healthcheck_path,
            next: AtomicUsize::new(0),
        })
    }

    pub fn urls(&self) -> Vec<String> {
        self.endpoints.iter().map(|e| e.url.clone()).collect()
    }

    /// How many endpoints are marked alive.
    pub fn alive(&self) -> usize {
        self.endpoints
            .iter()
            .filter(|e| e.alive.load(Ordering::Relaxed))
            .count()
    }

    fn send(
        &self,
        url: &str,
        method: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<Reply, String> {
        let mut req = http::Request::builder().method(method).uri(url);
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let result = match body {
            Some(b) => req.body(b).map(|r| self.agent.run(r)),
            None => req.body(()).map(|r| self.agent.run(r)),
        };
        let mut response = result
            .map_err(|e| format!("bad request: {e}"))?
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_vec()
            .map_err(|e| format!("reading the response: {e}"))?;
        Ok(Reply {
            status,
            body,
            url: url.to_owned(),
        })
    }

    /// Health checks the dead endpoints that are due; those that answer 2xx are alive again.
    fn resurrect(&self) {
        for e in &self.endpoints {
            if e.alive.load(Ordering::Relaxed) {
                continue;
            }
            // One checker per endpoint; the others go on.
            let Ok(mut checked) = e.checked.try_lock() else {
                continue;
            };
            if checked.elapsed() < self.resurrect_delay {
                continue;
            }
            let url = format!("{}{}", e.url, self.healthcheck_path);
            match self.send(&url, "HEAD", &[], None) {
                Ok(r) if (200..300).contains(&r.status) => {
                    tracing::info!(url = %e.url, "host is reachable again");
                    e.alive.store(true, Ordering::Relaxed);
                }
                Ok(r) => {
                    tracing::warn!(url = %e.url, status = r.status, "health check failed: host stays marked dead")
                }
                Err(message) => {
                    tracing::debug!(url = %e.url, error = %message, "health check: still unreachable")
                }
            }
            *checked = Instant::now();
        }
    }

    /// The live endpoint with the fewest requests in flight, counted in.
    fn pick(&self) -> Option<InFlight<'_>> {
        let n = self.endpoints.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let mut best: Option<&Endpoint> = None;
        for i in 0..n {
            let e = &self.endpoints[(start + i) % n];
            if !e.alive.load(Ordering::Relaxed) {
                continue;
            }
            if best.is_none_or(|b| {
                e.in_flight.load(Ordering::Relaxed) < b.in_flight.load(Ordering::Relaxed)
            }) {
                best = Some(e);
            }
        }
        best.map(|e| {
            e.in_flight.fetch_add(1, Ordering::Relaxed);
            InFlight(e)
        })
    }

    /// Sends a request to one endpoint. `path` starts with `/` (and carries the query).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<Reply, HttpError> {
        self.resurrect();
        let Some(slot) = self.pick() else {
            return Err(HttpError::NoneAlive { urls: self.urls() });
        };
        let e = slot.0;
        let url = format!("{}{}", e.url, path);
        match self.send(&url, method, headers, body) {
            Ok(r) => Ok(r),
            Err(message) => {
                if e.alive.swap(false, Ordering::Relaxed) {
                    tracing::warn!(url = %e.url, error = %message, "marking host dead");
                }
                if let Ok(mut checked) = e.checked.lock() {
                    *checked = Instant::now();
                }
                Err(HttpError::Unreachable {
                    url: e.url.clone(),
                    message,
                })
            }
        }
    }
}

/// `data` as a gzip member (a request body with `Content-Encoding: gzip`), at deflate
/// `level` (1: fast). Each worker thread keeps its deflate state between requests (it
/// is hundreds of kilobytes, which a fresh encoder per request would allocate and zero).
pub fn gzip(data: &[u8], level: u32) -> Vec<u8> {
    // Header: magic, deflate, no flags, no time, no extra flags, unknown OS.
    let mut out = Vec::with_capacity(data.len() / 4 + 64);
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    deflate(data, level, false, &mut out);
    let mut crc = flate2::Crc::new();
    crc.update(data);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

/// `data` zlib-compressed (RFC 1950, what GELF's UDP messages are), as [`gzip`] does it.
pub fn zlib(data: &[u8], level: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 4 + 64);
    deflate(data, level, true, &mut out);
    out
}

/// Deflates `data` onto `out` (with zlib's header and checksum when `zlib`), with this
/// thread's compressor, reset rather than made again.
fn deflate(data: &[u8], level: u32, zlib: bool, out: &mut Vec<u8>) {
    use flate2::{Compress, Compression, FlushCompress, Status};
    thread_local! {
        static DEFLATE: std::cell::RefCell<Option<(u32, bool, Compress)>> = const { std::cell::RefCell::new(None) };
    }
    DEFLATE.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell
            .as_ref()
            .is_none_or(|(l, z, _)| (*l, *z) != (level, zlib))
        {
            *cell = Some((level, zlib, Compress::new(Compression::new(level), zlib)));
        }
        let (_, _, c) = cell.as_mut().expect("just set");
        c.reset();
        let start = c.total_in();
        loop {
            let done = (c.total_in() - start) as usize;
            if out.capacity() - out.len() < 1024 {
                out.reserve(out.capacity().max(4096));
            }
            match c.compress_vec(&data[done..], out, FlushCompress::Finish) {
                Ok(Status::StreamEnd) => break,
                Ok(_) => {}
                Err(e) => unreachable!("deflate of an in-memory buffer failed: {e}"),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    #[test]
    fn the_resolver_answers_addresses_itself_and_keeps_names() {
        let r = CachingResolver::default();
        let config = ureq::config::Config::default();
        let resolve = |u: &str| {
            let uri: http::Uri = u.parse().unwrap();
            let timeout = NextTimeout {
                after: ureq::unversioned::transport::time::Duration::from_secs(5),
                reason: ureq::Timeout::Resolve,
                ..Default::default()
            };
            r.resolve(&uri, &config, timeout).map(|a| a.to_vec())
        };
        let v4 = resolve("http://127.0.0.2:9201/x").unwrap();
        assert_eq!(v4, vec!["127.0.0.2:9201".parse::<SocketAddr>().unwrap()]);
        let v6 = resolve("https://[::1]/").unwrap();
        assert_eq!(v6, vec!["[::1]:443".parse::<SocketAddr>().unwrap()]);
        assert!(
            r.cache.lock().unwrap().is_empty(),
            "addresses are not cached"
        );
        let named = resolve("http://localhost:9200/").unwrap();
        assert!(!named.is_empty() && named.iter().all(|a| a.port() == 9200));
        assert!(r
            .cache
            .lock()
            .unwrap()
            .contains_key(&("localhost".to_owned(), 9200)));
        assert_eq!(resolve("http://localhost:9200/").unwrap(), named);
    }

    fn pool(urls: Vec<String>) -> Pool {
        Pool::new(PoolConfig {
            urls,
            tls: None,
            headers: vec![("X-Test".into(), "1".into())],
            timeout: Duration::from_secs(5),
            resurrect_delay: Duration::from_millis(0),
            healthcheck_path: "/".into(),
            max_idle_per_host: 1,
            proxy: None,
        })
        .unwrap()
    }

    /// A one-connection-at-a-time HTTP server answering `status` with the request echoed.
    fn server(status: u16) -> (String, std::thread::JoinHandle<()>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let h = std::thread::spawn(move || {
            for s in l.incoming().take(3) {
                let mut s = s.unwrap();
                let mut buf = vec![0; 4096];
                let n = s.read(&mut buf).unwrap();
                let req = String::from_utf8_lossy(&buf[..n]).to_string();
                let line = req.lines().next().unwrap_or("").to_owned();
                let has_header = req.to_ascii_lowercase().contains("x-test: 1");
                let body = format!("{line} {has_header}");
                let _ = write!(
                    s,
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (url, h)
    }

    #[test]
    fn returns_any_status_with_body_and_sends_headers() {
        let (url, _h) = server(404);
        let p = pool(vec![url]);
        let r = p.request("GET", "/x?y=1", &[], None).unwrap();
        assert_eq!(r.status, 404);
        assert_eq!(
            String::from_utf8(r.body).unwrap(),
            "GET /x?y=1 HTTP/1.1 true"
        );
    }

    #[test]
    fn unreachable_host_is_marked_dead_and_resurrected_by_health_check() {
        // A port nobody listens on: bind, take the address, close.
        let dead = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}", l.local_addr().unwrap())
        };
        let p = pool(vec![dead.clone()]);
        let e = p.request("GET", "/", &[], None).unwrap_err();
        assert!(matches!(e, HttpError::Unreachable { .. }), "{e:?}");
        assert_eq!(p.alive(), 0);
        // Still nobody there: the health check fails and nothing is alive.
        let e = p.request("GET", "/", &[], None).unwrap_err();
        assert!(matches!(e, HttpError::NoneAlive { .. }), "{e:?}");
        // A server on the same port: the health check brings the host back.
        let port = dead.rsplit(':').next().unwrap();
        let l = TcpListener::bind(format!("127.0.0.1:{port}")).unwrap();
        let h = std::thread::spawn(move || {
            for s in l.incoming().take(2) {
                let mut s = s.unwrap();
                let mut buf = vec![0; 4096];
                let _ = s.read(&mut buf);
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"
                );
            }
        });
        let r = p.request("GET", "/", &[], None).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(p.alive(), 1);
        h.join().unwrap();
    }

    #[test]
    fn requests_go_to_the_live_host() {
        let dead = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}", l.local_addr().unwrap())
        };
        let (live, _h) = server(200);
        let p = Pool::new(PoolConfig {
            urls: vec![dead, live.clone()],
            tls: None,
            headers: vec![],
            timeout: Duration::from_secs(5),
            resurrect_delay: Duration::from_secs(3600),
            healthcheck_path: "/".into(),
            max_idle_per_host: 1,
            proxy: None,
        })
        .unwrap();
        let mut ok = 0;
        for _ in 0..3 {
            if let Ok(r) = p.request("GET", "/", &[], None) {
                assert_eq!(r.url, format!("{live}/"));
                ok += 1;
            }
        }
        // At most the first request went to the dead host; the rest reached the live one.
        assert!(ok >= 2, "{ok}");
        assert_eq!(p.alive(), 1);
    }
}

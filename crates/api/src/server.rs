//! The HTTP server: settings, binding, basic auth, TLS and routing.
//!
//! It runs on its own thread with a single-threaded tokio runtime (hyper's HTTP/1.1 server);
//! requests are answered from atomics and short locks, so one thread is plenty and the
//! pipelines' cores are left alone. A connection that does not send a whole request header
//! within [`HEADER_TIMEOUT`] (a new one, or a kept-alive one gone idle), or does not finish its
//! TLS handshake within it, is closed: slow or idle clients cannot hold sockets forever. A second thread samples every pipeline's counters once a
//! second for the flow rates.

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use sluice_config::settings::{ApiSettings, PortRange};
use tokio_rustls::rustls;

use crate::node::{NodeIdentity, ProcessTracker};
use crate::registry::{Registry, SAMPLE_EVERY};
use crate::stats::{Context, NodeConfig};

/// How long a client may take to send a request's header (from the connection's start, or
/// from the previous response on a kept-alive connection), or its TLS handshake.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

const DASHBOARD_HTML: &str = include_str!("dashboard/index.html");
const DASHBOARD_JS: &str = include_str!("dashboard/app.js");
const DASHBOARD_CSS: &str = include_str!("dashboard/style.css");

/// The API settings after checking them.
pub struct Resolved {
    pub host: String,
    pub ports: PortRange,
    /// (username, password) for `api.auth.type: basic`.
    pub basic_auth: Option<(String, String)>,
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// Checks the `api.*` settings. `Ok(None)` when the API is disabled.
/// `ssl_reload`: `ssl.reload.automatic`'s interval, when on (the certificate follows its file).
pub fn resolve(s: &ApiSettings, ssl_reload: Option<Duration>) -> Result<Option<Resolved>, String> {
    if s.enabled == Some(false) {
        return Ok(None);
    }
    let basic_auth = match s.auth_type.as_deref().unwrap_or("none") {
        "none" => None,
        "basic" => {
            let user = s.auth_basic_username.clone().filter(|u| !u.is_empty());
            let pass = s.auth_basic_password.clone().filter(|p| !p.is_empty());
            let (Some(user), Some(pass)) = (user, pass) else {
                return Err("api.auth.type is basic: api.auth.basic.username and api.auth.basic.password must both be set".to_owned());
            };
            check_password_policy(s, &pass)?;
            Some((user, pass))
        }
        other => {
            return Err(format!(
                "api.auth.type: unknown type {other:?} (none or basic)"
            ))
        }
    };
    let tls = if s.ssl_enabled == Some(true) {
        Some(tls_config(s, ssl_reload)?)
    } else {
        None
    };
    Ok(Some(Resolved {
        host: s.host.clone().unwrap_or_else(|| "127.0.0.1".to_owned()),
        ports: s.port.unwrap_or_default(),
        basic_auth,
        tls,
    }))
}

/// Logstash's `api.auth.basic.password_policy.*`: by default at least 8 characters with an
/// upper-case letter, a lower-case letter and a digit; `mode: WARN` (default) logs a warning,
/// `mode: ERROR` refuses to start.
fn check_password_policy(s: &ApiSettings, pass: &str) -> Result<(), String> {
    let p = &s.password_policy;
    let min = p.length_minimum.unwrap_or(8) as usize;
    let required = |v: &Option<String>, default: bool| {
        v.as_deref()
            .map_or(default, |v| v.eq_ignore_ascii_case("REQUIRED"))
    };
    let mut problems = Vec::new();
    if pass.chars().count() < min {
        problems.push(format!("at least {min} characters"));
    }
    type Check = (bool, &'static str, fn(char) -> bool);
    let checks: [Check; 4] = [
        (
            required(&p.include_upper, true),
            "an upper-case letter",
            |c| c.is_uppercase(),
        ),
        (
            required(&p.include_lower, true),
            "a lower-case letter",
            |c| c.is_lowercase(),
        ),
        (required(&p.include_digit, true), "a digit", |c| {
            c.is_ascii_digit()
        }),
        (required(&p.include_symbol, false), "a symbol", |c| {
            !c.is_alphanumeric() && !c.is_whitespace()
        }),
    ];
    for (needed, what, test) in checks {
        if needed && !pass.chars().any(test) {
            problems.push(what.to_owned());
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let message = format!(
        "api.auth.basic.password does not meet the password policy: it needs {}",
        problems.join(", ")
    );
    if p.mode
        .as_deref()
        .is_some_and(|m| m.eq_ignore_ascii_case("ERROR"))
    {
        Err(message)
    } else {
        tracing::warn!("{message} (api.auth.basic.password_policy.mode: WARN)");
        Ok(())
    }
}

/// TLS from `api.ssl.keystore.path`: sluice reads a PEM file holding the certificate chain and
/// an unencrypted private key (Logstash reads a PKCS12/JKS keystore; convert one with
/// `openssl pkcs12 -in keystore.p12 -nodes -out keystore.pem`).
/// The certificate chain and unencrypted key of a PEM keystore file (`api.ssl.keystore.path`).
fn read_keystore(
    path: &std::path::Path,
) -> Result<
    (
        Vec<rustls::pki_types::CertificateDer<'static>>,
        rustls::pki_types::PrivateKeyDer<'static>,
    ),
    String,
> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let text = std::fs::read(path)
        .map_err(|e| format!("api.ssl.keystore.path {}: {e}", path.display()))?;
    if !text.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(format!(
            "api.ssl.keystore.path {}: not a PEM file. Sluice reads a PEM file with the certificate chain and the unencrypted private key, not a PKCS12/JKS keystore; convert one with `openssl pkcs12 -in KEYSTORE.p12 -nodes -out keystore.pem`",
            path.display()
        ));
    }
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("api.ssl.keystore.path {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "api.ssl.keystore.path {}: no CERTIFICATE in the PEM file",
            path.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&text).map_err(|e| {
        format!(
            "api.ssl.keystore.path {}: no usable private key ({e}); an encrypted key is not supported",
            path.display()
        )
    })?;
    Ok((certs, key))
}

/// What identifies a file's content without reading it: size, modification time, inode (a
/// Kubernetes secret rotates by swapping a symlink, which changes the inode).
fn stamp(path: &std::path::Path) -> Option<(u64, std::time::SystemTime, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?, m.ino()))
}

/// The API's certificate when `ssl.reload.automatic` is on: at a handshake at least
/// `every` after the last look, the keystore file is looked at again and, if it changed, read
/// (a file that does not read as a matching certificate and key keeps the old one, logged).
#[derive(Debug)]
struct ReloadingKeystore {
    path: std::path::PathBuf,
    every: Duration,
    provider: Arc<rustls::crypto::CryptoProvider>,
    current: std::sync::Mutex<KeystoreState>,
}

#[derive(Debug)]
struct KeystoreState {
    key: Arc<rustls::sign::CertifiedKey>,
    stamp: Option<(u64, std::time::SystemTime, u64)>,
    looked: std::time::Instant,
}

impl ReloadingKeystore {
    fn load(&self) -> Result<Arc<rustls::sign::CertifiedKey>, String> {
        certified_key(&self.provider, &self.path)
    }
}

fn certified_key(
    provider: &rustls::crypto::CryptoProvider,
    path: &std::path::Path,
) -> Result<Arc<rustls::sign::CertifiedKey>, String> {
    let (certs, key) = read_keystore(path)?;
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| format!("api.ssl.keystore.path {}: {e}", path.display()))?;
    let certified = rustls::sign::CertifiedKey::new(certs, signing);
    certified
        .keys_match()
        .map_err(|e| format!("api.ssl.keystore.path {}: {e}", path.display()))?;
    Ok(Arc::new(certified))
}

impl rustls::server::ResolvesServerCert for ReloadingKeystore {
    fn resolve(
        &self,
        _hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        let mut st = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if st.looked.elapsed() >= self.every {
            st.looked = std::time::Instant::now();
            let now = stamp(&self.path);
            if now != st.stamp {
                match self.load() {
                    Ok(key) => {
                        tracing::info!(path = %self.path.display(), "monitoring API: certificate reloaded (ssl.reload.automatic)");
                        st.key = key;
                        st.stamp = now;
                    }
                    // Maybe caught mid-rotation: looked at again after `every`.
                    Err(e) => {
                        tracing::warn!("monitoring API: keeping the current certificate: {e}")
                    }
                }
            }
        }
        Some(Arc::clone(&st.key))
    }
}

fn tls_config(
    s: &ApiSettings,
    reload: Option<Duration>,
) -> Result<Arc<rustls::ServerConfig>, String> {
    let Some(path) = &s.ssl_keystore_path else {
        return Err("api.ssl.enabled is true but api.ssl.keystore.path is not set (a PEM file with the certificate chain and the private key)".to_owned());
    };
    let (certs, key) = read_keystore(path)?;
    if s.ssl_keystore_password.is_some() {
        tracing::warn!("api.ssl.keystore.password is not used: sluice reads an unencrypted PEM key from api.ssl.keystore.path");
    }
    let mut versions: Vec<&'static rustls::SupportedProtocolVersion> = Vec::new();
    match &s.ssl_supported_protocols {
        None => versions.extend([&rustls::version::TLS13, &rustls::version::TLS12]),
        Some(list) => {
            for p in list {
                match p.as_str() {
                    "TLSv1.3" => versions.push(&rustls::version::TLS13),
                    "TLSv1.2" => versions.push(&rustls::version::TLS12),
                    other => tracing::warn!("api.ssl.supported_protocols: {other} is not supported (TLSv1.2 and TLSv1.3 are); leaving it out"),
                }
            }
            if versions.is_empty() {
                return Err("api.ssl.supported_protocols: none of the listed protocols is supported (TLSv1.2, TLSv1.3)".to_owned());
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| format!("api.ssl: {e}"))?
        .with_no_client_auth();
    let config = match reload {
        None => builder
            .with_single_cert(certs, key)
            .map_err(|e| format!("api.ssl.keystore.path {}: {e}", path.display()))?,
        Some(every) => {
            let key = certified_key(&provider, path)?;
            builder.with_cert_resolver(Arc::new(ReloadingKeystore {
                path: path.clone(),
                every,
                provider,
                current: std::sync::Mutex::new(KeystoreState {
                    key,
                    stamp: stamp(path),
                    looked: std::time::Instant::now(),
                }),
            }))
        }
    };
    Ok(Arc::new(config))
}

/// The running API.
pub struct ApiServer {
    addr: SocketAddr,
    tls: bool,
}

impl ApiServer {
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://host:port` (or https).
    pub fn url(&self) -> String {
        format!(
            "{}://{}",
            if self.tls { "https" } else { "http" },
            self.addr
        )
    }
}

/// Binds the first free port of the range on `host`.
fn bind(host: &str, ports: PortRange) -> Result<TcpListener, String> {
    let mut last_error = None;
    for port in ports.ports() {
        let addrs: Vec<SocketAddr> = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("api.http.host {host:?}: {e}"))?
            .collect();
        for a in addrs {
            match TcpListener::bind(a) {
                Ok(l) => return Ok(l),
                Err(e) => last_error = Some(e),
            }
        }
    }
    Err(format!(
        "monitoring API: no free port in api.http.port {ports} on {host}{}",
        last_error.map_or(String::new(), |e| format!(" (last error: {e})"))
    ))
}

/// Starts the API (when enabled) on its own threads. `Ok(None)` when `api.enabled` is false.
pub fn start(
    settings: &ApiSettings,
    registry: Registry,
    config: NodeConfig,
) -> Result<Option<ApiServer>, String> {
    let Some(resolved) = resolve(settings, config.ssl_reload)? else {
        tracing::info!("monitoring API disabled (api.enabled: false)");
        return Ok(None);
    };
    let listener = bind(&resolved.host, resolved.ports)?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("monitoring API: {e}"))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("monitoring API: {e}"))?;
    if !addr.ip().is_loopback() {
        tracing::warn!(
            address = %addr,
            auth = if resolved.basic_auth.is_some() { "basic" } else { "none" },
            "the monitoring API listens on a non-loopback address (api.http.host)"
        );
    }
    let ctx = Arc::new(Context {
        registry,
        node: NodeIdentity::new(config.name.clone(), config.path_data.as_deref()),
        config,
        process: ProcessTracker::default(),
        http_address: addr.to_string(),
    });
    let server = ApiServer {
        addr,
        tls: resolved.tls.is_some(),
    };

    let sampler = Arc::clone(&ctx);
    std::thread::Builder::new()
        .name("api-sampler".to_owned())
        .spawn(move || loop {
            sampler.process.sample();
            sampler.registry.sample_all();
            std::thread::sleep(SAMPLE_EVERY);
        })
        .map_err(|e| format!("monitoring API: starting the sampler: {e}"))?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| format!("monitoring API: {e}"))?;
    let auth = resolved.basic_auth.map(Arc::new);
    let tls = resolved.tls.map(tokio_rustls::TlsAcceptor::from);
    std::thread::Builder::new()
        .name("api".to_owned())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::error!("monitoring API stopped: {e}");
                        return;
                    }
                };
                loop {
                    let (stream, _peer) = match listener.accept().await {
                        Ok(s) => s,
                        Err(e) => {
                            // Out of descriptors and the like: wait a little, keep serving.
                            tracing::warn!("monitoring API: accept failed: {e}");
                            std::thread::sleep(Duration::from_millis(50));
                            continue;
                        }
                    };
                    let ctx = Arc::clone(&ctx);
                    let auth = auth.clone();
                    let tls = tls.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                            let ctx = Arc::clone(&ctx);
                            let auth = auth.clone();
                            async move {
                                if req.uri().path().trim_end_matches('/') == "/_node/tap" {
                                    return Ok::<_, Infallible>(tap(&ctx, auth.as_deref(), &req));
                                }
                                let r = handle(&ctx, auth.as_deref(), &req).await;
                                Ok::<_, Infallible>(r.map(http_body_util::Either::Left))
                            }
                        });
                        let mut http = hyper::server::conn::http1::Builder::new();
                        http.timer(hyper_util::rt::TokioTimer::new())
                            .header_read_timeout(HEADER_TIMEOUT);
                        let result = match tls {
                            Some(acceptor) => {
                                match tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(stream))
                                    .await
                                {
                                    Ok(Ok(s)) => {
                                        http.serve_connection(TokioIo::new(s), service).await
                                    }
                                    Ok(Err(e)) => {
                                        tracing::debug!(
                                            "monitoring API: TLS handshake failed: {e}"
                                        );
                                        return;
                                    }
                                    Err(_) => {
                                        tracing::debug!("monitoring API: TLS handshake timed out");
                                        return;
                                    }
                                }
                            }
                            None => http.serve_connection(TokioIo::new(stream), service).await,
                        };
                        if let Err(e) = result {
                            tracing::debug!("monitoring API: connection ended: {e}");
                        }
                    });
                }
            });
        })
        .map_err(|e| format!("monitoring API: starting its thread: {e}"))?;
    tracing::info!(
        "monitoring API listening on {} (dashboard: {}/dashboard)",
        server.url(),
        server.url()
    );
    Ok(Some(server))
}

type Resp = Response<Full<Bytes>>;

/// `GET /_node/tap` (see [`crate::tap`]): its stream, or an error as every route words one,
/// behind the same auth.
fn tap(
    ctx: &Arc<Context>,
    auth: Option<&(String, String)>,
    req: &Request<Incoming>,
) -> Response<crate::tap::ApiBody> {
    let path = req.uri().path();
    let pretty = wants_pretty(req.uri().query());
    if let Some(r) = refusal(req, auth, pretty, &[Method::GET, Method::HEAD]) {
        return r.map(http_body_util::Either::Left);
    }
    let head_only = req.method() == Method::HEAD;
    match crate::tap::serve(ctx, &query_params(req.uri().query()), head_only) {
        Ok(r) => r,
        Err((status, message)) => {
            error(status, path, &message, pretty).map(http_body_util::Either::Left)
        }
    }
}

fn respond(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Resp {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn json_response(status: StatusCode, v: &Value, pretty: bool) -> Resp {
    let text = if pretty {
        serde_json::to_string_pretty(v)
    } else {
        serde_json::to_string(v)
    }
    .unwrap_or_default();
    respond(status, "application/json; charset=utf-8", text)
}

fn error(status: StatusCode, path: &str, message: &str, pretty: bool) -> Resp {
    json_response(
        status,
        &json!({"path": path, "status": status.as_u16(), "error": {"message": message}}),
        pretty,
    )
}

/// Decodes `%XX` escapes in a path segment.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `?pretty`, `?pretty=true` (but not `?pretty=false`).
fn wants_pretty(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&').any(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            k == "pretty" && v != "false"
        })
    })
}

fn authorized(req: &Request<Incoming>, auth: Option<&(String, String)>) -> bool {
    let Some((user, pass)) = auth else {
        return true;
    };
    let Some(given) = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| {
            let (scheme, rest) = h.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("basic").then_some(rest.trim())
        })
        .and_then(crate::base64::decode)
    else {
        return false;
    };
    let expected = format!("{user}:{pass}");
    crate::base64::constant_time_eq(&given, expected.as_bytes())
}

/// The query string's parameters, decoded (`?pretty` gives `("pretty", "")`).
fn query_params(query: Option<&str>) -> Vec<(String, String)> {
    query
        .unwrap_or("")
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (
                percent_decode(&k.replace('+', " ")),
                percent_decode(&v.replace('+', " ")),
            )
        })
        .collect()
}

/// A parameter's value, if given.
fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A boolean parameter as Logstash reads one: given bare, or `true`/`t`/`yes`/`y`/`1`.
fn flag(params: &[(String, String)], name: &str) -> bool {
    param(params, name).is_some_and(|v| {
        v.is_empty()
            || matches!(
                v.to_ascii_lowercase().as_str(),
                "true" | "t" | "yes" | "y" | "1"
            )
    })
}

/// A time value as Logstash's `TimeValue` reads it: an integer with a unit (`nanos`,
/// `micros`, `ms`, `s`, `m`, `h`, `d`); `None` otherwise. A negative value is no time at all.
pub(crate) fn time_value(text: &str) -> Option<Duration> {
    let t = text.trim().to_ascii_lowercase();
    let units: [(&str, u64); 7] = [
        ("nanos", 1),
        ("micros", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("m", 60_000_000_000),
        ("h", 3_600_000_000_000),
        ("d", 86_400_000_000_000),
    ];
    let (number, nanos) = units
        .iter()
        .find_map(|(u, n)| t.strip_suffix(u).map(|rest| (rest.trim(), *n)))?;
    let n: i64 = number.strip_prefix('+').unwrap_or(number).parse().ok()?;
    Some(Duration::from_nanos(
        (n.max(0) as u64).saturating_mul(nanos),
    ))
}

/// The answer to a request that is not served: 401 without the API's credentials (when it
/// has some), 405 for a method not in `allowed`.
fn refusal(
    req: &Request<Incoming>,
    auth: Option<&(String, String)>,
    pretty: bool,
    allowed: &[Method],
) -> Option<Resp> {
    let path = req.uri().path();
    if !authorized(req, auth) {
        let mut r = error(StatusCode::UNAUTHORIZED, path, "Unauthorized", pretty);
        r.headers_mut().insert(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"sluice\", charset=\"UTF-8\""),
        );
        return Some(r);
    }
    if allowed.contains(req.method()) {
        return None;
    }
    let mut r = error(
        StatusCode::METHOD_NOT_ALLOWED,
        path,
        "Method Not Allowed",
        pretty,
    );
    let allow = allowed
        .iter()
        .map(Method::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if let Ok(v) = HeaderValue::from_str(&allow) {
        r.headers_mut().insert(hyper::header::ALLOW, v);
    }
    Some(r)
}

pub(crate) async fn handle(
    ctx: &Context,
    auth: Option<&(String, String)>,
    req: &Request<Incoming>,
) -> Resp {
    let path = req.uri().path();
    let params = query_params(req.uri().query());
    let pretty = wants_pretty(req.uri().query());
    if let Some(r) = refusal(req, auth, pretty, &[Method::GET, Method::HEAD]) {
        return r;
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() || trimmed == "/_health_report" {
        if let Some(r) = wait_for_status(ctx, path, &params, pretty).await {
            return r;
        }
    }
    if trimmed == "/_node/hot_threads" {
        return hot_threads(ctx, path, &params, pretty).await;
    }
    route(ctx, path, &params, pretty)
}

/// `?wait_for_status=green|yellow|red&timeout=30s` (Logstash 9.3, on `/`; here on
/// `/_health_report` too): waits until the node's status is that or better, checking at once
/// and then with a doubling back-off from 0.2 s. `None` when the request does not wait (or
/// waited and may be answered); an error response for bad parameters (400) or a timeout (408).
async fn wait_for_status(
    ctx: &Context,
    path: &str,
    params: &[(String, String)],
    pretty: bool,
) -> Option<Resp> {
    let status = param(params, "wait_for_status");
    let timeout = param(params, "timeout");
    let target = match status {
        Some(s) => match crate::health::Status::parse_target(s) {
            Some(t) => Some(t),
            None => {
                return Some(error(
                    StatusCode::BAD_REQUEST,
                    path,
                    &format!(
                    "Invalid status '{s}' provided. The valid statuses are: green, yellow, red."
                ),
                    pretty,
                ))
            }
        },
        None => None,
    };
    let timeout = match timeout {
        Some(t) => match time_value(t) {
            Some(d) => Some(d),
            None => {
                return Some(error(
                    StatusCode::BAD_REQUEST,
                    path,
                    &format!("Invalid timeout '{t}' provided."),
                    pretty,
                ))
            }
        },
        None => None,
    };
    let target = target?;
    let Some(timeout) = timeout else {
        return Some(error(
            StatusCode::BAD_REQUEST,
            path,
            "A timeout must be provided along with a status.",
            pretty,
        ));
    };
    let deadline = tokio::time::Instant::now() + timeout;
    let mut wait = Duration::from_millis(200);
    loop {
        if ctx.health_status().reaches(target) {
            return None;
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return Some(error(
                StatusCode::REQUEST_TIMEOUT,
                path,
                &format!("Timed out waiting for status '{}'.", target.as_str()),
                pretty,
            ));
        }
        tokio::time::sleep(wait.min(left)).await;
        wait *= 2;
    }
}

/// `GET /_node/hot_threads[?threads=N&interval=500ms&human&ignore_idle_threads=false]`.
async fn hot_threads(ctx: &Context, path: &str, params: &[(String, String)], pretty: bool) -> Resp {
    let threads = match param(params, "threads") {
        None => 10,
        Some(n) => match n.parse::<usize>() {
            Ok(n) => n,
            Err(_) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    path,
                    &format!("invalid value for threads: {n:?}"),
                    pretty,
                )
            }
        },
    };
    let interval = match param(params, "interval") {
        None => Duration::from_millis(500),
        Some(t) => match time_value(t) {
            Some(d) if d <= Duration::from_secs(60) => d,
            _ => {
                return error(
                    StatusCode::BAD_REQUEST,
                    path,
                    &format!("Invalid interval '{t}' provided (at most 60s)."),
                    pretty,
                )
            }
        },
    };
    let ignore_idle = match param(params, "ignore_idle_threads") {
        None => true,
        Some(_) => flag(params, "ignore_idle_threads"),
    };
    let opts = crate::threads::HotThreadsOptions {
        threads,
        interval,
        ignore_idle,
    };
    let (before, after) = crate::threads::sample_over(interval).await;
    match ctx.hot_threads(&before, &after, &opts, flag(params, "human")) {
        crate::threads::HotThreads::Text(s) => {
            respond(StatusCode::OK, "text/plain; charset=utf-8", s)
        }
        crate::threads::HotThreads::Json(v) => json_response(StatusCode::OK, &v, pretty),
    }
}

pub(crate) fn route(ctx: &Context, path: &str, params: &[(String, String)], pretty: bool) -> Resp {
    let trimmed = path.trim_end_matches('/');
    let segments: Vec<String> = trimmed
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let seg: Vec<&str> = segments.iter().map(String::as_str).collect();
    let graph = flag(params, "graph");
    let vertices = flag(params, "vertices");
    let found = match seg.as_slice() {
        [] => Some(ctx.root()),
        ["_health_report"] => Some(ctx.health_report()),
        ["_node"] => ctx.node_info(&[], graph),
        ["_node", "plugins"] => Some(ctx.plugins()),
        ["_node", "pipelines", id] => ctx.pipelines_info(Some(id), graph).map(|p| {
            let mut m = ctx.base();
            m.insert("pipelines".into(), p);
            Value::Object(m)
        }),
        ["_node", "stats"] => ctx.node_stats(&[], None, vertices),
        ["_node", "stats", "pipelines", id] => ctx.node_stats(&["pipelines"], Some(id), vertices),
        ["_node", "stats", section] => ctx.node_stats(&[section], None, vertices),
        ["_node", parts] => {
            let parts: Vec<&str> = parts.split(',').collect();
            ctx.node_info(&parts, graph)
        }
        ["metrics"] => {
            let stats = ctx.node_stats(&[], None, false).unwrap_or_default();
            return respond(
                StatusCode::OK,
                "text/plain; version=0.0.4; charset=utf-8",
                crate::prometheus::render(&stats),
            );
        }
        ["dashboard"] => {
            return respond(StatusCode::OK, "text/html; charset=utf-8", DASHBOARD_HTML)
        }
        ["dashboard", "app.js"] => {
            return respond(
                StatusCode::OK,
                "text/javascript; charset=utf-8",
                DASHBOARD_JS,
            )
        }
        ["dashboard", "history"] => Some(ctx.history(120)),
        ["dashboard", "style.css"] => {
            return respond(StatusCode::OK, "text/css; charset=utf-8", DASHBOARD_CSS)
        }
        _ => None,
    };
    match found {
        Some(v) => json_response(StatusCode::OK, &v, pretty),
        None => error(StatusCode::NOT_FOUND, path, "Not Found", pretty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_flag() {
        assert!(wants_pretty(Some("pretty")));
        assert!(wants_pretty(Some("a=1&pretty=true")));
        assert!(!wants_pretty(Some("pretty=false")));
        assert!(!wants_pretty(None));
        assert!(!wants_pretty(Some("prettyish")));
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("bad%zz"), "bad%zz");
        assert_eq!(percent_decode("end%2"), "end%2");
    }

    fn settings() -> ApiSettings {
        ApiSettings::default()
    }

    #[test]
    fn resolving_settings() {
        let r = resolve(&settings(), None).unwrap().unwrap();
        assert_eq!(r.host, "127.0.0.1");
        assert_eq!(r.ports, PortRange::DEFAULT);
        assert!(r.basic_auth.is_none() && r.tls.is_none());

        let mut s = settings();
        s.enabled = Some(false);
        assert!(resolve(&s, None).unwrap().is_none());

        let mut s = settings();
        s.auth_type = Some("basic".to_owned());
        assert!(resolve(&s, None)
            .err()
            .expect("refused")
            .contains("username"));
        s.auth_basic_username = Some("u".to_owned());
        s.auth_basic_password = Some("short".to_owned());
        // WARN (the default) accepts a weak password with a warning; ERROR refuses it.
        assert!(resolve(&s, None).unwrap().unwrap().basic_auth.is_some());
        s.password_policy.mode = Some("ERROR".to_owned());
        let e = resolve(&s, None).err().expect("refused");
        assert!(
            e.contains("at least 8 characters") && e.contains("a digit"),
            "{e}"
        );
        s.auth_basic_password = Some("Str0ngPassw0rd".to_owned());
        assert!(resolve(&s, None).unwrap().is_some());

        let mut s = settings();
        s.ssl_enabled = Some(true);
        assert!(resolve(&s, None)
            .err()
            .expect("refused")
            .contains("keystore.path"));
    }

    #[test]
    fn binds_the_first_free_port() {
        let a = bind("127.0.0.1", PortRange { first: 0, last: 0 }).unwrap();
        let port = a.local_addr().unwrap().port();
        // The taken port is skipped for the next one in the range.
        let range = PortRange {
            first: port,
            last: port.saturating_add(50),
        };
        let b = bind("127.0.0.1", range).unwrap();
        assert_ne!(b.local_addr().unwrap().port(), port);
        let e = bind(
            "127.0.0.1",
            PortRange {
                first: port,
                last: port,
            },
        )
        .unwrap_err();
        assert!(e.contains("no free port"), "{e}");
    }
}

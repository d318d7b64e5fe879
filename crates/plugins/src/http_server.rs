//! The server side of the HTTP inputs (`http`, `opentelemetry`): one connection loop
//! ([`serve`]: HTTP/1.1 on the input's listener, requests answered until the pipeline stops,
//! then the connection closed gracefully; [`run`] starts it for an input, [`settings`] reads
//! the options every such input has, [`counters`] makes the counters they share), and the
//! reading of a request's body within its limits ([`take_body`]: `max_content_length` before
//! and after `Content-Encoding` is undone, the bodies held at once within a shared byte
//! budget, [`Held`]), with the answers to a refused one and to a wrong password
//! ([`check_basic_auth`]).

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::{ConfigError, InputContext, Options};

use crate::net::{self, Conn, Peer};

/// The options every HTTP server input has: `host`, `port`, `user`/`password` (basic auth),
/// `threads`, `max_pending_requests`, `max_content_length` and the `ssl_*` options.
pub struct Settings {
    pub listen: net::Listen,
    /// `Basic base64(user:password)`.
    pub auth: Option<String>,
    pub max_content_length: usize,
    /// Requests that may wait for a full queue, beyond one a thread, before 429s.
    pub max_pending: usize,
}

/// Reads [`Settings`], with the input's default port and body limit.
pub fn settings(
    opts: &mut Options,
    input: &'static str,
    port: u16,
    max_content_length: i64,
) -> Result<Settings, ConfigError> {
    settings_with(opts, input, port, max_content_length, "user", false)
}

/// [`settings`] with the name of the user option (`user`, or the `logstash` input's
/// `username`) and whether TLS is on by default.
pub fn settings_with(
    opts: &mut Options,
    input: &'static str,
    port: u16,
    max_content_length: i64,
    user_option: &str,
    ssl_by_default: bool,
) -> Result<Settings, ConfigError> {
    let host = opts.string_or("host", "0.0.0.0")?;
    let port = net::port(opts, "port", Some(port))?;
    let auth = match (opts.string(user_option)?, opts.string("password")?) {
        (Some(u), Some(p)) => Some(basic_auth(&u, &p)),
        (Some(_), None) => return Err(opts.error(user_option, "requires password as well")),
        (None, Some(_)) => {
            return Err(opts.error("password", format!("requires {user_option} as well")))
        }
        (None, None) => None,
    };
    let threads = match opts.int("threads")? {
        Some(n) if n < 1 => return Err(opts.error("threads", "must be at least 1")),
        Some(n) => n as usize,
        None => std::thread::available_parallelism().map_or(2, |n| n.get()),
    };
    let max_pending = opts.int("max_pending_requests")?.unwrap_or(200);
    if max_pending < 1 {
        return Err(opts.error("max_pending_requests", "must be at least 1"));
    }
    let max_content_length = opts
        .int("max_content_length")?
        .unwrap_or(max_content_length);
    if max_content_length < 1 {
        return Err(opts.error("max_content_length", "must be at least 1"));
    }
    let tls = crate::tls::read_server_default(opts, ssl_by_default)?;
    Ok(Settings {
        listen: net::Listen {
            input,
            host,
            port,
            tls,
            keep_alive: false,
            threads,
        },
        auth,
        max_content_length: max_content_length as usize,
        max_pending: max_pending as usize,
    })
}

/// Runs an HTTP server input: `handle` answers every request of every connection, with the
/// input's `shared` state, until the pipeline stops.
pub fn run<S, H, Fut>(
    listen: &net::Listen,
    ctx: &InputContext,
    shared: &Arc<S>,
    handle: H,
) -> Result<(), String>
where
    S: Send + Sync + 'static,
    H: Fn(Request<Incoming>, Peer, Arc<S>, InputContext) -> Fut + Copy + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let shared = Arc::clone(shared);
    let input = listen.input;
    listen.run(ctx, move |conn, peer, ctx| {
        let shared = Arc::clone(&shared);
        let answer = move |req, peer, ctx| handle(req, peer, Arc::clone(&shared), ctx);
        serve(input, conn, peer, ctx, answer)
    })
}

/// Runs an HTTP server input with a second listener, `h2`, that speaks HTTP/2 without TLS's
/// negotiation or with it (ALPN `h2`): gRPC. `handle` answers the first's requests,
/// `h2_handle` the second's, both with the input's `shared` state, until the pipeline stops.
pub fn run_with_h2<S, H, Fut, G, Gut, B>(
    listen: &net::Listen,
    h2: &net::Listen,
    ctx: &InputContext,
    shared: &Arc<S>,
    handle: H,
    h2_handle: G,
) -> Result<(), String>
where
    S: Send + Sync + 'static,
    H: Fn(Request<Incoming>, Peer, Arc<S>, InputContext) -> Fut + Copy + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
    G: Fn(Request<Incoming>, Peer, Arc<S>, InputContext) -> Gut + Copy + Send + Sync + 'static,
    Gut: Future<Output = Response<B>> + Send + 'static,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (first, second) = (Arc::clone(shared), Arc::clone(shared));
    let input = listen.input;
    listen.run_with(
        h2,
        ctx,
        move |conn, peer, ctx| {
            let shared = Arc::clone(&first);
            let answer = move |req, peer, ctx| handle(req, peer, Arc::clone(&shared), ctx);
            serve(input, conn, peer, ctx, answer)
        },
        move |conn, peer, ctx| {
            let shared = Arc::clone(&second);
            let answer = move |req, peer, ctx| h2_handle(req, peer, Arc::clone(&shared), ctx);
            serve_h2(input, conn, peer, ctx, answer)
        },
    )
}

/// Serves HTTP/2 on one connection, each request (stream) answered by `handle`, until the
/// client closes it or the pipeline stops (then streams under way are answered and it
/// closes with a GOAWAY).
pub async fn serve_h2<H, Fut, B>(
    input: &'static str,
    conn: Box<dyn Conn>,
    peer: Peer,
    ctx: InputContext,
    handle: H,
) where
    H: Fn(Request<Incoming>, Peer, InputContext) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<B>> + Send + 'static,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let service = service(handle, peer, ctx.clone());
    let mut http = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new());
    http.timer(hyper_util::rt::TokioTimer::new());
    let served = http.serve_connection(TokioIo::new(conn), service);
    until_stopped(input, served, &ctx).await;
}

/// Serves HTTP/1.1 on one connection, each request answered by `handle`, until the client
/// closes it or the pipeline stops (then requests under way are answered and it closes).
pub async fn serve<H, Fut>(
    input: &'static str,
    conn: Box<dyn Conn>,
    peer: Peer,
    ctx: InputContext,
    handle: H,
) where
    H: Fn(Request<Incoming>, Peer, InputContext) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let service = service(handle, peer, ctx.clone());
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30));
    let served = http.serve_connection(TokioIo::new(conn), service);
    until_stopped(input, served, &ctx).await;
}

/// `handle` as a hyper service of one connection.
fn service<H, Fut, B>(
    handle: H,
    peer: Peer,
    ctx: InputContext,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = Response<B>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<B>, Infallible>> + Send,
> + Clone
where
    H: Fn(Request<Incoming>, Peer, InputContext) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<B>> + Send + 'static,
    B: hyper::body::Body,
{
    hyper::service::service_fn(move |req| {
        let (handle, peer, ctx) = (handle.clone(), peer.clone(), ctx.clone());
        async move { Ok::<_, Infallible>(handle(req, peer, ctx).await) }
    })
}

/// A served connection of either HTTP version: it can be told to finish what it has.
trait Graceful: Future<Output = Result<(), hyper::Error>> {
    fn graceful(self: std::pin::Pin<&mut Self>);
}

impl<I, S> Graceful for hyper::server::conn::http1::Connection<I, S>
where
    Self: Future<Output = Result<(), hyper::Error>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    S: hyper::service::HttpService<Incoming>,
    S::ResBody: hyper::body::Body + 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn graceful(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

impl<I, S, E> Graceful for hyper::server::conn::http2::Connection<I, S, E>
where
    Self: Future<Output = Result<(), hyper::Error>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    S: hyper::service::HttpService<Incoming>,
    S::ResBody: hyper::body::Body + 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    E: hyper::rt::bounds::Http2ServerConnExec<S::Future, S::ResBody>,
{
    fn graceful(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

/// Runs a served connection until it ends, or until the pipeline stops: then it finishes the
/// requests under way and closes.
async fn until_stopped(input: &str, served: impl Graceful, ctx: &InputContext) {
    let mut served = std::pin::pin!(served);
    let ended = tokio::select! {
        r = served.as_mut() => r,
        _ = ctx.stopped() => {
            served.as_mut().graceful();
            served.await
        }
    };
    if let Err(e) = ended {
        tracing::debug!("{input} input: connection ended: {e}");
    }
}

/// Reads a request's body within its limits (`limit` bytes before and after decoding, the
/// shared byte `budget`, 60 s to arrive). Gives the request's parts, the body and
/// the share of the budget it holds (keep it until the body's events are queued), or the
/// answer refusing it.
pub async fn take_body(
    req: Request<Incoming>,
    limit: usize,
    budget: &Arc<tokio::sync::Semaphore>,
    c: &NamedCounters,
) -> Result<(hyper::http::request::Parts, Vec<u8>, Held), Response<Full<Bytes>>> {
    let (parts, body) = req.into_parts();
    let mut held = Held::new(budget);
    // A client that trickles its body does not keep its slot for ever.
    let read = read_body(body, &parts, limit, &mut held);
    match tokio::time::timeout(BODY_TIMEOUT, read).await {
        Err(_) => Err(reply(
            StatusCode::REQUEST_TIMEOUT,
            "request body timed out\n",
        )),
        Ok(Err(refusal)) => Err(refusal.answer(c)),
        Ok(Ok(body)) => Ok((parts, body, held)),
    }
}

/// An HTTP input's counters: the requests [`serve`]'s helpers and every such input count
/// (accepted, and refused for being busy, for credentials, for size or for memory), then the
/// input's own `extra` ones.
pub fn counters(extra: &[&str]) -> Arc<NamedCounters> {
    let mut paths = vec![
        "requests.accepted",
        "requests.rejected_busy",
        "requests.rejected_auth",
        "requests.rejected_too_large",
        "requests.rejected_memory",
    ];
    paths.extend_from_slice(extra);
    Arc::new(NamedCounters::with_paths(&paths))
}

/// `Authorization: Basic ...` for `user` and `password`.
pub fn basic_auth(user: &str, password: &str) -> String {
    use base64::Engine;
    let pair = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {pair}")
}

/// `None` when the request carries `expected` (or nothing is expected), else the 401 to send
/// (counted as `requests.rejected_auth`).
pub fn check_basic_auth(
    req: &Request<Incoming>,
    expected: Option<&str>,
    c: &NamedCounters,
) -> Option<Response<Full<Bytes>>> {
    let expected = expected?;
    let given = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if given == Some(expected) {
        return None;
    }
    c.add("requests.rejected_auth", 1);
    let mut r = reply(StatusCode::UNAUTHORIZED, "unauthorized\n");
    r.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Basic realm=\"sluice\""),
    );
    Some(r)
}

/// How long a request's body may take to arrive.
const BODY_TIMEOUT: Duration = Duration::from_secs(60);

pub fn reply(code: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = code;
    r
}

/// The share of `max_pending_bytes` a request holds: taken as its body arrives, given back
/// when the request is answered.
pub struct Held {
    budget: Arc<tokio::sync::Semaphore>,
    permits: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Held {
    fn new(budget: &Arc<tokio::sync::Semaphore>) -> Held {
        Held {
            budget: Arc::clone(budget),
            permits: None,
        }
    }

    /// Takes `bytes` more; false when the budget has not that much left now.
    fn take(&mut self, bytes: usize) -> bool {
        if bytes == 0 {
            return true;
        }
        let Ok(n) = u32::try_from(bytes) else {
            return false;
        };
        match Arc::clone(&self.budget).try_acquire_many_owned(n) {
            Ok(p) => {
                match &mut self.permits {
                    Some(all) => all.merge(p),
                    None => self.permits = Some(p),
                }
                true
            }
            Err(_) => false,
        }
    }
}

/// Why a request's body was not taken.
enum Refusal {
    TooLarge,
    /// `max_pending_bytes` is used up by other requests.
    Memory,
    Unreadable,
    /// A `Content-Encoding` other than gzip, deflate and identity.
    Encoding,
}

impl Refusal {
    fn answer(self, c: &NamedCounters) -> Response<Full<Bytes>> {
        match self {
            Refusal::TooLarge => {
                c.add("requests.rejected_too_large", 1);
                reply(StatusCode::PAYLOAD_TOO_LARGE, "request body too large\n")
            }
            Refusal::Memory => {
                c.add("requests.rejected_memory", 1);
                reply(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too much request data pending (max_pending_bytes)\n",
                )
            }
            Refusal::Unreadable => reply(StatusCode::BAD_REQUEST, "cannot read the request body\n"),
            Refusal::Encoding => reply(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported Content-Encoding (gzip, deflate and identity are)\n",
            ),
        }
    }
}

/// Reads the body frame by frame into one buffer (sized by `Content-Length` when given),
/// taking its bytes from the budget as they come, and undoes `Content-Encoding: gzip` or
/// `deflate`: at most `max_content_length` bytes, before and after decoding.
async fn read_body(
    mut body: Incoming,
    parts: &hyper::http::request::Parts,
    limit: usize,
    held: &mut Held,
) -> Result<Vec<u8>, Refusal> {
    let declared = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let encoding = parts
        .headers
        .get(hyper::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default();
    if !matches!(
        encoding.as_str(),
        "" | "identity" | "gzip" | "x-gzip" | "deflate"
    ) {
        return Err(Refusal::Encoding);
    }
    let mut buf = Vec::new();
    if let Some(n) = declared {
        if n > limit as u64 {
            return Err(Refusal::TooLarge);
        }
        if !held.take(n as usize) {
            return Err(discard(body, limit).await);
        }
        buf.reserve_exact(n as usize);
    }
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| Refusal::Unreadable)?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if buf.len() + data.len() > limit {
            return Err(Refusal::TooLarge);
        }
        // Past what Content-Length said (or without one): taken as it comes.
        let taken = declared.map_or(0, |n| n as usize);
        let beyond = (buf.len() + data.len()).saturating_sub(taken.max(buf.len()));
        if !held.take(beyond) {
            drop(buf);
            return Err(discard(body, limit).await);
        }
        buf.extend_from_slice(&data);
    }
    match encoding.as_str() {
        "gzip" | "x-gzip" => inflate(flate2::read::MultiGzDecoder::new(&buf[..]), limit, held),
        "deflate" => {
            // HTTP's "deflate" is zlib-wrapped; some clients send raw deflate.
            let zlib = inflate(flate2::read::ZlibDecoder::new(&buf[..]), limit, held);
            match zlib {
                Err(Refusal::Unreadable) => {
                    inflate(flate2::read::DeflateDecoder::new(&buf[..]), limit, held)
                }
                other => other,
            }
        }
        _ => Ok(buf),
    }
}

/// Reads the rest of a body refused for want of memory, keeping none of it (at most `limit`
/// bytes), so that the client, still sending, reads the 429 instead of a reset connection.
async fn discard(mut body: Incoming, limit: usize) -> Refusal {
    let mut read = 0usize;
    while let Some(Ok(frame)) = body.frame().await {
        if let Ok(data) = frame.into_data() {
            read += data.len();
            if read > limit {
                return Refusal::TooLarge;
            }
        }
    }
    Refusal::Memory
}

/// Decompresses at most `limit` bytes, taking them from the budget as they come.
fn inflate(mut r: impl std::io::Read, limit: usize, held: &mut Held) -> Result<Vec<u8>, Refusal> {
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(Refusal::Unreadable),
        };
        if out.len() + n > limit {
            return Err(Refusal::TooLarge);
        }
        if !held.take(n) {
            return Err(Refusal::Memory);
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

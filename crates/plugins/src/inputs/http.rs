//! `http`: events from HTTP requests, as Logstash's http input. Each request's body is decoded
//! by the codec its `Content-Type` names in `additional_codecs` (default: `application/json`
//! → `json`, where an array gives one event per element, and beyond Logstash
//! `application/x-ndjson` → `json_lines`), else by `codec` (`plain`: the body is one event).
//! The response (`response_code`, `response_headers`, body `ok`) is sent once the request's
//! events are in the pipeline's queue.
//!
//! While the queue is full, requests wait; past `threads` + `max_pending_requests` waiting
//! requests, new ones get 429 at once (Logstash's answer) rather than piling up. Memory is
//! bounded across all requests too (beyond Logstash): the request bodies held at once (as they
//! arrive, decoded, until their events are queued) stay within `max_pending_bytes` (default
//! twice `max_content_length`); a request that would pass it gets 429 at once. A body over
//! `max_content_length` (after `Content-Encoding: gzip` or `deflate` is undone, as Logstash
//! does) gets 413, one that takes over 60 s to arrive 408, wrong credentials
//! (`user`/`password`) 401; bad TLS closes the connection.
//!
//! Fields: the client's address in `host` (`[host][ip]` with ECS; `remote_host_target_field`),
//! the request headers (lower case, `-` as `_`) with `request_method`, `request_path`,
//! `request_uri`, `http_version` in `headers` without ECS (`request_headers_target_field`); with
//! ECS, `[http][method]`, `[http][version]`, `[url][path]`, `[url][query]`, `[url][domain]`,
//! `[url][port]`, `[user_agent][original]`, `[http][request][mime_type]`,
//! `[http][request][body][bytes]`, and the headers in
//! `[@metadata][input][http][request][headers]`.

use std::sync::Arc;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use sluice_event::{Event, FieldRef, Map, Value};
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};

use crate::ecs::Ecs;
use crate::http_server::{self, reply};
use crate::net::{self, Peer};

pub struct HttpInput {
    listen: net::Listen,
    shared: Arc<Shared>,
}

struct Shared {
    codec: std::sync::Mutex<Box<dyn Codec>>,
    /// Media type → codec.
    additional: Vec<(String, std::sync::Mutex<Box<dyn Codec>>)>,
    /// `Basic base64(user:password)`.
    auth: Option<String>,
    response_code: StatusCode,
    response_headers: Vec<(String, String)>,
    max_content_length: usize,
    pending: Arc<tokio::sync::Semaphore>,
    /// One permit per byte of request body held (`max_pending_bytes`).
    body_bytes: Arc<tokio::sync::Semaphore>,
    ecs: bool,
    /// Where the client's address and the request's headers go; `None` for the `logstash`
    /// input, which adds nothing to the events it is sent.
    remote_host: Option<FieldRef>,
    headers_field: Option<FieldRef>,
    counters: Arc<NamedCounters>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let settings = http_server::settings(opts, "http", 8080, 100 * 1024 * 1024)?;
    build_with(opts, settings)
}

/// The Logstash integration's `logstash` input (the receiving end of Logstash-to-Logstash):
/// this input on port 9800 with TLS on by default, `username`/`password`, and a fixed
/// `json_lines` codec (a line holding a JSON array is one event per element, which is what
/// the `logstash` output sends); events get none of the http input's fields, so they arrive as
/// they were sent (plus the common options' `type`, `tags`, `add_field`).
pub fn build_logstash(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    if opts.has("codec") {
        opts.take("codec");
        return Err(opts.error(
            "codec",
            "The `logstash` input does not have an externally-configurable `codec`",
        ));
    }
    let ssl = opts.boolean("ssl_enabled")?.unwrap_or(true);
    if !ssl {
        let given: Vec<&str> = [
            "ssl_certificate",
            "ssl_key",
            "ssl_certificate_authorities",
            "ssl_client_authentication",
            "ssl_handshake_timeout",
            "ssl_supported_protocols",
        ]
        .into_iter()
        .filter(|n| opts.has(n))
        .collect();
        if let Some(first) = given.first() {
            return Err(opts.error(
                first,
                format!("Explicit SSL-related settings not supported because `ssl_enabled => false`: {given:?}"),
            ));
        }
    }
    let settings =
        http_server::settings_with(opts, "logstash", 9800, 100 * 1024 * 1024, "username", ssl)?;
    if !ssl && settings.auth.is_some() {
        tracing::warn!("logstash input: credentials go over a connection without TLS");
    }
    let codec = opts.codec_named("codec", "json_lines")?;
    let threads = settings.listen.threads;
    Ok(Box::new(HttpInput {
        listen: settings.listen,
        shared: Arc::new(Shared {
            codec: std::sync::Mutex::new(codec),
            additional: Vec::new(),
            auth: settings.auth,
            response_code: StatusCode::OK,
            response_headers: vec![("Accept".into(), "application/x-ndjson".into())],
            max_content_length: settings.max_content_length,
            pending: Arc::new(tokio::sync::Semaphore::new(threads + settings.max_pending)),
            body_bytes: Arc::new(tokio::sync::Semaphore::new(
                settings
                    .max_content_length
                    .saturating_mul(2)
                    .min(tokio::sync::Semaphore::MAX_PERMITS),
            )),
            ecs: false,
            remote_host: None,
            headers_field: None,
            counters: http_server::counters(&[]),
        }),
    }))
}

fn build_with(
    opts: &mut Options,
    settings: http_server::Settings,
) -> Result<Box<dyn Input>, ConfigError> {
    let ecs = Ecs::from_options(opts)?;
    let max_content_length = settings.max_content_length as i64;
    let max_pending_bytes = opts
        .int("max_pending_bytes")?
        .unwrap_or(max_content_length.saturating_mul(2));
    if max_pending_bytes < max_content_length {
        return Err(opts.error(
            "max_pending_bytes",
            format!("must be at least max_content_length ({max_content_length}), so that a body of that size can be taken"),
        ));
    }
    let max_pending_bytes =
        (max_pending_bytes as u64).min(tokio::sync::Semaphore::MAX_PERMITS as u64);
    let code = opts.int("response_code")?.unwrap_or(200);
    if ![200, 201, 202, 204].contains(&code) {
        return Err(opts.error(
            "response_code",
            format!("{code} is not one of 200, 201, 202, 204"),
        ));
    }
    let response_headers = opts
        .string_hash("response_headers")?
        .unwrap_or_else(|| vec![("Content-Type".into(), "text/plain".into())]);
    let codec = opts.codec("plain")?;
    let mut additional = Vec::new();
    let codecs = opts.string_hash("additional_codecs")?.unwrap_or_else(|| {
        vec![
            ("application/json".into(), "json".into()),
            ("application/x-ndjson".into(), "json_lines".into()),
        ]
    });
    for (media, name) in codecs {
        let codec = opts.codec_named("additional_codecs", &name)?;
        additional.push((media.to_ascii_lowercase(), std::sync::Mutex::new(codec)));
    }
    let f = |s: &str| FieldRef::parse(s);
    let remote_host = opts
        .string("remote_host_target_field")?
        .unwrap_or_else(|| if ecs.enabled() { "[host][ip]" } else { "host" }.to_owned());
    let remote_host =
        f(&remote_host).map_err(|e| opts.error("remote_host_target_field", e.to_string()))?;
    let headers_field = opts
        .string("request_headers_target_field")?
        .unwrap_or_else(|| {
            if ecs.enabled() {
                "[@metadata][input][http][request][headers]"
            } else {
                "headers"
            }
            .to_owned()
        });
    let headers_field =
        f(&headers_field).map_err(|e| opts.error("request_headers_target_field", e.to_string()))?;
    let threads = settings.listen.threads;
    Ok(Box::new(HttpInput {
        listen: settings.listen,
        shared: Arc::new(Shared {
            codec: std::sync::Mutex::new(codec),
            additional,
            auth: settings.auth,
            response_code: StatusCode::from_u16(code as u16).unwrap_or(StatusCode::OK),
            response_headers,
            max_content_length: max_content_length as usize,
            pending: Arc::new(tokio::sync::Semaphore::new(threads + settings.max_pending)),
            body_bytes: Arc::new(tokio::sync::Semaphore::new(max_pending_bytes as usize)),
            ecs: ecs.enabled(),
            remote_host: Some(remote_host),
            headers_field: Some(headers_field),
            counters: http_server::counters(&[]),
        }),
    }))
}

impl Input for HttpInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        http_server::run(&self.listen, ctx, &self.shared, handle)
    }

    fn counters(&self) -> Option<Arc<NamedCounters>> {
        Some(Arc::clone(&self.shared.counters))
    }
}

async fn handle(
    req: Request<Incoming>,
    peer: Peer,
    shared: Arc<Shared>,
    ctx: InputContext,
) -> Response<Full<Bytes>> {
    let c = &shared.counters;
    let Ok(_permit) = Arc::clone(&shared.pending).try_acquire_owned() else {
        c.add("requests.rejected_busy", 1);
        return reply(StatusCode::TOO_MANY_REQUESTS, "too many requests\n");
    };
    if let Some(refused) = http_server::check_basic_auth(&req, shared.auth.as_deref(), c) {
        return refused;
    }
    let taken = http_server::take_body(req, shared.max_content_length, &shared.body_bytes, c);
    let (parts, body, _held) = match taken.await {
        Ok(t) => t,
        Err(refused) => return refused,
    };
    let content_type = parts
        .headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let mut codec = match shared.additional.iter().find(|(m, _)| *m == media) {
        Some((_, c)) => c.lock().unwrap_or_else(|e| e.into_inner()).clone_box(),
        None => (shared.codec.lock())
            .unwrap_or_else(|e| e.into_inner())
            .clone_box(),
    };
    let mut events: Vec<Event> = Vec::new();
    codec.decode(&body, &mut events);
    codec.flush(&mut events);
    let body_len = body.len();
    // The events hold what the body did: it goes before they wait for the queue. Its bytes
    // stay counted in `_held` (the events' own size) until they are queued.
    drop(body);
    let ip = Value::String(peer.addr.ip().to_string().into());
    let headers = request_headers(&parts);
    for e in &mut events {
        if let Some(f) = &shared.remote_host {
            if e.get(f).is_none() {
                e.set(f, ip.clone());
            }
        }
        if let Some(f) = &shared.headers_field {
            e.set(f, Value::Object(headers.clone()));
        }
        if shared.ecs {
            ecs_fields(e, &parts, &media, body_len);
        }
    }
    if net::push(&ctx, events).await.is_err() {
        return reply(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n");
    }
    c.add("requests.accepted", 1);
    let mut r = Response::new(Full::new(
        if shared.response_code == StatusCode::NO_CONTENT {
            Bytes::new()
        } else {
            Bytes::from_static(b"ok")
        },
    ));
    *r.status_mut() = shared.response_code;
    for (k, v) in &shared.response_headers {
        if let (Ok(k), Ok(v)) = (
            hyper::header::HeaderName::from_bytes(k.as_bytes()),
            hyper::header::HeaderValue::from_str(v),
        ) {
            r.headers_mut().insert(k, v);
        }
    }
    r
}

/// The request's headers as Logstash's http input records them.
fn request_headers(parts: &hyper::http::request::Parts) -> Map {
    let mut m = Map::new();
    for (k, v) in &parts.headers {
        let key = k.as_str().to_ascii_lowercase().replace('-', "_");
        let key = match key.as_str() {
            "host" => "http_host".to_owned(),
            "user_agent" => "http_user_agent".to_owned(),
            "accept" => "http_accept".to_owned(),
            _ => key,
        };
        m.insert(
            key.into(),
            Value::String(String::from_utf8_lossy(v.as_bytes()).into_owned().into()),
        );
    }
    m.insert(
        "request_method".into(),
        Value::String(parts.method.as_str().into()),
    );
    m.insert(
        "request_path".into(),
        Value::String(parts.uri.path().into()),
    );
    let uri = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), |p| p.as_str().to_owned());
    m.insert("request_uri".into(), Value::String(uri.into()));
    m.insert(
        "http_version".into(),
        Value::String(format!("{:?}", parts.version).into()),
    );
    m
}

fn ecs_fields(e: &mut Event, parts: &hyper::http::request::Parts, media: &str, bytes: usize) {
    let set = |e: &mut Event, r: &str, v: Value| {
        if let Ok(r) = FieldRef::parse(r) {
            if e.get(&r).is_none() {
                e.set(&r, v);
            }
        }
    };
    let s = |t: &str| Value::String(t.into());
    set(e, "[http][method]", s(parts.method.as_str()));
    let version = format!("{:?}", parts.version);
    set(
        e,
        "[http][version]",
        s(version.strip_prefix("HTTP/").unwrap_or(&version)),
    );
    set(e, "[url][path]", s(parts.uri.path()));
    if let Some(q) = parts.uri.query() {
        set(e, "[url][query]", s(q));
    }
    if let Some(h) = parts
        .headers
        .get(hyper::header::HOST)
        .and_then(|v| v.to_str().ok())
    {
        let (domain, port) = match h.rsplit_once(':') {
            Some((d, p)) if p.bytes().all(|b| b.is_ascii_digit()) => (d, p.parse::<i64>().ok()),
            _ => (h, None),
        };
        set(e, "[url][domain]", s(domain));
        if let Some(p) = port {
            set(e, "[url][port]", Value::Int(p));
        }
    }
    if let Some(ua) = parts
        .headers
        .get(hyper::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
    {
        set(e, "[user_agent][original]", s(ua));
    }
    if !media.is_empty() {
        set(e, "[http][request][mime_type]", s(media));
    }
    set(e, "[http][request][body][bytes]", Value::Int(bytes as i64));
}

//! `opentelemetry`: OTLP logs, traces and metrics in (OpenTelemetry's protocol, as SDKs and
//! collectors send it), over HTTP and over gRPC.
//! - OTLP/HTTP on `port` (4318): `POST /v1/logs`, `/v1/traces` and `/v1/metrics` with an
//!   `Export*ServiceRequest`, in protobuf (`application/x-protobuf`) or JSON
//!   (`application/json`), gzip or not.
//! - OTLP/gRPC on `grpc_port` (4317; `grpc => false` for none): the logs, trace and metrics
//!   services' `Export` over HTTP/2 ([`crate::otlp::grpc`]), gzip or not; with the `ssl_*`
//!   options, TLS with ALPN `h2`.
//!
//! Each log record becomes one event in the shape [`crate::otlp::logs`] describes, each span
//! one in [`crate::otlp::traces`]'s, each metric data point one in [`crate::otlp::metrics`]'s.
//! The answer (an empty `Export*ServiceResponse`) goes out once the request's events are in
//! the pipeline's queue, so a sender that got it can forget them.
//!
//! `mapping => raw` keeps OTLP's own JSON shape under `[otel]` instead ([`crate::otlp::raw`]).
//!
//! Options: `host` (0.0.0.0), `port`, `grpc_port`, `grpc`, `mapping` (`ecs`, `raw`),
//! `user`/`password` (basic auth) or `bearer_token` (`Authorization: Bearer ...`), on both, the `ssl_*` options of every server input,
//! `max_content_length` (64 MiB, before and after gzip is undone: 413 past it),
//! `max_pending_requests` (200) and `threads`.
//!
//! Refusals, each counted: a body that is no OTLP request is a 400 (gRPC: INVALID_ARGUMENT)
//! whose `google.rpc.Status` says where it is wrong, and is not retried by OTLP senders; a
//! wrong `Content-Type` 415; another method 405; too many requests waiting for a full queue
//! 429 with `Retry-After` (gRPC: RESOURCE_EXHAUSTED with a `RetryInfo`), which senders retry;
//! another path 404 (gRPC: UNIMPLEMENTED).

use std::sync::Arc;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use sluice_event::Event;
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::{ConfigError, Input, InputContext, Options};

use crate::http_server::{self, reply};
use crate::net::{self, Peer};
use crate::otlp;
use crate::otlp::grpc;

pub struct OpenTelemetryInput {
    listen: net::Listen,
    /// OTLP/gRPC's listener (`grpc_port`), unless `grpc => false`.
    grpc: Option<net::Listen>,
    shared: Arc<Shared>,
}

struct Shared {
    /// `mapping => raw`: OTLP's JSON under `[otel]` ([`otlp::raw`]).
    raw: bool,
    auth: Option<String>,
    max_content_length: usize,
    pending: Arc<tokio::sync::Semaphore>,
    body_bytes: Arc<tokio::sync::Semaphore>,
    counters: Arc<NamedCounters>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let mut settings = http_server::settings(opts, "opentelemetry", 4318, 64 << 20)?;
    // A bearer token (as the collector's bearertokenauth sends it), instead of a password.
    if let Some(token) = opts.string("bearer_token")? {
        if settings.auth.is_some() {
            return Err(opts.error("bearer_token", "goes without user and password"));
        }
        if token.is_empty() {
            return Err(opts.error("bearer_token", "must not be empty"));
        }
        settings.auth = Some(format!("Bearer {token}"));
    }
    let grpc_port = net::port(opts, "grpc_port", Some(4317))?;
    let raw = opts.choice("mapping", &["ecs", "raw"], "ecs")? == "raw";
    let grpc = match opts.boolean_or("grpc", true)? {
        false => None,
        true if grpc_port == settings.listen.port => {
            return Err(opts.error(
                "grpc_port",
                format!("is the same as port ({grpc_port}); OTLP/gRPC needs a port of its own (4317 by default), or grpc => false"),
            ))
        }
        true => {
            let mut tls = settings.listen.tls.clone();
            // gRPC over TLS is HTTP/2 chosen by ALPN.
            if let Some(t) = &mut tls {
                let mut config = (*t.config).clone();
                config.alpn_protocols = vec![b"h2".to_vec()];
                t.config = Arc::new(config);
            }
            Some(net::Listen {
                port: grpc_port,
                tls,
                host: settings.listen.host.clone(),
                ..settings.listen
            })
        }
    };
    let max = settings.max_content_length;
    let threads = settings.listen.threads;
    Ok(Box::new(OpenTelemetryInput {
        grpc,
        listen: settings.listen,
        shared: Arc::new(Shared {
            raw,
            auth: settings.auth,
            max_content_length: max,
            pending: Arc::new(tokio::sync::Semaphore::new(threads + settings.max_pending)),
            // Two bodies of the largest size at once.
            body_bytes: Arc::new(tokio::sync::Semaphore::new(
                max.saturating_mul(2)
                    .min(tokio::sync::Semaphore::MAX_PERMITS),
            )),
            counters: http_server::counters(&[
                "requests.rejected_invalid",
                "log_records",
                "spans",
                "data_points",
            ]),
        }),
    }))
}

impl Input for OpenTelemetryInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        match &self.grpc {
            None => http_server::run(&self.listen, ctx, &self.shared, handle),
            Some(grpc) => {
                http_server::run_with_h2(&self.listen, grpc, ctx, &self.shared, handle, handle_grpc)
            }
        }
    }

    fn counters(&self) -> Option<Arc<NamedCounters>> {
        Some(Arc::clone(&self.shared.counters))
    }
}

/// The signals this input takes.
#[derive(Clone, Copy)]
enum Signal {
    Logs,
    Traces,
    Metrics,
}

impl Signal {
    fn request(self) -> &'static str {
        match self {
            Signal::Logs => "OTLP logs request",
            Signal::Traces => "OTLP traces request",
            Signal::Metrics => "OTLP metrics request",
        }
    }

    /// The counter of what its requests carried.
    fn counter(self) -> &'static str {
        match self {
            Signal::Logs => "log_records",
            Signal::Traces => "spans",
            Signal::Metrics => "data_points",
        }
    }
}

/// A decoded export request.
enum Export {
    Logs(otlp::proto::ExportLogsServiceRequest),
    Traces(otlp::proto::ExportTraceServiceRequest),
    Metrics(otlp::proto::ExportMetricsServiceRequest),
}

impl From<otlp::proto::ExportMetricsServiceRequest> for Export {
    fn from(r: otlp::proto::ExportMetricsServiceRequest) -> Export {
        Export::Metrics(r)
    }
}

impl From<otlp::proto::ExportLogsServiceRequest> for Export {
    fn from(r: otlp::proto::ExportLogsServiceRequest) -> Export {
        Export::Logs(r)
    }
}

impl From<otlp::proto::ExportTraceServiceRequest> for Export {
    fn from(r: otlp::proto::ExportTraceServiceRequest) -> Export {
        Export::Traces(r)
    }
}

/// The two encodings of OTLP/HTTP.
#[derive(Clone, Copy, PartialEq)]
enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }
}

/// An answer in the request's encoding.
fn answer(code: StatusCode, encoding: Encoding, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = code;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(encoding.content_type()),
    );
    r
}

/// An error answer: a `google.rpc.Status` with a gRPC `grpc_code` and `message`.
fn status(
    code: StatusCode,
    grpc_code: i32,
    message: String,
    encoding: Encoding,
) -> Response<Full<Bytes>> {
    let body = match encoding {
        Encoding::Protobuf => prost::Message::encode_to_vec(&otlp::proto::Status {
            code: grpc_code,
            message,
            details: Vec::new(),
        }),
        Encoding::Json => serde_json::json!({ "code": grpc_code, "message": message })
            .to_string()
            .into_bytes(),
    };
    answer(code, encoding, body)
}

async fn handle(
    req: Request<Incoming>,
    _peer: Peer,
    shared: Arc<Shared>,
    ctx: InputContext,
) -> Response<Full<Bytes>> {
    let c = &shared.counters;
    if req.method() != Method::POST {
        let mut r = reply(StatusCode::METHOD_NOT_ALLOWED, "OTLP/HTTP takes POST\n");
        r.headers_mut().insert(
            hyper::header::ALLOW,
            hyper::header::HeaderValue::from_static("POST"),
        );
        return r;
    }
    let signal = match req.uri().path() {
        "/v1/logs" => Signal::Logs,
        "/v1/traces" => Signal::Traces,
        "/v1/metrics" => Signal::Metrics,
        _ => {
            return reply(
                StatusCode::NOT_FOUND,
                "OTLP/HTTP goes to /v1/logs, /v1/traces and /v1/metrics\n",
            )
        }
    };
    let media = req
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let encoding = match media.as_str() {
        "application/x-protobuf" => Encoding::Protobuf,
        "application/json" => Encoding::Json,
        _ => {
            return reply(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Content-Type must be application/x-protobuf or application/json\n",
            )
        }
    };
    let Ok(_permit) = Arc::clone(&shared.pending).try_acquire_owned() else {
        c.add("requests.rejected_busy", 1);
        let mut r = status(
            StatusCode::TOO_MANY_REQUESTS,
            8,
            "too many requests are waiting for the pipeline's queue".into(),
            encoding,
        );
        r.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from_static("1"),
        );
        return r;
    };
    if let Some(refused) = http_server::check_basic_auth(&req, shared.auth.as_deref(), c) {
        return refused;
    }
    let taken = http_server::take_body(req, shared.max_content_length, &shared.body_bytes, c);
    let (_, body, _held) = match taken.await {
        Ok(t) => t,
        Err(refused) => return refused,
    };
    match ingest(signal, encoding, body, &shared, &ctx).await {
        Ok(()) => {}
        Err(Failed::Invalid(message)) => {
            return status(StatusCode::BAD_REQUEST, 3, message, encoding);
        }
        Err(Failed::Stopping) => {
            return status(
                StatusCode::SERVICE_UNAVAILABLE,
                14,
                "the pipeline is stopping".into(),
                encoding,
            );
        }
    }
    // A full success: an ExportLogsServiceResponse without a partial success.
    let body = match encoding {
        Encoding::Protobuf => Vec::new(),
        Encoding::Json => b"{}".to_vec(),
    };
    answer(StatusCode::OK, encoding, body)
}

/// Why a request's records were not queued.
enum Failed {
    /// The body is no such request: what is wrong, and where.
    Invalid(String),
    Stopping,
}

/// Decodes `body` (an export request of `signal` in `encoding`), makes its events and queues
/// them; counts what it took or refused.
async fn ingest(
    signal: Signal,
    encoding: Encoding,
    body: Vec<u8>,
    shared: &Shared,
    ctx: &InputContext,
) -> Result<(), Failed> {
    let mut events: Vec<Event> = Vec::new();
    // The common case, protobuf logs in the default mapping, is read in place.
    if let (Signal::Logs, Encoding::Protobuf, false) = (signal, encoding, shared.raw) {
        let decoded = otlp::logs::decode_events(&body, &mut events);
        drop(body);
        return queue(signal, decoded, events, shared, ctx).await;
    }
    let decoded = match (signal, encoding) {
        (Signal::Logs, Encoding::Protobuf) => otlp::logs::decode(&body)
            .map(Export::from)
            .map_err(|e| e.to_string()),
        (Signal::Logs, Encoding::Json) => otlp::json::decode_logs(&body).map(Export::from),
        (Signal::Traces, Encoding::Protobuf) => otlp::traces::decode(&body)
            .map(Export::from)
            .map_err(|e| e.to_string()),
        (Signal::Traces, Encoding::Json) => otlp::json::decode_traces(&body).map(Export::from),
        (Signal::Metrics, Encoding::Protobuf) => otlp::metrics::decode(&body)
            .map(Export::from)
            .map_err(|e| e.to_string()),
        (Signal::Metrics, Encoding::Json) => otlp::json::decode_metrics(&body).map(Export::from),
    }
    .map(|request| match (request, shared.raw) {
        (Export::Logs(r), false) => otlp::logs::to_events(r, &mut events),
        (Export::Traces(r), false) => otlp::traces::to_events(r, &mut events),
        (Export::Metrics(r), false) => otlp::metrics::to_events(r, &mut events),
        (Export::Logs(r), true) => otlp::raw::logs_to_events(r, &mut events),
        (Export::Traces(r), true) => otlp::raw::traces_to_events(r, &mut events),
        (Export::Metrics(r), true) => otlp::raw::metrics_to_events(r, &mut events),
    });
    drop(body);
    queue(signal, decoded, events, shared, ctx).await
}

/// Queues a request's `events` (or counts and refuses one that did not decode).
async fn queue(
    signal: Signal,
    decoded: Result<usize, String>,
    events: Vec<Event>,
    shared: &Shared,
    ctx: &InputContext,
) -> Result<(), Failed> {
    let c = &shared.counters;
    let n = match decoded {
        Ok(n) => n,
        Err(e) => {
            c.add("requests.rejected_invalid", 1);
            let what = signal.request();
            tracing::debug!(error = %e, "opentelemetry input: a request that is no {what}");
            return Err(Failed::Invalid(format!("not an {what}: {e}")));
        }
    };
    if net::push(ctx, events).await.is_err() {
        return Err(Failed::Stopping);
    }
    c.add("requests.accepted", 1);
    c.add(signal.counter(), n as u64);
    Ok(())
}

/// An OTLP/gRPC call (the logs, trace or metrics service's `Export`), answered as
/// [`handle`] answers OTLP/HTTP, in gRPC's statuses: INVALID_ARGUMENT for a message that is
/// no request, RESOURCE_EXHAUSTED with a `RetryInfo` of 1 s when too many calls wait for a
/// full queue, UNAUTHENTICATED for wrong credentials, UNIMPLEMENTED for another method.
async fn handle_grpc(
    req: Request<Incoming>,
    _peer: Peer,
    shared: Arc<Shared>,
    ctx: InputContext,
) -> Response<grpc::GrpcBody> {
    let c = &shared.counters;
    let signal = match req.uri().path() {
        grpc::LOGS_EXPORT => Signal::Logs,
        grpc::TRACES_EXPORT => Signal::Traces,
        grpc::METRICS_EXPORT => Signal::Metrics,
        other => {
            return grpc::error(
                grpc::code::UNIMPLEMENTED,
                &format!("no such OTLP method: {other}"),
                None,
            )
        }
    };
    let content_type = req
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if req.method() != Method::POST || !content_type.starts_with("application/grpc") {
        return grpc::error(
            grpc::code::INTERNAL,
            "gRPC calls are POSTs of application/grpc",
            None,
        );
    }
    let Ok(_permit) = Arc::clone(&shared.pending).try_acquire_owned() else {
        c.add("requests.rejected_busy", 1);
        return grpc::error(
            grpc::code::RESOURCE_EXHAUSTED,
            "too many requests are waiting for the pipeline's queue",
            Some(std::time::Duration::from_secs(1)),
        );
    };
    if let Some(expected) = shared.auth.as_deref() {
        let given = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if given != Some(expected) {
            c.add("requests.rejected_auth", 1);
            return grpc::error(grpc::code::UNAUTHENTICATED, "unauthorized", None);
        }
    }
    let encoding = req
        .headers()
        .get("grpc-encoding")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let limit = shared.max_content_length;
    let (_, body, _held) = match http_server::take_body(req, limit, &shared.body_bytes, c).await {
        Ok(t) => t,
        Err(refused) => {
            let (code, retry) = match refused.status() {
                StatusCode::PAYLOAD_TOO_LARGE => (grpc::code::RESOURCE_EXHAUSTED, None),
                StatusCode::REQUEST_TIMEOUT => (grpc::code::DEADLINE_EXCEEDED, None),
                StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS => (
                    grpc::code::RESOURCE_EXHAUSTED,
                    Some(std::time::Duration::from_secs(1)),
                ),
                _ => (grpc::code::INTERNAL, None),
            };
            let reason = refused.status().canonical_reason().unwrap_or("refused");
            return grpc::error(code, &format!("request body refused: {reason}"), retry);
        }
    };
    let message = match grpc::unframe(&body, encoding.as_deref(), limit) {
        Ok(m) => m,
        Err((code, message)) => {
            c.add("requests.rejected_invalid", 1);
            return grpc::error(code, &message, None);
        }
    };
    drop(body);
    match ingest(signal, Encoding::Protobuf, message, &shared, &ctx).await {
        // A full success: an empty Export*ServiceResponse.
        Ok(()) => grpc::ok(&[]),
        Err(Failed::Invalid(m)) => grpc::error(grpc::code::INVALID_ARGUMENT, &m, None),
        Err(Failed::Stopping) => {
            grpc::error(grpc::code::UNAVAILABLE, "the pipeline is stopping", None)
        }
    }
}

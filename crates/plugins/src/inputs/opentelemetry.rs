//! `opentelemetry`: OTLP/HTTP logs and traces in (OpenTelemetry's protocol, as SDKs and
//! collectors send it). `POST /v1/logs` with an `ExportLogsServiceRequest`, `POST /v1/traces`
//! with an `ExportTraceServiceRequest`, in protobuf (`application/x-protobuf`) or JSON
//! (`application/json`), gzip or not. Each log record becomes one event in the shape
//! [`crate::otlp::logs`] describes, each span one in [`crate::otlp::traces`]'s. The answer (an
//! empty `Export*ServiceResponse` in the request's encoding) goes out once the request's
//! events are in the pipeline's queue, so a sender that got its 200 can forget them.
//!
//! Options: `host` (0.0.0.0), `port` (4318), `user`/`password` (basic auth), the `ssl_*`
//! options of every server input, `max_content_length` (64 MiB, before and after gzip is
//! undone: 413 past it), `max_pending_requests` (200) and `threads`.
//!
//! Refusals, each counted: a body that is no OTLP request is a 400 whose body (a
//! `google.rpc.Status`) says where it is wrong, and is not retried by OTLP senders; a wrong
//! `Content-Type` 415; another method 405; too many requests waiting for a full queue 429
//! with `Retry-After`, which senders retry; `/v1/metrics` 404 (not taken yet).

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

pub struct OpenTelemetryInput {
    listen: net::Listen,
    shared: Arc<Shared>,
}

struct Shared {
    auth: Option<String>,
    max_content_length: usize,
    pending: Arc<tokio::sync::Semaphore>,
    body_bytes: Arc<tokio::sync::Semaphore>,
    counters: Arc<NamedCounters>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let settings = http_server::settings(opts, "opentelemetry", 4318, 64 << 20)?;
    let max = settings.max_content_length;
    let threads = settings.listen.threads;
    Ok(Box::new(OpenTelemetryInput {
        listen: settings.listen,
        shared: Arc::new(Shared {
            auth: settings.auth,
            max_content_length: max,
            pending: Arc::new(tokio::sync::Semaphore::new(threads + settings.max_pending)),
            // Two bodies of the largest size at once.
            body_bytes: Arc::new(tokio::sync::Semaphore::new(
                max.saturating_mul(2)
                    .min(tokio::sync::Semaphore::MAX_PERMITS),
            )),
            counters: http_server::counters(&["requests.rejected_invalid", "log_records", "spans"]),
        }),
    }))
}

impl Input for OpenTelemetryInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        http_server::run(&self.listen, ctx, &self.shared, handle)
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
}

impl Signal {
    fn request(self) -> &'static str {
        match self {
            Signal::Logs => "OTLP logs request",
            Signal::Traces => "OTLP traces request",
        }
    }

    /// The counter of what its requests carried.
    fn counter(self) -> &'static str {
        match self {
            Signal::Logs => "log_records",
            Signal::Traces => "spans",
        }
    }
}

/// A decoded export request.
enum Export {
    Logs(otlp::proto::ExportLogsServiceRequest),
    Traces(otlp::proto::ExportTraceServiceRequest),
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
        "/v1/metrics" => return reply(
            StatusCode::NOT_FOUND,
            "this input takes logs (/v1/logs) and traces (/v1/traces); metrics are not taken yet\n",
        ),
        _ => {
            return reply(
                StatusCode::NOT_FOUND,
                "OTLP/HTTP goes to /v1/logs and /v1/traces\n",
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
    let mut events: Vec<Event> = Vec::new();
    let decoded = match (signal, encoding) {
        (Signal::Logs, Encoding::Protobuf) => otlp::logs::decode(&body)
            .map(Export::from)
            .map_err(|e| e.to_string()),
        (Signal::Logs, Encoding::Json) => otlp::json::decode_logs(&body).map(Export::from),
        (Signal::Traces, Encoding::Protobuf) => otlp::traces::decode(&body)
            .map(Export::from)
            .map_err(|e| e.to_string()),
        (Signal::Traces, Encoding::Json) => otlp::json::decode_traces(&body).map(Export::from),
    }
    .map(|request| match request {
        Export::Logs(r) => otlp::logs::to_events(r, &mut events),
        Export::Traces(r) => otlp::traces::to_events(r, &mut events),
    });
    drop(body);
    let n = match decoded {
        Ok(n) => n,
        Err(e) => {
            c.add("requests.rejected_invalid", 1);
            let what = signal.request();
            tracing::debug!(error = %e, "opentelemetry input: a request that is no {what}");
            return status(
                StatusCode::BAD_REQUEST,
                3,
                format!("not an {what}: {e}"),
                encoding,
            );
        }
    };
    if net::push(&ctx, events).await.is_err() {
        return status(
            StatusCode::SERVICE_UNAVAILABLE,
            14,
            "the pipeline is stopping".into(),
            encoding,
        );
    }
    c.add("requests.accepted", 1);
    c.add(signal.counter(), n as u64);
    // A full success: an ExportLogsServiceResponse without a partial success.
    let body = match encoding {
        Encoding::Protobuf => Vec::new(),
        Encoding::Json => b"{}".to_vec(),
    };
    answer(StatusCode::OK, encoding, body)
}

//! `opentelemetry`: sends events as OTLP, over HTTP or gRPC, to an OpenTelemetry Collector,
//! to Elasticsearch's `/_otlp`, or to another sluice's `opentelemetry` input.
//!
//! Each batch a worker hands over becomes one export request ([`crate::otlp::export`]: the
//! input's mapping read backwards; any other event a log record with `message` as its body and
//! its other fields as attributes), encoded as protobuf or JSON and gzip-compressed, then
//! POSTed to `url` + `/v1/logs` (or `/v1/traces` with `signal => "traces"`), or with
//! `protocol => "grpc"` sent as a `LogsService/Export` (`TraceService/Export`) call over one
//! HTTP/2 connection ([`crate::otlp::grpc::Client`]).
//!
//! Answers, as OTLP defines them:
//! - 2xx / OK: sent. A partial success (records the receiver rejected) is counted and logged.
//! - 429, 502, 503, 504, gRPC's UNAVAILABLE (and the other retryable codes), RESOURCE_EXHAUSTED
//!   with a `RetryInfo`, or no answer: sent again after `Retry-After` (the `RetryInfo`'s delay)
//!   when the answer has one, else after a back-off (1 s doubling to 30 s), until it goes
//!   through or the pipeline stops (then the batch stays in the queue).
//! - 413: the request is split in two halves, each sent on its own, down to one record.
//! - any other status: the receiver refused the data for good; the records are dropped,
//!   counted and logged with the receiver's message.
//!
//! The batch is acknowledged once its requests are answered for good.

use std::sync::Arc;
use std::time::Duration;

use sluice_event::Event;
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::{ConfigError, Options, Output, OutputError, WriteContext};

use crate::otlp::{export, grpc, json, proto};
use crate::retry::{Backoff, Outage};

/// OTLP/HTTP (a pool of keep-alive connections) or OTLP/gRPC (one HTTP/2 connection).
enum Transport {
    Http(ureq::Agent),
    Grpc(grpc::Client),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Signal {
    Logs,
    Traces,
}

pub struct OtlpOutput {
    url: String,
    signal: Signal,
    json: bool,
    gzip: bool,
    headers: Vec<(String, String)>,
    transport: Transport,
    outage: Outage,
    counters: Arc<NamedCounters>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let protocol = opts.choice(
        "protocol",
        &["http/protobuf", "http/json", "grpc"],
        "http/protobuf",
    )?;
    let grpc = protocol == "grpc";
    let base = opts.string("url")?.unwrap_or_else(|| {
        match grpc {
            true => "http://localhost:4317",
            false => "http://localhost:4318",
        }
        .to_owned()
    });
    let signal = match opts.choice("signal", &["logs", "traces"], "logs")?.as_str() {
        "traces" => Signal::Traces,
        _ => Signal::Logs,
    };
    let gzip = opts.choice("compression", &["gzip", "none"], "gzip")? == "gzip";
    let path = match signal {
        Signal::Logs => "/v1/logs",
        Signal::Traces => "/v1/traces",
    };
    let url = if grpc {
        base.trim_end_matches('/').to_owned()
    } else if base.ends_with(path) {
        base.clone()
    } else {
        format!("{}{path}", base.trim_end_matches('/'))
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(opts.error("url", format!("{base:?} is not an http:// or https:// URL")));
    }
    let mut headers: Vec<(String, String)> = opts
        .string_hash("headers")?
        .unwrap_or_default()
        .into_iter()
        .collect();
    match (opts.string("user")?, opts.string("password")?) {
        (Some(u), Some(p)) => {
            use base64::Engine;
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
            headers.push(("Authorization".into(), format!("Basic {token}")));
        }
        (None, None) => {}
        _ => return Err(opts.plugin_error("opentelemetry output: user and password go together")),
    }
    let timeout = opts.int("request_timeout")?.unwrap_or(10).max(1);
    let pool_max = opts.int("pool_max")?.unwrap_or(16).max(1);
    let tls = crate::tls::read(
        opts,
        crate::tls::Names::Elasticsearch,
        url.starts_with("https://"),
    )?;
    let timeout = Duration::from_secs(timeout as u64);
    let transport = if grpc {
        let client = grpc::Client::new(&url, tls.as_ref(), timeout, headers.clone());
        Transport::Grpc(client.map_err(|e| opts.error("url", e))?)
    } else {
        let agent = crate::http::agent(tls.as_ref(), timeout, pool_max as usize, 1);
        Transport::Http(agent.map_err(|e| opts.plugin_error(e))?)
    };
    Ok(Box::new(OtlpOutput {
        url,
        signal,
        json: protocol == "http/json",
        gzip,
        headers,
        transport,
        outage: Outage::new("opentelemetry output", "the OTLP receiver"),
        counters: Arc::new(NamedCounters::with_paths(&[
            "requests.successes",
            "requests.retried",
            "requests.failures",
            "records.sent",
            "records.rejected",
            "records.dropped",
        ])),
    }))
}

/// How one request ended.
enum Sent {
    /// Answered for good (accepted, or refused and dropped).
    Done,
    /// 413: too large as one request.
    TooLarge,
}

/// One attempt's answer.
enum Answer {
    /// Taken; the response message (a partial success, or nothing).
    Accepted(Vec<u8>),
    /// Worth sending again: why, and when the receiver asked for it.
    Retry(String, Option<Duration>),
    TooLarge,
    /// Refused for good: the status, and the receiver's message.
    Refused(String, String),
}

impl OtlpOutput {
    /// The request body for `events`: encoded, compressed with `compression => gzip`, and for
    /// gRPC framed.
    fn body(&self, events: &[&Event]) -> Vec<u8> {
        let raw = match (self.signal, self.json) {
            (Signal::Logs, false) => prost::Message::encode_to_vec(&export::logs_request(events)),
            (Signal::Logs, true) => json::encode::logs(&export::logs_request(events)),
            (Signal::Traces, false) => {
                prost::Message::encode_to_vec(&export::traces_request(events))
            }
            (Signal::Traces, true) => json::encode::traces(&export::traces_request(events)),
        };
        match (&self.transport, self.gzip) {
            (Transport::Grpc(_), true) => grpc::frame_gzip(&raw),
            (Transport::Grpc(_), false) => grpc::frame(&raw),
            (Transport::Http(_), false) => raw,
            (Transport::Http(_), true) => crate::http::gzip(&raw, 1),
        }
    }

    /// Sends `events`, splitting on 413; `Err` only when the pipeline stops first.
    fn send_all(&self, events: &[&Event], ctx: &WriteContext) -> Result<(), OutputError> {
        match self.send(events, ctx)? {
            Sent::Done => Ok(()),
            Sent::TooLarge if events.len() > 1 => {
                let (a, b) = events.split_at(events.len() / 2);
                tracing::debug!(
                    url = %self.url,
                    "opentelemetry output: 413 for {} records; sending them in two requests",
                    events.len()
                );
                self.send_all(a, ctx)?;
                self.send_all(b, ctx)
            }
            Sent::TooLarge => {
                self.counters.add("requests.failures", 1);
                self.counters.add("records.dropped", 1);
                tracing::warn!(url = %self.url, "opentelemetry output: 413 for a single record; it is dropped");
                Ok(())
            }
        }
    }

    /// One request, sent again until it is answered for good.
    fn send(&self, events: &[&Event], ctx: &WriteContext) -> Result<Sent, OutputError> {
        let body = self.body(events);
        let n = events.len() as u64;
        let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
        loop {
            let (outcome, retry_after) = match self.attempt(&body)? {
                Answer::Accepted(answer) => {
                    self.outage.recovered(&self.url);
                    self.accepted(n, &answer);
                    return Ok(Sent::Done);
                }
                Answer::TooLarge => return Ok(Sent::TooLarge),
                Answer::Refused(status, message) => {
                    self.counters.add("requests.failures", 1);
                    self.counters.add("records.dropped", n);
                    tracing::warn!(
                        url = %self.url,
                        "opentelemetry output: the receiver refused {n} records for good ({status}); they are dropped: {message}"
                    );
                    return Ok(Sent::Done);
                }
                Answer::Retry(outcome, retry_after) => (outcome, retry_after),
            };
            self.counters.add("requests.retried", 1);
            self.outage.failed(&self.url, &outcome);
            let wait = retry_after.unwrap_or_else(|| backoff.next_delay());
            if !ctx.sleep(wait) {
                return Err(OutputError::retryable(format!(
                    "opentelemetry output: {}: {outcome}",
                    self.url
                )));
            }
        }
    }

    /// Sends `body` once and sorts the answer.
    fn attempt(&self, body: &[u8]) -> Result<Answer, OutputError> {
        let agent = match &self.transport {
            Transport::Http(agent) => agent,
            Transport::Grpc(client) => {
                let method = match self.signal {
                    Signal::Logs => grpc::LOGS_EXPORT,
                    Signal::Traces => grpc::TRACES_EXPORT,
                };
                let reply = match client.call(method, body.to_vec(), self.gzip) {
                    Ok(r) => r,
                    Err(e) => return Ok(Answer::Retry(e, None)),
                };
                let status = format!("gRPC status {}", reply.code);
                return Ok(match reply.code {
                    grpc::code::OK => Answer::Accepted(reply.body),
                    // CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE and
                    // DATA_LOSS are retried, as OTLP says; RESOURCE_EXHAUSTED only when the
                    // receiver said when to come back.
                    1 | 4 | 10 | 11 | 14 | 15 => Answer::Retry(
                        format!("it answered {status}: {}", reply.message),
                        reply.retry_after,
                    ),
                    grpc::code::RESOURCE_EXHAUSTED if reply.retry_after.is_some() => Answer::Retry(
                        format!("it answered {status}: {}", reply.message),
                        reply.retry_after,
                    ),
                    _ => Answer::Refused(status, reply.message),
                });
            }
        };
        let mut req = ureq::http::Request::builder()
            .method("POST")
            .uri(self.url.as_str())
            .header("Content-Type", self.content_type());
        if self.gzip {
            req = req.header("Content-Encoding", "gzip");
        }
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = req.body(body).map_err(|e| {
            OutputError::rejected(format!("opentelemetry output: bad request: {e}"))
        })?;
        let mut r = match agent.run(req) {
            Ok(r) => r,
            Err(e) => return Ok(Answer::Retry(e.to_string(), None)),
        };
        let status = r.status().as_u16();
        let retry_after = r
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let answer = r.body_mut().read_to_vec().unwrap_or_default();
        Ok(match status {
            200..=299 => Answer::Accepted(answer),
            413 => Answer::TooLarge,
            429 | 502 | 503 | 504 => Answer::Retry(format!("it answered {status}"), retry_after),
            _ => Answer::Refused(format!("HTTP status {status}"), self.message(&answer)),
        })
    }

    fn content_type(&self) -> &'static str {
        if self.json {
            "application/json"
        } else {
            "application/x-protobuf"
        }
    }

    /// Counts an accepted request, and the records a partial success says were rejected.
    fn accepted(&self, n: u64, answer: &[u8]) {
        self.counters.add("requests.successes", 1);
        let (rejected, message) = self.partial_success(answer);
        self.counters
            .add("records.sent", n.saturating_sub(rejected));
        if rejected > 0 || !message.is_empty() {
            self.counters.add("records.rejected", rejected);
            tracing::warn!(
                url = %self.url,
                "opentelemetry output: the receiver rejected {rejected} of {n} records: {message}"
            );
        }
    }

    /// The rejected count and message of an export response's `partial_success`; none in an
    /// empty or unreadable answer.
    fn partial_success(&self, answer: &[u8]) -> (u64, String) {
        if answer.is_empty() {
            return (0, String::new());
        }
        let field = match self.signal {
            Signal::Logs => "rejectedLogRecords",
            Signal::Traces => "rejectedSpans",
        };
        if self.json {
            let v: serde_json::Value = serde_json::from_slice(answer).unwrap_or_default();
            let p = &v["partialSuccess"];
            let rejected = match &p[field] {
                serde_json::Value::String(s) => s.parse().unwrap_or(0),
                n => n.as_u64().unwrap_or(0),
            };
            let message = p["errorMessage"].as_str().unwrap_or_default().to_owned();
            return (rejected, message);
        }
        // Logs' and traces' responses have the same shape: both decode as the logs one.
        match <proto::ExportLogsServiceResponse as prost::Message>::decode(answer) {
            Ok(proto::ExportLogsServiceResponse {
                partial_success: Some(p),
            }) => (p.rejected_log_records.max(0) as u64, p.error_message),
            _ => (0, String::new()),
        }
    }

    /// The message of an error answer: a `google.rpc.Status` (protobuf or JSON), else the
    /// body as text.
    fn message(&self, answer: &[u8]) -> String {
        if let Ok(s) = <proto::Status as prost::Message>::decode(answer) {
            if !s.message.is_empty() {
                return s.message;
            }
        }
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(answer) {
            if let Some(m) = v["message"].as_str() {
                return m.to_owned();
            }
        }
        String::from_utf8_lossy(&answer[..answer.len().min(512)]).into_owned()
    }
}

impl Output for OtlpOutput {
    fn write(&self, events: &[&Event], ctx: &WriteContext) -> Result<(), OutputError> {
        if events.is_empty() {
            return Ok(());
        }
        self.send_all(events, ctx)
    }

    fn counters(&self) -> Option<Arc<NamedCounters>> {
        Some(Arc::clone(&self.counters))
    }
}

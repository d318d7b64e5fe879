//! OTLP/gRPC's wire: gRPC unary calls over HTTP/2, written against the gRPC protocol
//! (PROTOCOL-HTTP2.md), small enough not to need a gRPC framework.
//!
//! A call is `POST /<service>/Export` with `content-type: application/grpc` and a body of
//! one length-prefixed message (a flag byte saying whether it is compressed with the
//! `grpc-encoding` named in the headers, four bytes of length, the protobuf bytes). The
//! answer is HTTP 200 with one length-prefixed message and a `grpc-status: 0` trailer, or,
//! for an error, only headers: `grpc-status`, `grpc-message` (percent-encoded) and, for
//! throttling, `grpc-status-details-bin` carrying a `google.rpc.RetryInfo`.
//!
//! Data flows: [`unframe`] the request body → the input's decoding → [`ok`] or [`error`] →
//! a [`GrpcBody`] that hyper sends as DATA then trailers.

use std::convert::Infallible;
use std::io::Read as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use base64::Engine as _;
use hyper::body::{Bytes, Frame};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::Response;

use super::proto::{ProtoAny, ProtoDuration, RetryInfo, Status};

/// gRPC status codes this input answers with.
pub mod code {
    pub const OK: i32 = 0;
    pub const INVALID_ARGUMENT: i32 = 3;
    pub const DEADLINE_EXCEEDED: i32 = 4;
    pub const RESOURCE_EXHAUSTED: i32 = 8;
    pub const UNIMPLEMENTED: i32 = 12;
    pub const INTERNAL: i32 = 13;
    pub const UNAVAILABLE: i32 = 14;
    pub const UNAUTHENTICATED: i32 = 16;
}

/// The OTLP/gRPC services' paths.
pub const LOGS_EXPORT: &str = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";
pub const TRACES_EXPORT: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
pub const METRICS_EXPORT: &str = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";

/// The one message of a unary call's request body, decompressed when its flag says so
/// (`encoding` is the `grpc-encoding` header; `gzip` and `identity` are taken), at most
/// `limit` bytes once decompressed. An error is the status code and message to answer.
pub fn unframe(
    body: &[u8],
    encoding: Option<&str>,
    limit: usize,
) -> Result<Vec<u8>, (i32, String)> {
    let invalid = |m: &str| (code::INTERNAL, m.to_owned());
    if body.len() < 5 {
        return Err(invalid(
            "the request body is no gRPC message (shorter than its prefix)",
        ));
    }
    let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    let message = &body[5..];
    if message.len() != len {
        return Err(invalid(&format!(
            "the gRPC message says {len} bytes and the body has {} (a unary call carries one message)",
            message.len()
        )));
    }
    match (body[0], encoding.unwrap_or("identity")) {
        (0, _) => Ok(message.to_vec()),
        (1, "gzip") => {
            let mut out = Vec::with_capacity(len.saturating_mul(4).min(limit));
            let read = flate2::read::GzDecoder::new(message)
                .take(limit as u64 + 1)
                .read_to_end(&mut out);
            match read {
                Err(e) => Err(invalid(&format!("the gzip message cannot be read: {e}"))),
                Ok(_) if out.len() > limit => Err((
                    code::RESOURCE_EXHAUSTED,
                    format!("the message is larger than max_content_length ({limit} bytes) once decompressed"),
                )),
                Ok(_) => Ok(out),
            }
        }
        (1, other) => Err((
            code::UNIMPLEMENTED,
            format!("grpc-encoding {other:?} is not supported (gzip and identity are)"),
        )),
        (flag, _) => Err(invalid(&format!("unknown gRPC message flag {flag}"))),
    }
}

/// `message` with gRPC's length prefix, uncompressed.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 5);
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// A gRPC answer's body: its one message (none for an error), then the trailers (none for
/// an error, whose status is in the headers).
pub struct GrpcBody {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl hyper::body::Body for GrpcBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(d) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(d))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }
}

fn grpc_response(body: GrpcBody) -> Response<GrpcBody> {
    let mut r = Response::new(body);
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    r
}

/// A successful call's answer: `message` (the encoded response), then `grpc-status: 0`.
pub fn ok(message: &[u8]) -> Response<GrpcBody> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    grpc_response(GrpcBody {
        data: Some(Bytes::from(frame(message))),
        trailers: Some(trailers),
    })
}

/// A failed call's answer (headers only): `code` and `message`, and with `retry_after` a
/// `google.rpc.RetryInfo` in `grpc-status-details-bin`, which OTLP clients wait out before
/// they send again.
pub fn error(code: i32, message: &str, retry_after: Option<Duration>) -> Response<GrpcBody> {
    let mut r = grpc_response(GrpcBody {
        data: None,
        trailers: None,
    });
    let h = r.headers_mut();
    h.insert("grpc-status", HeaderValue::from(code));
    if let Ok(v) = HeaderValue::from_str(&percent_encode(message)) {
        h.insert("grpc-message", v);
    }
    if let Some(delay) = retry_after {
        let info = RetryInfo {
            retry_delay: Some(ProtoDuration {
                seconds: delay.as_secs() as i64,
                nanos: delay.subsec_nanos() as i32,
            }),
        };
        let status = Status {
            code,
            message: message.to_owned(),
            details: vec![ProtoAny {
                type_url: "type.googleapis.com/google.rpc.RetryInfo".into(),
                value: prost::Message::encode_to_vec(&info),
            }],
        };
        let bin = base64::engine::general_purpose::STANDARD_NO_PAD
            .encode(prost::Message::encode_to_vec(&status));
        if let Ok(v) = HeaderValue::from_str(&bin) {
            h.insert(HeaderName::from_static("grpc-status-details-bin"), v);
        }
    }
    r
}

/// `grpc-message`'s encoding: bytes outside printable ASCII, and `%`, as `%XX`.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            0x20..=0x7e if b != b'%' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The client side, for the `opentelemetry` output: unary calls over one HTTP/2 connection
/// (streams multiplexed; opened again after it fails), on a runtime of its own so that the
/// output's workers can call it from their threads.
pub struct Client {
    /// `http://host:port` or `https://host:port`.
    base: String,
    host: String,
    port: u16,
    tls: Option<tokio_rustls::TlsConnector>,
    timeout: Duration,
    /// Sent with every call (authorization, the `headers` option).
    headers: Vec<(String, String)>,
    rt: tokio::runtime::Runtime,
    conn: tokio::sync::Mutex<Option<hyper::client::conn::http2::SendRequest<Full<Bytes>>>>,
}

/// A call's outcome, short of a connection failure.
pub struct Reply {
    /// `grpc-status` (from the headers or the trailers).
    pub code: i32,
    /// `grpc-message`, decoded.
    pub message: String,
    /// A `RetryInfo`'s delay from `grpc-status-details-bin`.
    pub retry_after: Option<Duration>,
    /// The response message, unframed (empty unless `code` is OK).
    pub body: Vec<u8>,
}

use http_body_util::{BodyExt as _, Full};

impl Client {
    /// A client of `url` (`http://host:port`, or `https://` with `tls`), each call bounded
    /// by `timeout`, with `headers` on every call.
    pub fn new(
        url: &str,
        tls: Option<&crate::tls::Tls>,
        timeout: Duration,
        headers: Vec<(String, String)>,
    ) -> Result<Client, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| format!("{url:?} is not an http:// or https:// URL"))?;
        let authority = rest.split('/').next().unwrap_or_default();
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
                h.trim_start_matches('[').trim_end_matches(']').to_owned(),
                p.parse::<u16>()
                    .map_err(|_| format!("{url:?}: {p:?} is not a port"))?,
            ),
            _ => (
                authority.to_owned(),
                if scheme == "https" { 443 } else { 80 },
            ),
        };
        let tls = match (scheme, tls) {
            ("http", _) => None,
            ("https", t) => {
                let default = crate::tls::Tls {
                    ca: None,
                    client: None,
                    verify: true,
                };
                let mut config = (*crate::tls::client_config(t.unwrap_or(&default))?).clone();
                config.alpn_protocols = vec![b"h2".to_vec()];
                Some(tokio_rustls::TlsConnector::from(std::sync::Arc::new(
                    config,
                )))
            }
            _ => return Err(format!("{url:?} is not an http:// or https:// URL")),
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("otlp-grpc-client")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the gRPC client's thread: {e}"))?;
        Ok(Client {
            base: format!("{scheme}://{authority}"),
            host,
            port,
            tls,
            timeout,
            headers,
            rt,
            conn: tokio::sync::Mutex::new(None),
        })
    }

    /// Calls `method` (a path such as [`LOGS_EXPORT`]) with `message` (already framed by
    /// [`frame`] or [`frame_gzip`]; `gzip` says which). An error is a failure to get an
    /// answer at all (the connection is opened again next time).
    pub fn call(&self, method: &str, framed: Vec<u8>, gzip: bool) -> Result<Reply, String> {
        self.rt.block_on(async {
            match tokio::time::timeout(self.timeout, self.call_async(method, framed, gzip)).await {
                Ok(r) => r,
                Err(_) => {
                    *self.conn.lock().await = None;
                    Err(format!("no answer in {:?}", self.timeout))
                }
            }
        })
    }

    async fn call_async(&self, method: &str, framed: Vec<u8>, gzip: bool) -> Result<Reply, String> {
        let mut sender = self.connection().await?;
        let mut req = hyper::Request::builder()
            .method("POST")
            .uri(format!("{}{method}", self.base))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("user-agent", concat!("sluice/", env!("CARGO_PKG_VERSION")));
        if gzip {
            req = req.header("grpc-encoding", "gzip");
        }
        for (k, v) in &self.headers {
            req = req.header(k.to_ascii_lowercase(), v.as_str());
        }
        let req = req
            .body(Full::new(Bytes::from(framed)))
            .map_err(|e| e.to_string())?;
        let answer = match sender.send_request(req).await {
            Ok(a) => a,
            Err(e) => {
                *self.conn.lock().await = None;
                return Err(e.to_string());
            }
        };
        let (parts, body) = answer.into_parts();
        if parts.status != hyper::StatusCode::OK {
            return Err(format!("HTTP status {} (not a gRPC server?)", parts.status));
        }
        let collected = body
            .collect()
            .await
            .map_err(|e| format!("the answer broke off: {e}"))?;
        let trailers = collected.trailers().cloned().unwrap_or_default();
        let data = collected.to_bytes();
        // Trailers-only answers carry the status in the headers.
        let status_from = if parts.headers.contains_key("grpc-status") {
            &parts.headers
        } else {
            &trailers
        };
        let Some(code) = status_from
            .get("grpc-status")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<i32>().ok())
        else {
            return Err("an answer without grpc-status".into());
        };
        let message = status_from
            .get("grpc-message")
            .map(|v| crate::http::percent_decode(&String::from_utf8_lossy(v.as_bytes())))
            .unwrap_or_default();
        let retry_after = status_from
            .get("grpc-status-details-bin")
            .and_then(|v| retry_delay(v.as_bytes()));
        let body = if data.len() >= 5 {
            unframe(
                &data,
                parts
                    .headers
                    .get("grpc-encoding")
                    .and_then(|v| v.to_str().ok()),
                64 << 20,
            )
            .unwrap_or_default()
        } else {
            Vec::new()
        };
        Ok(Reply {
            code,
            message,
            retry_after,
            body,
        })
    }

    /// The live connection, or a new one.
    async fn connection(
        &self,
    ) -> Result<hyper::client::conn::http2::SendRequest<Full<Bytes>>, String> {
        let mut conn = self.conn.lock().await;
        if let Some(c) = conn.as_ref() {
            if !c.is_closed() {
                return Ok(c.clone());
            }
        }
        let tcp = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let io: Box<dyn crate::net::Conn> = match &self.tls {
            None => Box::new(tcp),
            Some(connector) => {
                let name = rustls::pki_types::ServerName::try_from(self.host.clone())
                    .map_err(|e| format!("{}: {e}", self.host))?;
                Box::new(
                    connector
                        .connect(name, tcp)
                        .await
                        .map_err(|e| format!("TLS handshake failed: {e}"))?,
                )
            }
        };
        let (sender, connection) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(io),
        )
        .await
        .map_err(|e| format!("HTTP/2 handshake failed: {e}"))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("opentelemetry output: gRPC connection ended: {e}");
            }
        });
        *conn = Some(sender.clone());
        Ok(sender)
    }
}

/// `message` gzip-compressed, with gRPC's length prefix and its compressed flag.
pub fn frame_gzip(message: &[u8]) -> Vec<u8> {
    let mut out = frame(&crate::http::gzip(message, 1));
    out[0] = 1;
    out
}

/// A `grpc-status-details-bin`'s `RetryInfo` delay.
fn retry_delay(bin: &[u8]) -> Option<Duration> {
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(
            bin.strip_suffix(b"==")
                .or(bin.strip_suffix(b"="))
                .unwrap_or(bin),
        )
        .ok()?;
    let status: Status = prost::Message::decode(bytes.as_slice()).ok()?;
    let any = status
        .details
        .iter()
        .find(|d| d.type_url.ends_with("/google.rpc.RetryInfo"))?;
    let info: RetryInfo = prost::Message::decode(any.value.as_slice()).ok()?;
    let d = info.retry_delay?;
    Some(Duration::new(
        d.seconds.max(0) as u64,
        d.nanos.max(0) as u32,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn a_framed_message_comes_back_out() {
        let m = b"hello".to_vec();
        assert_eq!(unframe(&frame(&m), None, 100), Ok(m.clone()));
        // Compressed with gzip.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&m).unwrap();
        let packed = gz.finish().unwrap();
        let mut body = frame(&packed);
        body[0] = 1;
        assert_eq!(unframe(&body, Some("gzip"), 100), Ok(m.clone()));
        assert_eq!(
            unframe(&body, Some("gzip"), 4).unwrap_err().0,
            code::RESOURCE_EXHAUSTED
        );
        assert_eq!(
            unframe(&body, Some("snappy"), 100).unwrap_err().0,
            code::UNIMPLEMENTED
        );
        assert_eq!(
            unframe(&body, None, 100).unwrap_err().0,
            code::UNIMPLEMENTED
        );
        // A prefix that lies about the length, a body too short, two messages.
        let mut wrong = frame(&m);
        wrong[4] = 9;
        assert_eq!(unframe(&wrong, None, 100).unwrap_err().0, code::INTERNAL);
        assert!(unframe(b"\0\0", None, 100).is_err());
        let two = [frame(&m), frame(&m)].concat();
        assert!(unframe(&two, None, 100).is_err());
    }

    #[test]
    fn an_error_carries_its_status_and_retry_info() {
        let r = error(
            code::RESOURCE_EXHAUSTED,
            "busy 100%\n",
            Some(Duration::from_secs(2)),
        );
        let h = r.headers();
        assert_eq!(h["grpc-status"], "8");
        assert_eq!(h["grpc-message"], "busy 100%25%0A");
        let bin = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(h["grpc-status-details-bin"].as_bytes())
            .unwrap();
        let status: Status = prost::Message::decode(bin.as_slice()).unwrap();
        assert_eq!(status.code, 8);
        assert_eq!(
            status.details[0].type_url,
            "type.googleapis.com/google.rpc.RetryInfo"
        );
        let info: RetryInfo = prost::Message::decode(status.details[0].value.as_slice()).unwrap();
        assert_eq!(info.retry_delay.unwrap().seconds, 2);
        assert!(hyper::body::Body::is_end_stream(r.body()));
    }

    #[test]
    fn what_the_server_writes_the_client_reads() {
        let r = error(
            code::UNAVAILABLE,
            "100% busy\n",
            Some(Duration::from_millis(1500)),
        );
        let h = r.headers();
        assert_eq!(
            crate::http::percent_decode(h["grpc-message"].to_str().unwrap()),
            "100% busy\n"
        );
        let delay = retry_delay(h["grpc-status-details-bin"].as_bytes());
        assert_eq!(delay, Some(Duration::from_millis(1500)));
        assert_eq!(
            unframe(&frame_gzip(b"abc"), Some("gzip"), 10),
            Ok(b"abc".to_vec())
        );
    }
}

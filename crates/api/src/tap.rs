//! `GET /_node/tap?plugin=PIPELINE/ID&plugin=…[&when=COND][&limit=N][&rate=N]`: a live stream
//! of the events leaving the named plugins (`PIPELINE/*`: all of a pipeline's; an id alone:
//! whichever running pipeline has it), as NDJSON over a chunked response, behind the API's
//! auth and TLS like every route.
//!
//! The request attaches one [`Subscriber`] to each plugin's [`TapPoint`] (see
//! `sluice_pipeline::tap`): the pipeline writes matching events into the subscriber's bounded
//! channel, dropping (and counting) what does not fit. A task of the API's runtime forwards
//! the lines to the response body: first `{"tap":{…}}` (what is tapped), then one line per
//! event, and `{"dropped":N,"dropped_total":M}` whenever lines were dropped for this client
//! since the last such line, and `{"heartbeat":TIME}` after 15 s without any line (so that a
//! client can tell a quiet tap from a dead server). The stream ends after `limit` events, when the client goes away
//! (the subscriber is detached then), or with `{"ended":"…"}` when a tapped pipeline stopped
//! or was reloaded (checked every second; a reloaded pipeline has new plugins to tap). The
//! stream holds the pipelines' metrics weakly: a stopped pipeline's are freed.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use http_body_util::{Either, Full};
use hyper::body::{Bytes, Frame};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::json;
use sluice_pipeline::metrics::PipelineMetrics;
use sluice_pipeline::tap::{head, Kind, Subscriber};
use tokio::sync::mpsc;

use crate::stats::Context;

/// A response body: a whole one, or a tap's stream.
pub(crate) type ApiBody = Either<Full<Bytes>, TapBody>;

/// The lines of a tap, as they come.
pub(crate) struct TapBody(mpsc::Receiver<Bytes>);

impl hyper::body::Body for TapBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|l| l.map(|b| Ok(Frame::data(b))))
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// How long a stream may stay silent before it sends `{"heartbeat":TIME}`.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(15);

/// A tapped plugin: its pipeline's metrics (which hold the points), where, and its names.
struct Tapped {
    metrics: Weak<PipelineMetrics>,
    kind: Kind,
    index: usize,
    pipeline: String,
    plugin: String,
}

/// Detaches the subscriber from every point when the stream ends.
struct Attached {
    subscriber: Arc<Subscriber>,
    tapped: Vec<Tapped>,
}

impl Drop for Attached {
    fn drop(&mut self) {
        for t in &self.tapped {
            if let Some(m) = t.metrics.upgrade() {
                if let Some(p) = m.taps.point(t.kind, t.index) {
                    p.detach(&self.subscriber);
                }
            }
        }
    }
}

impl Attached {
    /// A tapped pipeline that is no longer the one running under its id (stopped, or
    /// reloaded), if any.
    fn gone(&self, ctx: &Context) -> Option<&str> {
        self.tapped.iter().find_map(|t| {
            let running = ctx.registry.pipeline(&t.pipeline);
            let same = match (running, t.metrics.upgrade()) {
                (Some(r), Some(m)) => Arc::ptr_eq(&r.view.metrics, &m),
                _ => false,
            };
            (!same).then_some(t.pipeline.as_str())
        })
    }
}

/// What the plugin specs name, or why not. A spec is `PIPELINE/ID` (the longest prefix
/// before a `/` that is a running pipeline's id), `PIPELINE/*`, or an id alone (found in
/// whichever running pipeline has it; ids may hold `/`).
fn resolve(ctx: &Context, specs: &[&str]) -> Result<Vec<Tapped>, (StatusCode, String)> {
    let pipelines = ctx.registry.pipelines();
    let mut out: Vec<Tapped> = Vec::new();
    for spec in specs {
        let split = spec
            .match_indices('/')
            .rev()
            .map(|(i, _)| (&spec[..i], &spec[i + 1..]))
            .find(|(p, _)| pipelines.iter().any(|t| t.view.id == *p));
        let (only, id) = match split {
            Some((p, id)) => (Some(p), id),
            None => (None, *spec),
        };
        let mut found = Vec::new();
        for t in pipelines
            .iter()
            .filter(|t| only.is_none_or(|p| t.view.id == p))
        {
            let m = &t.view.metrics;
            let lists = [
                (Kind::Input, &m.plugins.inputs),
                (Kind::Filter, &m.plugins.filters),
                (Kind::Output, &m.plugins.outputs),
            ];
            for (kind, list) in lists {
                for (index, p) in list.iter().enumerate() {
                    if (id == "*" && only.is_some()) || p.id == id {
                        found.push(Tapped {
                            metrics: Arc::downgrade(m),
                            kind,
                            index,
                            pipeline: t.view.id.clone(),
                            plugin: p.id.clone(),
                        });
                    }
                }
            }
        }
        if found.is_empty() {
            let message = match (only, spec.split_once('/')) {
                (Some(p), _) => format!("no plugin with id {id:?} in pipeline {p:?}"),
                (None, Some((p, _))) => format!(
                    "no running pipeline {p:?} (running: {}), and no plugin with id {spec:?}",
                    ids(ctx)
                ),
                (None, None) => format!("no plugin with id {id:?} in any running pipeline"),
            };
            return Err((
                StatusCode::NOT_FOUND,
                format!("{message} (ids are a plugin's `id` option, or name@line:column; GET /_node/stats/pipelines lists them)"),
            ));
        }
        if only.is_none() {
            let mut names: Vec<&str> = found.iter().map(|f| f.pipeline.as_str()).collect();
            names.dedup();
            if names.len() > 1 {
                return Err((
                    StatusCode::BAD_REQUEST,
                    format!("plugin id {id:?} is in several pipelines ({}): say which, as PIPELINE/{id}", names.join(", ")),
                ));
            }
        }
        for f in found {
            let dup = out
                .iter()
                .any(|o| o.pipeline == f.pipeline && o.kind == f.kind && o.index == f.index);
            if !dup {
                out.push(f);
            }
        }
    }
    Ok(out)
}

fn ids(ctx: &Context) -> String {
    ctx.registry.ids().join(", ")
}

/// Answers `GET /_node/tap`.
pub(crate) fn serve(
    ctx: &Arc<Context>,
    params: &[(String, String)],
    head_only: bool,
) -> Result<Response<ApiBody>, (StatusCode, String)> {
    let specs: Vec<&str> = params
        .iter()
        .filter(|(k, _)| k == "plugin")
        .map(|(_, v)| v.trim())
        .filter(|s| !s.is_empty())
        .collect();
    if specs.is_empty() {
        return Err((
            StatusCode::BAD_REQUEST,
            "name at least one plugin: ?plugin=PIPELINE/ID (PIPELINE/* for all of a pipeline's)"
                .into(),
        ));
    }
    let get = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let number = |name: &str| -> Result<Option<f64>, (StatusCode, String)> {
        match get(name) {
            None | Some("") => Ok(None),
            Some(t) => {
                let t = t.strip_suffix("/s").unwrap_or(t);
                match t.parse::<f64>() {
                    Ok(n) if n > 0.0 && n.is_finite() => Ok(Some(n)),
                    _ => Err((
                        StatusCode::BAD_REQUEST,
                        format!("{name} must be a positive number, not {t:?}"),
                    )),
                }
            }
        }
    };
    let limit = number("limit")?.map(|n| n.ceil() as u64);
    let rate = number("rate")?;
    let when = get("when").filter(|w| !w.trim().is_empty());
    let condition = match when {
        None => None,
        Some(text) => {
            let expr = sluice_config::parse_condition("when", text)
                .map_err(|e| (StatusCode::BAD_REQUEST, format!("--when: {e}")))?;
            let span = sluice_config::Span { line: 1, column: 1 };
            Some(
                sluice_pipeline::condition::Condition::compile("when", span, &expr)
                    .map_err(|e| (StatusCode::BAD_REQUEST, format!("--when: {e}")))?,
            )
        }
    };
    let tapped = resolve(ctx, &specs)?;
    if head_only {
        return Ok(stream_response(Either::Left(Full::new(Bytes::new()))));
    }
    let (subscriber, mut lines) = Subscriber::new(
        NEXT_ID.fetch_add(1, Ordering::Relaxed),
        condition,
        limit,
        rate,
    );
    let names: Vec<String> = tapped
        .iter()
        .map(|t| format!("{}/{}", t.pipeline, t.plugin))
        .collect();
    for t in &tapped {
        if let Some(m) = t.metrics.upgrade() {
            if let Some(p) = m.taps.point(t.kind, t.index) {
                p.attach(
                    Arc::clone(&subscriber),
                    &head(&t.pipeline, &t.plugin, t.kind),
                );
            }
        }
    }
    let ctx = Arc::clone(ctx);
    let attached = Attached {
        subscriber: Arc::clone(&subscriber),
        tapped,
    };
    let (body, out) = mpsc::channel::<Bytes>(16);
    let first = json!({"tap": {"plugins": names, "when": when, "limit": limit, "rate": rate}});
    tokio::spawn(async move {
        let attached = attached;
        let mut line = first.to_string().into_bytes();
        line.push(b'\n');
        if body.send(Bytes::from(line)).await.is_err() {
            return;
        }
        let mut forwarded = 0u64;
        let mut told = 0u64;
        let (mut checked, mut sent) = (Instant::now(), Instant::now());
        let notice = |v: serde_json::Value| {
            let mut l = v.to_string().into_bytes();
            l.push(b'\n');
            Bytes::from(l)
        };
        loop {
            match tokio::time::timeout(Duration::from_secs(1), lines.recv()).await {
                Ok(Some(l)) => {
                    if body.send(Bytes::from(l)).await.is_err() {
                        return;
                    }
                    forwarded += 1;
                    sent = Instant::now();
                }
                Ok(None) => return,
                Err(_) if body.is_closed() => return,
                Err(_) => {}
            }
            if checked.elapsed() >= Duration::from_secs(1) {
                checked = Instant::now();
                if let Some(p) = attached.gone(&ctx) {
                    let why = format!("pipeline {p:?} stopped or was reloaded: tap it again");
                    let _ = body.send(notice(json!({ "ended": why }))).await;
                    return;
                }
            }
            let dropped = subscriber.dropped();
            if dropped != told {
                let n = json!({"dropped": dropped - told, "dropped_total": dropped});
                told = dropped;
                if body.send(notice(n)).await.is_err() {
                    return;
                }
                sent = Instant::now();
            }
            // A quiet tap still says it is alive, so that a client can tell a dead server.
            if sent.elapsed() >= HEARTBEAT {
                let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
                if body
                    .send(notice(json!({ "heartbeat": now })))
                    .await
                    .is_err()
                {
                    return;
                }
                sent = Instant::now();
            }
            if limit.is_some_and(|l| forwarded >= l) {
                return;
            }
        }
    });
    Ok(stream_response(Either::Right(TapBody(out))))
}

fn stream_response(body: ApiBody) -> Response<ApiBody> {
    let mut r = Response::new(body);
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

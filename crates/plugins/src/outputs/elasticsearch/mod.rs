//! `elasticsearch` and `opensearch` outputs: each batch becomes `_bulk` requests (split at
//! 20 MiB of uncompressed body, as Logstash does), sent by every worker at once to the live
//! host with the fewest requests in flight ([`crate::http::Pool`]).
//!
//! A batch is done only when every event in it is accepted, deliberately dropped, or handed
//! to the dead letter handling. Per item of the response:
//! - 200/201: indexed. 409 (version conflict) and `drop_error_types`: dropped, logged
//!   (unless the error type is in `silence_errors_in_log`) and counted.
//! - 400/404 and `dlq_custom_codes`: the event cannot be indexed as it is. With the
//!   pipeline's dead letter queue enabled it goes there with the reason (Logstash's
//!   `Could not index event to Elasticsearch. status: ..., action: ..., response: ...`) and
//!   counts as `dlq_routed`; otherwise it is logged with the event and counted as a
//!   `non_retryable_failure`. So do events that cannot be rendered as a bulk action (a bad
//!   `action`) and single events too large for the server (413).
//! - anything else (429, 5xx): only those items are sent again, after
//!   `retry_initial_interval` doubling up to `retry_max_interval`.
//!
//! A request that gets no answer (host down), or a non-2xx answer for the whole request, is
//! sent again with the same back-off, for as long as it takes: the queue holds the events. 413
//! (request too large) splits the request in two; a single event too large is an event error.
//! On a stop signal the retrying ends and the batch stays unacknowledged (a persisted queue
//! replays it). The first contact reads the server's version (`GET /`) and installs the index
//! template (`manage_template`). Counters: Logstash's `bulk_requests` and `documents`.

pub mod bulk;
pub mod config;
mod template;

use std::borrow::Cow;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use sluice_event::Event;
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::{ConfigError, Options, Output, OutputError, WriteContext};

use crate::http::{gzip, HttpError, Pool, PoolConfig};
use crate::retry::{Backoff, Outage};
use bulk::{BulkResponse, Renderer, Server};
use config::{Flavor, Settings};

/// Logstash's bulk size limit (uncompressed).
pub const TARGET_BULK_BYTES: usize = 20 * 1024 * 1024;

const COUNTERS: [&str; 7] = [
    "bulk_requests.successes",
    "bulk_requests.with_errors",
    "bulk_requests.failures",
    "documents.successes",
    "documents.non_retryable_failures",
    "documents.retryable_failures",
    "documents.dlq_routed",
];

pub struct ElasticsearchOutput {
    s: Settings,
    pool: Pool,
    /// Learnt at first contact.
    server: OnceLock<Server>,
    connecting: Mutex<()>,
    counters: Arc<NamedCounters>,
    outage: Outage,
    warned_type: AtomicBool,
    label: String,
    bulk_path: String,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    build_flavor(opts, Flavor::Elasticsearch)
}

pub fn build_opensearch(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    build_flavor(opts, Flavor::OpenSearch)
}

fn build_flavor(opts: &mut Options, flavor: Flavor) -> Result<Box<dyn Output>, ConfigError> {
    if opts.has("codec") {
        opts.take("codec");
        tracing::warn!(
            "{}: the codec option has no effect (events are sent as JSON documents)",
            opts.plugin_name()
        );
    }
    let s = Settings::read(opts, flavor)?;
    let pool = Pool::new(PoolConfig {
        urls: s.hosts.clone(),
        tls: s.tls.clone(),
        headers: s.headers.clone(),
        timeout: s.timeout,
        resurrect_delay: s.resurrect_delay,
        healthcheck_path: s.healthcheck_path.clone(),
        max_idle_per_host: s.pool_max_per_route.min(64),
        proxy: None,
    })
    .map_err(|e| opts.plugin_error(e))?;
    let label = format!("{} output {}", opts.plugin_name(), s.hosts.join(","));
    let bulk_path = if s.bulk_path == "/_bulk" {
        "/_bulk?filter_path=errors,items.*.error,items.*.status"
    } else {
        &s.bulk_path
    };
    let bulk_path = with_query(bulk_path, &s.query);
    Ok(Box::new(ElasticsearchOutput {
        outage: Outage::new(label.clone(), flavor.service()),
        pool,
        server: OnceLock::new(),
        connecting: Mutex::new(()),
        counters: Arc::new(NamedCounters::with_paths(&COUNTERS)),
        warned_type: AtomicBool::new(false),
        label,
        bulk_path,
        s,
    }))
}

/// Events of a request: (index in the batch, bytes of its lines in the body).
type Chunk = Vec<(usize, Range<usize>)>;

/// What became of one item.
enum Fate {
    Indexed,
    /// Dropped on purpose (a conflict, `drop_error_types`).
    Dropped,
    /// Cannot be indexed as it is, for this reason (see
    /// [`ElasticsearchOutput::dead_letter`]).
    Failed(String),
    Retry,
}

impl ElasticsearchOutput {
    /// `path` with the `parameters` query.
    fn with_query(&self, path: &str) -> String {
        with_query(path, &self.s.query)
    }

    /// Reads the server's version and installs the template, once; retried with back-off
    /// until it works or a stop signal comes.
    fn connect(&self, ctx: &WriteContext) -> Result<Server, OutputError> {
        if let Some(s) = self.server.get() {
            return Ok(*s);
        }
        let _one = self.connecting.lock().unwrap_or_else(|e| e.into_inner());
        let mut backoff = Backoff::new(self.s.retry_initial, self.s.retry_max);
        loop {
            if let Some(s) = self.server.get() {
                return Ok(*s);
            }
            match self.first_contact() {
                Ok(server) => {
                    self.outage.recovered(&self.pool.urls().join(","));
                    let _ = self.server.set(server);
                    return Ok(server);
                }
                Err(e) => self.outage.failed(&self.pool.urls().join(","), &e),
            }
            if !ctx.sleep(backoff.next_delay()) {
                return Err(OutputError::retryable(format!(
                    "{}: stopped while waiting for the server",
                    self.label
                )));
            }
        }
    }

    fn first_contact(&self) -> Result<Server, String> {
        let r = self
            .pool
            .request("GET", &self.with_query("/"), &[], None)
            .map_err(|e| e.to_string())?;
        match r.status {
            200 => {}
            401 | 403 => {
                return Err(format!(
                    "{} answered {} to GET /: check user/password, api_key or cloud_auth",
                    r.url, r.status
                ))
            }
            s => return Err(format!("{} answered {s} to GET /", r.url)),
        }
        let server = Server::parse(&r.body)?;
        if self.s.document_type.is_some()
            && !server.opensearch
            && server.major >= 8
            && !self.warned_type.swap(true, Ordering::Relaxed)
        {
            tracing::warn!(
                "{}: document_type is ignored: Elasticsearch {} has no mapping types",
                self.label,
                server.major
            );
        }
        if self.s.ilm_wanted && !server.opensearch {
            tracing::info!(
                "{}: writing to the daily index; index lifecycle management (ILM, which Logstash's ilm_enabled => auto would set up here) is not managed by sluice",
                self.label
            );
        }
        if self.s.template.manage {
            template::install(self, server)?;
        }
        Ok(server)
    }

    fn log_item(
        &self,
        level: tracing::Level,
        what: &str,
        event: &Event,
        status: u16,
        item: &bulk::ItemResult,
    ) {
        if self
            .s
            .silence_errors_in_log
            .iter()
            .any(|t| t == item.error_type())
        {
            return;
        }
        let error = item
            .error
            .as_ref()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let event = sluice_event::json::event_to_string(event);
        if level == tracing::Level::WARN {
            tracing::warn!(status, error = %error, event = %event, "{}: {what}", self.label);
        } else {
            tracing::info!(status, error = %error, "{}: {what}", self.label);
        }
    }

    /// Events that can never be indexed as they are, with why (index in the batch, reason):
    /// to the dead letter queue when the pipeline has one, else logged with the event. Both
    /// are counted.
    fn dead_letter(&self, events: &[&Event], failed: &[(usize, String)], ctx: &WriteContext) {
        if failed.is_empty() {
            return;
        }
        if ctx.dead_letter_queue_enabled() {
            let items: Vec<(&Event, &str)> = (failed.iter())
                .map(|(i, reason)| (events[*i], reason.as_str()))
                .collect();
            let n = ctx.dead_letter(&items) as u64;
            self.counters.add_all(&[
                ("documents.dlq_routed", n),
                ("documents.non_retryable_failures", items.len() as u64 - n),
            ]);
            return;
        }
        self.counters
            .add("documents.non_retryable_failures", failed.len() as u64);
        for (i, reason) in failed {
            let event = sluice_event::json::event_to_string(events[*i]);
            tracing::warn!(event = %event, "{}: could not index event: {reason}", self.label);
        }
    }

    /// What became of an item, whose action line is `action`.
    fn classify(&self, event: &Event, item: &bulk::ItemResult, action: &[u8]) -> Fate {
        let dropped_type = || {
            self.s
                .drop_error_types
                .iter()
                .any(|t| t == item.error_type())
        };
        match item.status {
            200 | 201 => Fate::Indexed,
            409 => {
                let what = "failed action (version conflict)";
                self.log_item(tracing::Level::WARN, what, event, 409, item);
                Fate::Dropped
            }
            s if dropped_type() => {
                let what = "dropped (error type in drop_error_types)";
                self.log_item(tracing::Level::WARN, what, event, s, item);
                Fate::Dropped
            }
            s if matches!(s, 400 | 404) || self.s.dlq_custom_codes.contains(&s) => {
                let error = item.error.as_ref().map(|e| e.to_string());
                let action = action.split(|b| *b == b'\n').next().unwrap_or_default();
                Fate::Failed(format!(
                    "Could not index event to Elasticsearch. status: {s}, action: {}, response: {}",
                    String::from_utf8_lossy(action),
                    error.unwrap_or_default()
                ))
            }
            s => {
                let what = "retrying failed action";
                self.log_item(tracing::Level::INFO, what, event, s, item);
                Fate::Retry
            }
        }
    }

    /// The request body of `chunk`: a slice of `body` when the chunk is one contiguous run,
    /// gzipped when `compression_level` > 0.
    fn payload<'a>(&self, body: &'a [u8], chunk: &[(usize, Range<usize>)]) -> Cow<'a, [u8]> {
        let contiguous = chunk.windows(2).all(|w| w[0].1.end == w[1].1.start);
        let raw: Cow<'a, [u8]> = if contiguous {
            let start = chunk.first().map_or(0, |c| c.1.start);
            let end = chunk.last().map_or(0, |c| c.1.end);
            Cow::Borrowed(&body[start..end])
        } else {
            let mut v = Vec::new();
            for (_, r) in chunk {
                v.extend_from_slice(&body[r.clone()]);
            }
            Cow::Owned(v)
        };
        if self.s.compression_level == 0 {
            return raw;
        }
        Cow::Owned(gzip(&raw, self.s.compression_level))
    }

    /// Sends one chunk until the server answers it as a whole. Returns the items to retry,
    /// or the halves to send instead (413).
    fn send_chunk(
        &self,
        events: &[&Event],
        body: &[u8],
        chunk: Chunk,
        ctx: &WriteContext,
        retry: &mut Chunk,
        failed: &mut Vec<(usize, String)>,
    ) -> Result<Option<[Chunk; 2]>, OutputError> {
        let payload = self.payload(body, &chunk);
        let mut headers = vec![("Content-Type", "application/json")];
        if self.s.compression_level > 0 {
            headers.push(("Content-Encoding", "gzip"));
        }
        let mut backoff = Backoff::new(self.s.retry_initial, self.s.retry_max);
        loop {
            let failure = match self
                .pool
                .request("POST", &self.bulk_path, &headers, Some(&payload))
            {
                Err(e) => {
                    self.counters.add("bulk_requests.failures", 1);
                    let target = match &e {
                        HttpError::Unreachable { url, .. } => url.clone(),
                        HttpError::NoneAlive { urls } => urls.join(","),
                    };
                    self.outage.failed(&target, &e);
                    e.to_string()
                }
                Ok(r) => {
                    self.counters
                        .add(&format!("bulk_requests.responses.{}", r.status), 1);
                    if r.status == 413 {
                        self.counters.add("bulk_requests.failures", 1);
                        if chunk.len() > 1 {
                            let mut first = chunk;
                            let second = first.split_off(first.len() / 2);
                            return Ok(Some([first, second]));
                        }
                        let (i, _) = &chunk[0];
                        failed.push((*i, "status 413: the document is larger than the server accepts (http.max_content_length)".to_owned()));
                        return Ok(None);
                    }
                    if (200..300).contains(&r.status) {
                        match BulkResponse::parse(&r.body) {
                            Ok(resp) if !resp.errors || resp.items.len() == chunk.len() => {
                                self.outage.recovered(&r.url);
                                self.handle_items(events, body, &chunk, &resp, retry, failed);
                                return Ok(None);
                            }
                            Ok(resp) => {
                                self.counters.add("bulk_requests.failures", 1);
                                format!(
                                    "{} answered {} items for {} actions",
                                    r.url,
                                    resp.items.len(),
                                    chunk.len()
                                )
                            }
                            Err(e) => {
                                self.counters.add("bulk_requests.failures", 1);
                                format!("{}: {e}", r.url)
                            }
                        }
                    } else {
                        self.counters.add("bulk_requests.failures", 1);
                        let text =
                            String::from_utf8_lossy(&r.body[..r.body.len().min(500)]).into_owned();
                        if r.status == 429 {
                            tracing::debug!(
                                "{}: {} answered 429 (too many requests); retrying",
                                self.label,
                                r.url
                            );
                        } else {
                            tracing::error!(
                                "{}: {} answered {} to a bulk request: {text}; retrying",
                                self.label,
                                r.url,
                                r.status
                            );
                        }
                        format!("{} answered {}", r.url, r.status)
                    }
                }
            };
            tracing::debug!("{}: bulk request failed: {failure}", self.label);
            if !ctx.sleep(backoff.next_delay()) {
                return Err(OutputError::retryable(format!("{}: {failure}", self.label)));
            }
        }
    }

    fn handle_items(
        &self,
        events: &[&Event],
        body: &[u8],
        chunk: &[(usize, Range<usize>)],
        resp: &BulkResponse,
        retry: &mut Chunk,
        failed: &mut Vec<(usize, String)>,
    ) {
        if !resp.errors {
            let n = chunk.len() as u64;
            self.counters
                .add_all(&[("bulk_requests.successes", 1), ("documents.successes", n)]);
            return;
        }
        let (mut ok, mut dropped, mut retried) = (0u64, 0u64, 0u64);
        for ((i, range), item) in chunk.iter().zip(resp.results()) {
            let Some(item) = item else {
                retry.push((*i, range.clone()));
                retried += 1;
                continue;
            };
            match self.classify(events[*i], item, &body[range.clone()]) {
                Fate::Indexed => ok += 1,
                Fate::Dropped => dropped += 1,
                Fate::Failed(reason) => failed.push((*i, reason)),
                Fate::Retry => {
                    retry.push((*i, range.clone()));
                    retried += 1;
                }
            }
        }
        self.counters.add_all(&[
            ("bulk_requests.with_errors", 1),
            ("documents.successes", ok),
            ("documents.non_retryable_failures", dropped),
            ("documents.retryable_failures", retried),
        ]);
    }
}

impl Output for ElasticsearchOutput {
    fn write(&self, events: &[&Event], ctx: &WriteContext) -> Result<(), OutputError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut failed = Vec::new();
        let result = self.write_batch(events, ctx, &mut failed);
        // Also when giving the batch up at a stop: a replay would fail them again anyway.
        self.dead_letter(events, &failed, ctx);
        result
    }

    fn counters(&self) -> Option<Arc<NamedCounters>> {
        Some(Arc::clone(&self.counters))
    }
}

impl ElasticsearchOutput {
    /// Sends a batch until every event is indexed, dropped or `failed`.
    fn write_batch(
        &self,
        events: &[&Event],
        ctx: &WriteContext,
        failed: &mut Vec<(usize, String)>,
    ) -> Result<(), OutputError> {
        let server = self.connect(ctx)?;
        let mut body = Vec::with_capacity(events.len() * 512);
        let mut pending: Chunk = Vec::with_capacity(events.len());
        let mut renderer = Renderer::new();
        for (i, e) in events.iter().enumerate() {
            let start = body.len();
            match renderer.append(&self.s, server, e, &mut body) {
                Ok(()) => pending.push((i, start..body.len())),
                Err(reason) => failed.push((i, reason)),
            }
        }
        let mut backoff = Backoff::new(self.s.retry_initial, self.s.retry_max);
        while !pending.is_empty() {
            let mut chunks: std::collections::VecDeque<Chunk> = split(pending).into();
            let mut retry = Vec::new();
            while let Some(chunk) = chunks.pop_front() {
                if let Some([a, b]) =
                    self.send_chunk(events, &body, chunk, ctx, &mut retry, failed)?
                {
                    chunks.push_front(b);
                    chunks.push_front(a);
                }
            }
            if retry.is_empty() {
                break;
            }
            retry.sort_by_key(|(i, _)| *i);
            if !ctx.sleep(backoff.next_delay()) {
                return Err(OutputError::retryable(format!(
                    "{}: {} events still to retry at shutdown",
                    self.label,
                    retry.len()
                )));
            }
            pending = retry;
        }
        Ok(())
    }
}

/// `path` with `query` appended (`?` or `&`), if any.
fn with_query(path: &str, query: &str) -> String {
    if query.is_empty() {
        path.to_owned()
    } else if path.contains('?') {
        format!("{path}&{query}")
    } else {
        format!("{path}?{query}")
    }
}

/// Splits entries into requests of at most [`TARGET_BULK_BYTES`] (an entry larger than that
/// goes alone).
fn split(entries: Chunk) -> Vec<Chunk> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut size = 0;
    for e in entries {
        let len = e.1.len();
        if !cur.is_empty() && size + len > TARGET_BULK_BYTES {
            out.push(std::mem::take(&mut cur));
            size = 0;
        }
        size += len;
        cur.push(e);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn gzip_members_decode_to_the_data_whatever_the_size_and_level() {
        let mut text = Vec::new();
        for i in 0..20_000u32 {
            text.extend_from_slice(format!("{{\"n\":{i},\"m\":\"x{}\"}}\n", i * 7919).as_bytes());
        }
        for level in [1, 6, 9, 1] {
            for len in [0, 1, 100, 70_000, text.len()] {
                let gz = gzip(&text[..len], level);
                let mut back = Vec::new();
                flate2::read::GzDecoder::new(&gz[..])
                    .read_to_end(&mut back)
                    .unwrap();
                assert_eq!(back, &text[..len], "level {level}, {len} bytes");
            }
        }
    }
}

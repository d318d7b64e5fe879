//! `http`: sends events to an HTTP endpoint, as Logstash's http output. `url` (sprintf per
//! event), `http_method`, `format`:
//! - `json` (the default): one request per event, its JSON (or `mapping` rendered);
//! - `json_batch`: one request per batch and URL, a JSON array;
//! - `form`: one request per event, `application/x-www-form-urlencoded`;
//! - `message`: one request per event, the `message` template as the body.
//!
//! `headers` (sprintf'd), `content_type`, `user`/`password`, `ssl_*`, `request_timeout`,
//! `pool_max`. Answers in `retryable_codes` (429, 500, 502, 503, 504) and failed connections
//! are sent again with back-off (1 s doubling to 60 s) while `retry_failed` (default true);
//! `ignorable_codes` count as success; any other non-2xx is logged and the event dropped, as in
//! Logstash. The batch is acknowledged once every request is answered for good.

use std::sync::Arc;
use std::time::Duration;

use sluice_event::{Event, Template, Value};
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::{ConfigError, Options, Output, OutputError, WriteContext};

use crate::retry::Backoff;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    JsonBatch,
    Form,
    Message,
}

pub struct HttpOutput {
    url: Template,
    method: String,
    format: Format,
    message: Option<Template>,
    mapping: Option<Vec<(String, Template)>>,
    headers: Vec<(String, Template)>,
    content_type: String,
    retryable: Vec<u16>,
    ignorable: Vec<u16>,
    retry_failed: bool,
    agent: ureq::Agent,
    counters: Arc<NamedCounters>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let url = opts.required_string("url")?;
    let method = opts
        .choice(
            "http_method",
            &["put", "post", "patch", "delete", "get", "head"],
            "",
        )?
        .to_ascii_uppercase();
    if method.is_empty() {
        return Err(opts
            .plugin_error("missing required setting \"http_method\" for output plugin \"http\""));
    }
    let format = match opts
        .choice("format", &["json", "json_batch", "form", "message"], "json")?
        .as_str()
    {
        "json_batch" => Format::JsonBatch,
        "form" => Format::Form,
        "message" => Format::Message,
        _ => Format::Json,
    };
    let message = opts.string("message")?.map(|m| Template::parse(&m));
    if format == Format::Message && message.is_none() {
        return Err(opts.error("message", "is required with format => message"));
    }
    let mapping = opts.string_hash("mapping")?.map(|m| {
        m.into_iter()
            .map(|(k, v)| (k, Template::parse(&v)))
            .collect()
    });
    let headers = opts
        .string_hash("headers")?
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, Template::parse(&v)))
        .collect();
    let content_type = opts.string("content_type")?.unwrap_or_else(|| {
        match format {
            Format::Json | Format::JsonBatch => "application/json",
            Format::Form => "application/x-www-form-urlencoded",
            Format::Message => "text/plain",
        }
        .to_owned()
    });
    let codes =
        |opts: &mut Options, name: &str, default: &[u16]| -> Result<Vec<u16>, ConfigError> {
            match opts.take(name) {
                None => Ok(default.to_vec()),
                Some((_, v)) => {
                    let items = match v {
                        sluice_config::Value::Array(items) => items,
                        other => vec![other],
                    };
                    items
                        .iter()
                        .map(|i| match i {
                            sluice_config::Value::Number(sluice_config::Number::Int(n))
                                if (100..=599).contains(n) =>
                            {
                                Ok(*n as u16)
                            }
                            sluice_config::Value::Number(n) => {
                                Err(opts
                                    .error(name, format!("{} is not an HTTP status", n.as_f64())))
                            }
                            _ => Err(opts.error(name, "expected a list of HTTP status codes")),
                        })
                        .collect()
                }
            }
        };
    let retryable = codes(opts, "retryable_codes", &[429, 500, 502, 503, 504])?;
    let ignorable = codes(opts, "ignorable_codes", &[])?;
    let retry_failed = opts.boolean_or("retry_failed", true)?;
    opts.int("automatic_retries")?;
    let timeout = opts.int("request_timeout")?.unwrap_or(60).max(1);
    let pool_max = opts.int("pool_max")?.unwrap_or(50).max(1);
    let user = opts.string("user")?;
    let password = opts.string("password")?;
    let tls = crate::tls::read(
        opts,
        crate::tls::Names::Elasticsearch,
        url.starts_with("https://"),
    )?;
    let mut headers: Vec<(String, Template)> = headers;
    match (user, password) {
        (Some(u), Some(p)) => {
            use base64::Engine;
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
            headers.push((
                "Authorization".into(),
                Template::parse(&format!("Basic {token}")),
            ));
        }
        (None, None) => {}
        _ => return Err(opts.plugin_error("http output: user and password go together")),
    }
    let agent = crate::http::agent(
        tls.as_ref(),
        Duration::from_secs(timeout as u64),
        pool_max as usize,
        1,
    )
    .map_err(|e| opts.plugin_error(e))?;
    Ok(Box::new(HttpOutput {
        url: Template::parse(&url),
        method,
        format,
        message,
        mapping,
        headers,
        content_type,
        retryable,
        ignorable,
        retry_failed,
        agent,
        counters: Arc::new(NamedCounters::with_paths(&[
            "requests.successes",
            "requests.retried",
            "requests.failures",
        ])),
    }))
}

/// `application/x-www-form-urlencoded` escaping.
fn form_escape(s: &str, out: &mut String) {
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
}

impl HttpOutput {
    /// The document an event becomes: `mapping` rendered, or the whole event.
    fn document(&self, e: &Event) -> Value {
        match &self.mapping {
            Some(m) => {
                let mut map = sluice_event::Map::new();
                for (k, t) in m {
                    map.insert(k.as_str().into(), Value::String(t.render(e).into()));
                }
                Value::Object(map)
            }
            None => Value::Object(e.fields().clone()),
        }
    }

    fn body(&self, events: &[&Event]) -> Vec<u8> {
        match self.format {
            // Without a mapping the documents are the events: written as they are, not
            // copied into values first.
            Format::JsonBatch if self.mapping.is_none() => {
                let mut out = Vec::with_capacity(events.len() * 512);
                out.push(b'[');
                for (i, e) in events.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    sluice_event::json::write_event(e, &mut out);
                }
                out.push(b']');
                out
            }
            Format::JsonBatch => {
                let docs: Vec<Value> = events.iter().map(|e| self.document(e)).collect();
                sluice_event::json::to_string(&Value::Array(docs)).into_bytes()
            }
            Format::Json if self.mapping.is_none() => {
                let mut out = Vec::with_capacity(512);
                sluice_event::json::write_event(events[0], &mut out);
                out
            }
            Format::Json => sluice_event::json::to_string(&self.document(events[0])).into_bytes(),
            Format::Message => self
                .message
                .as_ref()
                .map(|m| m.render(events[0]))
                .unwrap_or_default()
                .into_bytes(),
            Format::Form => {
                let mut out = String::new();
                let doc = self.document(events[0]);
                if let Value::Object(m) = doc {
                    for (k, v) in m.iter() {
                        if !out.is_empty() {
                            out.push('&');
                        }
                        form_escape(k.as_ref(), &mut out);
                        out.push('=');
                        form_escape(&v.to_display_string(), &mut out);
                    }
                }
                out.into_bytes()
            }
        }
    }

    /// Sends one request until it is answered for good; `Err` only at a stop signal.
    fn send(
        &self,
        url: &str,
        first: &Event,
        body: &[u8],
        ctx: &WriteContext,
    ) -> Result<(), OutputError> {
        let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
        loop {
            let mut req = ureq::http::Request::builder()
                .method(self.method.as_str())
                .uri(url)
                .header("Content-Type", self.content_type.as_str());
            for (k, t) in &self.headers {
                req = req.header(k.as_str(), t.render(first));
            }
            let req = match req.body(body.to_vec()) {
                Ok(r) => r,
                Err(e) => {
                    self.counters.add("requests.failures", 1);
                    tracing::warn!(url = %url, "http output: request dropped, it cannot be built: {e}");
                    return Ok(());
                }
            };
            let outcome = match self.agent.run(req) {
                Ok(mut r) => {
                    let status = r.status().as_u16();
                    let _ = r.body_mut().read_to_vec();
                    if (200..300).contains(&status) || self.ignorable.contains(&status) {
                        self.counters.add("requests.successes", 1);
                        return Ok(());
                    }
                    if !self.retryable.contains(&status) {
                        self.counters.add("requests.failures", 1);
                        tracing::warn!(url = %url, status, "http output: non-retryable answer; the event is dropped");
                        return Ok(());
                    }
                    format!("{url} answered {status}")
                }
                Err(e) => format!("{url}: {e}"),
            };
            if !self.retry_failed {
                self.counters.add("requests.failures", 1);
                tracing::warn!(
                    "http output: {outcome}; retry_failed is false, the event is dropped"
                );
                return Ok(());
            }
            self.counters.add("requests.retried", 1);
            tracing::debug!("http output: {outcome}; retrying");
            if !ctx.sleep(backoff.next_delay()) {
                return Err(OutputError::retryable(format!("http output: {outcome}")));
            }
        }
    }
}

impl Output for HttpOutput {
    fn write(&self, events: &[&Event], ctx: &WriteContext) -> Result<(), OutputError> {
        if self.format == Format::JsonBatch {
            // One request per distinct URL, events in order.
            let mut groups: Vec<(String, Vec<&Event>)> = Vec::new();
            for e in events {
                let url = self.url.render(e);
                match groups.iter_mut().find(|(u, _)| *u == url) {
                    Some((_, g)) => g.push(e),
                    None => groups.push((url, vec![e])),
                }
            }
            for (url, group) in &groups {
                let body = self.body(group);
                self.send(url, group[0], &body, ctx)?;
            }
            return Ok(());
        }
        for e in events {
            let url = self.url.render(e);
            let body = self.body(&[e]);
            self.send(&url, e, &body, ctx)?;
        }
        Ok(())
    }

    fn counters(&self) -> Option<Arc<NamedCounters>> {
        Some(Arc::clone(&self.counters))
    }
}

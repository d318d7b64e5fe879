//! `http_poller`: calls HTTP endpoints on a schedule and makes events of the answers, as
//! logstash-input-http_poller does.
//!
//! `urls` names the requests: a URL (a `GET`), or a hash of `url`, `method` (`get` by default),
//! `headers`, `body`, `params` (the query), and `user`/`password` (or `auth => { user, password
//! }`). `schedule` is a hash of exactly one of `cron`, `every` (the first run at once), `in`
//! or `at` ([`crate::schedule`]; after a one-shot `in` or `at` the input idles until the
//! pipeline stops, as in Logstash). At each run every request is sent, one after another; an
//! answer of any status goes through the codec (`json` by default; the body whole, then a
//! flush), each event under `target` when it is set, and an empty body makes one empty event.
//! Each event gets the request's details under `metadata_target` (`@metadata` by default):
//! with ECS disabled `host`, `code`, `response_headers`, `response_message`,
//! `runtime_seconds`, `times_retried`, `name`, `request`; in ECS mode the same under
//! `[input][http_poller]` (`request.host.hostname`, `response.status_code`, ...,
//! `response.elapsed_time_ns`). A request that gets no answer makes an event tagged
//! `_http_request_failure` with the error (`[http_request_failure]` fields, or ECS's `error`,
//! `url`, `http`, `event.duration`). The connection options are the http_client mixin's
//! ([`crate::http::Client`]).

use std::time::Instant;

use sluice_config::Value as Ast;
use sluice_event::{Event, FieldRef, Map, Value};
use sluice_pipeline::options::ast_to_value;
use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};

use crate::ecs::Ecs;
use crate::http::Client;
use crate::schedule::Schedule;

/// One named request.
struct Request {
    name: String,
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
    /// The spec as written, for the `request` metadata (`method` and `url` set).
    spec: Value,
}

/// Where each piece of metadata goes (`None`: not in this ECS mode).
struct Fields {
    host: FieldRef,
    code: FieldRef,
    headers: FieldRef,
    message: FieldRef,
    runtime_s: Option<FieldRef>,
    runtime_ns: Option<FieldRef>,
    retried: FieldRef,
    name: FieldRef,
    request: FieldRef,
    error: FieldRef,
    backtrace: FieldRef,
    fail_request: Option<FieldRef>,
    fail_name: Option<FieldRef>,
    fail_runtime_s: Option<FieldRef>,
    fail_runtime_ns: Option<FieldRef>,
    fail_url: Option<FieldRef>,
    fail_method: Option<FieldRef>,
    fail_host: Option<FieldRef>,
}

pub struct HttpPoller {
    client: Client,
    requests: Vec<Request>,
    schedule: Schedule,
    codec: Box<dyn Codec>,
    target: Option<FieldRef>,
    fields: Fields,
    host: String,
}

fn field(opts: &Options, option: &str, text: &str) -> Result<FieldRef, ConfigError> {
    FieldRef::parse(text).map_err(|e| opts.error(option, format!("{text:?}: {e}")))
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let urls = opts
        .hash("urls")?
        .ok_or_else(|| opts.error("urls", "is required (the requests to make, by name)"))?;
    let mut requests = Vec::new();
    for (name, spec) in urls {
        requests.push(request(opts, name, &spec)?);
    }
    let schedule = match opts.take("schedule") {
        None => return Err(opts.error("schedule", "is required (like { every => \"1m\" })")),
        Some((_, Ast::Hash(entries))) => {
            let pairs: Vec<(String, String)> = entries
                .iter()
                .map(|e| (e.key.clone(), ast_to_value(&e.value).to_display_string()))
                .collect();
            Schedule::from_hash(&pairs).map_err(|e| opts.error("schedule", e))?
        }
        Some(_) => {
            return Err(opts.error(
                "schedule",
                "must be a hash of one of cron, every, in or at (like { every => \"1m\" })",
            ))
        }
    };
    let codec = opts.codec("json")?;
    let target = match opts.string("target")? {
        Some(t) => Some(field(opts, "target", &t)?),
        None => None,
    };
    let meta = opts.string_or("metadata_target", "@metadata")?;
    let ecs = Ecs::from_options(opts)?.enabled();
    let m = |opts: &Options, path: &str| field(opts, "metadata_target", &format!("[{meta}]{path}"));
    let p = |opts: &Options, path: &str| field(opts, "metadata_target", path);
    let fields = if ecs {
        let base = "[input][http_poller]";
        Fields {
            host: m(opts, &format!("{base}[request][host][hostname]"))?,
            code: m(opts, &format!("{base}[response][status_code]"))?,
            headers: m(opts, &format!("{base}[response][headers]"))?,
            message: m(opts, &format!("{base}[response][status_message]"))?,
            runtime_s: None,
            runtime_ns: Some(m(opts, &format!("{base}[response][elapsed_time_ns]"))?),
            retried: m(opts, &format!("{base}[request][retry_count]"))?,
            name: m(opts, &format!("{base}[request][name]"))?,
            request: m(opts, &format!("{base}[request][original]"))?,
            error: p(opts, "[error][message]")?,
            backtrace: p(opts, "[error][stack_trace]")?,
            fail_request: None,
            fail_name: None,
            fail_runtime_s: None,
            fail_runtime_ns: Some(p(opts, "[event][duration]")?),
            fail_url: Some(p(opts, "[url][full]")?),
            fail_method: Some(p(opts, "[http][request][method]")?),
            fail_host: Some(p(opts, "[host][hostname]")?),
        }
    } else {
        Fields {
            host: m(opts, "[host]")?,
            code: m(opts, "[code]")?,
            headers: m(opts, "[response_headers]")?,
            message: m(opts, "[response_message]")?,
            runtime_s: Some(m(opts, "[runtime_seconds]")?),
            runtime_ns: None,
            retried: m(opts, "[times_retried]")?,
            name: m(opts, "[name]")?,
            request: m(opts, "[request]")?,
            error: p(opts, "[http_request_failure][error]")?,
            backtrace: p(opts, "[http_request_failure][backtrace]")?,
            fail_request: Some(p(opts, "[http_request_failure][request]")?),
            fail_name: Some(p(opts, "[http_request_failure][name]")?),
            fail_runtime_s: Some(p(opts, "[http_request_failure][runtime_seconds]")?),
            fail_runtime_ns: None,
            fail_url: None,
            fail_method: None,
            fail_host: None,
        }
    };
    let client = Client::read(opts)?;
    Ok(Box::new(HttpPoller {
        client,
        requests,
        schedule,
        codec,
        target,
        fields,
        host: sluice_pipeline::hostname(),
    }))
}

/// One `urls` entry: a URL, or a hash spec.
fn request(opts: &Options, name: String, spec: &Ast) -> Result<Request, ConfigError> {
    let bad = |why: String| opts.error("urls", format!("{name:?}: {why}"));
    let check_url = |url: &str| {
        let lower = url.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            Ok(())
        } else {
            Err(bad(format!(
                "invalid URL {url:?} (expected http:// or https://)"
            )))
        }
    };
    match spec {
        Ast::String(url) | Ast::Bareword(url) => {
            check_url(url)?;
            let mut m = Map::new();
            m.insert("method".into(), Value::from("get"));
            m.insert("url".into(), Value::from(url.as_str()));
            Ok(Request {
                name,
                method: "GET".into(),
                url: url.clone(),
                headers: Vec::new(),
                body: None,
                spec: Value::Object(m),
            })
        }
        Ast::Hash(entries) => {
            let value = ast_to_value(spec);
            let Value::Object(mut m) = value else {
                unreachable!("a hash")
            };
            let text = |k: &str| m.get(k).map(|v| v.to_display_string());
            let url = text("url").ok_or_else(|| bad("no url given".into()))?;
            check_url(&url)?;
            let method = text("method")
                .unwrap_or_else(|| "get".into())
                .to_ascii_uppercase();
            let auth = m.get("auth").and_then(|a| a.as_object()).cloned();
            let user = text("user").or_else(|| {
                auth.as_ref()
                    .and_then(|a| a.get("user"))
                    .map(|v| v.to_display_string())
            });
            let password = text("password").or_else(|| {
                auth.as_ref()
                    .and_then(|a| a.get("password"))
                    .map(|v| v.to_display_string())
            });
            let mut headers: Vec<(String, String)> = match m.get("headers") {
                Some(Value::Object(h)) => h
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_display_string()))
                    .collect(),
                Some(_) => return Err(bad("headers must be a hash".into())),
                None => Vec::new(),
            };
            match (user, password) {
                (Some(u), Some(p)) => {
                    use base64::Engine;
                    let token =
                        base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
                    headers.push(("Authorization".into(), format!("Basic {token}")));
                }
                (None, None) => {}
                _ => {
                    return Err(bad(
                        "'user' and 'password' must both be specified for input HTTP poller".into(),
                    ))
                }
            }
            let mut url = url;
            if let Some(Value::Object(params)) = m.get("params") {
                let mut first = !url.contains('?');
                for (k, v) in params.iter() {
                    url.push(if first { '?' } else { '&' });
                    first = false;
                    escape(k, &mut url);
                    url.push('=');
                    escape(&v.to_display_string(), &mut url);
                }
            }
            let body = m.get("body").map(|b| match b {
                Value::String(s) => s.as_bytes().to_vec(),
                other => sluice_event::json::to_string(other).into_bytes(),
            });
            if let Some(k) = entries.iter().map(|e| e.key.as_str()).find(|k| {
                ![
                    "url", "method", "user", "password", "auth", "headers", "params", "body",
                ]
                .contains(k)
            }) {
                return Err(bad(format!(
                    "unknown key {k:?} (known: url, method, headers, params, body, user, password, auth)"
                )));
            }
            // The request metadata: the spec as given (credentials left out), method and url.
            m.remove("user");
            m.remove("password");
            m.remove("auth");
            m.insert("method".into(), Value::from(method.to_ascii_lowercase()));
            Ok(Request {
                name,
                method,
                url,
                headers,
                body,
                spec: Value::Object(m),
            })
        }
        _ => Err(bad(
            "expected a URL or a hash (url, method, headers...)".into()
        )),
    }
}

/// `%`-encoding for a query.
fn escape(s: &str, out: &mut String) {
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
}

impl HttpPoller {
    /// Sends one request and makes its events.
    fn poll(&mut self, r: &Request) -> Vec<Event> {
        let started = Instant::now();
        let answer = self
            .client
            .request(&r.method, &r.url, &r.headers, r.body.as_deref());
        let elapsed = started.elapsed();
        let f = &self.fields;
        let mut events = Vec::new();
        match answer {
            Ok(response) => {
                if response.body.is_empty() {
                    events.push(Event::new());
                } else {
                    self.codec.decode(&response.body, &mut events);
                    self.codec.flush(&mut events);
                }
                if let Some(t) = &self.target {
                    for e in &mut events {
                        let fields = std::mem::take(e.fields_mut());
                        let mut moved = Event::new();
                        let mut inner = Map::new();
                        for (k, v) in fields {
                            if k != "@timestamp" && k != "@version" {
                                inner.insert(k, v);
                            }
                        }
                        moved.set(t, Value::Object(inner));
                        *e = moved;
                    }
                }
                for e in &mut events {
                    e.set(&f.host, Value::from(self.host.as_str()));
                    if let Some(s) = &f.runtime_s {
                        e.set(s, Value::Float(elapsed.as_secs_f64()));
                    }
                    if let Some(ns) = &f.runtime_ns {
                        e.set(ns, Value::Int(elapsed.as_nanos() as i64));
                    }
                    e.set(&f.name, Value::from(r.name.as_str()));
                    e.set(&f.request, r.spec.clone());
                    e.set(&f.code, Value::Int(response.status as i64));
                    e.set(&f.headers, response.headers_value());
                    e.set(&f.message, Value::from(response.reason.as_str()));
                    e.set(&f.retried, Value::Int(response.retried as i64));
                }
            }
            Err(error) => {
                tracing::debug!(name = %r.name, url = %r.url, error = %error, "http_poller: failed fetching url");
                let mut e = Event::new();
                e.add_tag("_http_request_failure");
                e.set(&f.host, Value::from(self.host.as_str()));
                if let Some(s) = &f.runtime_s {
                    e.set(s, Value::Float(elapsed.as_secs_f64()));
                }
                if let Some(ns) = &f.runtime_ns {
                    e.set(ns, Value::Int(elapsed.as_nanos() as i64));
                }
                e.set(&f.name, Value::from(r.name.as_str()));
                e.set(&f.request, r.spec.clone());
                let opt = |e: &mut Event, f: &Option<FieldRef>, v: Value| {
                    if let Some(f) = f {
                        e.set(f, v);
                    }
                };
                opt(&mut e, &f.fail_request, r.spec.clone());
                opt(&mut e, &f.fail_name, Value::from(r.name.as_str()));
                opt(&mut e, &f.fail_url, Value::from(r.url.as_str()));
                opt(
                    &mut e,
                    &f.fail_method,
                    Value::from(r.method.to_ascii_lowercase()),
                );
                opt(&mut e, &f.fail_host, Value::from(self.host.as_str()));
                opt(
                    &mut e,
                    &f.fail_runtime_s,
                    Value::Float(elapsed.as_secs_f64()),
                );
                opt(
                    &mut e,
                    &f.fail_runtime_ns,
                    Value::Int(elapsed.as_nanos() as i64),
                );
                e.set(&f.error, Value::from(error));
                e.set(&f.backtrace, Value::Null);
                events.push(e);
            }
        }
        events
    }
}

impl Input for HttpPoller {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let schedule = self.schedule.clone();
        let requests = std::mem::take(&mut self.requests);
        // The queue refused events: the pipeline is stopping.
        let stopped = std::cell::Cell::new(false);
        crate::schedule::run(
            &schedule,
            || stopped.get() || ctx.is_stopping(),
            || {
                for r in &requests {
                    if stopped.get() || ctx.is_stopping() {
                        return;
                    }
                    let events = self.poll(r);
                    if ctx.push(events).is_err() {
                        stopped.set(true);
                    }
                }
            },
        );
        // A one-shot schedule (`in`, `at`) that has run leaves the input idle until the
        // pipeline stops, as Logstash's scheduler does.
        while !stopped.get() && !ctx.is_stopping() {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        Ok(())
    }
}

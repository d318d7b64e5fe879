//! `http`: calls an HTTP endpoint for each event and puts the answer in the event, as
//! logstash-filter-http does (lookups and enrichment against a REST service).
//!
//! Per event: `url`, the `headers` (names and values), the `query` hash and the `body` (a
//! string, or a hash or list whose strings are filled in one by one) are sprintf'd; `verb`
//! (`GET` by default; also `HEAD`, `PATCH`, `DELETE`, `POST`, `PUT`) is sent with a
//! `content-type` of `application/json` for `body_format => json` (a hash or list body is then
//! written as JSON) and `text/plain` otherwise, unless `headers` gives one. A 2xx answer puts
//! its headers in `target_headers` and, but for `HEAD`, its body in `target_body`: parsed when
//! the answer says `application/json` (a body that does not parse tags `tag_on_json_failure`),
//! else as text, trimmed; an empty body sets nothing. Then the common options apply. No
//! answer, or another status, tags `tag_on_request_failure` and logs why.
//!
//! `target_body` is `[body]` with `ecs_compatibility => disabled` and must be given in ECS
//! mode; `target_headers` is `[headers]`, or `[@metadata][filter][http][response][headers]`
//! in ECS mode. The connection options are the http_client mixin's ([`crate::http::Client`]).

use sluice_event::{Event, FieldRef, Template, Value};
use sluice_pipeline::options::ast_to_value;
use sluice_pipeline::{ConfigError, Filter, Options};

use crate::ecs::Ecs;
use crate::http::Client;

/// A config value whose strings are filled in from each event.
#[derive(Clone)]
pub enum Sprintf {
    Text(Template),
    List(Vec<Sprintf>),
    Hash(Vec<(Template, Sprintf)>),
    Other(Value),
}

impl Sprintf {
    pub fn new(v: &Value) -> Sprintf {
        match v {
            Value::String(s) => Sprintf::Text(Template::parse(s)),
            Value::Array(items) => Sprintf::List(items.iter().map(Sprintf::new).collect()),
            Value::Object(m) => Sprintf::Hash(
                m.iter()
                    .map(|(k, v)| (Template::parse(k), Sprintf::new(v)))
                    .collect(),
            ),
            other => Sprintf::Other(other.clone()),
        }
    }

    pub fn render(&self, e: &Event) -> Value {
        match self {
            Sprintf::Text(t) => Value::String(t.render(e).into()),
            Sprintf::List(items) => Value::Array(items.iter().map(|i| i.render(e)).collect()),
            Sprintf::Hash(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.render(e).as_str().into(), v.render(e)))
                    .collect(),
            ),
            Sprintf::Other(v) => v.clone(),
        }
    }
}

#[derive(Clone)]
pub struct HttpFilter {
    client: Client,
    url: Template,
    verb: String,
    headers: Vec<(Template, Template)>,
    query: Vec<(Template, Sprintf)>,
    body: Option<Sprintf>,
    json_body: bool,
    target_body: FieldRef,
    target_headers: FieldRef,
    tag_on_request_failure: Vec<String>,
    tag_on_json_failure: Vec<String>,
}

const VERBS: [&str; 6] = ["GET", "HEAD", "PATCH", "DELETE", "POST", "PUT"];

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let url = opts.required_string("url")?;
    let verb = opts.string("verb")?.unwrap_or_else(|| "GET".to_owned());
    if !VERBS.contains(&verb.as_str()) {
        return Err(opts.error(
            "verb",
            format!("{verb:?} is not one of {}", VERBS.join(", ")),
        ));
    }
    let headers = opts
        .string_hash("headers")?
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (Template::parse(&k), Template::parse(&v)))
        .collect();
    let query = opts
        .hash("query")?
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (Template::parse(&k), Sprintf::new(&ast_to_value(&v))))
        .collect();
    let body = opts
        .take("body")
        .map(|(_, v)| Sprintf::new(&ast_to_value(&v)));
    let json_body = opts.choice("body_format", &["text", "json"], "text")? == "json";
    let ecs = Ecs::from_options(opts)?;
    let field = |opts: &Options, name: &str, text: &str| {
        FieldRef::parse(text).map_err(|e| opts.error(name, e.to_string()))
    };
    let target_body = match opts.string("target_body")? {
        Some(t) => field(opts, "target_body", &t)?,
        None if !ecs.enabled() => field(opts, "target_body", "[body]")?,
        None => {
            return Err(opts.error(
                "target_body",
                "is required in ECS compatibility mode (where the answer's body goes; `[body]` with ecs_compatibility => disabled)",
            ))
        }
    };
    let target_headers = match opts.string("target_headers")? {
        Some(t) => field(opts, "target_headers", &t)?,
        None if ecs.enabled() => field(
            opts,
            "target_headers",
            "[@metadata][filter][http][response][headers]",
        )?,
        None => field(opts, "target_headers", "[headers]")?,
    };
    let tag_on_request_failure = opts
        .string_list("tag_on_request_failure")?
        .unwrap_or_else(|| vec!["_httprequestfailure".to_owned()]);
    let tag_on_json_failure = opts
        .string_list("tag_on_json_failure")?
        .unwrap_or_else(|| vec!["_jsonparsefailure".to_owned()]);
    let client = Client::read(opts)?;
    Ok(Box::new(HttpFilter {
        client,
        url: Template::parse(&url),
        verb,
        headers,
        query,
        body,
        json_body,
        target_body,
        target_headers,
        tag_on_request_failure,
        tag_on_json_failure,
    }))
}

/// `%`-encoding for a URL's query.
pub(crate) fn url_escape(s: &str, out: &mut String) {
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
}

impl HttpFilter {
    /// The URL with the rendered `query` appended (a list value repeats its key).
    fn url(&self, e: &Event) -> String {
        let mut url = self.url.render(e);
        let mut first = !url.contains('?');
        for (k, v) in &self.query {
            let key = k.render(e);
            let values = match v.render(e) {
                Value::Array(items) => items,
                one => vec![one],
            };
            for value in values {
                url.push(if first { '?' } else { '&' });
                first = false;
                url_escape(&key, &mut url);
                url.push('=');
                url_escape(&value.to_display_string(), &mut url);
            }
        }
        url
    }

    fn fail(&self, event: &mut Event) {
        for t in &self.tag_on_request_failure {
            event.add_tag(t);
        }
    }
}

impl Filter for HttpFilter {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let url = self.url(event);
        let mut headers: Vec<(String, String)> = self
            .headers
            .iter()
            .map(|(k, v)| (k.render(event), v.render(event)))
            .collect();
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            let ct = if self.json_body {
                "application/json"
            } else {
                "text/plain"
            };
            headers.push(("content-type".to_owned(), ct.to_owned()));
        }
        let body: Option<Vec<u8>> = self.body.as_ref().map(|b| match b.render(event) {
            Value::String(s) => s.as_bytes().to_vec(),
            v @ (Value::Array(_) | Value::Object(_)) if self.json_body => {
                sluice_event::json::to_string(&v).into_bytes()
            }
            v => v.to_display_string().into_bytes(),
        });
        let answer = self
            .client
            .request(&self.verb, &url, &headers, body.as_deref());
        let response = match answer {
            Ok(r) if (200..300).contains(&r.status) => r,
            Ok(r) => {
                tracing::error!(url = %url, code = r.status, response = %String::from_utf8_lossy(&r.body), "http filter: error during HTTP request");
                self.fail(event);
                return false;
            }
            Err(e) => {
                tracing::error!(url = %url, client_error = %e, "http filter: error during HTTP request");
                self.fail(event);
                return false;
            }
        };
        event.set(&self.target_headers, response.headers_value());
        if self.verb == "HEAD" || response.body.is_empty() {
            return true;
        }
        let json = response.header("content-type").is_some_and(|ct| {
            ct.split(';')
                .any(|part| part.trim().eq_ignore_ascii_case("application/json"))
        });
        if json {
            match sluice_event::json::parse(&response.body) {
                Ok(v) => event.set(&self.target_body, v),
                Err(e) => {
                    tracing::warn!(url = %url, error = %e, "http filter: JSON parsing error");
                    for t in &self.tag_on_json_failure {
                        event.add_tag(t);
                    }
                }
            }
        } else {
            let text = String::from_utf8_lossy(&response.body);
            event.set(&self.target_body, Value::from(text.trim()));
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

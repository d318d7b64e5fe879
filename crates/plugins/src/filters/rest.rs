//! `rest` (the community filter, 12 of the surveyed configs): one HTTP request per event, the
//! answer into `target`, as that plugin does it, on the `http` filter's client (the same
//! `http_client` options, TLS, timeouts and pool).
//!
//! `request` is a URL (a GET) or a hash: `url`, `method` (`get` or `post`), `headers`,
//! `auth => { user, password }` (HTTP basic), `params` (the query of a GET; the body of a
//! POST), `body`. Every string in it may hold `%{field}` references. With `json` (the
//! default) a hash or list body is sent as JSON and the answer is parsed as JSON into `target`
//! (an empty answer tags `tag_on_rest_failure`, one that is not JSON `tag_on_json_failure`);
//! without, the answer's text (trimmed) goes there. A request that fails or answers other than
//! 2xx tags `tag_on_rest_failure`. With `fallback`, every failure sets `target` to it instead.

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::options::ast_to_value;
use sluice_pipeline::{ConfigError, Filter, Options};

use super::http::{url_escape, Sprintf};
use crate::http::Client;

#[derive(Clone)]
pub struct RestFilter {
    client: Client,
    post: bool,
    url: Sprintf,
    headers: Option<Sprintf>,
    auth: Option<(Sprintf, Sprintf)>,
    params: Option<Sprintf>,
    body: Option<Sprintf>,
    json: bool,
    target: FieldRef,
    fallback: Option<Value>,
    tag_on_rest_failure: Vec<String>,
    tag_on_json_failure: Vec<String>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let Some((_, request)) = opts.take("request") else {
        return Err(
            opts.plugin_error("missing required setting \"request\" for filter plugin \"rest\"")
        );
    };
    let request = ast_to_value(&request);
    let mut spec = match request {
        Value::String(url) => {
            let mut m = sluice_event::Map::new();
            m.insert("url".into(), Value::String(url));
            m
        }
        Value::Object(m) => m,
        other => {
            return Err(opts.error(
                "request",
                format!(
                    "Invalid URL or request spec: expected a String or Hash, got {}",
                    other.type_name()
                ),
            ))
        }
    };
    let mut take = |k: &str| spec.remove(&sluice_event::Key::from(k));
    let method = take("method")
        .map(|m| m.to_display_string().to_ascii_lowercase())
        .unwrap_or_else(|| "get".into());
    let post = match method.as_str() {
        "get" => false,
        "post" => true,
        other => return Err(opts.error("request", format!("Not supported request method {other}"))),
    };
    let url = take("url").ok_or_else(|| opts.error("request", "No URL provided for request!"))?;
    let headers = take("headers").map(|h| Sprintf::new(&h));
    let auth = match take("auth") {
        None => None,
        Some(Value::Object(a)) => {
            let get = |k: &str| a.get(&sluice_event::Key::from(k)).map(Sprintf::new);
            let user = get("user")
                .ok_or_else(|| opts.error("request", "Auth was specified, but 'user' was not!"))?;
            let password = get("password").ok_or_else(|| {
                opts.error("request", "Auth was specified, but 'password' was not!")
            })?;
            Some((user, password))
        }
        Some(_) => return Err(opts.error("request", "auth must be a hash of user and password")),
    };
    let params = take("params");
    let mut body = take("body");
    let params = if post && params.is_some() {
        body = params;
        None
    } else {
        params
    };
    if let Some(k) = spec.keys().next() {
        return Err(opts.error(
            "request",
            format!(
                "{:?} is not a request setting (url, method, headers, auth, params and body are)",
                k.as_str()
            ),
        ));
    }
    let json = opts.boolean_or("json", true)?;
    let _ = opts.boolean("sprintf")?;
    let target = opts.required_string("target")?;
    if target.is_empty() {
        return Err(opts.error(
            "target",
            "target config string is empty, please set a valid field name",
        ));
    }
    let target = if target.starts_with('[') {
        FieldRef::parse(&target)
    } else {
        Ok(FieldRef::top_level(&target))
    }
    .map_err(|e| opts.error("target", e.to_string()))?;
    let fallback = match opts.take("fallback") {
        None => None,
        Some((_, v)) => match ast_to_value(&v) {
            Value::Object(m) if m.is_empty() => None,
            v @ Value::Object(_) => Some(v),
            _ => return Err(opts.error("fallback", "must be a hash")),
        },
    };
    let tag_on_rest_failure = opts
        .string_list("tag_on_rest_failure")?
        .unwrap_or_else(|| vec!["_restfailure".to_owned()]);
    let tag_on_json_failure = opts
        .string_list("tag_on_json_failure")?
        .unwrap_or_else(|| vec!["_jsonparsefailure".to_owned()]);
    let client = Client::read(opts)?;
    Ok(Box::new(RestFilter {
        client,
        post,
        url: Sprintf::new(&url),
        headers,
        auth,
        params: params.map(|p| Sprintf::new(&p)),
        body: body.map(|b| Sprintf::new(&b)),
        json,
        target,
        fallback,
        tag_on_rest_failure,
        tag_on_json_failure,
    }))
}

impl RestFilter {
    /// The fallback into `target`, else the tags.
    fn fail(&self, event: &mut Event, tags: &[String]) {
        match &self.fallback {
            Some(f) => event.set(&self.target, f.clone()),
            None => {
                for t in tags {
                    event.add_tag(t);
                }
            }
        }
    }
}

impl Filter for RestFilter {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let mut url = self.url.render(event).to_display_string();
        if let Some(Value::Object(params)) = self.params.as_ref().map(|p| p.render(event)) {
            let mut first = !url.contains('?');
            for (k, v) in &params {
                url.push(if first { '?' } else { '&' });
                first = false;
                url_escape(k, &mut url);
                url.push('=');
                url_escape(&v.to_display_string(), &mut url);
            }
        }
        let mut headers: Vec<(String, String)> =
            match self.headers.as_ref().map(|h| h.render(event)) {
                Some(Value::Object(h)) => h
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_display_string()))
                    .collect(),
                _ => Vec::new(),
            };
        if let Some((user, password)) = &self.auth {
            use base64::Engine;
            let pair = format!(
                "{}:{}",
                user.render(event).to_display_string(),
                password.render(event).to_display_string()
            );
            headers.push((
                "authorization".into(),
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(pair)
                ),
            ));
        }
        let body: Option<Vec<u8>> = self.body.as_ref().map(|b| match b.render(event) {
            v @ (Value::Array(_) | Value::Object(_)) if self.json => {
                sluice_event::json::to_string(&v).into_bytes()
            }
            Value::String(s) if self.json => {
                sluice_event::json::to_string(&Value::String(s)).into_bytes()
            }
            v => v.to_display_string().into_bytes(),
        });
        let method = if self.post { "POST" } else { "GET" };
        let response = match self.client.request(method, &url, &headers, body.as_deref()) {
            Ok(r) if (200..300).contains(&r.status) => r,
            Ok(r) => {
                tracing::error!(url = %url, code = r.status, body = %String::from_utf8_lossy(&r.body), "rest filter: error in rest filter");
                let tags = self.tag_on_rest_failure.clone();
                self.fail(event, &tags);
                return true;
            }
            Err(e) => {
                tracing::error!(url = %url, client_error = %e, "rest filter: error in rest filter");
                let tags = self.tag_on_rest_failure.clone();
                self.fail(event, &tags);
                return true;
            }
        };
        if !self.json {
            let text = String::from_utf8_lossy(&response.body);
            event.set(&self.target, Value::from(text.trim()));
            return true;
        }
        match sluice_event::json::parse(&response.body) {
            Ok(v) if is_empty(&v) => {
                tracing::warn!(url = %url, "rest filter: rest response empty");
                for t in &self.tag_on_rest_failure {
                    event.add_tag(t);
                }
            }
            Ok(v) => event.set(&self.target, v),
            Err(e) => {
                tracing::warn!(url = %url, error = %e, "rest filter: JSON parsing error");
                let tags = self.tag_on_json_failure.clone();
                self.fail(event, &tags);
            }
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

/// Ruby's `empty?` on a parsed answer: an empty hash, list or string.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

//! `elasticsearch` filter: looks documents up in Elasticsearch for each event and copies what
//! it finds into the event, as logstash-filter-elasticsearch does (its DSL mode).
//!
//! Per event: a search of `index` (sprintf'd; all indices when empty), either `query` (Lucene
//! query string, sprintf'd, with `result_size` hits sorted by `sort` unless `enable_sort` is
//! false) or `query_template` (a file of query DSL, sprintf'd, then read as JSON). The total
//! number of hits goes to `[@metadata][total_hits]`. With hits, each `fields` entry copies a
//! `_source` field (a `[a][b]` path reaches into objects) to an event field, each
//! `docinfo_fields` entry a hit's metadata (`_id`, `_index`...): one hit gives the value, several
//! a list of each hit's. Each `aggregation_fields` entry copies an aggregation's result. All of
//! them go under `target` when it is set. A search that found something counts as a match
//! (the common options apply); a failed one (no answer, an error status, shard failures, a
//! template that is not JSON) tags `tag_on_failure` and logs why. `retry_on_failure` times, a
//! search that got no answer or one of `retry_on_status` is sent again.
//!
//! The connection options are the elasticsearch output's ([`crate::es::Connection`]), plus
//! `proxy`; the workers share one connection pool. ES|QL (`query_type => esql`) is refused.

use std::sync::Arc;
use std::time::Duration;

use sluice_event::{Event, FieldRef, Template, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

use crate::http::Pool;

#[derive(Clone)]
enum Query {
    /// A query string (`q=`), with size and sort.
    Text {
        q: Template,
        size: i64,
        sort: Option<String>,
    },
    /// A DSL body, sprintf'd then parsed.
    Dsl(Template),
}

#[derive(Clone)]
pub struct EsFilter {
    pool: Arc<Pool>,
    /// `index` as written, for messages.
    index_text: String,
    index: Template,
    query: Query,
    fields: Vec<(Vec<String>, FieldRef)>,
    docinfo_fields: Vec<(Vec<String>, FieldRef)>,
    aggregation_fields: Vec<(String, FieldRef)>,
    tag_on_failure: Vec<String>,
    retry_on_failure: u32,
    retry_on_status: Vec<u16>,
}

/// A `fields` key as the plugin reads it: `[a][b]` is a path, anything else one name.
pub fn source_path(key: &str) -> Vec<String> {
    match key.strip_prefix('[').and_then(|k| k.strip_suffix(']')) {
        Some(inner) => inner.split("][").map(str::to_owned).collect(),
        None => vec![key.to_owned()],
    }
}

/// The value at `path` in a JSON document; `None` where the path stops.
pub fn value_at<'a>(doc: &'a serde_json::Value, path: &[String]) -> Option<&'a serde_json::Value> {
    path.iter().try_fold(doc, |v, k| v.get(k))
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    if opts.choice("query_type", &["dsl", "esql"], "dsl")? == "esql" {
        return Err(opts.error(
            "query_type",
            "esql is not supported (sluice has no ES|QL client; use a DSL query or query_template)",
        ));
    }
    let index_text = opts.string_or("index", "")?;
    let index = Template::parse(&index_text);
    let query = opts.string("query")?;
    let template = opts.string("query_template")?;
    let query = match (query, template) {
        (Some(_), Some(_)) => {
            return Err(opts.error(
                "query_template",
                "and query are both set; use either query or query_template",
            ))
        }
        (None, None) => {
            return Err(opts.plugin_error(
                "elasticsearch filter: both query and query_template are empty; one is required",
            ))
        }
        (Some(q), None) => {
            let size = opts.int("result_size")?.unwrap_or(1);
            let sort = opts.string_or("sort", "@timestamp:desc")?;
            let enable_sort = opts.boolean_or("enable_sort", true)?;
            Query::Text {
                q: Template::parse(&q),
                size,
                sort: enable_sort.then_some(sort),
            }
        }
        (None, Some(path)) => {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| opts.error("query_template", format!("cannot read {path:?}: {e}")))?;
            if text.trim().is_empty() {
                return Err(opts.error("query_template", format!("{path:?} is empty")));
            }
            for ignored in ["result_size", "sort", "enable_sort"] {
                let _ = opts.take(ignored);
            }
            Query::Dsl(Template::parse(&text))
        }
    };
    if opts.has("query_params") {
        opts.take("query_params");
        return Err(opts.error("query_params", "is only for ES|QL queries"));
    }
    let target = opts.string("target")?;
    let to_field = |opts: &Options, option: &str, name: &str| {
        let full = match &target {
            Some(t) => format!("[{}]{}", t.trim_matches(['[', ']']), bracketed(name)),
            None => name.to_owned(),
        };
        FieldRef::parse(&full).map_err(|e| opts.error(option, format!("{name:?}: {e}")))
    };
    let mut fields = Vec::new();
    for (k, v) in pairs(opts, "fields")? {
        fields.push((source_path(&k), to_field(opts, "fields", &v)?));
    }
    let mut docinfo_fields = Vec::new();
    for (k, v) in opts.string_hash("docinfo_fields")?.unwrap_or_default() {
        docinfo_fields.push((source_path(&k), to_field(opts, "docinfo_fields", &v)?));
    }
    let mut aggregation_fields = Vec::new();
    for (k, v) in opts.string_hash("aggregation_fields")?.unwrap_or_default() {
        aggregation_fields.push((k, to_field(opts, "aggregation_fields", &v)?));
    }
    let tag_on_failure = opts
        .string_list("tag_on_failure")?
        .unwrap_or_else(|| vec!["_elasticsearch_lookup_failure".to_owned()]);
    let retry_on_failure = opts.int("retry_on_failure")?.unwrap_or(0).max(0) as u32;
    let retry_on_status = match opts.take("retry_on_status") {
        None => vec![500, 502, 503, 504],
        Some((_, v)) => {
            let items = match v {
                sluice_config::Value::Array(items) => items,
                other => vec![other],
            };
            let mut out = Vec::new();
            for i in items {
                match i {
                    sluice_config::Value::Number(sluice_config::Number::Int(n))
                        if (100..600).contains(&n) =>
                    {
                        out.push(n as u16)
                    }
                    _ => return Err(opts.error("retry_on_status", "expected HTTP status codes")),
                }
            }
            out
        }
    };
    let pool = Arc::new(crate::es::pool(opts, Duration::from_secs(60))?);
    Ok(Box::new(EsFilter {
        pool,
        index_text,
        index,
        query,
        fields,
        docinfo_fields,
        aggregation_fields,
        tag_on_failure,
        retry_on_failure,
        retry_on_status,
    }))
}

/// A name as the last part of a field reference: `a` → `[a]`, `[a][b]` as it is.
fn bracketed(name: &str) -> String {
    if name.starts_with('[') {
        name.to_owned()
    } else {
        format!("[{name}]")
    }
}

/// `fields`: a hash (`{"src" => "dst"}`), or Logstash's older array of pairs (`[["src",
/// "dst"]]`, or a flat `["src", "dst"]`).
fn pairs(opts: &mut Options, name: &str) -> Result<Vec<(String, String)>, ConfigError> {
    use sluice_config::Value as Ast;
    let text = |v: &Ast| match v {
        Ast::String(s) | Ast::Bareword(s) => Some(s.clone()),
        _ => None,
    };
    match opts.take(name) {
        None => Ok(Vec::new()),
        Some((_, Ast::Hash(entries))) => entries
            .iter()
            .map(|e| {
                text(&e.value)
                    .map(|v| (e.key.clone(), v))
                    .ok_or_else(|| opts.error(name, "expected a hash of field names"))
            })
            .collect(),
        Some((_, Ast::Array(items))) => {
            let nested = items
                .iter()
                .all(|i| matches!(i, Ast::Array(p) if p.len() == 2));
            let flat: Vec<Ast> = if nested {
                items
                    .into_iter()
                    .flat_map(|i| match i {
                        Ast::Array(p) => p,
                        _ => Vec::new(),
                    })
                    .collect()
            } else {
                items
            };
            if !flat.len().is_multiple_of(2) {
                return Err(opts.error(name, "expected pairs of field names"));
            }
            flat.chunks(2)
                .map(|c| match (text(&c[0]), text(&c[1])) {
                    (Some(a), Some(b)) => Ok((a, b)),
                    _ => Err(opts.error(name, "expected pairs of field names")),
                })
                .collect()
        }
        Some(_) => Err(opts.error(name, "expected a hash of field names")),
    }
}

/// `%`-encoding for a query string value.
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

impl EsFilter {
    /// The search's path and body for this event.
    fn request(&self, e: &Event) -> Result<(String, Option<Vec<u8>>), String> {
        let index = self.index.render(e);
        let mut path = if index.is_empty() {
            "/_search".to_owned()
        } else {
            let mut p = String::from("/");
            escape(&index, &mut p);
            // Index lists and patterns keep their commas and stars.
            let p = p.replace("%2C", ",").replace("%2A", "*");
            format!("{p}/_search")
        };
        match &self.query {
            Query::Text { q, size, sort } => {
                path.push_str("?q=");
                escape(&q.render(e), &mut path);
                path.push_str(&format!("&size={size}"));
                if let Some(s) = sort {
                    path.push_str("&sort=");
                    escape(s, &mut path);
                }
                Ok((path, None))
            }
            Query::Dsl(t) => {
                let text = t.render(e);
                serde_json::from_str::<serde_json::Value>(&text)
                    .map_err(|err| format!("query_template is not JSON once filled in: {err}"))?;
                Ok((path, Some(text.into_bytes())))
            }
        }
    }

    /// Runs the search, with the retries; the answer's document.
    fn search(&self, path: &str, body: Option<&[u8]>) -> Result<serde_json::Value, String> {
        let headers = [("Content-Type", "application/json")];
        let mut attempt = 0;
        loop {
            let method = if body.is_some() { "POST" } else { "GET" };
            let (retry, why) = match self.pool.request(method, path, &headers, body) {
                Ok(r) if (200..300).contains(&r.status) => {
                    return serde_json::from_slice(&r.body)
                        .map_err(|e| format!("the answer is not JSON: {e}"))
                }
                Ok(r) => (
                    self.retry_on_status.contains(&r.status),
                    format!(
                        "status {}: {}",
                        r.status,
                        String::from_utf8_lossy(&r.body)
                            .chars()
                            .take(500)
                            .collect::<String>()
                    ),
                ),
                Err(e) => (true, e.to_string()),
            };
            if !retry || attempt >= self.retry_on_failure {
                return Err(why);
            }
            attempt += 1;
        }
    }

    fn lookup(&self, e: &mut Event) -> Result<bool, String> {
        let (path, body) = self.request(e)?;
        let answer = self.search(&path, body.as_deref())?;
        if let Some(failures) = answer.pointer("/_shards/failures") {
            return Err(format!("Elasticsearch query error: {failures}"));
        }
        let total = match answer.pointer("/hits/total") {
            Some(serde_json::Value::Object(t)) => t.get("value").cloned(),
            other => other.cloned(),
        };
        if let Some(total) = total {
            e.set(
                &FieldRef::parse("[@metadata][total_hits]").expect("a valid reference"),
                Value::from(total),
            );
        }
        let mut matched = false;
        let hits = answer
            .pointer("/hits/hits")
            .and_then(|h| h.as_array())
            .cloned()
            .unwrap_or_default();
        if !hits.is_empty() {
            matched = true;
            let null = serde_json::Value::Null;
            let set = |e: &mut Event, dst: &FieldRef, values: Vec<serde_json::Value>| {
                let v = if values.len() > 1 {
                    serde_json::Value::Array(values)
                } else {
                    values.into_iter().next().unwrap_or_default()
                };
                e.set(dst, Value::from(v));
            };
            for (src, dst) in &self.fields {
                let values = hits
                    .iter()
                    .map(|h| {
                        value_at(h.get("_source").unwrap_or(&null), src)
                            .cloned()
                            .unwrap_or_default()
                    })
                    .collect();
                set(e, dst, values);
            }
            for (src, dst) in &self.docinfo_fields {
                let values = hits
                    .iter()
                    .map(|h| value_at(h, src).cloned().unwrap_or_default())
                    .collect();
                set(e, dst, values);
            }
        }
        if let Some(aggs) = answer
            .get("aggregations")
            .and_then(|a| a.as_object())
            .filter(|a| !a.is_empty())
        {
            matched = true;
            for (name, dst) in &self.aggregation_fields {
                e.set(
                    dst,
                    Value::from(aggs.get(name).cloned().unwrap_or_default()),
                );
            }
        }
        Ok(matched)
    }
}

impl Filter for EsFilter {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        match self.lookup(event) {
            Ok(matched) => matched,
            Err(why) => {
                tracing::warn!(index = %self.index_text, error = %why, "elasticsearch filter: failed to query elasticsearch for previous event");
                for t in &self.tag_on_failure {
                    event.add_tag(t);
                }
                false
            }
        }
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

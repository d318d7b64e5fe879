//! `elasticsearch` input: reads documents out of Elasticsearch (or OpenSearch) by a query, once
//! or on a schedule, as logstash-input-elasticsearch does (re-indexing, exports, catching up).
//!
//! Each run searches `index` (default `logstash-*`) with `query` (query DSL, JSON; default
//! `{"sort": ["_doc"]}`), `size` hits a page, and pages through everything it matches:
//! - `search_api => scroll`: a scroll kept alive `scroll` (default `1m`) between pages,
//!   cleared at the end;
//! - `search_api => search_after`: a point in time (PIT) opened on the index (Elasticsearch's
//!   `_pit`, or OpenSearch's `_search/point_in_time`), pages after the last hit's sort values
//!   (sorted by `_shard_doc` when the query has no sort), closed at the end;
//! - `search_api => auto` (the default): search_after on Elasticsearch 8 and later, scroll
//!   before (and on OpenSearch), as the node's version says at the first run.
//!
//! `slices` splits a run into that many parallel slices (one thread each). Each hit becomes an
//! event of its `_source` (under `target` when set); with `docinfo`, the hit's
//! `docinfo_fields` (`_index`, `_type`, `_id`) go into `docinfo_target` (`@metadata`, or
//! `[@metadata][input][elasticsearch]` in ECS mode). `response_type => aggregations` makes one
//! event of the search's aggregations instead. A run that fails is tried again `retries`
//! times, then logged.
//!
//! `schedule` (a cron line, [`crate::schedule`]) repeats the run; without one the input runs
//! once and ends. `tracking_field` (search_after only) keeps the last value of that field from
//! the events, written to `last_run_metadata_path` (default under `path.data`) once the run's
//! events are queued, and put in the next run's query where it says `:last_value`
//! (`:present` is now minus 30 s), so that a scheduled run reads only what is new; it starts
//! from `tracking_field_seed`. The connection options are the elasticsearch output's
//! ([`crate::es::Connection`]) plus `proxy` and `request_timeout_seconds`. ES|QL is refused.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value as Json};
use sluice_event::{Event, FieldRef, Map, Value};
use sluice_pipeline::{ConfigError, Input, InputContext, Options};

use crate::ecs::Ecs;
use crate::http::Pool;
use crate::schedule::Schedule;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Api {
    Auto,
    SearchAfter,
    Scroll,
}

struct Tracking {
    field: FieldRef,
    path: PathBuf,
    /// The value the next run's query gets (the seed at first).
    last: Mutex<String>,
}

struct Shared {
    pool: Pool,
    index: String,
    query: String,
    aggregations: bool,
    size: i64,
    retries: u32,
    api: Api,
    scroll: String,
    slices: Option<u32>,
    tracking: Option<Tracking>,
    docinfo: Option<(FieldRef, Vec<String>)>,
    target: Option<FieldRef>,
}

pub struct EsInput {
    shared: Arc<Shared>,
    schedule: Option<Schedule>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    if opts.choice("query_type", &["dsl", "esql"], "dsl")? == "esql" {
        return Err(opts.error(
            "query_type",
            "esql is not supported (sluice has no ES|QL client; use a DSL query)",
        ));
    }
    let index = opts.string_or("index", "logstash-*")?;
    let query = opts.string_or("query", r#"{ "sort": [ "_doc" ] }"#)?;
    let parsed: Json = serde_json::from_str(&query)
        .map_err(|e| opts.error("query", format!("is not JSON: {e}")))?;
    let aggregations =
        opts.choice("response_type", &["hits", "aggregations"], "hits")? == "aggregations";
    let size = opts.int("size")?.unwrap_or(1000);
    if size < 1 {
        return Err(opts.error("size", "must be at least 1"));
    }
    let retries = match opts.int("retries")?.unwrap_or(0) {
        r if r < 0 => return Err(opts.error("retries", "must be 0 or more")),
        r => r as u32,
    };
    let api = match opts
        .choice("search_api", &["auto", "search_after", "scroll"], "auto")?
        .as_str()
    {
        "search_after" => Api::SearchAfter,
        "scroll" => Api::Scroll,
        _ => Api::Auto,
    };
    let scroll = opts.string_or("scroll", "1m")?;
    let slices = match opts.int("slices")? {
        None => None,
        Some(n) if n < 1 => {
            return Err(opts.error("slices", format!("must be greater than zero, got {n}")))
        }
        Some(_) if parsed.get("slice").is_some() => {
            return Err(opts.error(
                "query",
                "cannot specify a slice when slices manages parallel slices",
            ))
        }
        Some(n) => Some(n as u32),
    };
    let ecs = Ecs::from_options(opts)?.enabled();
    let field = |opts: &Options, name: &str, text: &str| {
        FieldRef::parse(text).map_err(|e| opts.error(name, format!("{text:?}: {e}")))
    };
    let docinfo = if opts.boolean_or("docinfo", false)? {
        let target = match opts.string("docinfo_target")? {
            Some(t) => t,
            None if ecs => "[@metadata][input][elasticsearch]".to_owned(),
            None => "@metadata".to_owned(),
        };
        let fields = opts
            .string_list("docinfo_fields")?
            .unwrap_or_else(|| ["_index", "_type", "_id"].map(str::to_owned).to_vec());
        Some((field(opts, "docinfo_target", &target)?, fields))
    } else {
        let _ = (
            opts.string("docinfo_target")?,
            opts.string_list("docinfo_fields")?,
        );
        None
    };
    let target = match opts.string("target")? {
        Some(t) => Some(field(opts, "target", &t)?),
        None => None,
    };
    let schedule = match opts.string("schedule")? {
        Some(s) => Some(Schedule::parse_cron(&s).map_err(|e| opts.error("schedule", e))?),
        None => None,
    };
    let _ = opts.boolean("schedule_overlap")?;
    let tracking = match opts.string("tracking_field")? {
        None => {
            let _ = (
                opts.string("tracking_field_seed")?,
                opts.string("last_run_metadata_path")?,
            );
            None
        }
        Some(f) => {
            if api == Api::Scroll || aggregations {
                return Err(opts.error(
                    "tracking_field",
                    "can only be used with search_after queries of hits",
                ));
            }
            let seed = opts.string_or("tracking_field_seed", "1970-01-01T00:00:00.000000000Z")?;
            let path = match opts.string("last_run_metadata_path")? {
                Some(p) => PathBuf::from(p),
                None => {
                    let Some(data) = opts.path_data() else {
                        return Err(opts.error(
                            "last_run_metadata_path",
                            "no path.data to keep the last value under: set last_run_metadata_path",
                        ));
                    };
                    data.join("plugins/inputs/elasticsearch")
                        .join(opts.pipeline_id().unwrap_or("main"))
                        .join("last_run_value")
                }
            };
            let last = std::fs::read_to_string(&path).unwrap_or(seed);
            Some(Tracking {
                field: field(opts, "tracking_field", &f)?,
                path,
                last: Mutex::new(last),
            })
        }
    };
    // Logstash's timeouts, in whole seconds; the request one bounds a request here.
    let _ = (
        opts.int("connect_timeout_seconds")?,
        opts.int("socket_timeout_seconds")?,
    );
    let pool = crate::es::pool(opts, Duration::from_secs(60))?;
    Ok(Box::new(EsInput {
        shared: Arc::new(Shared {
            pool,
            index,
            query,
            aggregations,
            size,
            retries,
            api,
            scroll,
            slices,
            tracking,
            docinfo,
            target,
        }),
        schedule,
    }))
}

/// `%`-encoding for a path segment (index lists and patterns keep `,` and `*`).
fn index_path(index: &str) -> String {
    let mut out = String::new();
    for b in index.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b',' | b'*' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Orders two tracked values: numbers by value, anything else by its text.
fn later(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if !matches!(a, Value::String(_)) => x > y,
        _ => a.to_display_string() > b.to_display_string(),
    }
}

impl Shared {
    fn call(&self, method: &str, path: &str, body: Option<&Json>) -> Result<Json, String> {
        let text = body.map(|b| b.to_string());
        let headers = [("Content-Type", "application/json")];
        let r = self
            .pool
            .request(method, path, &headers, text.as_deref().map(str::as_bytes))
            .map_err(|e| e.to_string())?;
        let doc: Json = serde_json::from_slice(&r.body).unwrap_or(Json::Null);
        if !(200..300).contains(&r.status) {
            return Err(format!(
                "{method} {path}: status {}: {}",
                r.status,
                String::from_utf8_lossy(&r.body)
                    .chars()
                    .take(500)
                    .collect::<String>()
            ));
        }
        Ok(doc)
    }

    /// The node's major version and whether it is OpenSearch (`GET /`).
    fn node(&self) -> Result<(u32, bool), String> {
        let info = self.call("GET", "/", None)?;
        let version = info
            .pointer("/version/number")
            .and_then(Json::as_str)
            .unwrap_or("0");
        let opensearch =
            info.pointer("/version/distribution").and_then(Json::as_str) == Some("opensearch");
        let major = version
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        Ok((major, opensearch))
    }

    /// search_after on Elasticsearch 8+, scroll before and on OpenSearch (`auto`).
    fn resolve_api(&self, (major, opensearch): (u32, bool)) -> Api {
        if self.api != Api::Auto {
            return self.api;
        }
        let api = if !opensearch && major >= 8 {
            Api::SearchAfter
        } else {
            Api::Scroll
        };
        tracing::info!(major, opensearch, resolved = ?api, "elasticsearch input: search_api => auto resolved");
        api
    }

    /// The query of this run, with the tracked value put in.
    fn query(&self) -> Result<Json, String> {
        let text = match &self.tracking {
            Some(t) => {
                let last = t.last.lock().expect("not poisoned").clone();
                let present = jiff::Timestamp::now()
                    .checked_sub(jiff::SignedDuration::from_secs(30))
                    .unwrap_or_else(|_| jiff::Timestamp::now());
                self.query
                    .replace(":last_value", &last)
                    .replace(":present", &present.to_string())
            }
            None => self.query.clone(),
        };
        serde_json::from_str(&text).map_err(|e| format!("the query is not JSON: {e}"))
    }

    /// An event of a hit (`root` `_source`, or the aggregations).
    fn event(&self, hit: &Json, root: &str) -> Event {
        let source = hit
            .get(root)
            .cloned()
            .unwrap_or(Json::Object(Default::default()));
        let mut e = match (&self.target, Value::from(source)) {
            (None, Value::Object(m)) => Event::from_map(m),
            (Some(t), v) => {
                let mut e = Event::new();
                e.set(t, v);
                e
            }
            (None, other) => {
                let mut m = Map::new();
                m.insert("message".into(), other);
                Event::from_map(m)
            }
        };
        if let Some((target, fields)) = &self.docinfo {
            let mut info = match e.get(target) {
                Some(Value::Object(m)) => m.clone(),
                _ => Map::new(),
            };
            for f in fields {
                info.insert(
                    f.as_str().into(),
                    Value::from(hit.get(f).cloned().unwrap_or(Json::Null)),
                );
            }
            e.set(target, Value::Object(info));
        }
        e
    }

    /// Pushes a page's events; the tracked field's last value among them, if any.
    fn push_page(&self, ctx: &InputContext, hits: &[Json]) -> Result<Option<Value>, String> {
        let events: Vec<Event> = hits.iter().map(|h| self.event(h, "_source")).collect();
        let mut last = None;
        if let Some(t) = &self.tracking {
            for e in &events {
                if let Some(v) = e.get(&t.field) {
                    last = Some(v.clone());
                }
            }
        }
        ctx.push(events)
            .map_err(|_| "the pipeline is stopping".to_owned())?;
        Ok(last)
    }

    /// One whole run: every page of every slice, or the aggregations.
    fn run_once(&self, ctx: &InputContext, stop: &AtomicBool) -> Result<(), String> {
        let query = self.query()?;
        if self.aggregations {
            let path = format!("/{}/_search?size=0", index_path(&self.index));
            let r = self.call("POST", &path, Some(&query))?;
            let e = self.event(&r, "aggregations");
            return ctx
                .push(vec![e])
                .map_err(|_| "the pipeline is stopping".to_owned());
        }
        let node = self.node()?;
        let api = self.resolve_api(node);
        let opensearch = node.1;
        let slices: Vec<Option<u32>> = match self.slices {
            Some(n) if n > 1 => (0..n).map(Some).collect(),
            _ => vec![None],
        };
        let pit = match api {
            Api::SearchAfter => Some(self.open_pit(opensearch)?),
            _ => None,
        };
        let lasts: Mutex<Vec<Value>> = Mutex::new(Vec::new());
        let result = std::thread::scope(|scope| {
            let handles: Vec<_> = slices
                .iter()
                .map(|&slice| {
                    let (query, pit, lasts) = (&query, pit.as_deref(), &lasts);
                    scope.spawn(move || -> Result<(), String> {
                        let last = match pit {
                            Some(pit) => self.search_after(ctx, stop, query, pit, slice)?,
                            None => self.scroll(ctx, stop, query, slice)?,
                        };
                        if let Some(v) = last {
                            lasts.lock().expect("not poisoned").push(v);
                        }
                        Ok(())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("a slice panicked".to_owned()))
                })
                .collect::<Result<Vec<()>, String>>()
        });
        if let Some(pit) = &pit {
            let _ = match opensearch {
                true => self.call(
                    "DELETE",
                    "/_search/point_in_time",
                    Some(&json!({ "pit_id": [pit] })),
                ),
                false => self.call("DELETE", "/_pit", Some(&json!({ "id": pit }))),
            };
        }
        result?;
        // The run's events are queued: the largest last value is where the next run starts.
        if let Some(t) = &self.tracking {
            let lasts = lasts.into_inner().expect("not poisoned");
            if let Some(max) = lasts
                .into_iter()
                .reduce(|a, b| if later(&b, &a) { b } else { a })
            {
                let text = max.to_display_string();
                if let Some(dir) = t.path.parent() {
                    let _ = std::fs::create_dir_all(dir);
                }
                std::fs::write(&t.path, &text)
                    .map_err(|e| format!("writing {}: {e}", t.path.display()))?;
                tracing::info!(field = ?t.field, value = %text, "elasticsearch input: new cursor value");
                *t.last.lock().expect("not poisoned") = text;
            }
        }
        Ok(())
    }

    /// Opens a point in time on the index: Elasticsearch's `_pit`, or OpenSearch's
    /// `_search/point_in_time` (the same search then).
    fn open_pit(&self, opensearch: bool) -> Result<String, String> {
        let (endpoint, key) = match opensearch {
            true => ("_search/point_in_time", "pit_id"),
            false => ("_pit", "id"),
        };
        let path = format!(
            "/{}/{endpoint}?keep_alive={}",
            index_path(&self.index),
            self.scroll
        );
        let r = self.call("POST", &path, None)?;
        r.get(key)
            .and_then(Json::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("opening a point in time gave no id: {r}"))
    }

    fn search_after(
        &self,
        ctx: &InputContext,
        stop: &AtomicBool,
        query: &Json,
        pit: &str,
        slice: Option<u32>,
    ) -> Result<Option<Value>, String> {
        let mut after: Option<Json> = None;
        let mut last = None;
        loop {
            if stop.load(Ordering::Relaxed) || ctx.is_stopping() {
                return Ok(last);
            }
            let mut body = query.clone();
            let Some(b) = body.as_object_mut() else {
                return Err("the query must be a JSON object".to_owned());
            };
            b.insert(
                "pit".into(),
                json!({ "id": pit, "keep_alive": self.scroll }),
            );
            if !b.contains_key("sort") {
                b.insert("sort".into(), json!({ "_shard_doc": "asc" }));
            }
            if let Some(a) = &after {
                b.insert("search_after".into(), a.clone());
            }
            if let Some(id) = slice {
                b.insert(
                    "slice".into(),
                    json!({ "id": id, "max": self.slices.unwrap_or(1) }),
                );
            }
            let r = self.call("POST", &format!("/_search?size={}", self.size), Some(&body))?;
            let hits = r
                .pointer("/hits/hits")
                .and_then(Json::as_array)
                .cloned()
                .unwrap_or_default();
            if hits.is_empty() {
                return Ok(last);
            }
            if let Some(v) = self.push_page(ctx, &hits)? {
                last = Some(v);
            }
            after = hits.last().and_then(|h| h.get("sort")).cloned();
            if after.is_none() {
                tracing::warn!("elasticsearch input: query got data but the sort value is empty");
                return Ok(last);
            }
        }
    }

    fn scroll(
        &self,
        ctx: &InputContext,
        stop: &AtomicBool,
        query: &Json,
        slice: Option<u32>,
    ) -> Result<Option<Value>, String> {
        let mut body = query.clone();
        if let (Some(id), Some(b)) = (slice, body.as_object_mut()) {
            b.insert(
                "slice".into(),
                json!({ "id": id, "max": self.slices.unwrap_or(1) }),
            );
        }
        let path = format!(
            "/{}/_search?scroll={}&size={}",
            index_path(&self.index),
            self.scroll,
            self.size
        );
        let mut r = self.call("POST", &path, Some(&body))?;
        let mut last = None;
        let mut scroll_id: Option<String> = None;
        let outcome = (|| loop {
            scroll_id = r
                .get("_scroll_id")
                .and_then(Json::as_str)
                .map(str::to_owned);
            let hits = r
                .pointer("/hits/hits")
                .and_then(Json::as_array)
                .cloned()
                .unwrap_or_default();
            if hits.is_empty() || stop.load(Ordering::Relaxed) || ctx.is_stopping() {
                return Ok(());
            }
            if let Some(v) = self.push_page(ctx, &hits)? {
                last = Some(v);
            }
            let Some(id) = &scroll_id else { return Ok(()) };
            r = self.call(
                "POST",
                "/_search/scroll",
                Some(&json!({ "scroll": self.scroll, "scroll_id": id })),
            )?;
        })();
        if let Some(id) = scroll_id {
            let _ = self.call(
                "DELETE",
                "/_search/scroll",
                Some(&json!({ "scroll_id": id })),
            );
        }
        outcome.map(|()| last)
    }

    /// A run, tried again `retries` times; a run that still fails is logged.
    fn run_with_retries(&self, ctx: &InputContext, stop: &AtomicBool) {
        for attempt in 0..=self.retries {
            match self.run_once(ctx, stop) {
                Ok(()) => return,
                Err(e) if ctx.is_stopping() || stop.load(Ordering::Relaxed) => {
                    tracing::debug!(error = %e, "elasticsearch input: run cut short by the stop");
                    return;
                }
                Err(e) if attempt < self.retries => {
                    tracing::warn!(error = %e, attempt = attempt + 1, "elasticsearch input: query failed; trying again");
                }
                Err(e) => {
                    tracing::error!(error = %e, index = %self.index, "elasticsearch input: tried the query unsuccessfully");
                }
            }
        }
    }
}

impl Input for EsInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let stop = AtomicBool::new(false);
        let shared = Arc::clone(&self.shared);
        match &self.schedule {
            None => shared.run_with_retries(ctx, &stop),
            Some(schedule) => {
                crate::schedule::run(
                    schedule,
                    || ctx.is_stopping(),
                    || shared.run_with_retries(ctx, &stop),
                );
                // As Logstash's scheduler: the input stays until the pipeline stops.
                while !ctx.is_stopping() {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        Ok(())
    }
}

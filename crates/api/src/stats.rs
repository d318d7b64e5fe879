//! The JSON documents, in Logstash's shape (see `../shared/compat/node_stats_example.json`).
//!
//! Every `/_node*` document starts with the node's fields (`host`, `version`,
//! `http_address`, `id`, `name`, `ephemeral_id`, `status`, `snapshot`, `pipeline`), as
//! Logstash's do. Logstash-only parts are absent: `jvm` (there is no JVM), per-codec
//! `encode`/`decode` timings (codecs are not timed: a clock read per decoded chunk would cost
//! more than the work), and plugin-specific counters such as grok's `matches`/`failures`.
//! A pipeline's `batch` section (`pipeline.batch.metrics.sampling_mode`) is built in
//! [`crate::batch`].
//! Sluice adds `queue.unacked_events` for persisted queues (events taken by workers and not
//! yet acked, plus unread ones), `queue.lost_events` (events lost to damaged or missing queue
//! files since start: every one of them is also logged with its sequence numbers), and
//! `process.mem.resident_in_bytes`.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{json, Map, Value};

use sluice_pipeline::PipelineSettings;

use crate::flow::{round, Flows, Span};
use crate::node::{self, NodeIdentity, ProcessTracker};
use crate::registry::{Registry, ReloadStats, Sample, Tracked};

/// Process-wide settings the node documents report.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// `node.name` (default: the host name).
    pub name: Option<String>,
    /// `path.data`, where the node id is kept.
    pub path_data: Option<std::path::PathBuf>,
    /// The pipeline settings pipelines get unless they override them.
    pub pipeline_defaults: PipelineSettings,
    /// Every plugin this sluice has, as Logstash names their gems (`logstash-input-beats`),
    /// for `GET /_node/plugins`.
    pub plugins: Vec<String>,
    pub config_reload_automatic: bool,
    pub config_reload_interval: Duration,
    /// `ssl.reload.interval`, when `ssl.reload.automatic` is on: the API's certificate
    /// follows its keystore file.
    pub ssl_reload: Option<Duration>,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            name: None,
            path_data: None,
            pipeline_defaults: PipelineSettings::default(),
            plugins: Vec::new(),
            config_reload_automatic: false,
            config_reload_interval: Duration::from_secs(3),
            ssl_reload: None,
        }
    }
}

/// Everything the handlers read.
pub struct Context {
    pub registry: Registry,
    pub node: NodeIdentity,
    pub config: NodeConfig,
    pub process: ProcessTracker,
    /// `host:port` the API listens on.
    pub http_address: String,
}

fn millis(nanos: u64) -> u64 {
    nanos / 1_000_000
}

fn timestamp(t: Option<SystemTime>) -> Value {
    match t {
        Some(t) => Value::String(
            chrono::DateTime::<chrono::Utc>::from(t)
                .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                .to_string(),
        ),
        None => Value::Null,
    }
}

fn settings_json(s: &PipelineSettings) -> Value {
    json!({
        "workers": s.workers,
        "batch_size": s.batch_size,
        "batch_delay": s.batch_delay.as_millis() as u64,
    })
}

/// The Logstash version whose API sluice answers in: what Logstash's clients read in
/// `version` (Metricbeat checks it, Kibana shows it). Sluice's own version is in
/// `sluice_version`.
pub const LOGSTASH_API_VERSION: &str = "9.5.0";

impl Context {
    /// The node's identity, as every document (and the health report) starts with it.
    pub fn identity(&self) -> Map<String, Value> {
        let n = &self.node;
        let mut m = Map::new();
        m.insert("host".into(), n.host.clone().into());
        m.insert("version".into(), LOGSTASH_API_VERSION.into());
        m.insert("http_address".into(), self.http_address.clone().into());
        m.insert("id".into(), n.id.clone().into());
        m.insert("name".into(), n.name.clone().into());
        m.insert("ephemeral_id".into(), n.ephemeral_id.clone().into());
        m.insert("snapshot".into(), false.into());
        m.insert("sluice_version".into(), n.version.clone().into());
        m
    }

    /// The fields every `/_node*` document starts with: the identity, the health status and
    /// the default pipeline settings.
    pub fn base(&self) -> Map<String, Value> {
        let mut m = self.identity();
        m.insert("status".into(), self.health_status().as_str().into());
        m.insert(
            "pipeline".into(),
            settings_json(&self.config.pipeline_defaults),
        );
        m
    }

    /// `GET /_node/plugins`.
    pub fn plugins(&self) -> Value {
        let mut m = self.base();
        let version = &self.node.version;
        let mut names = self.config.plugins.clone();
        names.sort();
        names.dedup();
        m.insert("total".into(), names.len().into());
        m.insert(
            "plugins".into(),
            names
                .iter()
                .map(|n| json!({"name": n, "version": version}))
                .collect(),
        );
        Value::Object(m)
    }

    /// `GET /`.
    pub fn root(&self) -> Value {
        let mut m = self.base();
        m.insert("build_snapshot".into(), false.into());
        Value::Object(m)
    }

    fn pipeline_info(&self, t: &Tracked, graph: bool) -> Value {
        let s = &t.view.settings;
        let mut info = json!({
            "ephemeral_id": t.ephemeral_id,
            "hash": t.view.hash,
            "workers": s.workers,
            "batch_size": s.batch_size,
            "batch_delay": s.batch_delay.as_millis() as u64,
            "config_reload_automatic": self.config.config_reload_automatic,
            "config_reload_interval": self.config.config_reload_interval.as_secs_f64(),
            "dead_letter_queue_enabled": t.view.dead_letter_queue.is_some(),
        });
        if let (true, Some(m)) = (graph, info.as_object_mut()) {
            m.insert(
                "graph".into(),
                crate::graph::graph_json(&t.view.graph, &t.view.hash),
            );
        }
        info
    }

    /// `pipelines` of `/_node/pipelines` (all, or one id), with each one's graph when asked
    /// (`?graph=true`).
    pub fn pipelines_info(&self, id: Option<&str>, graph: bool) -> Option<Value> {
        let mut m = Map::new();
        for t in self.selected(id)? {
            m.insert(t.view.id.clone(), self.pipeline_info(&t, graph));
        }
        Some(Value::Object(m))
    }

    /// `GET /dashboard/history`: the sampler's once-a-second counters of the last `seconds`
    /// seconds, per pipeline, so that the dashboard's charts start full (sluice's own).
    pub fn history(&self, seconds: u64) -> Value {
        let now = std::time::Instant::now();
        let reach = Duration::from_secs(seconds);
        let mut pipelines = Map::new();
        for t in self.registry.pipelines() {
            let samples: Vec<Value> = t
                .history()
                .iter()
                .filter(|s| now.saturating_duration_since(s.at) <= reach)
                .map(|s| {
                    json!({
                        "ago_ms": now.saturating_duration_since(s.at).as_millis() as u64,
                        "in": s.totals.events_in,
                        "out": s.totals.events_out,
                        "queue_push_duration_in_millis": millis(s.totals.queue_push_duration_nanos),
                        "duration_in_millis": millis(s.totals.worker_duration_nanos),
                        "events_count": s.queue.unread_events,
                        "queue_size_in_bytes": s.queue.size_in_bytes,
                    })
                })
                .collect();
            pipelines.insert(
                t.view.id.clone(),
                json!({
                    "ephemeral_id": t.ephemeral_id,
                    "workers": t.view.settings.workers,
                    "samples": samples,
                }),
            );
        }
        json!({ "pipelines": pipelines })
    }

    pub fn os_info(&self) -> Value {
        json!({
            "name": std::env::consts::OS,
            "arch": std::env::consts::ARCH,
            "version": std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_owned())
                .unwrap_or_default(),
            "available_processors": node::available_processors(),
        })
    }

    /// `GET /_node` and `GET /_node/<parts>` (`graph`: `?graph=true`).
    pub fn node_info(&self, parts: &[&str], graph: bool) -> Option<Value> {
        let mut m = self.base();
        let all = parts.is_empty();
        for part in parts {
            if !matches!(*part, "pipelines" | "os") {
                return None;
            }
        }
        if all || parts.contains(&"pipelines") {
            m.insert("pipelines".into(), self.pipelines_info(None, graph)?);
        }
        if all || parts.contains(&"os") {
            m.insert("os".into(), self.os_info());
        }
        Some(Value::Object(m))
    }

    fn selected(&self, id: Option<&str>) -> Option<Vec<Arc<Tracked>>> {
        match id {
            None => Some(self.registry.pipelines()),
            Some(id) => self.registry.pipeline(id).map(|t| vec![t]),
        }
    }

    pub fn process_stats(&self) -> Value {
        let p = node::process_figures();
        let (peak, percent) = self.process.read(&p);
        json!({
            "open_file_descriptors": p.open_file_descriptors,
            "peak_open_file_descriptors": peak,
            "max_file_descriptors": p.max_file_descriptors,
            "mem": {
                "total_virtual_in_bytes": p.total_virtual_in_bytes,
                "resident_in_bytes": p.resident_in_bytes,
            },
            "cpu": {
                "total_in_millis": p.cpu_total_millis,
                "percent": percent,
                "load_average": {
                    "1m": p.load_average[0],
                    "5m": p.load_average[1],
                    "15m": p.load_average[2],
                },
            },
        })
    }

    /// `GET /_node/stats` (all sections) or the sections named in `parts`
    /// (`/_node/stats/pipelines`, `/_node/stats/process`, ...); `pipeline` narrows
    /// `pipelines` to one id; `vertices` (`?vertices=true`) adds each pipeline's plugins as
    /// graph vertices. `None` for an unknown section or pipeline.
    pub fn node_stats(
        &self,
        parts: &[&str],
        pipeline: Option<&str>,
        vertices: bool,
    ) -> Option<Value> {
        const SECTIONS: [&str; 7] = [
            "events",
            "flow",
            "pipelines",
            "reloads",
            "os",
            "process",
            "queue",
        ];
        if parts.iter().any(|p| !SECTIONS.contains(p)) {
            return None;
        }
        let want = |s: &str| parts.is_empty() || parts.contains(&s);
        let mut m = self.base();
        let pipelines = self.selected(pipeline)?;
        let reports: Vec<(String, Value)> = pipelines
            .iter()
            .map(|t| {
                let mut stats = pipeline_stats(t, &self.registry.reloads(&t.view.id));
                if vertices {
                    let v = crate::graph::stats_vertices(&stats, &t.ephemeral_id);
                    if let Some(m) = stats.as_object_mut() {
                        m.insert("vertices".into(), v);
                    }
                }
                (t.view.id.clone(), stats)
            })
            .collect();
        if want("process") {
            m.insert("process".into(), self.process_stats());
        }
        if want("events") {
            let mut sum = [0u64; 5];
            for (_, r) in &reports {
                for (i, k) in EVENT_KEYS.iter().enumerate() {
                    sum[i] += r["events"][k].as_u64().unwrap_or(0);
                }
            }
            let events: Map<String, Value> = EVENT_KEYS
                .iter()
                .zip(sum)
                .map(|(k, v)| (k.to_string(), v.into()))
                .collect();
            m.insert("events".into(), Value::Object(events));
        }
        if want("flow") {
            m.insert("flow".into(), node_flow(&reports));
        }
        if want("pipelines") {
            let map: Map<String, Value> = reports.iter().cloned().collect();
            m.insert("pipelines".into(), Value::Object(map));
        }
        if want("reloads") {
            let (successes, failures) = self.registry.reload_totals();
            m.insert(
                "reloads".into(),
                json!({"successes": successes, "failures": failures}),
            );
        }
        if want("os") {
            m.insert("os".into(), json!({}));
        }
        if want("queue") {
            let n: u64 = reports
                .iter()
                .map(|(_, r)| r["queue"]["events_count"].as_u64().unwrap_or(0))
                .sum();
            m.insert("queue".into(), json!({ "events_count": n }));
        }
        Some(Value::Object(m))
    }
}

const EVENT_KEYS: [&str; 5] = [
    "in",
    "filtered",
    "out",
    "duration_in_millis",
    "queue_push_duration_in_millis",
];

/// Node-level flow: the pipelines' rates added up, window by window.
fn node_flow(reports: &[(String, Value)]) -> Value {
    let mut flow = Map::new();
    for name in [
        "input_throughput",
        "filter_throughput",
        "output_throughput",
        "queue_backpressure",
        "worker_concurrency",
    ] {
        let mut sum: Map<String, Value> = Map::new();
        for (_, r) in reports {
            if let Some(w) = r["flow"][name].as_object() {
                for (k, v) in w {
                    let prev = sum.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                    sum.insert(k.clone(), round(prev + v.as_f64().unwrap_or(0.0)).into());
                }
            }
        }
        flow.insert(name.to_owned(), Value::Object(sum));
    }
    Value::Object(flow)
}

/// Puts `n` at a dotted path (`bulk_requests.responses.200`) into `map`, making the objects
/// on the way.
fn insert_dotted(map: &mut Map<String, Value>, path: &str, n: u64) {
    match path.split_once('.') {
        None => {
            map.insert(path.to_owned(), json!(n));
        }
        Some((head, rest)) => {
            let slot = map
                .entry(head.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            if let Value::Object(inner) = slot {
                insert_dotted(inner, rest, n);
            }
        }
    }
}

/// One pipeline's document of `/_node/stats/pipelines`.
pub(crate) fn pipeline_stats(t: &Tracked, reloads: &ReloadStats) -> Value {
    let history = t.history();
    let now = t.sample();
    let flows = Flows {
        history: &history,
        now: &now,
        first: &t.first,
    };
    let workers = t.view.settings.workers.max(1) as f64;
    let tot = &now.totals;
    let plugins = &t.view.metrics.plugins;
    let persisted = now.queue.kind == "persisted";

    let mut flow = Map::new();
    let mut put = |name: &str, f: &dyn Fn(&Span) -> Option<f64>| {
        flow.insert(name.to_owned(), Value::Object(flows.metric(f)));
    };
    put("input_throughput", &|s| s.per_sec(|x| x.totals.events_in));
    put("filter_throughput", &|s| {
        s.per_sec(|x| x.totals.events_filtered)
    });
    put("output_throughput", &|s| s.per_sec(|x| x.totals.events_out));
    put("queue_backpressure", &|s| {
        s.busy(|x| x.totals.queue_push_duration_nanos)
    });
    put("worker_concurrency", &|s| {
        s.busy(|x| x.totals.worker_duration_nanos)
    });
    put("worker_utilization", &|s| {
        s.busy(|x| x.totals.worker_duration_nanos)
            .map(|c| c / workers * 100.0)
    });
    if persisted {
        put("queue_persisted_growth_bytes", &|s| {
            signed_per_sec(s, |x| x.queue.size_in_bytes)
        });
        put("queue_persisted_growth_events", &|s| {
            signed_per_sec(s, |x| x.queue.unread_events)
        });
    }

    let mut inputs: Vec<Value> = plugins
        .inputs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (out, push) = tot.inputs.get(i).copied().unwrap_or_default();
            json!({
                "id": p.id,
                "name": p.name,
                "events": {"out": out, "queue_push_duration_in_millis": millis(push)},
                "flow": {
                    "throughput": flows.metric(|s| s.per_sec(|x| x.totals.inputs.get(i).map_or(0, |c| c.0))),
                },
            })
        })
        .collect();
    // `enable_metric => false` drops a plugin's own counters (Logstash's null metric); the
    // pipeline's counts of its events stay, as in Logstash.
    for ((entry, counters), p) in inputs
        .iter_mut()
        .zip(&t.view.metrics.input_counters)
        .zip(&plugins.inputs)
    {
        if let (Some(c), Value::Object(entry), true) = (counters, entry, p.metrics) {
            for (path, n) in c.snapshot() {
                insert_dotted(entry, &path, n);
            }
        }
    }
    let worker_plugin = |list: &[sluice_pipeline::metrics::PluginInfo],
                         pick: fn(&Sample) -> &Vec<(u64, u64, u64)>| {
        list.iter()
            .enumerate()
            .map(|(i, p)| {
                let (ein, eout, nanos) = pick(&now).get(i).copied().unwrap_or_default();
                let get =
                    move |x: &Sample, f: fn(&(u64, u64, u64)) -> u64| pick(x).get(i).map_or(0, f);
                json!({
                    "id": p.id,
                    "name": p.name,
                    "events": {"in": ein, "out": eout, "duration_in_millis": millis(nanos)},
                    "flow": {
                        "worker_utilization": flows.metric(|s| {
                            s.busy(|x| get(x, |c| c.2)).map(|c| c / workers * 100.0)
                        }),
                        "worker_millis_per_event": flows.metric(|s| {
                            s.ratio(|x| get(x, |c| c.2), |x| get(x, |c| c.0)).map(|ns| ns / 1e6)
                        }),
                    },
                })
            })
            .collect::<Vec<Value>>()
    };
    let mut filters = worker_plugin(&plugins.filters, |s| &s.totals.filters);
    // A filter with `enable_metric => false` counts through Logstash's null metric: no name,
    // and only the `in` and `duration_in_millis` the pipeline creates, at 0.
    for (entry, p) in filters.iter_mut().zip(&plugins.filters) {
        if !p.metrics {
            *entry = json!({"id": p.id, "events": {"in": 0, "duration_in_millis": 0}});
        }
    }
    // Beyond Logstash: a filter with `dlq_on_failure` counts what it sent to the DLQ.
    for (entry, n) in filters
        .iter_mut()
        .zip(t.view.metrics.filter_dlq_routed.iter())
    {
        let n = n.load(std::sync::atomic::Ordering::Relaxed);
        if let (true, Value::Object(entry)) = (n > 0, entry) {
            entry.insert("dlq_routed".into(), n.into());
        }
    }
    let mut outputs = worker_plugin(&plugins.outputs, |s| &s.totals.outputs);
    for ((entry, counters), p) in outputs
        .iter_mut()
        .zip(&t.view.metrics.output_counters)
        .zip(&plugins.outputs)
    {
        if let (Some(c), Value::Object(entry), true) = (counters, entry, p.metrics) {
            for (path, n) in c.snapshot() {
                insert_dotted(entry, &path, n);
            }
        }
    }
    // Beyond Logstash: an output with a lane (see sluice_pipeline::lane) shows it.
    for (entry, lane) in outputs.iter_mut().zip(&t.view.metrics.lanes) {
        if let (Some(lane), Value::Object(entry)) = (lane, entry) {
            let f = lane.figures();
            entry.insert(
                "lane".into(),
                json!({
                    "type": f.kind,
                    "events": f.queued_events,
                    "queue_size_in_bytes": f.queued_bytes,
                    "max_queue_size_in_bytes": f.max_bytes,
                    "oldest_event_age_in_seconds": f.oldest_age_seconds,
                    "handoff_batches": f.handoff_batches,
                    "delivered": f.delivered,
                    "stored": f.stored,
                    "dropped": f.dropped,
                }),
            );
        }
    }
    let codecs: Vec<Value> = plugins
        .codecs
        .iter()
        .map(|c| match c.metrics {
            true => json!({"id": c.id, "name": c.name}),
            false => json!({"id": c.id}),
        })
        .collect();

    let q = &now.queue;
    let mut queue = json!({
        "type": q.kind,
        "events_count": q.unread_events,
        "queue_size_in_bytes": q.size_in_bytes,
        "max_queue_size_in_bytes": q.max_size_in_bytes,
    });
    if persisted {
        let path = q.path.clone().unwrap_or_default();
        let (free, storage_type) = node::filesystem(&path);
        let extra = json!({
            "events": q.unread_events,
            "unacked_events": q.unacked_events,
            "lost_events": q.lost_events,
            "capacity": {
                "max_queue_size_in_bytes": q.max_size_in_bytes,
                "max_unread_events": q.max_unread_events,
                "queue_size_in_bytes": q.size_in_bytes,
                "page_capacity_in_bytes": q.page_capacity_in_bytes,
            },
            "data": {
                "path": path.display().to_string(),
                "free_space_in_bytes": free,
                "storage_type": storage_type,
            },
        });
        if let (Some(q), Value::Object(e)) = (queue.as_object_mut(), extra) {
            q.extend(e);
        }
    }

    let last_error = match &reloads.last_error {
        Some(m) => json!({"message": m, "backtrace": []}),
        None => Value::Null,
    };
    let mut stats = json!({
        "events": {
            "in": tot.events_in,
            "filtered": tot.events_filtered,
            "out": tot.events_out,
            "duration_in_millis": millis(tot.worker_duration_nanos),
            "queue_push_duration_in_millis": millis(tot.queue_push_duration_nanos),
        },
        "flow": flow,
        "plugins": {
            "inputs": inputs,
            "codecs": codecs,
            "filters": filters,
            "outputs": outputs,
        },
        "reloads": {
            "successes": reloads.successes,
            "failures": reloads.failures,
            "last_error": last_error,
            "last_success_timestamp": timestamp(reloads.last_success),
            "last_failure_timestamp": timestamp(reloads.last_failure),
        },
        "queue": queue,
        "pipeline": settings_json(&t.view.settings),
        "hash": t.view.hash,
        "ephemeral_id": t.ephemeral_id,
    });
    if let (Some(dlq), Some(m)) = (&t.view.dead_letter_queue, stats.as_object_mut()) {
        m.insert("dead_letter_queue".into(), dead_letter_queue(dlq));
    }
    if let (Some(batch), Some(m)) = (crate::batch::batch_stats(&flows), stats.as_object_mut()) {
        m.insert("batch".into(), batch);
    }
    stats
}

/// A pipeline's `dead_letter_queue` section, as Logstash's.
fn dead_letter_queue(dlq: &sluice_pipeline::DeadLetterQueue) -> Value {
    use std::sync::atomic::Ordering::Relaxed;
    let s = dlq.stats();
    let last_error = (s.last_error.lock())
        .map(|e| e.clone())
        .unwrap_or_default()
        .unwrap_or_else(|| "no errors".to_owned());
    json!({
        "queue_size_in_bytes": s.size_bytes.load(Relaxed),
        "max_queue_size_in_bytes": dlq.config().max_bytes,
        "storage_policy": dlq.config().policy.as_str(),
        "dropped_events": s.dropped_events.load(Relaxed),
        "expired_events": s.expired_events.load(Relaxed),
        "last_error": last_error,
    })
}

/// Change per second of a figure that may go down.
fn signed_per_sec(s: &Span, f: impl Fn(&Sample) -> u64) -> Option<f64> {
    let dt = s.secs();
    (dt > 0.0).then(|| (f(s.to) as f64 - f(s.from) as f64) / dt)
}

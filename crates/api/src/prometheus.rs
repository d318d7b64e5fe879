//! `GET /metrics`: the figures of `/_node/stats`, in Prometheus' text exposition format
//! (version 0.0.4). Built from the same JSON document, so both always agree. Durations are in
//! seconds (Prometheus' convention) where the JSON has milliseconds; flow rates are gauges
//! with a `window` label (`current`, `last_1_minute`, ..., `lifetime`).

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::Value;

struct Family {
    name: String,
    kind: &'static str,
    help: &'static str,
    samples: Vec<String>,
}

#[derive(Default)]
struct Exposition {
    families: Vec<Family>,
    index: HashMap<String, usize>,
}

/// Escapes a label value: backslash, double quote and newline.
fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_owned()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        format!("{v}")
    }
}

impl Exposition {
    fn add(
        &mut self,
        name: &str,
        kind: &'static str,
        help: &'static str,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        let i = *self.index.entry(name.to_owned()).or_insert_with(|| {
            self.families.push(Family {
                name: name.to_owned(),
                kind,
                help,
                samples: Vec::new(),
            });
            self.families.len() - 1
        });
        let mut line = name.to_owned();
        if !labels.is_empty() {
            line.push('{');
            for (n, (k, v)) in labels.iter().enumerate() {
                if n > 0 {
                    line.push(',');
                }
                let _ = write!(line, "{k}=\"{}\"", escape(v));
            }
            line.push('}');
        }
        line.push(' ');
        line.push_str(&number(value));
        self.families[i].samples.push(line);
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for f in &self.families {
            let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
            let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
            for s in &f.samples {
                out.push_str(s);
                out.push('\n');
            }
        }
        out
    }
}

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// Renders a full `/_node/stats` document.
pub fn render(stats: &Value) -> String {
    let mut e = Exposition::default();
    let node_labels = [
        ("id", stats["id"].as_str().unwrap_or("")),
        ("name", stats["name"].as_str().unwrap_or("")),
        ("version", stats["version"].as_str().unwrap_or("")),
    ];
    e.add(
        "sluice_node_info",
        "gauge",
        "Information about this sluice node (always 1).",
        &node_labels,
        1.0,
    );
    process(&mut e, &stats["process"]);
    if let Some(r) = stats["reloads"].as_object() {
        for (k, help) in [
            ("successes", "Successful pipeline reloads."),
            ("failures", "Failed pipeline reloads."),
        ] {
            if let Some(v) = r.get(k).and_then(f) {
                e.add(
                    &format!("sluice_reloads_{k}_total"),
                    "counter",
                    help,
                    &[],
                    v,
                );
            }
        }
    }
    if let Some(pipelines) = stats["pipelines"].as_object() {
        for (id, p) in pipelines {
            pipeline(&mut e, id, p);
        }
    }
    e.render()
}

fn process(e: &mut Exposition, p: &Value) {
    let items: [(&str, &'static str, &'static str, Option<f64>); 6] = [
        (
            "process_cpu_seconds_total",
            "counter",
            "Total user and system CPU time spent in seconds.",
            f(&p["cpu"]["total_in_millis"]).map(|v| v / 1000.0),
        ),
        (
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
            f(&p["open_file_descriptors"]),
        ),
        (
            "process_max_fds",
            "gauge",
            "Maximum number of open file descriptors.",
            f(&p["max_file_descriptors"]),
        ),
        (
            "process_virtual_memory_bytes",
            "gauge",
            "Virtual memory size in bytes.",
            f(&p["mem"]["total_virtual_in_bytes"]),
        ),
        (
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
            f(&p["mem"]["resident_in_bytes"]),
        ),
        (
            "sluice_process_cpu_percent",
            "gauge",
            "CPU use of the process over the last second, in percent of all cores.",
            f(&p["cpu"]["percent"]),
        ),
    ];
    for (name, kind, help, v) in items {
        if let Some(v) = v {
            e.add(name, kind, help, &[], v);
        }
    }
}

fn flows(
    e: &mut Exposition,
    prefix: &str,
    labels: &[(&str, &str)],
    flow: &Value,
    help: &'static str,
) {
    let Some(flow) = flow.as_object() else { return };
    for (name, windows) in flow {
        let Some(windows) = windows.as_object() else {
            continue;
        };
        for (window, v) in windows {
            if let Some(v) = f(v) {
                let mut l = labels.to_vec();
                l.push(("window", window));
                e.add(&format!("{prefix}_{name}"), "gauge", help, &l, v);
            }
        }
    }
}

fn pipeline(e: &mut Exposition, id: &str, p: &Value) {
    let l = [("pipeline", id)];
    let ev = &p["events"];
    let counters: [(&str, &'static str, Option<f64>); 5] = [
        (
            "sluice_pipeline_events_in_total",
            "Events the inputs put into the pipeline's queue.",
            f(&ev["in"]),
        ),
        (
            "sluice_pipeline_events_filtered_total",
            "Events that went through the filters (dropped ones excluded, created ones included).",
            f(&ev["filtered"]),
        ),
        (
            "sluice_pipeline_events_out_total",
            "Events handed to the outputs.",
            f(&ev["out"]),
        ),
        (
            "sluice_pipeline_duration_seconds_total",
            "Time workers spent on batches (filters and outputs).",
            f(&ev["duration_in_millis"]).map(|v| v / 1000.0),
        ),
        (
            "sluice_pipeline_queue_push_duration_seconds_total",
            "Time inputs spent waiting to push into the queue (back-pressure).",
            f(&ev["queue_push_duration_in_millis"]).map(|v| v / 1000.0),
        ),
    ];
    for (name, help, v) in counters {
        if let Some(v) = v {
            e.add(name, "counter", help, &l, v);
        }
    }
    flows(
        e,
        "sluice_pipeline_flow",
        &l,
        &p["flow"],
        "Pipeline flow rate over a window (see the `window` label).",
    );
    let q = &p["queue"];
    let qt = q["type"].as_str().unwrap_or("memory");
    let ql = [("pipeline", id), ("type", qt)];
    let gauges: [(&str, &'static str, Option<f64>); 6] = [
        (
            "sluice_pipeline_queue_events",
            "Events in the queue not yet taken by a worker.",
            f(&q["events_count"]),
        ),
        (
            "sluice_pipeline_queue_unacked_events",
            "Events in the persisted queue not yet acknowledged.",
            f(&q["unacked_events"]),
        ),
        (
            "sluice_pipeline_queue_size_bytes",
            "Bytes of the persisted queue's page files.",
            f(&q["queue_size_in_bytes"]),
        ),
        (
            "sluice_pipeline_queue_max_size_bytes",
            "queue.max_bytes of the persisted queue.",
            f(&q["max_queue_size_in_bytes"]),
        ),
        (
            "sluice_pipeline_queue_page_capacity_bytes",
            "queue.page_capacity of the persisted queue.",
            f(&q["capacity"]["page_capacity_in_bytes"]),
        ),
        (
            "sluice_pipeline_queue_free_space_bytes",
            "Free space on the persisted queue's filesystem.",
            f(&q["data"]["free_space_in_bytes"]),
        ),
    ];
    for (name, help, v) in gauges {
        if let Some(v) = v {
            e.add(name, "gauge", help, &ql, v);
        }
    }
    if let Some(v) = f(&q["lost_events"]) {
        e.add(
            "sluice_pipeline_queue_lost_events_total",
            "counter",
            "Events the persisted queue lost to damaged or missing files since start.",
            &ql,
            v,
        );
    }
    for (k, help) in [
        ("successes", "Successful reloads of this pipeline."),
        ("failures", "Failed reloads of this pipeline."),
    ] {
        if let Some(v) = f(&p["reloads"][k]) {
            e.add(
                &format!("sluice_pipeline_reloads_{k}_total"),
                "counter",
                help,
                &l,
                v,
            );
        }
    }
    if let Some(w) = f(&p["pipeline"]["workers"]) {
        e.add(
            "sluice_pipeline_workers",
            "gauge",
            "Worker threads of the pipeline.",
            &l,
            w,
        );
    }
    for (section, kind) in [
        ("inputs", "input"),
        ("filters", "filter"),
        ("outputs", "output"),
    ] {
        let Some(list) = p["plugins"][section].as_array() else {
            continue;
        };
        for plugin in list {
            let pl = [
                ("pipeline", id),
                ("plugin_type", kind),
                ("plugin_id", plugin["id"].as_str().unwrap_or("")),
                ("plugin", plugin["name"].as_str().unwrap_or("")),
            ];
            let pe = &plugin["events"];
            let items: [(&str, &'static str, &'static str, Option<f64>); 4] = [
                (
                    "sluice_plugin_events_in_total",
                    "counter",
                    "Events that reached the plugin.",
                    f(&pe["in"]),
                ),
                (
                    "sluice_plugin_events_out_total",
                    "counter",
                    "Events the plugin passed on.",
                    f(&pe["out"]),
                ),
                (
                    "sluice_plugin_duration_seconds_total",
                    "counter",
                    "Time spent in the plugin, summed over workers.",
                    f(&pe["duration_in_millis"]).map(|v| v / 1000.0),
                ),
                (
                    "sluice_plugin_queue_push_duration_seconds_total",
                    "counter",
                    "Time the input spent waiting to push into the queue.",
                    f(&pe["queue_push_duration_in_millis"]).map(|v| v / 1000.0),
                ),
            ];
            // An output's lane (sluice's own).
            let lane = &plugin["lane"];
            let lane_items: [(&str, &'static str, &'static str, Option<f64>); 6] = [
                (
                    "sluice_lane_events",
                    "gauge",
                    "Events the output's lane holds, not yet written to the output.",
                    f(&lane["events"]),
                ),
                (
                    "sluice_lane_size_bytes",
                    "gauge",
                    "Bytes of the output's lane on disk.",
                    f(&lane["queue_size_in_bytes"]),
                ),
                (
                    "sluice_lane_oldest_event_age_seconds",
                    "gauge",
                    "How long the lane has held events without emptying.",
                    f(&lane["oldest_event_age_in_seconds"]),
                ),
                (
                    "sluice_lane_delivered_events_total",
                    "counter",
                    "Events the lane's senders wrote to the output.",
                    f(&lane["delivered"]),
                ),
                (
                    "sluice_lane_stored_events_total",
                    "counter",
                    "Events that went through the lane's store (the output was not keeping up).",
                    f(&lane["stored"]),
                ),
                (
                    "sluice_lane_dropped_events_total",
                    "counter",
                    "Events the full lane dropped (overflow => drop_oldest).",
                    f(&lane["dropped"]),
                ),
            ];
            for (name, mkind, help, v) in items.into_iter().chain(lane_items) {
                if let Some(v) = v {
                    e.add(name, mkind, help, &pl, v);
                }
            }
            flows(
                e,
                "sluice_plugin_flow",
                &pl,
                &plugin["flow"],
                "Plugin flow rate over a window (see the `window` label).",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn families_are_grouped_and_labels_escaped() {
        let stats = json!({
            "id": "n", "name": "a\"b", "version": "1",
            "process": {"open_file_descriptors": 5},
            "reloads": {"successes": 1, "failures": 0},
            "pipelines": {
                "p1": {"events": {"in": 10, "out": 9}, "flow": {"input_throughput": {"current": 1.5}},
                       "queue": {"type": "memory", "events_count": 0},
                       "plugins": {"filters": [{"id": "f\\1", "name": "mutate", "events": {"in": 3, "out": 3, "duration_in_millis": 1500}}]}},
                "p2": {"events": {"in": 20}}
            }
        });
        let text = render(&stats);
        assert!(text.contains("sluice_node_info{id=\"n\",name=\"a\\\"b\",version=\"1\"} 1\n"));
        assert!(text.contains("process_open_fds 5\n"));
        assert!(text.contains(
            "sluice_pipeline_flow_input_throughput{pipeline=\"p1\",window=\"current\"} 1.5\n"
        ));
        assert!(text.contains("sluice_plugin_duration_seconds_total{pipeline=\"p1\",plugin_type=\"filter\",plugin_id=\"f\\\\1\",plugin=\"mutate\"} 1.5\n"));
        // One HELP/TYPE per family, samples of both pipelines under it.
        assert_eq!(
            text.matches("# TYPE sluice_pipeline_events_in_total counter")
                .count(),
            1
        );
        let block = text
            .split("# TYPE sluice_pipeline_events_in_total counter\n")
            .nth(1)
            .unwrap();
        let mut lines = block.lines();
        assert_eq!(
            lines.next(),
            Some("sluice_pipeline_events_in_total{pipeline=\"p1\"} 10")
        );
        assert_eq!(
            lines.next(),
            Some("sluice_pipeline_events_in_total{pipeline=\"p2\"} 20")
        );
    }
}

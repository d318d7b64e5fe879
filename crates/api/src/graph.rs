//! A pipeline's graph in Logstash's JSON shapes: `graph` of `GET /_node/pipelines?graph=true`
//! (the LIR serializer's vertices and edges) and `vertices` of
//! `GET /_node/stats/pipelines?vertices=true` (each plugin's counts under the vertex id the
//! graph gives it). Kibana's pipeline viewer joins the two by vertex id.

use serde_json::{json, Map, Value};
use sluice_pipeline::lir::{Graph, VertexKind};

/// `{hash, type: "lir", version, graph: {vertices, edges}}`.
pub fn graph_json(g: &Graph, hash: &str) -> Value {
    let vertices: Vec<Value> = g
        .vertices
        .iter()
        .map(|v| {
            let mut m = Map::new();
            let kind = match &v.kind {
                VertexKind::Plugin {
                    config_name,
                    plugin_type,
                } => {
                    m.insert("config_name".into(), config_name.clone().into());
                    m.insert("plugin_type".into(), (*plugin_type).into());
                    "plugin"
                }
                VertexKind::If { condition } => {
                    m.insert("condition".into(), condition.clone().into());
                    "if"
                }
                VertexKind::Queue => "queue",
            };
            m.insert(
                "meta".into(),
                match &v.source {
                    Some(s) => json!({"source": {
                        "protocol": s.protocol,
                        "id": s.id,
                        "line": s.line,
                        "column": s.column,
                    }}),
                    None => Value::Null,
                },
            );
            m.insert("id".into(), v.id.clone().into());
            m.insert("explicit_id".into(), v.explicit_id.into());
            m.insert("type".into(), kind.into());
            Value::Object(m)
        })
        .collect();
    let edges: Vec<Value> = g
        .edges
        .iter()
        .map(|e| {
            let mut m = Map::new();
            m.insert("from".into(), e.from.clone().into());
            m.insert("to".into(), e.to.clone().into());
            m.insert("id".into(), e.id.clone().into());
            match e.when {
                Some(w) => {
                    m.insert("when".into(), w.into());
                    m.insert("type".into(), "boolean".into());
                }
                None => {
                    m.insert("type".into(), "plain".into());
                }
            }
            Value::Object(m)
        })
        .collect();
    json!({
        "hash": hash,
        "type": "lir",
        "version": "0.0.0",
        "graph": {"vertices": vertices, "edges": edges},
    })
}

/// The `vertices` of a pipeline's stats (`pipeline_stats`' output): one per input, filter
/// and output, with `events_in`/`events_out`, `duration_in_millis` or
/// `queue_push_duration_in_millis`, and the plugin's own counters as `long_counters`.
pub fn stats_vertices(stats: &Value, ephemeral_id: &str) -> Value {
    let mut out = Vec::new();
    for section in ["inputs", "filters", "outputs"] {
        let Some(list) = stats["plugins"][section].as_array() else {
            continue;
        };
        for p in list {
            let mut v = Map::new();
            v.insert("id".into(), p["id"].clone());
            v.insert("pipeline_ephemeral_id".into(), ephemeral_id.into());
            let events = &p["events"];
            for (key, field) in [
                ("in", "events_in"),
                ("out", "events_out"),
                ("duration_in_millis", "duration_in_millis"),
                (
                    "queue_push_duration_in_millis",
                    "queue_push_duration_in_millis",
                ),
            ] {
                if let Some(n) = events[key].as_u64() {
                    v.insert(field.into(), n.into());
                }
            }
            let mut counters = Vec::new();
            if let Some(m) = p.as_object() {
                for (k, val) in m {
                    if !matches!(k.as_str(), "id" | "name" | "events" | "flow") {
                        flatten(k, val, &mut counters);
                    }
                }
            }
            if !counters.is_empty() {
                v.insert("long_counters".into(), counters.into());
            }
            out.push(Value::Object(v));
        }
    }
    Value::Array(out)
}

/// A plugin's own counters (`a.b.c` → n) as `{name, value}`.
fn flatten(path: &str, v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Number(n) if n.is_u64() || n.is_i64() => {
            out.push(json!({"name": path, "value": n}));
        }
        Value::Object(m) => {
            for (k, inner) in m {
                flatten(&format!("{path}.{k}"), inner, out);
            }
        }
        _ => {}
    }
}

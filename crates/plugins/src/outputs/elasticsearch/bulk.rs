//! The `_bulk` request body: each event becomes an action line and (except for `delete`) a
//! source line, written straight into one buffer per batch; and the per-item results of the
//! response.
//!
//! What an event becomes is decided here, per event: the action (sprintf'd, one of index,
//! create, update, delete), the target (the index, or a data stream from the event's
//! `[data_stream]` fields), `_id`, `routing`, `pipeline` (or `[@metadata][target_ingest_pipeline]`),
//! the `_type` old servers need, and the update forms (`doc`, `doc_as_upsert`, `upsert`,
//! `script`). An event that cannot be rendered (an action that is none of those, an index
//! that still holds `%{...}`) is an event error: it never reaches the request.

use std::fmt::Write as _;

use serde::Deserialize;
use sluice_event::{Event, FieldRef, Value};

use super::config::{sanitize_ds_part, ScriptType, Settings, VALID_ACTIONS};

/// What the server told us about itself (`GET /`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Server {
    pub major: u32,
    pub opensearch: bool,
}

impl Server {
    /// From the body of `GET /`: `version.number` and `version.distribution`.
    pub fn parse(body: &[u8]) -> Result<Server, String> {
        let v: serde_json::Value =
            serde_json::from_slice(body).map_err(|e| format!("GET / is not JSON: {e}"))?;
        let number = v
            .pointer("/version/number")
            .and_then(|n| n.as_str())
            .ok_or("GET / has no version.number")?;
        let major = number
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .ok_or_else(|| format!("version {number:?} has no major number"))?;
        let opensearch =
            v.pointer("/version/distribution").and_then(|d| d.as_str()) == Some("opensearch");
        Ok(Server { major, opensearch })
    }
}

fn push_str(out: &mut Vec<u8>, s: &str) {
    // Writing JSON into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn push_field(out: &mut Vec<u8>, first: &mut bool, name: &str, value: &str) {
    if !*first {
        out.push(b',');
    }
    *first = false;
    push_str(out, name);
    out.push(b':');
    push_str(out, value);
}

/// Renders templates for one event into reusable strings.
pub struct Renderer {
    scratch: String,
    /// The event's target index or data stream.
    index: String,
    target_pipeline: FieldRef,
}

const DATA_STREAM: [&str; 3] = ["type", "dataset", "namespace"];

impl Renderer {
    pub fn new() -> Self {
        Renderer {
            scratch: String::new(),
            index: String::new(),
            target_pipeline: FieldRef::parse("[@metadata][target_ingest_pipeline]")
                .expect("a valid field reference"),
        }
    }

    /// Appends `event`'s action and source lines to `out`. On an event error `out` is left
    /// as it was and the reason is returned.
    pub fn append(
        &mut self,
        s: &Settings,
        server: Server,
        event: &Event,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        let start = out.len();
        let r = self.append_inner(s, server, event, out);
        if r.is_err() {
            out.truncate(start);
        }
        r
    }

    fn render(&mut self, t: &sluice_event::Template, event: &Event) -> &str {
        self.scratch.clear();
        t.render_into(event, &mut self.scratch);
        &self.scratch
    }

    fn append_inner(
        &mut self,
        s: &Settings,
        server: Server,
        event: &Event,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        let action = match s.action.constant() {
            Some(a) => a,
            None => self.render(&s.action, event),
        };
        let Some(action) = VALID_ACTIONS.iter().copied().find(|a| *a == action) else {
            return Err(format!(
                "Badly formatted action: {action:?} (expected index, create, update or delete)"
            ));
        };
        // The target (into `self.index`), and the [data_stream] fields the event should have.
        let mut ds_fields: Option<[String; 3]> = None;
        self.index.clear();
        match (&s.data_stream, &s.index) {
            (Some(ds), _) => {
                let mut parts = [ds.kind.clone(), ds.dataset.clone(), ds.namespace.clone()];
                if ds.auto_routing {
                    for (i, name) in DATA_STREAM.iter().enumerate() {
                        if let Some(Value::String(v)) = event
                            .get_field("data_stream")
                            .and_then(|d| d.as_object().and_then(|m| m.get(*name)))
                        {
                            parts[i] = if i == 0 {
                                v.to_string()
                            } else {
                                sanitize_ds_part(v)
                            };
                        }
                    }
                }
                let _ = write!(self.index, "{}-{}-{}", parts[0], parts[1], parts[2]);
                if ds.sync_fields {
                    ds_fields = Some(parts);
                }
            }
            (None, Some(t)) => {
                t.render_into(event, &mut self.index);
                if s.dlq_on_failed_indexname_interpolation && self.index.contains("%{") {
                    return Err(format!(
                        "Badly formatted index, after interpolation still contains placeholder: [{}]",
                        self.index
                    ));
                }
            }
            (None, None) => {}
        }

        out.extend_from_slice(b"{");
        push_str(out, action);
        out.extend_from_slice(b":{");
        let mut first = true;
        push_field(out, &mut first, "_index", &self.index);
        if let Some(t) = &s.document_id {
            push_field(out, &mut first, "_id", self.render(t, event));
        }
        if let Some(t) = &s.routing {
            push_field(out, &mut first, "routing", self.render(t, event));
        }
        let pipeline = match &s.pipeline {
            Some(t) => Some(self.render(t, event)),
            None => match event.get(&self.target_pipeline) {
                Some(Value::String(p)) => Some(p.as_str()),
                _ => None,
            },
        };
        if let Some(p) = pipeline.filter(|p| !p.is_empty()) {
            push_field(out, &mut first, "pipeline", p);
        }
        // `_type`: Elasticsearch 6 always; 7 when document_type is set; never from 8 on.
        // OpenSearch: when document_type is set.
        let doc_type = match (&s.document_type, server.opensearch, server.major) {
            (Some(t), true, _) | (Some(t), false, 6..=7) => Some(self.render(t, event)),
            (None, false, 6) => Some("doc"),
            (None, false, 0..=5) => Some(
                event
                    .get_field("type")
                    .and_then(|v| v.as_str())
                    .unwrap_or("doc"),
            ),
            _ => None,
        };
        if let Some(t) = doc_type {
            push_field(out, &mut first, "_type", t);
        }
        if action == "update" {
            out.extend_from_slice(
                format!(",\"retry_on_conflict\":{}", s.update.retry_on_conflict).as_bytes(),
            );
        }
        if let Some(t) = &s.version {
            let v = self.render(t, event);
            match v.parse::<i64>() {
                Ok(n) => out.extend_from_slice(format!(",\"version\":{n}").as_bytes()),
                Err(_) => push_field(out, &mut first, "version", v),
            }
        }
        if let Some(vt) = &s.version_type {
            push_field(out, &mut first, "version_type", vt);
        }
        out.extend_from_slice(b"}}\n");

        match action {
            "delete" => {}
            "update" => self.update_source(s, event, out)?,
            _ => write_source(event, ds_fields.as_ref(), out),
        }
        Ok(())
    }

    fn update_source(
        &mut self,
        s: &Settings,
        event: &Event,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        let u = &s.update;
        let upsert = match &u.upsert {
            Some(t) => {
                let text = self.render(t, event).to_owned();
                serde_json::from_str::<serde_json::Value>(&text)
                    .map_err(|e| format!("upsert is not valid JSON after sprintf ({e}): {text}"))?;
                Some(text)
            }
            None => None,
        };
        match &u.script {
            Some(script) => {
                let script = self.render(script, event).to_owned();
                out.extend_from_slice(b"{\"script\":{");
                let key = match u.script_type {
                    ScriptType::Inline => "source",
                    ScriptType::Indexed => "id",
                    ScriptType::File => "file",
                };
                push_str(out, key);
                out.push(b':');
                push_str(out, &script);
                if u.script_type == ScriptType::Inline && !u.script_lang.is_empty() {
                    out.extend_from_slice(b",\"lang\":");
                    push_str(out, &u.script_lang);
                }
                out.extend_from_slice(b",\"params\":{");
                push_str(out, &u.script_var_name);
                out.push(b':');
                write_source(event, None, out);
                out.pop(); // the newline
                out.extend_from_slice(b"}}");
                if u.scripted_upsert {
                    out.extend_from_slice(b",\"scripted_upsert\":true,\"upsert\":{}");
                } else if u.doc_as_upsert {
                    out.extend_from_slice(b",\"upsert\":");
                    write_source(event, None, out);
                    out.pop();
                } else if let Some(up) = upsert {
                    out.extend_from_slice(b",\"upsert\":");
                    out.extend_from_slice(up.as_bytes());
                }
                out.extend_from_slice(b"}\n");
            }
            None => {
                out.extend_from_slice(b"{\"doc\":");
                write_source(event, None, out);
                out.pop();
                if u.doc_as_upsert {
                    out.extend_from_slice(b",\"doc_as_upsert\":true");
                } else if let Some(up) = upsert {
                    out.extend_from_slice(b",\"upsert\":");
                    out.extend_from_slice(up.as_bytes());
                }
                out.extend_from_slice(b"}\n");
            }
        }
        Ok(())
    }
}

impl Default for Renderer {
    fn default() -> Self {
        Renderer::new()
    }
}

/// The event as JSON (no `@metadata`) and a newline; with `ds` set, its `[data_stream]`
/// fields say where it went.
fn write_source(event: &Event, ds: Option<&[String; 3]>, out: &mut Vec<u8>) {
    let Some(parts) = ds else {
        sluice_event::json::write_event(event, out);
        out.push(b'\n');
        return;
    };
    let current = event.get_field("data_stream").and_then(|d| d.as_object());
    let matches = current.is_some_and(|m| {
        m.len() == 3
            && DATA_STREAM
                .iter()
                .zip(parts)
                .all(|(k, v)| m.get(*k).and_then(|x| x.as_str()) == Some(v.as_str()))
    });
    if matches {
        sluice_event::json::write_event(event, out);
    } else if current.is_none() && event.get_field("data_stream").is_none() {
        // Common case: no [data_stream] yet; add it to the end of the object, no copy.
        let start = out.len();
        sluice_event::json::write_event(event, out);
        if out.last() == Some(&b'}') {
            out.pop();
            if out.len() > start + 1 {
                out.push(b',');
            }
            out.extend_from_slice(b"\"data_stream\":{");
            let mut first = true;
            for (k, v) in DATA_STREAM.iter().zip(parts) {
                push_field(out, &mut first, k, v);
            }
            out.extend_from_slice(b"}}");
        }
    } else {
        let mut copy = event.clone();
        let mut m = sluice_event::Map::default();
        for (k, v) in DATA_STREAM.iter().zip(parts) {
            m.insert((*k).into(), Value::String(v.as_str().into()));
        }
        if let Some(Value::Object(old)) = copy.get_field("data_stream") {
            for (k, v) in old.iter() {
                if !DATA_STREAM.contains(&k.as_ref()) {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
        copy.set_field("data_stream", Value::Object(m));
        sluice_event::json::write_event(&copy, out);
    }
    out.push(b'\n');
}

/// A `_bulk` response, as much of it as we read (`filter_path=errors,items.*.error,items.*.status`).
#[derive(Debug, Deserialize)]
pub struct BulkResponse {
    #[serde(default)]
    pub errors: bool,
    #[serde(default)]
    pub items: Vec<std::collections::HashMap<String, ItemResult>>,
}

#[derive(Debug, Deserialize)]
pub struct ItemResult {
    pub status: u16,
    #[serde(default)]
    pub error: Option<serde_json::Value>,
}

impl ItemResult {
    /// The error's `type` (`mapper_parsing_exception`, ...).
    pub fn error_type(&self) -> &str {
        self.error
            .as_ref()
            .and_then(|e| e.get("type"))
            .and_then(|t| t.as_str())
            .unwrap_or("")
    }
}

impl BulkResponse {
    /// Reads a response; the items only when `errors` is true (otherwise every item
    /// succeeded, and reading them would cost an allocation or two each).
    pub fn parse(body: &[u8]) -> Result<BulkResponse, String> {
        #[derive(Deserialize)]
        struct Head {
            #[serde(default)]
            errors: bool,
            #[serde(default)]
            #[allow(dead_code)]
            items: serde::de::IgnoredAny,
        }
        let fail = |e: serde_json::Error| format!("unreadable bulk response: {e}");
        let head: Head = serde_json::from_slice(body).map_err(fail)?;
        if !head.errors {
            return Ok(BulkResponse {
                errors: false,
                items: Vec::new(),
            });
        }
        serde_json::from_slice(body).map_err(fail)
    }

    /// Each item's result, in request order.
    pub fn results(&self) -> impl Iterator<Item = Option<&ItemResult>> {
        self.items.iter().map(|m| m.values().next())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_responses_are_read_item_by_item_only_with_errors() {
        let ok =
            br#"{"errors":false,"items":[{"index":{"status":201}},{"create":{"status":201}}]}"#;
        let r = BulkResponse::parse(ok).unwrap();
        assert!(!r.errors);
        assert!(r.items.is_empty());

        let mixed = br#"{"errors":true,"items":[{"index":{"status":201}},{"index":{"status":400,"error":{"type":"mapper_parsing_exception","reason":"bad"}}},{"delete":{"status":429}}]}"#;
        let r = BulkResponse::parse(mixed).unwrap();
        let items: Vec<(u16, &str)> = r
            .results()
            .map(|i| i.map(|i| (i.status, i.error_type())).unwrap())
            .collect();
        assert_eq!(
            items,
            [(201, ""), (400, "mapper_parsing_exception"), (429, "")]
        );
        assert!(BulkResponse::parse(br#"{"errors":true,"items":[{"index":{}}]}"#).is_err());
        assert!(BulkResponse::parse(b"<html>").is_err());
    }
}

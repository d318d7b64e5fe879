//! `manage_template`: at first contact, installs the index template (the user's `template`
//! file, or our own default for the default index pattern) unless one of that name exists
//! and `template_overwrite` is off. Elasticsearch 8 and later get a composable template
//! (`_index_template`), 7 a legacy one (`_template`), unless `template_api` says otherwise;
//! `opensearch` follows `legacy_template`.
//!
//! The default template is ours: the default index pattern (`logstash-*`, or `ecs-logstash-*`
//! with ECS), one shard, a 5 s refresh, `message` as text, other strings as text with a
//! `keyword` sub-field, and the types the geoip filter's fields need.

use serde_json::{json, Value};

use super::bulk::Server;
use super::config::TemplateApi;
use super::ElasticsearchOutput;

/// Our default template's settings and mappings.
fn default_template() -> (Value, Value) {
    let settings = json!({"index": {"refresh_interval": "5s", "number_of_shards": 1}});
    let mappings = json!({
        "dynamic_templates": [
            {"message_field": {
                "path_match": "message",
                "match_mapping_type": "string",
                "mapping": {"type": "text", "norms": false}
            }},
            {"string_fields": {
                "match": "*",
                "match_mapping_type": "string",
                "mapping": {"type": "text", "norms": false,
                            "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}}
            }}
        ],
        "properties": {
            "@timestamp": {"type": "date"},
            "@version": {"type": "keyword"},
            "geoip": {"dynamic": true, "properties": {
                "ip": {"type": "ip"},
                "location": {"type": "geo_point"},
                "latitude": {"type": "half_float"},
                "longitude": {"type": "half_float"}
            }}
        }
    });
    (settings, mappings)
}

/// The body to install, in the form the chosen API takes.
fn body(out: &ElasticsearchOutput, composable: bool) -> Result<Value, String> {
    let t = &out.s.template;
    if let Some(path) = &t.path {
        let text = std::fs::read_to_string(path).map_err(|e| format!("template {path:?}: {e}"))?;
        return serde_json::from_str(&text).map_err(|e| format!("template {path:?}: {e}"));
    }
    let (settings, mappings) = default_template();
    Ok(if composable {
        json!({
            "index_patterns": [t.default_pattern],
            "priority": 200,
            "template": {"settings": settings, "mappings": mappings},
        })
    } else {
        json!({
            "index_patterns": [t.default_pattern],
            "order": 0,
            "settings": settings,
            "mappings": mappings,
        })
    })
}

pub(super) fn install(out: &ElasticsearchOutput, server: Server) -> Result<(), String> {
    let t = &out.s.template;
    let composable = match t.api {
        TemplateApi::Legacy => false,
        TemplateApi::Composable => true,
        TemplateApi::Auto => !server.opensearch && server.major >= 8,
    };
    let endpoint = if composable {
        "_index_template"
    } else {
        "_template"
    };
    let path = format!("/{endpoint}/{}", t.name);
    let exists = out
        .pool
        .request("HEAD", &out.with_query(&path), &[], None)
        .map_err(|e| e.to_string())?;
    if exists.status == 200 && !t.overwrite {
        tracing::debug!(
            "{}: template {} exists; not overwriting it",
            out.label,
            t.name
        );
        return Ok(());
    }
    let body = match body(out, composable) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!("{}: cannot install the index template: {e}", out.label);
            return Ok(());
        }
    };
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let r = out
        .pool
        .request(
            "PUT",
            &out.with_query(&path),
            &[("Content-Type", "application/json")],
            Some(&bytes),
        )
        .map_err(|e| e.to_string())?;
    if (200..300).contains(&r.status) {
        tracing::info!(
            "{}: installed index template {} ({endpoint})",
            out.label,
            t.name
        );
    } else {
        // As Logstash: a template that does not install is logged, not fatal.
        tracing::error!(
            "{}: installing index template {} failed: {} {}",
            out.label,
            t.name,
            r.status,
            String::from_utf8_lossy(&r.body)
        );
    }
    Ok(())
}

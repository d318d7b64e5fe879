//! The options of the `elasticsearch` and `opensearch` outputs, read and cross-checked into
//! [`Settings`]: where to connect and how to authenticate, what each event becomes in the
//! bulk request (index or data stream, action, id, routing...), and how failures are handled.
//!
//! The defaults are Logstash 8's, which depend on the ECS mode: with ECS on (the default) an
//! `elasticsearch` output that sets nothing incompatible writes to the data stream
//! `logs-generic-default`; otherwise to `ecs-logstash-%{+yyyy.MM.dd}` (ECS) or
//! `logstash-%{+yyyy.MM.dd}`. `opensearch` has no data streams and keeps the older TLS option
//! names. Options that cannot be honoured are errors, never ignored.

use std::time::Duration;

use sluice_event::Template;
use sluice_pipeline::{ConfigError, Options};

use crate::ecs::Ecs;
use crate::tls::Tls;

/// Which plugin the options are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Elasticsearch,
    OpenSearch,
}

impl Flavor {
    pub fn service(self) -> &'static str {
        match self {
            Flavor::Elasticsearch => "Elasticsearch",
            Flavor::OpenSearch => "OpenSearch",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptType {
    Inline,
    Indexed,
    File,
}

/// What `action => update` sends.
#[derive(Debug, Clone)]
pub struct Update {
    pub doc_as_upsert: bool,
    /// A JSON object (sprintf'd per event) used when the document does not exist.
    pub upsert: Option<Template>,
    pub script: Option<Template>,
    pub script_type: ScriptType,
    pub script_lang: String,
    pub script_var_name: String,
    pub scripted_upsert: bool,
    pub retry_on_conflict: i64,
}

/// Where events go when data streams are on.
#[derive(Debug, Clone)]
pub struct DataStream {
    pub kind: String,
    pub dataset: String,
    pub namespace: String,
    /// Take `[data_stream][type|dataset|namespace]` from the event when present.
    pub auto_routing: bool,
    /// Set the event's `[data_stream]` fields to where it goes.
    pub sync_fields: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateApi {
    Auto,
    Legacy,
    Composable,
}

#[derive(Debug, Clone)]
pub struct TemplateSettings {
    pub manage: bool,
    /// A JSON file; our own default template when absent.
    pub path: Option<String>,
    pub name: String,
    pub overwrite: bool,
    pub api: TemplateApi,
    /// The index pattern of the default template (`logstash-*`).
    pub default_pattern: String,
}

pub struct Settings {
    /// Base URLs, without a trailing slash (path prefix included).
    pub hosts: Vec<String>,
    pub tls: Option<Tls>,
    /// Sent with every request: authorization and `custom_headers`.
    pub headers: Vec<(String, String)>,
    /// `?k=v` appended to every request's path (`parameters`).
    pub query: String,
    pub timeout: Duration,
    pub resurrect_delay: Duration,
    pub healthcheck_path: String,
    pub bulk_path: String,
    pub pool_max_per_route: usize,

    /// None when data streams are on.
    pub index: Option<Template>,
    pub data_stream: Option<DataStream>,
    pub action: Template,
    pub document_id: Option<Template>,
    pub routing: Option<Template>,
    pub pipeline: Option<Template>,
    pub document_type: Option<Template>,
    pub version: Option<Template>,
    pub version_type: Option<String>,
    pub update: Update,

    pub compression_level: u32,
    pub retry_initial: Duration,
    pub retry_max: Duration,
    /// Item statuses sent to the dead letter queue besides 400 and 404.
    pub dlq_custom_codes: Vec<u16>,
    /// An index that still holds `%{...}` after sprintf is an event error (DLQ), not a request.
    pub dlq_on_failed_indexname_interpolation: bool,
    pub silence_errors_in_log: Vec<String>,
    pub drop_error_types: Vec<String>,
    pub template: TemplateSettings,
    /// Logstash would set up index lifecycle management here (`ilm_enabled => auto` with the
    /// default index); sluice says at first contact that it does not.
    pub ilm_wanted: bool,
}

pub const VALID_ACTIONS: [&str; 4] = ["index", "create", "update", "delete"];

fn reject(opts: &mut Options, name: &str, why: &str) -> Result<(), ConfigError> {
    if opts.has(name) {
        opts.take(name);
        return Err(opts.error(name, why.to_owned()));
    }
    Ok(())
}

impl Settings {
    pub fn read(opts: &mut Options, flavor: Flavor) -> Result<Settings, ConfigError> {
        let es = flavor == Flavor::Elasticsearch;
        for (name, why) in [
            (
                "flush_size",
                "is obsolete (a bulk request is one batch; size it with pipeline.batch.size)",
            ),
            (
                "idle_flush_time",
                "is obsolete (batches are sent as they come; see pipeline.batch.delay)",
            ),
            (
                "proxy",
                "is not supported (sluice connects to the hosts directly)",
            ),
            (
                "parent",
                "is not supported (join fields: set routing and the join field in the event)",
            ),
            (
                "join_field",
                "is not supported (set routing and the join field in the event)",
            ),
            (
                "validate_after_inactivity",
                "is not supported (idle connections are checked by the client)",
            ),
            (
                "auth_type",
                "is not supported (use user and password; AWS IAM signing is not available)",
            ),
            (
                "ca_trusted_fingerprint",
                "is not supported (use ssl_certificate_authorities)",
            ),
            (
                "default_server_major_version",
                "is not supported (the version is read from the server)",
            ),
        ] {
            reject(opts, name, why)?;
        }
        if opts.boolean("sniffing")? == Some(true) {
            return Err(opts.error("sniffing", "is not supported (list the nodes in hosts)"));
        }
        // Without sniffing these have no effect, in Logstash too.
        let _ = (opts.float("sniffing_delay")?, opts.string("sniffing_path")?);
        let ecs = Ecs::from_options(opts)?;

        // Hosts and authentication.
        let crate::es::Connection {
            hosts,
            tls,
            headers,
        } = crate::es::Connection::read(opts, flavor == Flavor::OpenSearch)?;
        let query = match opts.string_hash("parameters")? {
            Some(params) if !params.is_empty() => params
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}={}",
                        crate::http::percent_encode(k),
                        crate::http::percent_encode(v)
                    )
                })
                .collect::<Vec<_>>()
                .join("&"),
            _ => String::new(),
        };
        let timeout = opts.seconds("timeout", 60.0)?;
        let resurrect_delay = opts.seconds("resurrect_delay", 5.0)?;
        let healthcheck_path = match opts.string("healthcheck_path")? {
            Some(p) => format!("/{}", p.trim_start_matches('/')),
            None => "/".to_owned(),
        };
        let bulk_path = match opts.string("bulk_path")? {
            Some(p) => format!("/{}", p.trim_start_matches('/')),
            None => "/_bulk".to_owned(),
        };
        let _pool_max = opts.int("pool_max")?;
        let pool_max_per_route = opts
            .int("pool_max_per_route")?
            .unwrap_or(100)
            .clamp(1, 10_000);

        // What each event becomes.
        let index_given = opts.string("index")?;
        let action_text = opts.string("action")?;
        let document_id = opts.string("document_id")?.map(|s| Template::parse(&s));
        let routing = opts.string("routing")?.map(|s| Template::parse(&s));
        let pipeline = opts.string("pipeline")?.map(|s| Template::parse(&s));
        let document_type = opts.string("document_type")?.map(|s| Template::parse(&s));
        let version = opts.string("version")?.map(|s| Template::parse(&s));
        let version_type = match opts.string("version_type")? {
            Some(v) => {
                let allowed = [
                    "internal",
                    "external",
                    "external_gt",
                    "external_gte",
                    "force",
                ];
                if !allowed.contains(&v.as_str()) {
                    return Err(opts.error(
                        "version_type",
                        format!("expected one of {allowed:?}, got {v:?}"),
                    ));
                }
                Some(v)
            }
            None => None,
        };
        let upsert_text = opts.string("upsert")?.filter(|s| !s.is_empty());
        let script_text = opts.string("script")?.filter(|s| !s.is_empty());
        let script_type = match opts
            .choice("script_type", &["inline", "indexed", "file"], "inline")?
            .as_str()
        {
            "indexed" => ScriptType::Indexed,
            "file" => ScriptType::File,
            _ => ScriptType::Inline,
        };
        let update = Update {
            doc_as_upsert: opts.boolean_or("doc_as_upsert", false)?,
            upsert: upsert_text.as_deref().map(Template::parse),
            script: script_text.as_deref().map(Template::parse),
            script_type,
            script_lang: opts.string_or("script_lang", "painless")?,
            script_var_name: opts.string_or("script_var_name", "event")?,
            scripted_upsert: opts.boolean_or("scripted_upsert", false)?,
            retry_on_conflict: opts.int("retry_on_conflict")?.unwrap_or(1),
        };
        if update.retry_on_conflict < 0 {
            return Err(opts.error("retry_on_conflict", "must be 0 or more"));
        }
        if let Some(a) = &action_text {
            if !a.contains("%{") && !VALID_ACTIONS.contains(&a.as_str()) {
                return Err(opts.error(
                    "action",
                    format!(
                        "expected one of {VALID_ACTIONS:?} (or a %{{field}} reference), got {a:?}"
                    ),
                ));
            }
            if a == "update" && document_id.is_none() {
                return Err(opts.error("action", "update needs document_id"));
            }
        }
        if update.doc_as_upsert && update.scripted_upsert {
            return Err(opts.error(
                "doc_as_upsert",
                "and scripted_upsert are both true; choose one",
            ));
        }
        if upsert_text.is_some() && update.doc_as_upsert {
            return Err(opts.error(
                "upsert",
                "and doc_as_upsert => true are both set; choose one",
            ));
        }
        if let Some(u) = &upsert_text {
            if !u.contains("%{") && serde_json::from_str::<serde_json::Value>(u).is_err() {
                return Err(opts.error("upsert", "must be a JSON object"));
            }
        }

        // Failure handling.
        let compression_level = match (
            opts.int("compression_level")?,
            opts.boolean("http_compression")?,
        ) {
            (Some(l), _) if !(0..=9).contains(&l) => {
                return Err(opts.error("compression_level", "must be between 0 and 9"))
            }
            (Some(l), _) => l as u32,
            (None, Some(false)) if !es => 0,
            (None, Some(true)) => 1,
            (None, _) => u32::from(es),
        };
        let retry_initial = opts.seconds("retry_initial_interval", 2.0)?;
        let retry_max = opts.seconds("retry_max_interval", 64.0)?;
        if retry_initial > retry_max {
            return Err(opts.error(
                "retry_initial_interval",
                "must not be greater than retry_max_interval",
            ));
        }
        let mut dlq_custom_codes = Vec::new();
        if es {
            for c in opts.string_list("dlq_custom_codes")?.unwrap_or_default() {
                let code: u16 = c.parse().map_err(|_| {
                    opts.error("dlq_custom_codes", format!("{c:?} is not a status code"))
                })?;
                if [200, 201, 400, 404, 409].contains(&code) {
                    return Err(opts.error(
                        "dlq_custom_codes",
                        format!("{code} is handled already (200 and 201 succeed, 400 and 404 go to the DLQ, 409 is a conflict)"),
                    ));
                }
                dlq_custom_codes.push(code);
            }
        }
        let dlq_on_failed_indexname_interpolation = if es {
            opts.boolean_or("dlq_on_failed_indexname_interpolation", true)?
        } else {
            true
        };
        let mut silence_errors_in_log = opts
            .string_list("silence_errors_in_log")?
            .unwrap_or_default();
        silence_errors_in_log.extend(
            opts.string_list("failure_type_logging_whitelist")?
                .unwrap_or_default(),
        );
        let drop_error_types = if es {
            opts.string_list("drop_error_types")?.unwrap_or_default()
        } else {
            Vec::new()
        };

        // Templates, ILM and data streams.
        let manage_template_given = opts.boolean("manage_template")?;
        let template_path = opts.string("template")?;
        let template_name_given = opts.string("template_name")?;
        let template_overwrite = opts.boolean_or("template_overwrite", false)?;
        let template_api = if es {
            match opts
                .choice("template_api", &["auto", "legacy", "composable"], "auto")?
                .as_str()
            {
                "legacy" => TemplateApi::Legacy,
                "composable" => TemplateApi::Composable,
                _ => TemplateApi::Auto,
            }
        } else if opts.boolean_or("legacy_template", true)? {
            TemplateApi::Legacy
        } else {
            TemplateApi::Composable
        };
        let (ilm_enabled, ilm_alias, ilm_pattern_given, ilm_policy_given) = if es {
            (
                opts.choice("ilm_enabled", &["auto", "true", "false"], "auto")?,
                opts.string("ilm_rollover_alias")?,
                opts.string("ilm_pattern")?,
                opts.string("ilm_policy")?,
            )
        } else {
            ("false".to_owned(), None, None, None)
        };
        let ilm_given = opts.has("ilm_enabled") && ilm_enabled != "false"
            || ilm_alias.is_some()
            || ilm_pattern_given.is_some()
            || ilm_policy_given.is_some();

        let ds_opts = if es {
            Some((
                opts.choice("data_stream", &["auto", "true", "false"], "auto")?,
                opts.string("data_stream_type")?,
                opts.string("data_stream_dataset")?,
                opts.string("data_stream_namespace")?,
                opts.boolean_or("data_stream_auto_routing", true)?,
                opts.boolean_or("data_stream_sync_fields", true)?,
            ))
        } else {
            None
        };
        let data_stream = match ds_opts {
            None => None,
            Some((mode, kind, dataset, namespace, auto_routing, sync_fields)) => {
                // Options a data stream cannot honour.
                let mut incompatible: Vec<&str> = Vec::new();
                if index_given.is_some() {
                    incompatible.push("index");
                }
                if action_text.as_deref().is_some_and(|a| a != "create") {
                    incompatible.push("action");
                }
                if manage_template_given == Some(true) {
                    incompatible.push("manage_template");
                }
                for (name, given) in [
                    ("template", template_path.is_some()),
                    ("template_name", template_name_given.is_some()),
                    ("template_overwrite", opts.has("template_overwrite")),
                    ("document_type", document_type.is_some()),
                    ("doc_as_upsert", update.doc_as_upsert),
                    ("upsert", update.upsert.is_some()),
                    ("script", update.script.is_some()),
                    ("version", version.is_some()),
                    ("version_type", version_type.is_some()),
                    ("ilm_*", ilm_given),
                ] {
                    if given {
                        incompatible.push(name);
                    }
                }
                let on = match mode.as_str() {
                    "true" => {
                        if !incompatible.is_empty() {
                            return Err(opts.error(
                                "data_stream",
                                format!(
                                    "is true, but these options do not apply to data streams: {}",
                                    incompatible.join(", ")
                                ),
                            ));
                        }
                        true
                    }
                    "false" => false,
                    _ => ecs.enabled() && incompatible.is_empty(),
                };
                let ds_given = kind.is_some() || dataset.is_some() || namespace.is_some();
                if !on && ds_given && mode != "auto" {
                    return Err(opts.error(
                        "data_stream_type",
                        "and the other data_stream_* options need data_stream => true",
                    ));
                }
                if on {
                    let kind = kind.unwrap_or_else(|| "logs".into());
                    if !["logs", "metrics", "synthetics", "traces"].contains(&kind.as_str()) {
                        return Err(opts.error(
                            "data_stream_type",
                            format!(
                                "expected one of logs, metrics, synthetics, traces, got {kind:?}"
                            ),
                        ));
                    }
                    let dataset = dataset.unwrap_or_else(|| "generic".into());
                    let namespace = namespace.unwrap_or_else(|| "default".into());
                    for (name, v) in [
                        ("data_stream_dataset", &dataset),
                        ("data_stream_namespace", &namespace),
                    ] {
                        if let Err(e) = check_ds_part(v) {
                            return Err(opts.error(name, e));
                        }
                    }
                    Some(DataStream {
                        kind,
                        dataset,
                        namespace,
                        auto_routing,
                        sync_fields,
                    })
                } else {
                    None
                }
            }
        };
        let action = match (&data_stream, action_text) {
            (Some(_), _) => Template::parse("create"),
            (None, Some(a)) => Template::parse(&a),
            (None, None) => Template::parse("index"),
        };
        let default_prefix = if ecs.enabled() {
            "ecs-logstash"
        } else {
            "logstash"
        };
        let index_was_given = index_given.is_some();
        let index = match (&data_stream, index_given) {
            (Some(_), _) => None,
            (None, Some(i)) => Some(Template::parse(&i)),
            (None, None) => Some(Template::parse(&format!(
                "{default_prefix}-%{{+yyyy.MM.dd}}"
            ))),
        };
        let ilm_wanted = es
            && data_stream.is_none()
            && match ilm_enabled.as_str() {
                "false" => false,
                _ => !index_was_given || ilm_alias.is_some(),
            };
        if ilm_enabled == "true" || ilm_alias.is_some() {
            return Err(opts.error(
                if ilm_alias.is_some() { "ilm_rollover_alias" } else { "ilm_enabled" },
                "index lifecycle management is not supported yet; set ilm_enabled => false and manage lifecycles in Elasticsearch",
            ));
        }
        let template = TemplateSettings {
            manage: manage_template_given.unwrap_or(data_stream.is_none()),
            path: template_path,
            name: template_name_given.unwrap_or_else(|| default_prefix.to_owned()),
            overwrite: template_overwrite,
            api: template_api,
            default_pattern: format!("{default_prefix}-*"),
        };
        if let Some(p) = &template.path {
            let text = std::fs::read_to_string(p)
                .map_err(|e| opts.error("template", format!("cannot read {p:?}: {e}")))?;
            if serde_json::from_str::<serde_json::Value>(&text).is_err() {
                return Err(opts.error("template", format!("{p:?} is not valid JSON")));
            }
        }
        Ok(Settings {
            hosts,
            tls,
            headers,
            query,
            timeout,
            resurrect_delay,
            healthcheck_path,
            bulk_path,
            pool_max_per_route: pool_max_per_route as usize,
            index,
            data_stream,
            action,
            document_id,
            routing,
            pipeline,
            document_type,
            version,
            version_type,
            update,
            compression_level,
            retry_initial,
            retry_max,
            dlq_custom_codes,
            dlq_on_failed_indexname_interpolation,
            silence_errors_in_log,
            drop_error_types,
            template,
            ilm_wanted,
        })
    }
}

/// Characters a data stream's dataset or namespace cannot hold (Elasticsearch's index name
/// rules, plus `-`, which separates the parts).
const DS_INVALID: &[char] = &[
    '\\', '/', '*', '?', '"', '<', '>', '|', ' ', ',', '#', ':', '-',
];

fn check_ds_part(v: &str) -> Result<(), String> {
    if v.is_empty() || v.len() > 100 {
        return Err(format!("{v:?} must be 1 to 100 characters"));
    }
    if let Some(c) = v
        .chars()
        .find(|c| DS_INVALID.contains(c) || c.is_uppercase())
    {
        return Err(format!("{v:?} cannot contain {c:?} (nor upper case)"));
    }
    Ok(())
}

/// An event's dataset or namespace made valid, as Logstash does: lower case, invalid
/// characters replaced by `_`, at most 100 bytes.
pub fn sanitize_ds_part(v: &str) -> String {
    let mut out: String = v
        .chars()
        .map(|c| if DS_INVALID.contains(&c) { '_' } else { c })
        .flat_map(char::to_lowercase)
        .collect();
    if out.len() > 100 {
        let mut end = 100;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::es::{host_url, parse_cloud_id};

    #[test]
    fn cloud_id_decodes_to_the_elasticsearch_url() {
        use base64::Engine;
        let enc = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let id = format!(
            "my-deployment:{}",
            enc("us-east-1.aws.found.io$abc123$def456")
        );
        assert_eq!(
            parse_cloud_id(&id).unwrap(),
            "https://abc123.us-east-1.aws.found.io:443"
        );
        let id = enc("example.com:9243$esid$kbid");
        assert_eq!(
            parse_cloud_id(&id).unwrap(),
            "https://esid.example.com:9243"
        );
        let id = format!("x:{}", enc("example.com$esid:9200$kbid"));
        assert_eq!(
            parse_cloud_id(&id).unwrap(),
            "https://esid.example.com:9200"
        );
        assert!(parse_cloud_id("label:!!!").is_err());
        assert!(parse_cloud_id(&format!("l:{}", enc("only-host"))).is_err());
    }

    #[test]
    fn hosts_get_scheme_and_port() {
        assert_eq!(
            host_url("127.0.0.1", false).unwrap(),
            "http://127.0.0.1:9200"
        );
        assert_eq!(host_url("//es", true).unwrap(), "https://es:9200");
        assert_eq!(
            host_url("https://es:9243/", false).unwrap(),
            "https://es:9243"
        );
        assert_eq!(
            host_url("http://es/prefix/", false).unwrap(),
            "http://es:9200/prefix"
        );
        assert_eq!(host_url("[::1]", false).unwrap(), "http://[::1]:9200");
        assert_eq!(host_url("[::1]:9201", false).unwrap(), "http://[::1]:9201");
        assert!(host_url("ftp://es", false).is_err());
        assert!(host_url("http://u:p@es", false).is_err());
    }

    #[test]
    fn data_stream_parts_are_checked_and_sanitized() {
        assert!(check_ds_part("generic").is_ok());
        assert!(check_ds_part("my-set").is_err());
        assert!(check_ds_part("Upper").is_err());
        assert_eq!(sanitize_ds_part("My Data-Set"), "my_data_set");
        assert_eq!(sanitize_ds_part(&"x".repeat(150)).len(), 100);
    }
}

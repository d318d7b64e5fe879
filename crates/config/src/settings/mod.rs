//! The settings file: Logstash's `logstash.yml`, which sluice reads as `sluice.yml` (same
//! keys; `logstash.yml` is read when there is no `sluice.yml`).
//!
//! As in Logstash, keys may be written flat (`queue.type: persisted`), nested
//! (`queue:` / `  type: persisted`) or mixed; nested mappings are flattened by joining keys
//! with `.`. YAML merge keys (`<<: *anchor`) are honoured, explicit keys winning. `${VAR}` and
//! `${VAR:default}` in values (not keys) are replaced from the environment before a value is
//! checked (see [`crate::substitute_vars`]). An empty file, or one with only comments, is an
//! empty [`Settings`]. A key given a null value (`key:` or `key: ~`) is left unset.
//!
//! Every value is checked against its type, and a wrong value is an error at the value's
//! `file:line:column` naming the key and what was expected. A key set twice (e.g. once flat
//! and once nested) is an error. Booleans are `true`/`false`; unquoted, also in any case and
//! as YAML 1.1's `yes`/`no`/`on`/`off` (Logstash reads YAML 1.1), while a quoted or
//! substituted value must be exactly `true` or `false` (as Logstash's `BooleanSetting`).
//! Integers are decimal; a quoted or substituted integer is accepted as Logstash does.
//! `path.config` and `config.string` cannot both be set (as in Logstash).
//!
//! ## Accepted keys
//!
//! | key | field | type |
//! |---|---|---|
//! | `node.name` | [`Settings::node_name`] | string |
//! | `path.data` | [`Settings::path_data`] | path |
//! | `path.logs` | [`Settings::path_logs`] | path |
//! | `path.config` | [`Settings::path_config`] | string (file, directory or glob) |
//! | `config.string` | [`Settings::config_string`] | string |
//! | `config.support_escapes` | [`Settings::config_support_escapes`] | boolean |
//! | `config.reload.automatic` | [`Settings::config_reload_automatic`] | boolean |
//! | `config.reload.interval` | [`Settings::config_reload_interval`] | time value (`3s`, `500ms`; a unit is required) |
//! | `config.test_and_exit` | [`Settings::config_test_and_exit`] | boolean |
//! | `log.level` | [`Settings::log_level`] | `fatal` `error` `warn` `info` `debug` `trace` |
//! | `log.format` | [`Settings::log_format`] | `plain` `json` |
//! | `allow_superuser` | [`Settings::allow_superuser`] | boolean |
//! | `pipeline.id` | [`Settings::pipeline_id`] | string (the id of the single pipeline) |
//! | `pipeline.workers`, `pipeline.batch.size` | [`PipelineOverrides`] | positive integer |
//! | `pipeline.batch.delay` | [`PipelineOverrides::batch_delay`] | number of milliseconds |
//! | `pipeline.ordered` | [`PipelineOverrides::ordered`] | `auto` `true` `false` |
//! | `pipeline.output_lanes` | [`PipelineOverrides::output_lanes`] | `none` `persisted` `memory` |
//! | `pipeline.unsafe_shutdown` | [`PipelineOverrides::unsafe_shutdown`] | boolean |
//! | `pipeline.lineage` | [`PipelineOverrides::lineage`] | boolean |
//! | `pipeline.batch.metrics.sampling_mode` | [`PipelineOverrides::batch_metrics`] | `disabled` `minimal` `full` |
//! | `pipeline.ecs_compatibility` | [`PipelineOverrides::ecs_compatibility`] | `disabled` `v1` `v8` |
//! | `queue.type` | [`QueueOverrides::queue_type`] | `memory` `persisted` |
//! | `path.queue` | [`QueueOverrides::path`] | path |
//! | `queue.page_capacity`, `queue.max_bytes` | [`QueueOverrides`] | size ([`parse_size`]) |
//! | `queue.max_events`, `queue.checkpoint.acks`, `queue.checkpoint.writes` | [`QueueOverrides`] | non-negative integer |
//! | `queue.checkpoint.retry`, `queue.drain` | [`QueueOverrides`] | boolean |
//! | `queue.checkpoint.interval` | — | integer; accepted with a warning: it has no effect (Logstash is removing it) |
//! | `queue.compression` | [`QueueOverrides::compression`] | `none` `disabled` `speed` `balanced` `size` |
//! | `dead_letter_queue.enable` | [`DlqOverrides::enable`] | boolean |
//! | `path.dead_letter_queue` | [`DlqOverrides::path`] | path |
//! | `dead_letter_queue.max_bytes` | [`DlqOverrides::max_bytes`] | size |
//! | `dead_letter_queue.storage_policy` | [`DlqOverrides::storage_policy`] | `drop_newer` `drop_older` |
//! | `dead_letter_queue.flush_interval` | [`DlqOverrides::flush_interval`] | number of milliseconds |
//! | `dead_letter_queue.retain.age` | [`DlqOverrides::retain_age`] | time value (`7d`, `12h`) |
//! | `dead_letter_queue.flush_check_interval` | [`DlqOverrides::flush_check_interval`] | milliseconds, at least 1000 |
//! | `pipeline.recoverable` | [`PipelineOverrides::recoverable`] | `false` `auto` `true` |
//! | `pipeline.batch.output_chunking.growth_threshold_factor` | [`PipelineOverrides::output_chunking_growth_threshold_factor`] | positive integer |
//! | `ssl.reload.automatic`, `ssl.reload.interval` | [`Settings::ssl_reload_automatic`] | boolean, time value |
//! | `otel.metrics.enabled` | — | `false` only (the OTLP export is not implemented) |
//! | `api.enabled` (deprecated alias `http.enabled`) | [`ApiSettings::enabled`] | boolean |
//! | `api.http.host` (alias `http.host`) | [`ApiSettings::host`] | string |
//! | `api.http.port` (alias `http.port`) | [`ApiSettings::port`] | port or range: `9600`, `"9600-9700"` |
//! | `api.environment` (alias `http.environment`) | [`ApiSettings::environment`] | string |
//! | `api.auth.type` | [`ApiSettings::auth_type`] | `none` `basic` |
//! | `api.auth.basic.username`, `api.auth.basic.password` | [`ApiSettings`] | string |
//! | `api.auth.basic.password_policy.mode` | [`PasswordPolicy::mode`] | `WARN` `ERROR` |
//! | `api.auth.basic.password_policy.length.minimum` | [`PasswordPolicy::length_minimum`] | non-negative integer |
//! | `api.auth.basic.password_policy.include.{upper,lower,digit,symbol}` | [`PasswordPolicy`] | `REQUIRED` `OPTIONAL` |
//! | `api.ssl.enabled` | [`ApiSettings::ssl_enabled`] | boolean |
//! | `api.ssl.keystore.path`, `api.ssl.keystore.password` | [`ApiSettings`] | path, string |
//! | `api.ssl.supported_protocols` | [`ApiSettings::ssl_supported_protocols`] | list of `TLSv1` `TLSv1.1` `TLSv1.2` `TLSv1.3` (or one string) |
//!
//! The deprecated `http.*` aliases are accepted with a warning in [`Settings::warnings`];
//! giving both an alias and its `api.*` key is an error.
//!
//! ## Rejected keys
//!
//! Logstash settings that sluice does not implement are errors ("`<key>` is a Logstash
//! setting that sluice does not support"), so that nothing is silently ignored: `xpack.*`,
//! `modules`, `cloud.id`, `cloud.auth`,
//! `path.plugins`, `path.settings` (command line only), `pipeline.plugin_classloaders`,
//! `pipeline.separate_logs`, `pipeline.reloadable`,
//! `pipeline.system`, `pipeline.buffer.type`, `config.debug`,
//! `config.field_reference.escape_style`, `metric.collect`, `slowlog.*`, `keystore.*`,
//! `monitoring.*`, `otel.*` (but `otel.metrics.enabled: false`), `log.format.json.*`, and the
//! command-line-only `interactive`, `version`, `help`, `enable-local-plugin-development`.
//! Any other key is an unknown setting, with a "did you mean" suggestion when one is close.

mod keys;
mod types;
mod values;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::error::SettingsError;
use keys::*;
pub(crate) use keys::{logstash_only, settings_keys, unknown_key, PIPELINE_SCOPED_KEYS};
pub use types::*;
use values::*;
pub(crate) use values::{flatten, Val};
pub use values::{parse_port_range, parse_size, parse_time_value, QUEUE_COMPRESSION};

use crate::yaml::{self, Kind, Pos};

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Parses a settings file's text; `${VAR}` come from the process environment.
/// `source_name` names the file in errors.
pub fn parse_settings(source_name: &str, text: &str) -> Result<Settings, SettingsError> {
    parse_settings_with(source_name, text, &env_lookup)
}

/// [`parse_settings`] with `${VAR}` looked up by `lookup`.
pub fn parse_settings_with(
    source_name: &str,
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Settings, SettingsError> {
    let mut settings = Settings::default();
    let Some(doc) = yaml::parse(source_name, text)? else {
        return Ok(settings);
    };
    let entries = match &doc.kind {
        Kind::Null => return Ok(settings),
        Kind::Map(entries) => flatten(source_name, entries)?,
        _ => {
            return Err(SettingsError::new(
                source_name,
                doc.pos,
                format!(
                    "a settings file must be a mapping of `key: value` settings, not {}",
                    doc.describe()
                ),
            ))
        }
    };
    // Canonical key → (key as written, position), to catch an alias and its key both set.
    let mut seen: HashMap<&'static str, (&str, Pos)> = HashMap::new();
    for entry in &entries {
        let key = entry.key.as_str();
        let canonical = match ALIASES.iter().find(|(alias, _)| *alias == key) {
            Some((alias, canonical)) => {
                settings.warnings.push(
                    SettingsError::new(
                        source_name,
                        entry.key_pos,
                        format!("`{alias}` is deprecated: use `{canonical}`"),
                    )
                    .to_string(),
                );
                *canonical
            }
            None => match settings_keys().iter().find(|k| **k == key) {
                Some(k) => *k,
                None => {
                    if entry.value.kind == Kind::Null && is_key_prefix(key) {
                        continue; // e.g. `queue:` with every sub-key commented out
                    }
                    return Err(unknown_key(
                        source_name,
                        entry,
                        settings_keys(),
                        "sluice.yml",
                    ));
                }
            },
        };
        if let Some((other, pos)) = seen.insert(canonical, (key, entry.key_pos)) {
            return Err(SettingsError::new(
                source_name,
                entry.key_pos,
                format!(
                    "`{key}` and `{other}` (line {}) set the same setting; keep one",
                    pos.line
                ),
            ));
        }
        let v = Val {
            source_name,
            key,
            node: entry.value,
            lookup,
        };
        apply_setting(&mut settings, canonical, &v)?;
    }
    if settings.path_config.is_some() && settings.config_string.is_some() {
        // As Logstash: one source for the main pipeline.
        let at = entries
            .iter()
            .filter(|e| e.key == "path.config" || e.key == "config.string")
            .map(|e| e.key_pos)
            .max_by_key(|p| (p.line, p.column))
            .unwrap_or_default();
        return Err(SettingsError::new(
            source_name,
            at,
            "`path.config` and `config.string` cannot both be set; keep one",
        ));
    }
    Ok(settings)
}

/// Reads `<dir>/sluice.yml`, else `<dir>/logstash.yml`; default (empty) [`Settings`] when
/// neither exists. When both exist, `logstash.yml` is ignored with a warning.
pub fn load_settings(dir: &Path) -> Result<Settings, SettingsError> {
    let ours = dir.join("sluice.yml");
    let theirs = dir.join("logstash.yml");
    let Some((path, text)) = read_optional(&ours)?.or(read_optional(&theirs)?) else {
        return Ok(Settings::default());
    };
    let name = path.display().to_string();
    let mut settings = parse_settings(&name, &text)?;
    if path == ours && theirs.is_file() {
        settings.warnings.push(format!(
            "{}: ignored, because {} exists",
            theirs.display(),
            ours.display()
        ));
    }
    Ok(settings)
}

/// The file's text, or `None` if it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<(PathBuf, String)>, SettingsError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some((path.to_path_buf(), crate::load::strip_bom(text)))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SettingsError::file(
            &path.display().to_string(),
            format!("cannot read: {e}"),
        )),
    }
}

/// Applies a key that may be set per pipeline (`pipeline.*`, `queue.*`, `path.queue`,
/// `dead_letter_queue.*`, `path.dead_letter_queue`). `Ok(false)` if `key` is not one of them.
pub(crate) fn apply_pipeline_key(
    p: &mut PipelineOverrides,
    q: &mut QueueOverrides,
    d: &mut DlqOverrides,
    warnings: &mut Vec<String>,
    key: &str,
    v: &Val<'_>,
) -> Result<bool, SettingsError> {
    match key {
        "pipeline.workers" => p.workers = v.positive_int()?,
        "pipeline.batch.size" => p.batch_size = v.positive_int()?,
        "pipeline.batch.delay" => p.batch_delay = v.millis()?,
        "pipeline.ordered" => p.ordered = v.one_of(ORDERED)?,
        "pipeline.ecs_compatibility" => p.ecs_compatibility = v.one_of(ECS)?,
        "pipeline.unsafe_shutdown" => p.unsafe_shutdown = v.boolean()?,
        "pipeline.lineage" => p.lineage = v.boolean()?,
        "pipeline.batch.metrics.sampling_mode" => p.batch_metrics = v.one_of(SAMPLING_MODES)?,
        "pipeline.recoverable" => p.recoverable = v.one_of(&["false", "auto", "true"])?,
        "pipeline.output_lanes" => p.output_lanes = v.one_of(&["none", "persisted", "memory"])?,
        "pipeline.batch.output_chunking.growth_threshold_factor" => {
            p.output_chunking_growth_threshold_factor = v.positive_int()?
        }
        "queue.type" => {
            q.queue_type = v
                .one_of(&["memory", "persisted"])?
                .map(|t| match t.as_str() {
                    "persisted" => QueueType::Persisted,
                    _ => QueueType::Memory,
                })
        }
        "path.queue" => q.path = v.path()?,
        "queue.page_capacity" => q.page_capacity = v.size()?,
        "queue.max_events" => q.max_events = v.uint()?,
        "queue.max_bytes" => q.max_bytes = v.size()?,
        "queue.checkpoint.acks" => q.checkpoint_acks = v.uint()?,
        "queue.checkpoint.writes" => q.checkpoint_writes = v.uint()?,
        "queue.checkpoint.retry" => q.checkpoint_retry = v.boolean()?,
        "queue.drain" => q.drain = v.boolean()?,
        "dead_letter_queue.enable" => d.enable = v.boolean()?,
        "path.dead_letter_queue" => d.path = v.path()?,
        "dead_letter_queue.max_bytes" => d.max_bytes = v.size()?,
        "dead_letter_queue.storage_policy" => {
            d.storage_policy = v.one_of(&["drop_newer", "drop_older"])?
        }
        "dead_letter_queue.flush_interval" => {
            d.flush_interval = v.millis()?;
            if d.flush_interval == Some(Duration::ZERO) {
                return Err(v.error(
                    v.node.pos,
                    "invalid value for `dead_letter_queue.flush_interval`: must be greater \
                     than 0"
                        .to_owned(),
                ));
            }
        }
        "dead_letter_queue.retain.age" => d.retain_age = v.time_value()?,
        "dead_letter_queue.flush_check_interval" => {
            d.flush_check_interval = v.millis()?;
            if d.flush_check_interval
                .is_some_and(|i| i < Duration::from_millis(1000))
            {
                return Err(v.error(
                    v.node.pos,
                    "invalid value for `dead_letter_queue.flush_check_interval`: the minimum is 1000"
                        .to_owned(),
                ));
            }
        }
        "queue.checkpoint.interval" => {
            if v.uint()?.is_some() {
                warnings.push(v.warning(
                    "`queue.checkpoint.interval` has no effect in sluice (Logstash is removing \
                     it); ignored"
                        .to_string(),
                ));
            }
        }
        "queue.compression" => q.compression = v.one_of(QUEUE_COMPRESSION)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn apply_setting(s: &mut Settings, key: &str, v: &Val<'_>) -> Result<(), SettingsError> {
    if apply_pipeline_key(
        &mut s.pipeline,
        &mut s.queue,
        &mut s.dlq,
        &mut s.warnings,
        key,
        v,
    )? {
        return Ok(());
    }
    let api = &mut s.api;
    match key {
        "node.name" => s.node_name = v.string()?,
        "path.data" => s.path_data = v.path()?,
        "path.logs" => s.path_logs = v.path()?,
        "path.config" => s.path_config = v.string()?,
        "config.string" => s.config_string = v.string()?,
        "config.support_escapes" => s.config_support_escapes = v.boolean()?,
        "config.reload.automatic" => s.config_reload_automatic = v.boolean()?,
        "config.reload.interval" => s.config_reload_interval = v.time_value()?,
        "config.test_and_exit" => s.config_test_and_exit = v.boolean()?,
        "ssl.reload.automatic" => s.ssl_reload_automatic = v.boolean()?,
        "ssl.reload.interval" => s.ssl_reload_interval = v.time_value()?,
        // Off is what sluice does; on asks for an export sluice does not have yet.
        "otel.metrics.enabled" => {
            if v.boolean()? == Some(true) {
                return Err(v.error(
                    v.node.pos,
                    "`otel.metrics.enabled: true`: exporting sluice's metrics over OTLP is not implemented yet; read them from /metrics (Prometheus) or the monitoring API".to_owned(),
                ));
            }
        }
        "log.level" => s.log_level = v.one_of(LOG_LEVELS)?,
        "log.format" => s.log_format = v.one_of(&["plain", "json"])?,
        "allow_superuser" => s.allow_superuser = v.boolean()?,
        "pipeline.id" => s.pipeline_id = non_empty(v)?,
        "api.enabled" => api.enabled = v.boolean()?,
        "api.http.host" => api.host = v.string()?,
        "api.http.port" => api.port = v.port_range()?,
        "api.environment" => api.environment = v.string()?,
        "api.auth.type" => api.auth_type = v.one_of(&["none", "basic"])?,
        "api.auth.basic.username" => api.auth_basic_username = v.string()?,
        "api.auth.basic.password" => api.auth_basic_password = v.string()?,
        "api.auth.basic.password_policy.mode" => {
            api.password_policy.mode = v.one_of(&["WARN", "ERROR"])?
        }
        "api.auth.basic.password_policy.length.minimum" => {
            api.password_policy.length_minimum = v.uint()?
        }
        "api.auth.basic.password_policy.include.upper" => {
            api.password_policy.include_upper = v.one_of(REQUIRED_OPTIONAL)?
        }
        "api.auth.basic.password_policy.include.lower" => {
            api.password_policy.include_lower = v.one_of(REQUIRED_OPTIONAL)?
        }
        "api.auth.basic.password_policy.include.digit" => {
            api.password_policy.include_digit = v.one_of(REQUIRED_OPTIONAL)?
        }
        "api.auth.basic.password_policy.include.symbol" => {
            api.password_policy.include_symbol = v.one_of(REQUIRED_OPTIONAL)?
        }
        "api.ssl.enabled" => api.ssl_enabled = v.boolean()?,
        "api.ssl.keystore.path" => api.ssl_keystore_path = v.path()?,
        "api.ssl.keystore.password" => api.ssl_keystore_password = v.string()?,
        "api.ssl.supported_protocols" => {
            api.ssl_supported_protocols = v.string_list(TLS_PROTOCOLS)?
        }
        _ => unreachable!("settings_keys() lists a key that apply_setting does not handle: {key}"),
    }
    Ok(())
}

/// A string that must not be empty (`pipeline.id`).
pub(crate) fn non_empty(v: &Val<'_>) -> Result<Option<String>, SettingsError> {
    v.get("a non-empty string", |t, _| {
        if t.is_empty() {
            Err(None)
        } else {
            Ok(t.to_string())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_key_is_handled() {
        // A null value leaves each setting unset, but goes through apply_setting's match,
        // which panics for a listed key it does not handle.
        for key in settings_keys() {
            let text = format!("{key}: ~\n");
            let s = parse_settings_with("t", &text, &|_| None).unwrap();
            assert_eq!(s.node_name, None, "{key}");
        }
    }

    #[test]
    fn levenshtein_distances() {
        assert_eq!(levenshtein("queue.typ", "queue.type"), 1);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
    }
}

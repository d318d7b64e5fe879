//! The keys settings files accept: per pipeline ([`PIPELINE_SCOPED_KEYS`], shared with
//! `pipelines.yml`), process-wide, deprecated aliases, and the Logstash keys sluice refuses;
//! unknown keys get a "did you mean" suggestion.

use crate::error::SettingsError;

use super::values::Entry;

// ---------------------------------------------------------------------------------------
// Keys.

/// Keys a pipeline may set for itself in `pipelines.yml` as well as in `sluice.yml` (those
/// [`apply_pipeline_key`] handles).
pub(crate) const PIPELINE_SCOPED_KEYS: &[&str] = &[
    "pipeline.workers",
    "pipeline.batch.size",
    "pipeline.batch.delay",
    "pipeline.ordered",
    "pipeline.ecs_compatibility",
    "pipeline.unsafe_shutdown",
    "pipeline.lineage",
    "pipeline.batch.metrics.sampling_mode",
    "pipeline.recoverable",
    "pipeline.batch.output_chunking.growth_threshold_factor",
    "pipeline.output_lanes",
    "queue.type",
    "path.queue",
    "queue.page_capacity",
    "queue.max_events",
    "queue.max_bytes",
    "queue.checkpoint.acks",
    "queue.checkpoint.writes",
    "queue.checkpoint.retry",
    "queue.checkpoint.interval",
    "queue.compression",
    "queue.drain",
    "dead_letter_queue.enable",
    "path.dead_letter_queue",
    "dead_letter_queue.max_bytes",
    "dead_letter_queue.storage_policy",
    "dead_letter_queue.flush_interval",
    "dead_letter_queue.flush_check_interval",
    "dead_letter_queue.retain.age",
];

/// Keys only `sluice.yml` takes (`pipeline.id` names the single pipeline there).
pub(super) const PROCESS_KEYS: &[&str] = &[
    "node.name",
    "path.data",
    "path.logs",
    "path.config",
    "config.string",
    "config.support_escapes",
    "config.reload.automatic",
    "config.reload.interval",
    "config.test_and_exit",
    "ssl.reload.automatic",
    "ssl.reload.interval",
    "otel.metrics.enabled",
    "log.level",
    "log.format",
    "allow_superuser",
    "pipeline.id",
    "api.enabled",
    "api.http.host",
    "api.http.port",
    "api.environment",
    "api.auth.type",
    "api.auth.basic.username",
    "api.auth.basic.password",
    "api.auth.basic.password_policy.mode",
    "api.auth.basic.password_policy.length.minimum",
    "api.auth.basic.password_policy.include.upper",
    "api.auth.basic.password_policy.include.lower",
    "api.auth.basic.password_policy.include.digit",
    "api.auth.basic.password_policy.include.symbol",
    "api.ssl.enabled",
    "api.ssl.keystore.path",
    "api.ssl.keystore.password",
    "api.ssl.supported_protocols",
];

/// Every key accepted in `sluice.yml` (aliases aside).
pub(crate) fn settings_keys() -> &'static [&'static str] {
    static ALL: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        PROCESS_KEYS
            .iter()
            .chain(PIPELINE_SCOPED_KEYS)
            .copied()
            .collect()
    });
    &ALL
}

/// Deprecated names Logstash still accepted (until 9.0) → the current key.
pub(super) const ALIASES: &[(&str, &str)] = &[
    ("http.enabled", "api.enabled"),
    ("http.host", "api.http.host"),
    ("http.port", "api.http.port"),
    ("http.environment", "api.environment"),
];

/// Logstash settings sluice does not implement: an exact key, or a prefix ending in `.`;
/// with why, when there is more to say.
pub(super) const LOGSTASH_ONLY: &[(&str, &str)] = &[
    (
        "xpack.",
        "X-Pack monitoring/management are not part of sluice",
    ),
    ("modules", "Logstash modules are not supported"),
    ("modules.", "Logstash modules are not supported"),
    (
        "cloud.id",
        "configure the elasticsearch output's hosts directly",
    ),
    (
        "cloud.auth",
        "configure the elasticsearch output's credentials directly",
    ),
    ("path.plugins", "sluice's plugins are built in"),
    (
        "path.settings",
        "it can only be given on the command line (--path.settings)",
    ),
    ("pipeline.plugin_classloaders", "sluice has no Java plugins"),
    ("pipeline.separate_logs", ""),
    ("pipeline.reloadable", ""),
    ("pipeline.system", ""),

    ("pipeline.buffer.type", "it is a JVM memory setting"),
    ("config.debug", ""),
    ("config.field_reference.escape_style", ""),
    ("metric.collect", "sluice always collects metrics"),
    ("slowlog.", ""),
    (
        "keystore.",
        "use environment variables and ${VAR} instead of the Logstash keystore",
    ),
    ("monitoring.", ""),
    (
        "otel.",
        "exporting sluice's metrics over OTLP is not implemented yet; read them from /metrics (Prometheus) or the monitoring API",
    ),
    ("log.format.json.", ""),
    ("interactive", "it is a command-line flag"),
    ("version", "it is a command-line flag"),
    ("help", "it is a command-line flag"),
    (
        "enable-local-plugin-development",
        "it is a command-line flag",
    ),
];

/// `Some(reason)` if `key` is a Logstash setting that sluice does not support.
pub(crate) fn logstash_only(key: &str) -> Option<&'static str> {
    LOGSTASH_ONLY
        .iter()
        .find(|(k, _)| {
            if k.ends_with('.') {
                key.starts_with(k)
            } else {
                key == *k
            }
        })
        .map(|(_, reason)| *reason)
}

/// Whether `key.` starts some accepted or Logstash key (so `key:` with a null value is an
/// empty group, e.g. with every sub-key commented out).
pub(super) fn is_key_prefix(key: &str) -> bool {
    let under =
        |k: &str| k.len() > key.len() && k.starts_with(key) && k.as_bytes()[key.len()] == b'.';
    settings_keys().iter().any(|k| under(k)) || LOGSTASH_ONLY.iter().any(|(k, _)| under(k))
}

/// The error for a key that is not in `accepted`.
pub(crate) fn unknown_key(
    source_name: &str,
    entry: &Entry<'_>,
    accepted: &[&str],
    file: &str,
) -> SettingsError {
    let key = entry.key.as_str();
    let message = if let Some(reason) = logstash_only(key) {
        let mut m = format!("`{key}` is a Logstash setting that sluice does not support");
        if !reason.is_empty() {
            m.push_str(" (");
            m.push_str(reason);
            m.push(')');
        }
        m.push_str("; remove it");
        m
    } else {
        let mut m = format!("unknown setting `{key}` in {file}");
        if let Some(s) = suggest(key, accepted) {
            m.push_str(&format!("; did you mean `{s}`?"));
        }
        m
    };
    SettingsError::new(source_name, entry.key_pos, message)
}

/// The closest accepted key, if close enough to be a typo.
pub(super) fn suggest<'k>(key: &str, accepted: &[&'k str]) -> Option<&'k str> {
    let best = accepted
        .iter()
        .map(|k| (levenshtein(key, k), *k))
        .min_by_key(|(d, _)| *d)?;
    let limit = (key.chars().count() / 4).clamp(1, 3);
    (best.0 <= limit).then_some(best.1)
}

pub(super) fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            let next = (row[j + 1] + 1).min(row[j] + 1).min(prev + cost);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

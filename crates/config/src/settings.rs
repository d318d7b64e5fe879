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
//! | `pipeline.unsafe_shutdown` | [`PipelineOverrides::unsafe_shutdown`] | boolean |
//! | `pipeline.ecs_compatibility` | [`PipelineOverrides::ecs_compatibility`] | `disabled` `v1` `v8` |
//! | `queue.type` | [`QueueOverrides::queue_type`] | `memory` `persisted` |
//! | `path.queue` | [`QueueOverrides::path`] | path |
//! | `queue.page_capacity`, `queue.max_bytes` | [`QueueOverrides`] | size ([`parse_size`]) |
//! | `queue.max_events`, `queue.checkpoint.acks`, `queue.checkpoint.writes` | [`QueueOverrides`] | non-negative integer |
//! | `queue.checkpoint.retry`, `queue.drain` | [`QueueOverrides`] | boolean |
//! | `queue.checkpoint.interval` | — | integer; accepted with a warning: it has no effect (Logstash is removing it) |
//! | `queue.compression` | — | only `none` or `disabled` (sluice's queue does not compress) |
//! | `dead_letter_queue.enable` | [`DlqOverrides::enable`] | boolean |
//! | `path.dead_letter_queue` | [`DlqOverrides::path`] | path |
//! | `dead_letter_queue.max_bytes` | [`DlqOverrides::max_bytes`] | size |
//! | `dead_letter_queue.storage_policy` | [`DlqOverrides::storage_policy`] | `drop_newer` `drop_older` |
//! | `dead_letter_queue.flush_interval` | [`DlqOverrides::flush_interval`] | number of milliseconds |
//! | `dead_letter_queue.retain.age` | [`DlqOverrides::retain_age`] | time value (`7d`, `12h`) |
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
//! `pipeline.system`, `pipeline.recoverable`, `pipeline.batch.output_chunking.*`,
//! `pipeline.batch.metrics.*`, `pipeline.buffer.type`, `config.debug`,
//! `config.field_reference.escape_style`, `metric.collect`, `slowlog.*`, `keystore.*`,
//! `monitoring.*`, `otel.*`, `ssl.reload.automatic`, `log.format.json.*`, and the
//! command-line-only `interactive`, `version`, `help`, `enable-local-plugin-development`.
//! Any other key is an unknown setting, with a "did you mean" suggestion when one is close.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::yaml::{self, Kind, Node, Pos};

/// A settings or pipelines file error at `source_name:line:column` (1-based). `line` is 0
/// when the error is about the whole file (e.g. it cannot be read); then the position is left
/// out of the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    pub source_name: String,
    pub line: u32,
    pub column: u32,
    pub message: String,
}

impl SettingsError {
    pub(crate) fn new(source_name: &str, pos: Pos, message: impl Into<String>) -> SettingsError {
        SettingsError {
            source_name: source_name.to_string(),
            line: pos.line,
            column: pos.column,
            message: message.into(),
        }
    }

    /// An error about a whole file (no position).
    pub(crate) fn file(source_name: &str, message: impl Into<String>) -> SettingsError {
        SettingsError::new(source_name, Pos::default(), message)
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.source_name, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.source_name, self.line, self.column, self.message
            )
        }
    }
}

impl std::error::Error for SettingsError {}

/// `queue.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum QueueType {
    #[default]
    Memory,
    Persisted,
}

impl QueueType {
    /// The name used in settings files: `memory` or `persisted`.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueType::Memory => "memory",
            QueueType::Persisted => "persisted",
        }
    }
}

impl fmt::Display for QueueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `api.http.port`: one port (`first == last`) or a range to try in order, both ends
/// included, within 1..=65535.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    pub first: u16,
    pub last: u16,
}

impl PortRange {
    /// Logstash's default, 9600-9700.
    pub const DEFAULT: PortRange = PortRange {
        first: 9600,
        last: 9700,
    };

    /// The ports in order.
    pub fn ports(self) -> std::ops::RangeInclusive<u16> {
        self.first..=self.last
    }
}

impl Default for PortRange {
    fn default() -> Self {
        PortRange::DEFAULT
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{}", self.first)
        } else {
            write!(f, "{}-{}", self.first, self.last)
        }
    }
}

/// `pipeline.*` settings that a pipeline may override (in `pipelines.yml`) or that set the
/// defaults for every pipeline (in `sluice.yml`). `None` = not set here.
#[derive(Default, Clone, Debug, PartialEq)]
pub struct PipelineOverrides {
    /// `pipeline.workers` (Logstash's default: the number of CPU cores).
    pub workers: Option<usize>,
    /// `pipeline.batch.size` (default 125).
    pub batch_size: Option<usize>,
    /// `pipeline.batch.delay`, written in milliseconds (default 50).
    pub batch_delay: Option<Duration>,
    /// `pipeline.ordered`: `auto`, `true` or `false` (default `auto`).
    pub ordered: Option<String>,
    /// `pipeline.ecs_compatibility`: `disabled`, `v1` or `v8` (default `v8`).
    pub ecs_compatibility: Option<String>,
    /// `pipeline.unsafe_shutdown` (default false): when a stop stalls on an output that does
    /// not return, exit anyway after the stall reports, losing what a memory queue holds.
    pub unsafe_shutdown: Option<bool>,
}

impl PipelineOverrides {
    /// These overrides on top of `base`: each field set here wins, the others come from
    /// `base` (e.g. a `pipelines.yml` entry over `sluice.yml`).
    pub fn or(&self, base: &PipelineOverrides) -> PipelineOverrides {
        PipelineOverrides {
            workers: self.workers.or(base.workers),
            batch_size: self.batch_size.or(base.batch_size),
            batch_delay: self.batch_delay.or(base.batch_delay),
            ordered: self.ordered.clone().or_else(|| base.ordered.clone()),
            ecs_compatibility: self
                .ecs_compatibility
                .clone()
                .or_else(|| base.ecs_compatibility.clone()),
            unsafe_shutdown: self.unsafe_shutdown.or(base.unsafe_shutdown),
        }
    }
}

/// `queue.*` and `path.queue` as written in a settings file. `None` = not set here.
#[derive(Default, Clone, Debug, PartialEq)]
pub struct QueueOverrides {
    pub queue_type: Option<QueueType>,
    /// `path.queue`.
    pub path: Option<PathBuf>,
    pub page_capacity: Option<u64>,
    pub max_events: Option<u64>,
    pub max_bytes: Option<u64>,
    /// `queue.checkpoint.acks`.
    pub checkpoint_acks: Option<u64>,
    /// `queue.checkpoint.writes`.
    pub checkpoint_writes: Option<u64>,
    /// `queue.checkpoint.retry`.
    pub checkpoint_retry: Option<bool>,
    pub drain: Option<bool>,
}

impl QueueOverrides {
    /// These overrides on top of `base`.
    pub fn resolve(&self, base: &QueueSettings) -> QueueSettings {
        QueueSettings {
            queue_type: self.queue_type.unwrap_or(base.queue_type),
            path: self.path.clone().or_else(|| base.path.clone()),
            page_capacity: self.page_capacity.unwrap_or(base.page_capacity),
            max_events: self.max_events.unwrap_or(base.max_events),
            max_bytes: self.max_bytes.unwrap_or(base.max_bytes),
            checkpoint_acks: self.checkpoint_acks.unwrap_or(base.checkpoint_acks),
            checkpoint_writes: self.checkpoint_writes.unwrap_or(base.checkpoint_writes),
            checkpoint_retry: self.checkpoint_retry.unwrap_or(base.checkpoint_retry),
            drain: self.drain.unwrap_or(base.drain),
        }
    }
}

/// `dead_letter_queue.*` and `path.dead_letter_queue` as written in a settings file.
/// `None` = not set here.
#[derive(Default, Clone, Debug, PartialEq)]
pub struct DlqOverrides {
    pub enable: Option<bool>,
    /// `path.dead_letter_queue`.
    pub path: Option<PathBuf>,
    pub max_bytes: Option<u64>,
    /// `drop_newer` or `drop_older`.
    pub storage_policy: Option<String>,
    pub flush_interval: Option<Duration>,
    /// `dead_letter_queue.retain.age`.
    pub retain_age: Option<Duration>,
}

impl DlqOverrides {
    /// These overrides on top of `base`.
    pub fn resolve(&self, base: &DlqSettings) -> DlqSettings {
        DlqSettings {
            enable: self.enable.unwrap_or(base.enable),
            path: self.path.clone().or_else(|| base.path.clone()),
            max_bytes: self.max_bytes.unwrap_or(base.max_bytes),
            storage_policy: (self.storage_policy.clone())
                .unwrap_or_else(|| base.storage_policy.clone()),
            flush_interval: self.flush_interval.unwrap_or(base.flush_interval),
            retain_age: self.retain_age.or(base.retain_age),
        }
    }
}

/// Resolved dead letter queue settings; [`Default`] gives Logstash's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DlqSettings {
    /// Default false.
    pub enable: bool,
    /// `path.dead_letter_queue`; Logstash's default is `<path.data>/dead_letter_queue` (see
    /// [`Settings::dlq_settings`]), and each pipeline's DLQ lives in `<path>/<pipeline.id>`.
    pub path: Option<PathBuf>,
    /// Default 1024mb.
    pub max_bytes: u64,
    /// `drop_newer` (default) or `drop_older`.
    pub storage_policy: String,
    /// Default 5000 ms.
    pub flush_interval: Duration,
    /// Default: none (entries are kept until consumed or dropped).
    pub retain_age: Option<Duration>,
}

impl Default for DlqSettings {
    fn default() -> Self {
        DlqSettings {
            enable: false,
            path: None,
            max_bytes: 1024 << 20,
            storage_policy: "drop_newer".to_owned(),
            flush_interval: Duration::from_millis(5000),
            retain_age: None,
        }
    }
}

/// Resolved queue settings; [`Default`] gives Logstash's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueSettings {
    pub queue_type: QueueType,
    /// `path.queue`; Logstash's default is `<path.data>/queue` (see
    /// [`Settings::queue_settings`]), and each pipeline's queue lives in
    /// `<path.queue>/<pipeline.id>`.
    pub path: Option<PathBuf>,
    /// Default 64mb.
    pub page_capacity: u64,
    /// Default 0 = unlimited.
    pub max_events: u64,
    /// Default 1024mb.
    pub max_bytes: u64,
    /// Default 1024.
    pub checkpoint_acks: u64,
    /// Default 1024; 1 = every write is durable before `push` returns.
    pub checkpoint_writes: u64,
    /// Default true.
    pub checkpoint_retry: bool,
    /// Default false.
    pub drain: bool,
}

impl Default for QueueSettings {
    fn default() -> Self {
        QueueSettings {
            queue_type: QueueType::Memory,
            path: None,
            page_capacity: 64 << 20,
            max_events: 0,
            max_bytes: 1024 << 20,
            checkpoint_acks: 1024,
            checkpoint_writes: 1024,
            checkpoint_retry: true,
            drain: false,
        }
    }
}

/// `api.auth.basic.password_policy.*`.
#[derive(Default, Clone, Debug, PartialEq, Eq)]
pub struct PasswordPolicy {
    /// `mode`: `WARN` (default) or `ERROR`.
    pub mode: Option<String>,
    /// `length.minimum` (default 8).
    pub length_minimum: Option<u64>,
    /// `include.upper` etc.: `REQUIRED` or `OPTIONAL` (Logstash's defaults: upper, lower and
    /// digit required, symbol optional).
    pub include_upper: Option<String>,
    pub include_lower: Option<String>,
    pub include_digit: Option<String>,
    pub include_symbol: Option<String>,
}

/// `api.*`: the monitoring API. (`Debug` hides the passwords.)
#[derive(Default, Clone, PartialEq)]
pub struct ApiSettings {
    /// `api.enabled` (default true).
    pub enabled: Option<bool>,
    /// `api.http.host` (default 127.0.0.1).
    pub host: Option<String>,
    /// `api.http.port` (default 9600-9700).
    pub port: Option<PortRange>,
    /// `api.environment` (default `production`).
    pub environment: Option<String>,
    /// `api.auth.type`: `none` (default) or `basic`.
    pub auth_type: Option<String>,
    pub auth_basic_username: Option<String>,
    pub auth_basic_password: Option<String>,
    pub password_policy: PasswordPolicy,
    /// `api.ssl.enabled` (default false).
    pub ssl_enabled: Option<bool>,
    pub ssl_keystore_path: Option<PathBuf>,
    pub ssl_keystore_password: Option<String>,
    /// `api.ssl.supported_protocols`.
    pub ssl_supported_protocols: Option<Vec<String>>,
}

impl fmt::Debug for ApiSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hide = |p: &Option<String>| p.as_ref().map(|_| "<password>");
        f.debug_struct("ApiSettings")
            .field("enabled", &self.enabled)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("environment", &self.environment)
            .field("auth_type", &self.auth_type)
            .field("auth_basic_username", &self.auth_basic_username)
            .field("auth_basic_password", &hide(&self.auth_basic_password))
            .field("password_policy", &self.password_policy)
            .field("ssl_enabled", &self.ssl_enabled)
            .field("ssl_keystore_path", &self.ssl_keystore_path)
            .field("ssl_keystore_password", &hide(&self.ssl_keystore_password))
            .field("ssl_supported_protocols", &self.ssl_supported_protocols)
            .finish()
    }
}

/// The contents of `sluice.yml` / `logstash.yml`. `None` = not set in the file (the caller
/// applies command-line flags over these, then Logstash's defaults).
#[derive(Default, Clone, Debug, PartialEq)]
pub struct Settings {
    pub node_name: Option<String>,
    /// `path.data`.
    pub path_data: Option<PathBuf>,
    /// `path.logs`.
    pub path_logs: Option<PathBuf>,
    /// `path.config`.
    pub path_config: Option<String>,
    /// `config.string`.
    pub config_string: Option<String>,
    pub config_support_escapes: Option<bool>,
    pub config_reload_automatic: Option<bool>,
    pub config_reload_interval: Option<Duration>,
    pub config_test_and_exit: Option<bool>,
    /// `log.level`: `fatal`, `error`, `warn`, `info`, `debug` or `trace`.
    pub log_level: Option<String>,
    /// `log.format`: `plain` or `json`.
    pub log_format: Option<String>,
    pub allow_superuser: Option<bool>,
    /// `pipeline.id` (Logstash's default: `main`).
    pub pipeline_id: Option<String>,
    pub pipeline: PipelineOverrides,
    pub queue: QueueOverrides,
    pub dlq: DlqOverrides,
    pub api: ApiSettings,
    /// Things worth a log line that are not errors (deprecated aliases, settings that have no
    /// effect), each as `file:line:column: message`.
    pub warnings: Vec<String>,
}

impl Settings {
    /// The queue settings for the process: `queue.*` over Logstash's defaults, with
    /// `path.queue` defaulting to `<path.data>/queue` when `path.data` is set.
    pub fn queue_settings(&self) -> QueueSettings {
        let mut q = self.queue.resolve(&QueueSettings::default());
        if q.path.is_none() {
            q.path = self.path_data.as_ref().map(|d| d.join("queue"));
        }
        q
    }

    /// The dead letter queue settings for the process: `dead_letter_queue.*` over Logstash's
    /// defaults, with `path.dead_letter_queue` defaulting to `<path.data>/dead_letter_queue`
    /// when `path.data` is set.
    pub fn dlq_settings(&self) -> DlqSettings {
        let mut d = self.dlq.resolve(&DlqSettings::default());
        if d.path.is_none() {
            d.path = self.path_data.as_ref().map(|p| p.join("dead_letter_queue"));
        }
        d
    }
}

type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

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
        Ok(text) => Ok(Some((path.to_path_buf(), text))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SettingsError::file(
            &path.display().to_string(),
            format!("cannot read: {e}"),
        )),
    }
}

/// Parses a byte size as Logstash's `ByteValue`: a number, optionally with a fraction,
/// then an optional unit `b`, `k`/`kb`, `m`/`mb`, `g`/`gb`, `t`/`tb` or `p`/`pb` (powers of
/// 1024, any case, spaces allowed around). No unit means bytes. A fractional result is
/// truncated (`1.5kb` = 1536, `0.5b` = 0).
pub fn parse_size(text: &str) -> Result<u64, String> {
    const UNITS: &str = "b, kb, mb, gb, tb or pb";
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let unit = unit.trim_start();
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let malformed = (int.is_empty() && frac.is_empty()) || frac.contains('.');
    if malformed {
        return Err(format!(
            "`{text}` is not a size: expected a number with an optional unit ({UNITS}), e.g. `64mb`"
        ));
    }
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" => 10,
        "m" | "mb" => 20,
        "g" | "gb" => 30,
        "t" | "tb" => 40,
        "p" | "pb" => 50,
        _ => {
            return Err(format!(
                "unknown size unit `{unit}` in `{text}` (use {UNITS})"
            ))
        }
    };
    let too_large = || format!("`{text}` is too large a size");
    let factor = 1u128 << shift;
    let int_value: u128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| too_large())?
    };
    let mut bytes = int_value.checked_mul(factor).ok_or_else(too_large)?;
    // The fraction's first 20 digits are plenty: more cannot change the truncated result.
    let frac = &frac[..frac.len().min(20)];
    if !frac.is_empty() {
        let numerator: u128 = frac.parse().map_err(|_| too_large())?;
        bytes += numerator * factor / 10u128.pow(frac.len() as u32);
    }
    u64::try_from(bytes).map_err(|_| too_large())
}

/// Parses a Logstash time value: a non-negative integer and a unit `d`, `h`, `m`, `s`, `ms`,
/// `micros` or `nanos` (any case, spaces allowed). Unlike Logstash, which reads a bare
/// integer as nanoseconds (deprecated there), a unit is required.
pub fn parse_time_value(text: &str) -> Result<Duration, String> {
    let t = text.trim().to_ascii_lowercase();
    const S: u64 = 1_000_000_000;
    // Longest suffixes first, so that `ms` is not read as `s`.
    let units: [(&str, u64); 7] = [
        ("nanos", 1),
        ("micros", 1_000),
        ("ms", 1_000_000),
        ("s", S),
        ("m", 60 * S),
        ("h", 3600 * S),
        ("d", 86_400 * S),
    ];
    for (unit, nanos) in units {
        if let Some(number) = t.strip_suffix(unit) {
            let number = number.trim();
            if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
                break;
            }
            return number
                .parse::<u64>()
                .ok()
                .and_then(|n| n.checked_mul(nanos))
                .map(Duration::from_nanos)
                .ok_or_else(|| format!("`{text}` is too long a time"));
        }
    }
    let hint = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        " (a unit is required)"
    } else {
        ""
    };
    Err(format!(
        "`{text}` is not a time value{hint}: expected a number and a unit (d, h, m, s, ms, \
         micros, nanos), e.g. `3s`"
    ))
}

/// Parses `9600` or `9600-9700`.
pub fn parse_port_range(text: &str) -> Result<PortRange, String> {
    let t = text.trim();
    let (a, b) = t.split_once('-').unwrap_or((t, t));
    let port = |s: &str| -> Option<u16> {
        let s = s.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse::<u16>().ok().filter(|p| *p >= 1)
    };
    match (port(a), port(b)) {
        (Some(first), Some(last)) if first <= last => Ok(PortRange { first, last }),
        _ => Err(format!(
            "`{text}` is not a port or port range: expected a port in 1-65535 or a range \
             like `9600-9700`"
        )),
    }
}

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
    "dead_letter_queue.retain.age",
];

/// Keys only `sluice.yml` takes (`pipeline.id` names the single pipeline there).
const PROCESS_KEYS: &[&str] = &[
    "node.name",
    "path.data",
    "path.logs",
    "path.config",
    "config.string",
    "config.support_escapes",
    "config.reload.automatic",
    "config.reload.interval",
    "config.test_and_exit",
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
const ALIASES: &[(&str, &str)] = &[
    ("http.enabled", "api.enabled"),
    ("http.host", "api.http.host"),
    ("http.port", "api.http.port"),
    ("http.environment", "api.environment"),
];

/// Logstash settings sluice does not implement: an exact key, or a prefix ending in `.`;
/// with why, when there is more to say.
const LOGSTASH_ONLY: &[(&str, &str)] = &[
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
    ("pipeline.recoverable", ""),
    ("pipeline.batch.output_chunking.", ""),
    ("pipeline.batch.metrics.", ""),
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
    ("otel.", ""),
    ("ssl.reload.automatic", ""),
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
fn is_key_prefix(key: &str) -> bool {
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
fn suggest<'k>(key: &str, accepted: &[&'k str]) -> Option<&'k str> {
    let best = accepted
        .iter()
        .map(|k| (levenshtein(key, k), *k))
        .min_by_key(|(d, _)| *d)?;
    let limit = (key.chars().count() / 4).clamp(1, 3);
    (best.0 <= limit).then_some(best.1)
}

fn levenshtein(a: &str, b: &str) -> usize {
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

// ---------------------------------------------------------------------------------------
// Flattening nested mappings.

/// One `flat.key: value` of a settings mapping.
pub(crate) struct Entry<'a> {
    pub key: String,
    /// Where the (innermost) key was written.
    pub key_pos: Pos,
    pub value: &'a Node,
    /// False when it came through a merge key (`<<`): explicit keys override it.
    explicit: bool,
}

/// Flattens a mapping's entries: nested mappings become `outer.inner` keys, merge keys are
/// applied, and a key given twice is an error.
pub(crate) fn flatten<'a>(
    source_name: &str,
    entries: &'a [(Node, Node)],
) -> Result<Vec<Entry<'a>>, SettingsError> {
    let mut out = Vec::new();
    flatten_into(source_name, entries, "", true, &mut out)?;
    Ok(out)
}

fn flatten_into<'a>(
    source_name: &str,
    entries: &'a [(Node, Node)],
    prefix: &str,
    explicit: bool,
    out: &mut Vec<Entry<'a>>,
) -> Result<(), SettingsError> {
    let mut merged: Vec<&'a Node> = Vec::new();
    for (k, v) in entries {
        let name = match &k.kind {
            Kind::Scalar { text, .. } => text.as_str(),
            _ => {
                return Err(SettingsError::new(
                    source_name,
                    k.pos,
                    format!(
                        "a setting's name must be a plain string, not {}",
                        k.describe()
                    ),
                ))
            }
        };
        if name == "<<" && matches!(k.kind, Kind::Scalar { plain: true, .. }) {
            match &v.kind {
                Kind::Map(_) => merged.push(v),
                Kind::Seq(items) if items.iter().all(|i| matches!(i.kind, Kind::Map(_))) => {
                    merged.extend(items)
                }
                _ => {
                    return Err(SettingsError::new(
                        source_name,
                        v.pos,
                        "a merge key (`<<`) needs a mapping or a list of mappings",
                    ))
                }
            }
            continue;
        }
        let key = if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}.{name}")
        };
        match &v.kind {
            Kind::Map(inner) => flatten_into(source_name, inner, &key, explicit, out)?,
            _ => push(
                source_name,
                out,
                Entry {
                    key,
                    key_pos: k.pos,
                    value: v,
                    explicit,
                },
            )?,
        }
    }
    // Merged mappings: the first to give a key wins, and explicit keys win over all.
    for m in merged {
        if let Kind::Map(inner) = &m.kind {
            flatten_into(source_name, inner, prefix, false, out)?;
        }
    }
    Ok(())
}

fn push<'a>(
    source_name: &str,
    out: &mut Vec<Entry<'a>>,
    entry: Entry<'a>,
) -> Result<(), SettingsError> {
    match out.iter().position(|e| e.key == entry.key) {
        None => out.push(entry),
        Some(i) if out[i].explicit && entry.explicit => {
            return Err(SettingsError::new(
                source_name,
                entry.key_pos,
                format!(
                    "`{}` is set twice (first at line {}, column {})",
                    entry.key, out[i].key_pos.line, out[i].key_pos.column
                ),
            ))
        }
        Some(i) if entry.explicit => out[i] = entry,
        Some(_) => {} // merged after an explicit or earlier merged value: ignored
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Typed values.

/// One setting's value, with what is needed to report an error at it.
pub(crate) struct Val<'a> {
    pub source_name: &'a str,
    /// The key as written (an alias stays an alias).
    pub key: &'a str,
    pub node: &'a Node,
    pub lookup: Lookup<'a>,
}

/// A value that did not fit; `Some(detail)` replaces the generic "expected ..., got ...".
type Mismatch = Option<String>;

impl Val<'_> {
    fn error(&self, pos: Pos, message: String) -> SettingsError {
        SettingsError::new(self.source_name, pos, message)
    }

    fn mismatch(
        &self,
        node: &Node,
        expected: &str,
        shown: String,
        detail: Mismatch,
    ) -> SettingsError {
        let key = self.key;
        let message = match detail {
            Some(d) => format!("invalid value for `{key}`: {d}"),
            None => format!("invalid value for `{key}`: expected {expected}, got {shown}"),
        };
        self.error(node.pos, message)
    }

    /// A scalar node's text after `${VAR}` substitution, and whether it was a plain
    /// (unquoted, unsubstituted) scalar. `None` for null.
    fn scalar_text(
        &self,
        node: &Node,
        expected: &str,
    ) -> Result<Option<(String, bool)>, SettingsError> {
        match &node.kind {
            Kind::Null => Ok(None),
            Kind::Scalar { text, plain } => {
                if text.contains("${") {
                    let replaced = crate::substitute_vars(text, self.lookup)
                        .map_err(|m| self.error(node.pos, format!("`{}`: {m}", self.key)))?;
                    Ok(Some((replaced, false)))
                } else {
                    Ok(Some((text.clone(), *plain)))
                }
            }
            _ => Err(self.mismatch(node, expected, node.describe(), None)),
        }
    }

    /// Converts the value with `f`, which gets the text and whether it was plain.
    fn get<T>(
        &self,
        expected: &str,
        f: impl FnOnce(&str, bool) -> Result<T, Mismatch>,
    ) -> Result<Option<T>, SettingsError> {
        let Some((text, plain)) = self.scalar_text(self.node, expected)? else {
            return Ok(None);
        };
        f(&text, plain)
            .map(Some)
            .map_err(|d| self.mismatch(self.node, expected, format!("{text:?}"), d))
    }

    pub fn string(&self) -> Result<Option<String>, SettingsError> {
        self.get("a string", |t, _| Ok(t.to_string()))
    }

    pub fn path(&self) -> Result<Option<PathBuf>, SettingsError> {
        self.get("a path", |t, _| {
            if t.is_empty() {
                Err(Some("the path is empty".to_string()))
            } else {
                Ok(PathBuf::from(t))
            }
        })
    }

    pub fn boolean(&self) -> Result<Option<bool>, SettingsError> {
        self.get("true or false", |t, plain| match t {
            "true" => Ok(true),
            "false" => Ok(false),
            _ if plain => match t.to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" => Ok(true),
                "false" | "no" | "off" => Ok(false),
                _ => Err(None),
            },
            _ => Err(None),
        })
    }

    pub fn positive_int(&self) -> Result<Option<usize>, SettingsError> {
        self.get("a positive integer", |t, _| match parse_uint(t) {
            Some(0) => Err(Some("must be greater than 0".to_string())),
            Some(n) => usize::try_from(n).map_err(|_| None),
            None => Err(None),
        })
    }

    pub fn uint(&self) -> Result<Option<u64>, SettingsError> {
        self.get("a non-negative integer", |t, _| parse_uint(t).ok_or(None))
    }

    pub fn size(&self) -> Result<Option<u64>, SettingsError> {
        self.get("a size such as `64mb`", |t, _| parse_size(t).map_err(Some))
    }

    pub fn time_value(&self) -> Result<Option<Duration>, SettingsError> {
        self.get("a time value such as `3s`", |t, _| {
            parse_time_value(t).map_err(Some)
        })
    }

    /// A non-negative number of milliseconds, maybe fractional.
    pub fn millis(&self) -> Result<Option<Duration>, SettingsError> {
        self.get("a number of milliseconds", |t, _| {
            let t = t.trim();
            if let Some(n) = parse_uint(t) {
                return Ok(Duration::from_millis(n));
            }
            let valid = !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.');
            match t.parse::<f64>() {
                Ok(ms) if valid && ms.is_finite() => Ok(Duration::from_secs_f64(ms / 1000.0)),
                _ => Err(None),
            }
        })
    }

    pub fn one_of(&self, options: &[&str]) -> Result<Option<String>, SettingsError> {
        let expected = one_of_text(options);
        self.get(&expected, |t, _| {
            if options.contains(&t) {
                Ok(t.to_string())
            } else {
                Err(None)
            }
        })
    }

    pub fn port_range(&self) -> Result<Option<PortRange>, SettingsError> {
        self.get("a port or port range such as `9600-9700`", |t, _| {
            parse_port_range(t).map_err(Some)
        })
    }

    /// A list of strings from `options` (or one string).
    pub fn string_list(&self, options: &[&str]) -> Result<Option<Vec<String>>, SettingsError> {
        let expected = format!("a list of {}", alternatives(options));
        let items: Vec<&Node> = match &self.node.kind {
            Kind::Null => return Ok(None),
            Kind::Seq(items) => items.iter().collect(),
            _ => vec![self.node],
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match self.scalar_text(item, &expected)? {
                Some((t, _)) if options.contains(&t.as_str()) => out.push(t),
                Some((t, _)) => {
                    return Err(self.mismatch(item, &expected, format!("{t:?}"), None));
                }
                None => return Err(self.mismatch(item, &expected, item.describe(), None)),
            }
        }
        Ok(Some(out))
    }

    /// A warning at the key, as `file:line:column: message`.
    pub fn warning(&self, message: String) -> String {
        self.error(self.node.pos, message).to_string()
    }
}

fn one_of_text(options: &[&str]) -> String {
    if options.len() > 1 {
        format!("one of {}", alternatives(options))
    } else {
        alternatives(options)
    }
}

/// "`a`, `b` or `c`".
fn alternatives(options: &[&str]) -> String {
    let quoted: Vec<String> = options.iter().map(|o| format!("`{o}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

/// A decimal integer (an optional `+`, digits; surrounding spaces allowed).
fn parse_uint(t: &str) -> Option<u64> {
    let t = t.trim();
    let digits = t.strip_prefix('+').unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

const LOG_LEVELS: &[&str] = &["fatal", "error", "warn", "info", "debug", "trace"];
const ORDERED: &[&str] = &["auto", "true", "false"];
const ECS: &[&str] = &["disabled", "v1", "v8"];
const REQUIRED_OPTIONAL: &[&str] = &["REQUIRED", "OPTIONAL"];
const TLS_PROTOCOLS: &[&str] = &["TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"];

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
        "queue.checkpoint.interval" => {
            if v.uint()?.is_some() {
                warnings.push(v.warning(
                    "`queue.checkpoint.interval` has no effect in sluice (Logstash is removing \
                     it); ignored"
                        .to_string(),
                ));
            }
        }
        "queue.compression" => {
            v.get(
                "`none` (sluice's persisted queue does not compress)",
                |t, _| {
                    if t == "none" || t == "disabled" {
                        Ok(())
                    } else {
                        Err(Some(format!(
                            "sluice's persisted queue does not compress: only `none` (or \
                         `disabled`) is accepted, got {t:?}"
                        )))
                    }
                },
            )?;
        }
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

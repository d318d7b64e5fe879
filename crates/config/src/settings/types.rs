//! The settings types: what `sluice.yml` (and, per pipeline, `pipelines.yml`) configure, with
//! Logstash's defaults.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

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
    /// `pipeline.lineage` (default false): each event carries `[@metadata][lineage]`, the
    /// `pipeline/plugin` ids it passed.
    pub lineage: Option<bool>,
    /// `pipeline.batch.metrics.sampling_mode`: `disabled`, `minimal` or `full` (default
    /// `minimal`).
    pub batch_metrics: Option<String>,
    /// `pipeline.recoverable`: `false` (default), `auto` (with a persisted queue) or `true`:
    /// a pipeline whose input or worker crashed is started again.
    pub recoverable: Option<String>,
    /// `pipeline.batch.output_chunking.growth_threshold_factor` (default 1000): a batch the
    /// filters grew past this many times `pipeline.batch.size` reaches the outputs in chunks
    /// of `pipeline.batch.size`.
    pub output_chunking_growth_threshold_factor: Option<usize>,
    /// `pipeline.output_lanes` (sluice's own): `none` (default), `persisted` or `memory`: every
    /// output without a `lane` option gets one of that type.
    pub output_lanes: Option<String>,
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
            lineage: self.lineage.or(base.lineage),
            batch_metrics: (self.batch_metrics.clone()).or_else(|| base.batch_metrics.clone()),
            recoverable: (self.recoverable.clone()).or_else(|| base.recoverable.clone()),
            output_lanes: (self.output_lanes.clone()).or_else(|| base.output_lanes.clone()),
            output_chunking_growth_threshold_factor: self
                .output_chunking_growth_threshold_factor
                .or(base.output_chunking_growth_threshold_factor),
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
    /// `queue.compression`: one of [`super::QUEUE_COMPRESSION`].
    pub compression: Option<String>,
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
            compression: self
                .compression
                .clone()
                .unwrap_or_else(|| base.compression.clone()),
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
    /// `dead_letter_queue.flush_check_interval`.
    pub flush_check_interval: Option<Duration>,
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
            flush_check_interval: (self.flush_check_interval).unwrap_or(base.flush_check_interval),
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
    /// How often the flusher looks for a segment to seal or sync (default 1000 ms, at least
    /// 1000 and at most `flush_interval`).
    pub flush_check_interval: Duration,
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
            flush_check_interval: Duration::from_millis(1000),
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
    /// `queue.compression`, default `none`: one of [`super::QUEUE_COMPRESSION`].
    pub compression: String,
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
            compression: "none".to_owned(),
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
    /// `ssl.reload.automatic`: TLS servers and clients pick up rotated certificate and key
    /// files (checked every `ssl.reload.interval`, default 5 s) without a restart.
    pub ssl_reload_automatic: Option<bool>,
    pub ssl_reload_interval: Option<Duration>,
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

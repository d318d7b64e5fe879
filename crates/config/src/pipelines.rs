//! `pipelines.yml`: a YAML list with one mapping per pipeline, as in Logstash:
//!
//! ```yaml
//! - pipeline.id: apache
//!   path.config: "/etc/sluice/apache.conf"
//!   queue.type: persisted
//! - pipeline.id: test
//!   config.string: "input { generator {} } output { null {} }"
//!   pipeline.workers: 1
//! ```
//!
//! Each pipeline needs a non-empty `pipeline.id`, unique in the file, and exactly one of
//! `path.config` / `config.string`. Keys are written and checked as in `sluice.yml` (see
//! [`crate::settings`]: flat or nested, `${VAR}` substitution, typed values). Accepted per
//! pipeline: `pipeline.id`, `path.config`, `config.string`, `config.support_escapes`,
//! `pipeline.workers`, `pipeline.batch.size`, `pipeline.batch.delay`, `pipeline.ordered`,
//! `pipeline.ecs_compatibility`, `pipeline.unsafe_shutdown`, `pipeline.batch.metrics.sampling_mode`, `queue.type`, `path.queue`, `queue.page_capacity`,
//! `queue.max_events`, `queue.max_bytes`, `queue.checkpoint.acks`,
//! `queue.checkpoint.writes`, `queue.checkpoint.retry`, `queue.drain`,
//! `dead_letter_queue.enable`, `path.dead_letter_queue`, `dead_letter_queue.max_bytes`,
//! `dead_letter_queue.storage_policy`, `dead_letter_queue.flush_interval`,
//! `dead_letter_queue.retain.age`, `queue.compression`, and (as in `sluice.yml`)
//! `queue.checkpoint.interval` (no effect, warned). `config.reload.automatic` / `config.reload.interval` are ignored with a
//! warning, as Logstash deprecates them per pipeline. Process-wide settings (`node.name`,
//! `api.*`, ...) are errors here, as are Logstash per-pipeline settings sluice does not
//! support (`pipeline.reloadable`, ...), and unknown keys.

use std::collections::HashMap;
use std::path::Path;

use crate::settings::{
    apply_pipeline_key, flatten, logstash_only, non_empty, read_optional, settings_keys,
    unknown_key, DlqOverrides, DlqSettings, PipelineOverrides, QueueOverrides, QueueSettings,
    Settings, SettingsError, Val, PIPELINE_SCOPED_KEYS,
};
use crate::yaml::{self, Kind, Node};

/// One pipeline of `pipelines.yml`. Unset fields fall back to `sluice.yml`'s (see
/// [`PipelineEntry::pipeline_settings`] and [`PipelineEntry::queue_settings`]).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PipelineEntry {
    /// `pipeline.id`.
    pub id: String,
    /// `path.config` (exactly one of this and `config_string` is set).
    pub path_config: Option<String>,
    /// `config.string`.
    pub config_string: Option<String>,
    pub pipeline: PipelineOverrides,
    pub queue: QueueOverrides,
    pub dlq: DlqOverrides,
    pub config_support_escapes: Option<bool>,
    /// The line where the pipeline's mapping starts (1-based).
    pub line: u32,
    /// Warnings for this pipeline, as `file:line:column: message`.
    pub warnings: Vec<String>,
}

impl PipelineEntry {
    /// This pipeline's `pipeline.*` settings over `settings`' (from `sluice.yml`).
    pub fn pipeline_settings(&self, settings: &Settings) -> PipelineOverrides {
        self.pipeline.or(&settings.pipeline)
    }

    /// This pipeline's queue settings over `settings`' (from `sluice.yml`), over Logstash's
    /// defaults. `path` is the queue root (`path.queue`); the pipeline's own queue goes in
    /// `<path>/<id>`, as Logstash's.
    pub fn queue_settings(&self, settings: &Settings) -> QueueSettings {
        self.queue.resolve(&settings.queue_settings())
    }

    /// This pipeline's dead letter queue settings over `settings`' (from `sluice.yml`), over
    /// Logstash's defaults. `path` is the root; the pipeline's DLQ goes in `<path>/<id>`.
    pub fn dlq_settings(&self, settings: &Settings) -> DlqSettings {
        self.dlq.resolve(&settings.dlq_settings())
    }

    /// `config.support_escapes` for this pipeline, falling back to `settings`'.
    pub fn support_escapes(&self, settings: &Settings) -> bool {
        self.config_support_escapes
            .or(settings.config_support_escapes)
            .unwrap_or(false)
    }
}

/// Keys accepted in a `pipelines.yml` entry: its own, and those it may set as `sluice.yml`
/// does.
fn pipeline_keys() -> &'static [&'static str] {
    static ALL: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        [
            "pipeline.id",
            "path.config",
            "config.string",
            "config.support_escapes",
        ]
        .iter()
        .chain(PIPELINE_SCOPED_KEYS)
        .copied()
        .collect()
    });
    &ALL
}

/// Logstash accepts these per pipeline with a deprecation warning, and drops them.
const DEPRECATED_PER_PIPELINE: &[&str] = &["config.reload.automatic", "config.reload.interval"];

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Parses `pipelines.yml`'s text; `${VAR}` come from the process environment.
pub fn parse_pipelines(source_name: &str, text: &str) -> Result<Vec<PipelineEntry>, SettingsError> {
    parse_pipelines_with(source_name, text, &env_lookup)
}

/// [`parse_pipelines`] with `${VAR}` looked up by `lookup`.
pub fn parse_pipelines_with(
    source_name: &str,
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<PipelineEntry>, SettingsError> {
    let doc = yaml::parse(source_name, text)?;
    let items = match doc.as_ref().map(|d| &d.kind) {
        None | Some(Kind::Null) => {
            return Err(SettingsError::file(
                source_name,
                "defines no pipeline: expected a list of pipelines (`- pipeline.id: main`)",
            ))
        }
        Some(Kind::Seq(items)) => items,
        Some(_) => {
            let doc = doc.as_ref().expect("matched Some");
            return Err(SettingsError::new(
                source_name,
                doc.pos,
                format!(
                    "expected a list of pipelines (`- pipeline.id: main`), not {}",
                    doc.describe()
                ),
            ));
        }
    };
    if items.is_empty() {
        let pos = doc.as_ref().map(|d| d.pos).unwrap_or_default();
        return Err(SettingsError::new(source_name, pos, "defines no pipeline"));
    }
    let mut out: Vec<PipelineEntry> = Vec::with_capacity(items.len());
    let mut ids: HashMap<String, u32> = HashMap::new();
    for item in items {
        let (entry, id_node) = pipeline(source_name, item, lookup)?;
        if let Some(first) = ids.insert(entry.id.clone(), entry.line) {
            return Err(SettingsError::new(
                source_name,
                id_node.pos,
                format!(
                    "duplicate pipeline id `{}` (first defined at line {first})",
                    entry.id
                ),
            ));
        }
        out.push(entry);
    }
    Ok(out)
}

/// One list item; also returns the `pipeline.id` value's node (for duplicate errors).
fn pipeline<'a>(
    source_name: &str,
    item: &'a Node,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(PipelineEntry, &'a Node), SettingsError> {
    let Kind::Map(map) = &item.kind else {
        return Err(SettingsError::new(
            source_name,
            item.pos,
            format!(
                "each pipeline must be a mapping of settings (`- pipeline.id: main`), not {}",
                item.describe()
            ),
        ));
    };
    let entries = flatten(source_name, map)?;
    let mut p = PipelineEntry {
        line: item.pos.line,
        ..PipelineEntry::default()
    };
    let mut id: Option<(String, &Node)> = None;
    // The first of path.config / config.string seen: (key, line).
    let mut source: Option<(&str, u32)> = None;
    for entry in &entries {
        let key = entry.key.as_str();
        let v = Val {
            source_name,
            key,
            node: entry.value,
            lookup,
        };
        if apply_pipeline_key(
            &mut p.pipeline,
            &mut p.queue,
            &mut p.dlq,
            &mut p.warnings,
            key,
            &v,
        )? {
            continue;
        }
        match key {
            "pipeline.id" => id = non_empty(&v)?.map(|s| (s, entry.value)),
            "config.support_escapes" => p.config_support_escapes = v.boolean()?,
            "path.config" | "config.string" => {
                let value = v.string()?;
                if value.is_none() {
                    continue;
                }
                if let Some((other, line)) = source {
                    return Err(SettingsError::new(
                        source_name,
                        entry.key_pos,
                        format!(
                            "a pipeline takes one of `path.config` and `config.string`, \
                             not both (`{other}` is set at line {line})"
                        ),
                    ));
                }
                source = Some((key, entry.key_pos.line));
                if key == "path.config" {
                    p.path_config = value;
                } else {
                    p.config_string = value;
                }
            }
            _ if DEPRECATED_PER_PIPELINE.contains(&key) => p.warnings.push(v.warning(format!(
                "`{key}` cannot be set per pipeline (Logstash deprecates it); ignored: set it \
                 in sluice.yml"
            ))),
            _ if entry.value.kind == Kind::Null && is_pipeline_prefix(key) => {}
            _ if logstash_only(key).is_none() && settings_keys().contains(&key) => {
                return Err(SettingsError::new(
                    source_name,
                    entry.key_pos,
                    format!(
                        "`{key}` cannot be set per pipeline: it is a process setting, set it in \
                         sluice.yml"
                    ),
                ))
            }
            _ => {
                return Err(unknown_key(
                    source_name,
                    entry,
                    pipeline_keys(),
                    "pipelines.yml",
                ))
            }
        }
    }
    let Some((id, id_node)) = id else {
        return Err(SettingsError::new(
            source_name,
            item.pos,
            "this pipeline has no `pipeline.id`",
        ));
    };
    if source.is_none() {
        return Err(SettingsError::new(
            source_name,
            item.pos,
            format!("pipeline `{id}` needs `path.config` or `config.string`"),
        ));
    }
    p.id = id;
    Ok((p, id_node))
}

fn is_pipeline_prefix(key: &str) -> bool {
    pipeline_keys()
        .iter()
        .any(|k| k.len() > key.len() && k.starts_with(key) && k.as_bytes()[key.len()] == b'.')
}

/// Reads `<dir>/pipelines.yml`; `Ok(None)` if it does not exist.
pub fn load_pipelines(dir: &Path) -> Result<Option<Vec<PipelineEntry>>, SettingsError> {
    match read_optional(&dir.join("pipelines.yml"))? {
        None => Ok(None),
        Some((path, text)) => parse_pipelines(&path.display().to_string(), &text).map(Some),
    }
}

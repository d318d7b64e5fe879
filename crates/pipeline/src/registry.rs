//! The plugin registry: plugin name → constructor, one table per kind. The plugins crate fills
//! it; the compiler looks names up here and builds each plugin from its options, after taking
//! out the options every plugin of that kind shares.

use sluice_config::Plugin;
use sluice_event::{FieldRef, Template};

use crate::metrics::PluginInfo;
use crate::options::{error_at, ConfigError, Options, PluginKind};
use crate::plugin::{Codec, Filter, Input, InputDecoration, Output};

pub type InputCtor = fn(&mut Options) -> Result<Box<dyn Input>, ConfigError>;
pub type FilterCtor = fn(&mut Options) -> Result<Box<dyn Filter>, ConfigError>;
pub type OutputCtor = fn(&mut Options) -> Result<Box<dyn Output>, ConfigError>;
pub type CodecCtor = fn(&mut Options) -> Result<Box<dyn Codec>, ConfigError>;

#[derive(Default, Clone)]
pub struct Registry {
    inputs: Vec<(&'static str, InputCtor)>,
    filters: Vec<(&'static str, FilterCtor)>,
    outputs: Vec<(&'static str, OutputCtor)>,
    codecs: Vec<(&'static str, CodecCtor)>,
    /// `pipeline.ecs_compatibility`: the default of every plugin's `ecs_compatibility`.
    ecs_compatibility: Option<String>,
    /// `dead_letter_queue.enable` of the pipeline being built.
    dead_letter_queue: bool,
    /// `path.data`, where plugins keep their state (`sincedb` files).
    path_data: Option<std::path::PathBuf>,
    /// The id of the pipeline being built.
    pipeline_id: Option<String>,
}

/// Options every filter has, applied when the filter reports a match (Logstash's
/// `filter_matched`): add_field, remove_field, add_tag, remove_tag, in that order.
#[derive(Debug, Clone, Default)]
pub struct FilterCommon {
    pub add_field: Vec<(Template, Template)>,
    pub remove_field: Vec<Template>,
    pub add_tag: Vec<Template>,
    pub remove_tag: Vec<Template>,
}

impl FilterCommon {
    pub fn is_empty(&self) -> bool {
        self.add_field.is_empty()
            && self.remove_field.is_empty()
            && self.add_tag.is_empty()
            && self.remove_tag.is_empty()
    }

    pub fn apply(&self, event: &mut sluice_event::Event) {
        crate::plugin::add_fields(event, &self.add_field);
        for f in &self.remove_field {
            if let Ok(field) = FieldRef::parse(&f.render(event)) {
                event.remove(&field);
            }
        }
        for t in &self.add_tag {
            let tag = t.render(event);
            event.append_tag(&tag);
        }
        for t in &self.remove_tag {
            let tag = t.render(event);
            event.remove_tag(&tag);
        }
    }
}

pub struct BuiltFilter {
    pub id: String,
    /// `enable_metric`.
    pub metrics: bool,
    /// The plugin's name (`mutate`, ...).
    pub name: String,
    pub filter: Box<dyn Filter>,
    pub common: std::sync::Arc<FilterCommon>,
}

pub struct BuiltInput {
    pub id: String,
    /// `enable_metric`.
    pub metrics: bool,
    pub name: String,
    /// The codec it decodes with, if any.
    pub codecs: Vec<PluginInfo>,
    pub input: Box<dyn Input>,
    pub decoration: InputDecoration,
}

pub struct BuiltOutput {
    pub id: String,
    /// `enable_metric`.
    pub metrics: bool,
    pub name: String,
    /// The codec it encodes with, if any.
    pub codecs: Vec<PluginInfo>,
    pub output: Box<dyn Output>,
    /// `lane => { ... }` (sluice's own): the output is written by a sender thread of its own
    /// (see [`crate::lane`]).
    pub lane: Option<crate::lane::LaneSpec>,
    /// The `id` option was given (not made up from the plugin's place in the file).
    pub explicit_id: bool,
}

fn templates(list: Option<Vec<String>>) -> Vec<Template> {
    list.unwrap_or_default()
        .iter()
        .map(|s| Template::parse(s))
        .collect()
}

fn template_pairs(list: Option<Vec<(String, String)>>) -> Vec<(Template, Template)> {
    list.unwrap_or_default()
        .iter()
        .map(|(k, v)| (Template::parse(k), Template::parse(v)))
        .collect()
}

fn find<T: Copy>(table: &[(&'static str, T)], name: &str) -> Option<T> {
    table.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// Sets the pipeline-wide default for plugins' `ecs_compatibility` (disabled|v1|v8).
    pub fn set_ecs_compatibility(&mut self, mode: Option<String>) {
        self.ecs_compatibility = mode;
    }

    /// The pipeline-wide `ecs_compatibility` default, if set.
    pub fn ecs_compatibility(&self) -> Option<&str> {
        self.ecs_compatibility.as_deref()
    }

    /// Whether the pipeline being built has a dead letter queue (plugins that can send events
    /// to it refuse to be asked to when it has none).
    pub fn set_dead_letter_queue(&mut self, enabled: bool) {
        self.dead_letter_queue = enabled;
    }

    pub fn dead_letter_queue(&self) -> bool {
        self.dead_letter_queue
    }

    /// `path.data` and the pipeline's id, for plugins that keep state between runs.
    pub fn set_pipeline(&mut self, id: &str, path_data: &std::path::Path) {
        self.pipeline_id = Some(id.to_owned());
        self.path_data = Some(path_data.to_path_buf());
    }

    pub fn path_data(&self) -> Option<&std::path::Path> {
        self.path_data.as_deref()
    }

    pub fn pipeline_id(&self) -> Option<&str> {
        self.pipeline_id.as_deref()
    }

    pub fn add_input(&mut self, name: &'static str, ctor: InputCtor) {
        self.inputs.push((name, ctor));
    }
    pub fn add_filter(&mut self, name: &'static str, ctor: FilterCtor) {
        self.filters.push((name, ctor));
    }
    pub fn add_output(&mut self, name: &'static str, ctor: OutputCtor) {
        self.outputs.push((name, ctor));
    }
    pub fn add_codec(&mut self, name: &'static str, ctor: CodecCtor) {
        self.codecs.push((name, ctor));
    }

    /// Names of the registered plugins of a kind, for messages and `--help`.
    pub fn names(&self, kind: PluginKind) -> Vec<&'static str> {
        match kind {
            PluginKind::Input => self.inputs.iter().map(|e| e.0).collect(),
            PluginKind::Filter => self.filters.iter().map(|e| e.0).collect(),
            PluginKind::Output => self.outputs.iter().map(|e| e.0).collect(),
            PluginKind::Codec => self.codecs.iter().map(|e| e.0).collect(),
        }
    }

    fn unknown(&self, source: &str, p: &Plugin, kind: PluginKind) -> ConfigError {
        error_at(
            source,
            p.span,
            format!(
                "unknown {} plugin {:?} (available: {})",
                kind.as_str(),
                p.name,
                self.names(kind).join(", ")
            ),
        )
    }

    /// The plugin's id (the `id` option, or `name@line:column`) and its `enable_metric`.
    fn id(opts: &mut Options, p: &Plugin) -> Result<(String, bool), ConfigError> {
        let id = opts.string("id")?;
        let metrics = opts.boolean_or("enable_metric", true)?;
        Ok((
            id.unwrap_or_else(|| format!("{}@{}:{}", p.name, p.span.line, p.span.column)),
            metrics,
        ))
    }

    pub fn build_input(&self, source: &str, p: &Plugin) -> Result<BuiltInput, ConfigError> {
        let ctor = find(&self.inputs, &p.name)
            .ok_or_else(|| self.unknown(source, p, PluginKind::Input))?;
        let mut opts = Options::new(source, p, PluginKind::Input, self)?;
        let (id, metrics) = Self::id(&mut opts, p)?;
        let decoration = InputDecoration {
            type_name: opts.string("type")?,
            tags: opts.string_list("tags")?.unwrap_or_default(),
            add_field: template_pairs(opts.string_hash("add_field")?),
        };
        let input = ctor(&mut opts)?;
        let codecs = opts.take_codecs();
        opts.finish()?;
        Ok(BuiltInput {
            id,
            metrics,
            name: p.name.clone(),
            codecs,
            input,
            decoration,
        })
    }

    /// Builds a filter; `compile` is [`Options::compile_id`].
    pub fn build_filter(
        &self,
        source: &str,
        p: &Plugin,
        compile: u64,
    ) -> Result<BuiltFilter, ConfigError> {
        let ctor = find(&self.filters, &p.name)
            .ok_or_else(|| self.unknown(source, p, PluginKind::Filter))?;
        let mut opts = Options::new(source, p, PluginKind::Filter, self)?;
        opts.set_compile_id(compile);
        let (id, metrics) = Self::id(&mut opts, p)?;
        opts.boolean("periodic_flush")?;
        let common = FilterCommon {
            add_field: template_pairs(opts.string_hash("add_field")?),
            remove_field: templates(opts.string_list("remove_field")?),
            add_tag: templates(opts.string_list("add_tag")?),
            remove_tag: templates(opts.string_list("remove_tag")?),
        };
        let filter = ctor(&mut opts)?;
        opts.finish()?;
        Ok(BuiltFilter {
            id,
            metrics,
            name: p.name.clone(),
            filter,
            common: std::sync::Arc::new(common),
        })
    }

    pub fn build_output(&self, source: &str, p: &Plugin) -> Result<BuiltOutput, ConfigError> {
        let ctor = find(&self.outputs, &p.name)
            .ok_or_else(|| self.unknown(source, p, PluginKind::Output))?;
        let mut opts = Options::new(source, p, PluginKind::Output, self)?;
        let explicit_id = opts.has("id");
        let (id, metrics) = Self::id(&mut opts, p)?;
        let lane = match opts.hash("lane")? {
            Some(entries) => {
                let spec =
                    crate::lane::LaneSpec::parse(&entries).map_err(|e| opts.error("lane", e))?;
                if !explicit_id && matches!(spec.kind, crate::lane::LaneKind::Persisted { .. }) {
                    return Err(opts.error(
                        "lane",
                        "a persisted lane needs the output's own `id` (its directory is named after it, and must stay the same across config edits)",
                    ));
                }
                Some(spec)
            }
            None => None,
        };
        let output = ctor(&mut opts)?;
        let codecs = opts.take_codecs();
        opts.finish()?;
        Ok(BuiltOutput {
            id,
            metrics,
            name: p.name.clone(),
            codecs,
            output,
            lane,
            explicit_id,
        })
    }

    pub fn build_codec(&self, source: &str, p: &Plugin) -> Result<Box<dyn Codec>, ConfigError> {
        self.build_codec_with_info(source, p)
            .map(|(_, codec)| codec)
    }

    /// Builds a codec and tells how the monitoring API names it (its `id` option, or
    /// `name@line:column`, and `enable_metric`).
    pub fn build_codec_with_info(
        &self,
        source: &str,
        p: &Plugin,
    ) -> Result<(crate::metrics::PluginInfo, Box<dyn Codec>), ConfigError> {
        let ctor = find(&self.codecs, &p.name)
            .ok_or_else(|| self.unknown(source, p, PluginKind::Codec))?;
        let mut opts = Options::new(source, p, PluginKind::Codec, self)?;
        let (id, metrics) = Self::id(&mut opts, p)?;
        let codec = ctor(&mut opts)?;
        opts.finish()?;
        let info = crate::metrics::PluginInfo {
            id,
            name: p.name.clone(),
            metrics,
        };
        Ok((info, codec))
    }
}

//! Typed access to a plugin's options, with Logstash's coercions and errors that point at the
//! option in the config file.
//!
//! A plugin constructor asks for each option it knows by name and type; [`Options::finish`]
//! then rejects anything left over as an unknown setting. Types follow Logstash's `:validate`:
//! a scalar given where an array is expected becomes a one-element array, a hash option also
//! accepts `["k1", "v1", "k2", "v2"]`, booleans are `true`/`false` barewords or strings.

use sluice_config::{Attribute, Number, ParseError, Plugin, Span, Value as Ast};
use sluice_event::{Template, Value};

use crate::plugin::Codec;
use crate::registry::Registry;

pub type ConfigError = ParseError;

/// Which section a plugin sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginKind {
    Input,
    Filter,
    Output,
    Codec,
}

impl PluginKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PluginKind::Input => "input",
            PluginKind::Filter => "filter",
            PluginKind::Output => "output",
            PluginKind::Codec => "codec",
        }
    }
}

pub struct Options<'a> {
    source: &'a str,
    plugin: &'a str,
    kind: PluginKind,
    span: Span,
    attrs: Vec<Attribute>,
    used: Vec<bool>,
    registry: &'a Registry,
    /// Codecs built through [`Options::codec`], for the monitoring API.
    codecs: Vec<crate::metrics::PluginInfo>,
    /// Which compilation of a config this plugin is part of (see [`Options::compile_id`]).
    compile: u64,
}

/// A config error at `span` in `source`.
pub fn error_at(source: &str, span: Span, message: impl Into<String>) -> ConfigError {
    ParseError {
        source_name: source.to_owned(),
        line: span.line,
        column: span.column,
        message: message.into(),
    }
}

pub(crate) fn scalar_text(v: &Ast) -> Option<String> {
    match v {
        Ast::String(s) | Ast::Bareword(s) => Some(s.clone()),
        Ast::Number(Number::Int(i)) => Some(i.to_string()),
        Ast::Number(Number::Float(f)) => Some(f.to_string()),
        _ => None,
    }
}

/// [`Template::check`] on every string in an option's value (hash keys included).
fn check_dates(v: &Ast) -> Result<(), String> {
    match v {
        Ast::String(s) | Ast::Bareword(s) if s.contains("%{{") => Template::check(s),
        Ast::Array(items) => items.iter().try_for_each(check_dates),
        Ast::Hash(entries) => entries.iter().try_for_each(|e| {
            if e.key.contains("%{{") {
                Template::check(&e.key)?;
            }
            check_dates(&e.value)
        }),
        _ => Ok(()),
    }
}

fn describe(v: &Ast) -> &'static str {
    match v {
        Ast::String(_) => "a string",
        Ast::Bareword(_) => "a bareword",
        Ast::Number(_) => "a number",
        Ast::Array(_) => "an array",
        Ast::Hash(_) => "a hash",
        Ast::Plugin(_) => "a plugin",
    }
}

/// A config value as an event value: numbers stay numbers, everything else is text.
pub fn ast_to_value(v: &Ast) -> Value {
    match v {
        Ast::String(s) | Ast::Bareword(s) => Value::String(s.as_str().into()),
        Ast::Number(Number::Int(i)) => Value::Int(*i),
        Ast::Number(Number::Float(f)) => Value::Float(*f),
        Ast::Array(a) => Value::Array(a.iter().map(ast_to_value).collect()),
        Ast::Hash(h) => Value::Object(
            h.iter()
                .map(|e| (e.key.as_str().into(), ast_to_value(&e.value)))
                .collect(),
        ),
        Ast::Plugin(p) => Value::String(p.name.as_str().into()),
    }
}

impl<'a> Options<'a> {
    pub fn new(
        source: &'a str,
        plugin: &'a Plugin,
        kind: PluginKind,
        registry: &'a Registry,
    ) -> Result<Options<'a>, ConfigError> {
        let attrs = plugin.merged_attributes()?;
        let used = vec![false; attrs.len()];
        Ok(Options {
            source,
            plugin: &plugin.name,
            kind,
            span: plugin.span,
            attrs,
            used,
            registry,
            codecs: Vec::new(),
            compile: 0,
        })
    }

    /// A number shared by the plugins of one compilation of a config and by no other (0
    /// outside [`crate::graph::compile`]): filters that share state within a pipeline (the
    /// aggregate filters' maps) key it with this, so that a pipeline being reloaded and its
    /// replacement do not meet.
    pub fn compile_id(&self) -> u64 {
        self.compile
    }

    pub(crate) fn set_compile_id(&mut self, id: u64) {
        self.compile = id;
    }

    /// `pipeline.ecs_compatibility`, the default for this plugin's `ecs_compatibility`.
    pub fn pipeline_ecs_compatibility(&self) -> Option<&str> {
        self.registry.ecs_compatibility()
    }

    /// Whether the pipeline has a dead letter queue (`dead_letter_queue.enable`).
    pub fn pipeline_dead_letter_queue(&self) -> bool {
        self.registry.dead_letter_queue()
    }

    /// `path.data` (plugins keep their state under `<path.data>/plugins`); `None` outside a
    /// running agent (tests building plugins alone).
    pub fn path_data(&self) -> Option<&std::path::Path> {
        self.registry.path_data()
    }

    /// The id of the pipeline the plugin belongs to, when known.
    pub fn pipeline_id(&self) -> Option<&str> {
        self.registry.pipeline_id()
    }

    /// Where the plugin is written: `name@line:column`, as its default id.
    pub fn location(&self) -> String {
        format!("{}@{}:{}", self.plugin, self.span.line, self.span.column)
    }

    pub fn plugin_name(&self) -> &str {
        self.plugin
    }

    pub fn kind(&self) -> PluginKind {
        self.kind
    }

    pub fn source(&self) -> &str {
        self.source
    }

    /// An error about the plugin as a whole.
    pub fn plugin_error(&self, message: impl Into<String>) -> ConfigError {
        error_at(self.source, self.span, message)
    }

    /// Takes the raw value of option `name`, marking it known.
    pub fn take(&mut self, name: &str) -> Option<(Span, Ast)> {
        let i = self.attrs.iter().position(|a| a.name == name)?;
        self.used[i] = true;
        Some((self.attrs[i].span, self.attrs[i].value.clone()))
    }

    /// Whether the option was given at all.
    pub fn has(&self, name: &str) -> bool {
        self.attrs.iter().any(|a| a.name == name)
    }

    /// Refuses options a plugin has renamed or dropped (`(old, what to use instead)`), with
    /// "is obsolete; use ..." at the option.
    pub fn reject_obsolete(&mut self, names: &[(&str, &str)]) -> Result<(), ConfigError> {
        for (old, new) in names {
            if self.has(old) {
                self.take(old);
                return Err(self.error(old, format!("is obsolete; use {new}")));
            }
        }
        Ok(())
    }

    fn type_error(&self, name: &str, span: Span, want: &str, got: &Ast) -> ConfigError {
        error_at(
            self.source,
            span,
            format!(
                "invalid setting {name:?} for {} plugin {:?}: expected {want}, got {}",
                self.kind.as_str(),
                self.plugin,
                describe(got)
            ),
        )
    }

    /// An error pointing at option `name` (or the plugin, if it is absent).
    pub fn error(&self, name: &str, message: impl Into<String>) -> ConfigError {
        let span = self
            .attrs
            .iter()
            .find(|a| a.name == name)
            .map_or(self.span, |a| a.span);
        error_at(
            self.source,
            span,
            format!(
                "invalid setting {name:?} for {} plugin {:?}: {}",
                self.kind.as_str(),
                self.plugin,
                message.into()
            ),
        )
    }

    pub fn string(&mut self, name: &str) -> Result<Option<String>, ConfigError> {
        let Some((span, v)) = self.take(name) else {
            return Ok(None);
        };
        match scalar_text(&v) {
            Some(s) => Ok(Some(s)),
            None => match &v {
                Ast::Array(items) if items.len() == 1 => match scalar_text(&items[0]) {
                    Some(s) => Ok(Some(s)),
                    None => Err(self.type_error(name, span, "a string", &v)),
                },
                _ => Err(self.type_error(name, span, "a string", &v)),
            },
        }
    }

    /// A string option the plugin cannot do without.
    pub fn required_string(&mut self, name: &str) -> Result<String, ConfigError> {
        match self.string(name)? {
            Some(v) => Ok(v),
            None => Err(self.plugin_error(format!(
                "missing required setting {name:?} for {} plugin {:?}",
                self.kind.as_str(),
                self.plugin
            ))),
        }
    }

    pub fn string_or(&mut self, name: &str, default: &str) -> Result<String, ConfigError> {
        Ok(self.string(name)?.unwrap_or_else(|| default.to_owned()))
    }

    pub fn int(&mut self, name: &str) -> Result<Option<i64>, ConfigError> {
        let Some((span, v)) = self.take(name) else {
            return Ok(None);
        };
        match &v {
            Ast::Number(Number::Int(i)) => Ok(Some(*i)),
            Ast::Number(Number::Float(f)) if f.fract() == 0.0 => Ok(Some(*f as i64)),
            Ast::String(s) | Ast::Bareword(s) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| self.type_error(name, span, "a whole number", &v)),
            _ => Err(self.type_error(name, span, "a whole number", &v)),
        }
    }

    pub fn float(&mut self, name: &str) -> Result<Option<f64>, ConfigError> {
        let Some((span, v)) = self.take(name) else {
            return Ok(None);
        };
        match &v {
            Ast::Number(Number::Int(i)) => Ok(Some(*i as f64)),
            Ast::Number(Number::Float(f)) => Ok(Some(*f)),
            Ast::String(s) | Ast::Bareword(s) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| self.type_error(name, span, "a number", &v)),
            _ => Err(self.type_error(name, span, "a number", &v)),
        }
    }

    /// A number of seconds between 0 and a day (intervals, timeouts), `default` when absent.
    pub fn seconds(
        &mut self,
        name: &str,
        default: f64,
    ) -> Result<std::time::Duration, ConfigError> {
        let v = self.float(name)?.unwrap_or(default);
        if !(0.0..=86_400.0).contains(&v) {
            return Err(self.error(name, "must be a number of seconds between 0 and 86400"));
        }
        Ok(std::time::Duration::from_secs_f64(v))
    }

    pub fn boolean(&mut self, name: &str) -> Result<Option<bool>, ConfigError> {
        let Some((span, v)) = self.take(name) else {
            return Ok(None);
        };
        match scalar_text(&v).as_deref() {
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            _ => Err(self.type_error(name, span, "a boolean (true or false)", &v)),
        }
    }

    pub fn boolean_or(&mut self, name: &str, default: bool) -> Result<bool, ConfigError> {
        Ok(self.boolean(name)?.unwrap_or(default))
    }

    /// An array of strings; a single scalar becomes a one-element array.
    pub fn string_list(&mut self, name: &str) -> Result<Option<Vec<String>>, ConfigError> {
        let Some((span, v)) = self.take(name) else {
            return Ok(None);
        };
        let items = match &v {
            Ast::Array(items) => items.as_slice(),
            other => std::slice::from_ref(other),
        };
        items
            .iter()
            .map(|i| {
                scalar_text(i).ok_or_else(|| self.type_error(name, span, "an array of strings", &v))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// A hash, in the order written; also accepts `["k1", "v1", "k2", "v2"]`.
    pub fn hash(&mut self, name: &str) -> Result<Option<Vec<(String, Ast)>>, ConfigError> {
        let Some((span, v)) = self.take(name) else {
            return Ok(None);
        };
        match &v {
            Ast::Hash(entries) => Ok(Some(
                entries
                    .iter()
                    .map(|e| (e.key.clone(), e.value.clone()))
                    .collect(),
            )),
            Ast::Array(items) if items.len() % 2 == 0 => items
                .chunks(2)
                .map(|kv| {
                    scalar_text(&kv[0])
                        .map(|k| (k, kv[1].clone()))
                        .ok_or_else(|| self.type_error(name, span, "a hash", &v))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            _ => Err(self.type_error(name, span, "a hash", &v)),
        }
    }

    /// A hash whose values are strings (or arrays of strings, kept as several entries).
    pub fn string_hash(
        &mut self,
        name: &str,
    ) -> Result<Option<Vec<(String, String)>>, ConfigError> {
        let span = self.attrs.iter().find(|a| a.name == name).map(|a| a.span);
        let Some(entries) = self.hash(name)? else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            match &v {
                Ast::Array(items) => {
                    for i in items {
                        let s = scalar_text(i).ok_or_else(|| {
                            self.type_error(
                                name,
                                span.unwrap_or(self.span),
                                "a hash of strings",
                                &v,
                            )
                        })?;
                        out.push((k.clone(), s));
                    }
                }
                other => {
                    let s = scalar_text(other).ok_or_else(|| {
                        self.type_error(name, span.unwrap_or(self.span), "a hash of strings", &v)
                    })?;
                    out.push((k, s));
                }
            }
        }
        Ok(Some(out))
    }

    /// One of a fixed set of words.
    pub fn choice(
        &mut self,
        name: &str,
        allowed: &[&str],
        default: &str,
    ) -> Result<String, ConfigError> {
        let value = self.string_or(name, default)?;
        if allowed.contains(&value.as_str()) {
            Ok(value)
        } else {
            Err(self.error(name, format!("expected one of {allowed:?}, got {value:?}")))
        }
    }

    /// The `codec` option: a codec name or `name { options }`, built through the registry.
    pub fn codec(&mut self, default: &str) -> Result<Box<dyn Codec>, ConfigError> {
        self.codec_streaming(default, &[])
    }

    /// [`Options::codec`] for a stream input, with codecs that take whole documents replaced
    /// by their streaming twins (`replace`: Logstash's `fix_streaming_codecs`, e.g. `plain` →
    /// `line`, `json` → `json_lines`), their options kept.
    pub fn codec_streaming(
        &mut self,
        default: &str,
        replace: &[(&str, &str)],
    ) -> Result<Box<dyn Codec>, ConfigError> {
        let registry = self.registry;
        let source = self.source;
        let mut p = match self.take("codec") {
            None => Plugin {
                name: default.to_owned(),
                span: self.span,
                attributes: Vec::new(),
                source: source.to_owned(),
            },
            Some((_, Ast::Plugin(p))) => p,
            Some((span, v)) => match scalar_text(&v) {
                Some(name) => Plugin {
                    name,
                    span,
                    attributes: Vec::new(),
                    source: source.to_owned(),
                },
                None => return Err(self.type_error("codec", span, "a codec name", &v)),
            },
        };
        if let Some((_, to)) = replace.iter().find(|(from, _)| *from == p.name) {
            p.name = (*to).to_owned();
        }
        let (info, codec) = registry.build_codec_with_info(&p.source, &p)?;
        self.codecs.push(info);
        Ok(codec)
    }

    /// A codec by name, for options that map values to codecs (the http input's
    /// `additional_codecs`); an unknown name is an error at `option`.
    pub fn codec_named(&mut self, option: &str, name: &str) -> Result<Box<dyn Codec>, ConfigError> {
        let span = (self.attrs.iter())
            .find(|a| a.name == option)
            .map_or(self.span, |a| a.span);
        let p = Plugin {
            name: name.to_owned(),
            span,
            attributes: Vec::new(),
            source: self.source.to_owned(),
        };
        self.registry
            .build_codec_with_info(self.source, &p)
            .map(|(_, c)| c)
    }

    /// The `codec` option's codec and its name (`plain`, `json`...).
    pub fn codec_with_name(
        &mut self,
        default: &str,
    ) -> Result<(String, Box<dyn Codec>), ConfigError> {
        let codec = self.codec(default)?;
        let name = (self.codecs.last()).map_or_else(|| default.to_owned(), |c| c.name.clone());
        Ok((name, codec))
    }

    /// The codecs this plugin built (its `codec` option), for the monitoring API.
    pub(crate) fn take_codecs(&mut self) -> Vec<crate::metrics::PluginInfo> {
        std::mem::take(&mut self.codecs)
    }

    /// Rejects options nobody asked for, and sprintf `%{{…}}` dates whose java.time pattern
    /// would fail on every event.
    pub fn finish(self) -> Result<(), ConfigError> {
        for a in &self.attrs {
            if let Err(message) = check_dates(&a.value) {
                return Err(self.error(&a.name, message));
            }
        }
        for (a, used) in self.attrs.iter().zip(&self.used) {
            if !used {
                return Err(error_at(
                    self.source,
                    a.span,
                    format!(
                        "unknown setting {:?} for {} plugin {:?}",
                        a.name,
                        self.kind.as_str(),
                        self.plugin
                    ),
                ));
            }
        }
        Ok(())
    }
}

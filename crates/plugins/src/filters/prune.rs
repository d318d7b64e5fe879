//! `prune`: removes top-level fields by name or value, as logstash-filter-prune does.
//!
//! - `whitelist_names`: regexes (Ruby syntax); a field whose name matches none is removed.
//! - `blacklist_names` (default `%\{[^}]+\}`, names holding an unresolved sprintf reference):
//!   a field whose name matches one is removed.
//! - `whitelist_values` / `blacklist_values`: field name → regex; a field whose value does not
//!   match (whitelist) or does (blacklist) is removed; for an array, the items that fail are
//!   removed (the field too when all fail).
//! - `interpolate => true`: names and regexes are sprintf'd against each event first.
//!
//! Only top-level fields are looked at. A value that is not a string is matched as its text
//! (where the plugin's `match` raises on it).

use sluice_event::{Event, FieldRef, Template, Value};
use sluice_pipeline::{ConfigError, Filter, Options};
use sluice_regex::Regex;

#[derive(Clone)]
pub struct Prune {
    interpolate: bool,
    whitelist_names: Vec<(Template, Option<Regex>)>,
    blacklist_names: Vec<(Template, Option<Regex>)>,
    whitelist_values: Vec<ByValue>,
    blacklist_values: Vec<ByValue>,
}

/// A `*_values` entry: the field's name (as written, and as a template for `interpolate`)
/// and its regex.
#[derive(Clone)]
struct ByValue {
    name: String,
    name_template: Template,
    regex: Template,
    compiled: Option<Regex>,
}

fn regexes(
    opts: &Options,
    option: &str,
    list: Vec<String>,
    interpolate: bool,
) -> Result<Vec<(Template, Option<Regex>)>, ConfigError> {
    list.into_iter()
        .map(|text| {
            let re = if interpolate {
                None
            } else {
                Some(Regex::new(&text).map_err(|e| {
                    opts.error(option, format!("invalid regular expression {text:?}: {e}"))
                })?)
            };
            Ok((Template::parse(&text), re))
        })
        .collect()
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let interpolate = opts.boolean_or("interpolate", false)?;
    let whitelist = opts.string_list("whitelist_names")?.unwrap_or_default();
    let blacklist = opts
        .string_list("blacklist_names")?
        .unwrap_or_else(|| vec![r"%\{[^}]+\}".to_owned()]);
    let mut values = |option: &str| -> Result<Vec<ByValue>, ConfigError> {
        let pairs = opts.string_hash(option)?.unwrap_or_default();
        pairs
            .into_iter()
            .map(|(name, re)| {
                let compiled = regexes(opts, option, vec![re.clone()], interpolate)?
                    .pop()
                    .and_then(|r| r.1);
                Ok(ByValue {
                    name_template: Template::parse(&name),
                    name,
                    regex: Template::parse(&re),
                    compiled,
                })
            })
            .collect()
    };
    let whitelist_values = values("whitelist_values")?;
    let blacklist_values = values("blacklist_values")?;
    Ok(Box::new(Prune {
        interpolate,
        whitelist_names: regexes(opts, "whitelist_names", whitelist, interpolate)?,
        blacklist_names: regexes(opts, "blacklist_names", blacklist, interpolate)?,
        whitelist_values,
        blacklist_values,
    }))
}

/// Whether `text` matches the regex: compiled at load, or made from the sprintf'd template
/// (one that does not compile matches nothing).
fn matches(event: &Event, template: &Template, compiled: &Option<Regex>, text: &str) -> bool {
    match compiled {
        Some(r) => r.is_match(text),
        None => Regex::new(&template.render(event)).is_ok_and(|re| re.is_match(text)),
    }
}

fn text(v: &Value) -> String {
    v.to_display_string()
}

impl Prune {
    fn by_values(
        &self,
        event: &Event,
        list: &[ByValue],
        keep_matching: bool,
        whole: &mut Vec<String>,
        partial: &mut Vec<(String, Vec<Value>)>,
    ) {
        for entry in list {
            let name = if self.interpolate {
                entry.name_template.render(event)
            } else {
                entry.name.clone()
            };
            let Some(value) = event.fields().get(name.as_str()) else {
                continue;
            };
            if matches!(value, Value::Null | Value::Bool(false)) {
                continue;
            }
            let fails = |v: &Value| {
                matches(event, &entry.regex, &entry.compiled, &text(v)) != keep_matching
            };
            match value {
                Value::Array(items) => {
                    let kept: Vec<Value> = items.iter().filter(|v| !fails(v)).cloned().collect();
                    if kept.is_empty() {
                        whole.push(name);
                    } else if kept.len() < items.len() {
                        partial.push((name, kept));
                    }
                }
                other => {
                    if fails(other) {
                        whole.push(name);
                    }
                }
            }
        }
    }
}

impl Filter for Prune {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let mut whole: Vec<String> = Vec::new();
        let mut partial: Vec<(String, Vec<Value>)> = Vec::new();
        let names: Vec<String> = event.fields().keys().map(|k| k.to_string()).collect();
        let any = |list: &[(Template, Option<Regex>)], name: &str| {
            list.iter().any(|(t, r)| matches(event, t, r, name))
        };
        if !self.whitelist_names.is_empty() {
            whole.extend(
                names
                    .iter()
                    .filter(|n| !any(&self.whitelist_names, n))
                    .cloned(),
            );
        }
        if !self.blacklist_names.is_empty() {
            whole.extend(
                names
                    .iter()
                    .filter(|n| any(&self.blacklist_names, n))
                    .cloned(),
            );
        }
        self.by_values(
            event,
            &self.whitelist_values,
            true,
            &mut whole,
            &mut partial,
        );
        self.by_values(
            event,
            &self.blacklist_values,
            false,
            &mut whole,
            &mut partial,
        );
        for (name, kept) in partial {
            event.set(&FieldRef::top_level(&name), Value::Array(kept));
        }
        for name in whole {
            event.remove(&FieldRef::top_level(&name));
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

//! `kv`: parses `key=value` pairs out of a field, as logstash-filter-kv does.
//!
//! The scan is Logstash's own regex, built the same way from the options and compiled as the
//! Ruby regex it is ([`sluice_regex`]: `field_split_pattern` and `value_split_pattern` are
//! Ruby syntax, with Ruby's meaning), with the same leftmost-first backtracking semantics:
//! `KEY VALUE_SPLIT (VALUE)? (FIELD_SPLIT | end of line)`, where
//! - KEY is a run of characters outside `value_split + field_split` (backslash escapes allowed),
//!   or, when `field_split_pattern` / `value_split_pattern` is given, anything up to either;
//! - VALUE is `"..."`, `'...'`, and with `include_brackets` (default) `(...)`, `[...]`, `<...>`,
//!   or else a run up to the next field separator;
//! - `whitespace => lenient` (default) allows spaces around the value separator.
//!
//! Then per pair, in Logstash's order: empty values are dropped (unless
//! `allow_empty_values`), `trim_key`, `remove_char_key`, `transform_key`, `include_keys` /
//! `exclude_keys` (sprintf'd), `prefix`, `trim_value`, `remove_char_value`, `transform_value`,
//! `allow_duplicate_values`, `recursive`; a repeated key collects its values in an array.
//! `default_keys` fill in keys the text did not have. The result goes under `target` or at
//! the top level (keys as field references; an invalid one tags `tag_on_failure`). Running
//! past `timeout_millis` (or hitting the regex engine's backtracking limit) tags
//! `tag_on_timeout` and sets nothing.

use std::time::{Duration, Instant};

use sluice_event::{Event, FieldRef, Template, Value};
use sluice_pipeline::{ConfigError, Filter, Options};
use sluice_regex::{Regex, Replacement};

use crate::field::FieldName;

#[derive(Debug, Clone, Copy)]
enum Transform {
    Lower,
    Upper,
    Capitalize,
}

impl Transform {
    fn apply(self, s: &str) -> String {
        match self {
            Transform::Lower => s.to_lowercase(),
            Transform::Upper => s.to_uppercase(),
            Transform::Capitalize => super::mutate::capitalize(s),
        }
    }
}

#[derive(Clone)]
pub struct Kv {
    source: FieldName,
    target: Option<FieldName>,
    scan: Regex,
    value_split: Regex,
    trim_key: Option<Regex>,
    trim_value: Option<Regex>,
    remove_char_key: Option<Regex>,
    remove_char_value: Option<Regex>,
    transform_key: Option<Transform>,
    transform_value: Option<Transform>,
    prefix: Template,
    include_keys: Vec<Template>,
    exclude_keys: Vec<Template>,
    default_keys: Vec<(String, Value)>,
    allow_duplicate_values: bool,
    allow_empty_values: bool,
    recursive: bool,
    timeout: Option<Duration>,
    tag_on_timeout: String,
    tag_on_failure: Vec<String>,
}

/// Text put inside a regex character class as Ruby would read `[#{text}]`: escapes stay,
/// and characters the `regex` crate gives a meaning of its own inside classes (nested `[`,
/// the `&&`/`~~` set operators) are escaped.
fn class_body(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push('\\');
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            }
            '[' | '&' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

fn escape_class(text: &str) -> String {
    regex::escape(text)
}

/// `((?:(?!P)(?:\\.|.))+)`: a run of characters up to where a pattern matches.
fn until_pattern(pattern: &str) -> String {
    format!(r"((?:(?!{pattern})(?:\\.|.))+)")
}

/// `((?:\\.|[^C])+)`: a run of characters outside a class.
fn until_class(class: &str) -> String {
    format!(r"((?:\\.|[^{class}])+)")
}

fn quoted(open: &str, close: &str) -> String {
    format!(
        "{}{}?{}",
        regex::escape(open),
        until_class(&escape_class(close)),
        regex::escape(close)
    )
}

fn transform_opt(opts: &mut Options, name: &str) -> Result<Option<Transform>, ConfigError> {
    if !opts.has(name) {
        return Ok(None);
    }
    Ok(
        match opts
            .choice(name, &["lowercase", "uppercase", "capitalize"], "lowercase")?
            .as_str()
        {
            "uppercase" => Some(Transform::Upper),
            "capitalize" => Some(Transform::Capitalize),
            _ => Some(Transform::Lower),
        },
    )
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let source = opts.string_or("source", "message")?;
    let source = FieldName::parse(opts, "source", &source)?;
    let target = match opts.string("target")? {
        Some(t) => Some(FieldName::parse(opts, "target", &t)?),
        None => None,
    };
    let field_split = opts.string_or("field_split", " ")?;
    let value_split = opts.string_or("value_split", "=")?;
    let field_split_pattern = opts.string("field_split_pattern")?;
    let value_split_pattern = opts.string("value_split_pattern")?;
    if value_split.is_empty() {
        return Err(opts.error("value_split", "must be a non-empty string"));
    }
    for (name, v) in [
        ("field_split_pattern", &field_split_pattern),
        ("value_split_pattern", &value_split_pattern),
    ] {
        if v.as_deref() == Some("") {
            return Err(opts.error(name, "must be a non-empty string"));
        }
    }
    let whitespace = opts.choice("whitespace", &["strict", "lenient"], "lenient")?;
    let include_brackets = opts.boolean_or("include_brackets", true)?;

    let check = |opts: &Options, name: &str, re: &str| -> Result<(), ConfigError> {
        Regex::new(re)
            .map(|_| ())
            .map_err(|e| opts.error(name, format!("invalid regex {re:?}: {e}")))
    };
    let fsp = match &field_split_pattern {
        Some(p) => {
            check(opts, "field_split_pattern", p)?;
            p.clone()
        }
        None => format!("[{}]", class_body(&field_split)),
    };
    let vsp = match &value_split_pattern {
        Some(p) => {
            check(opts, "value_split_pattern", p)?;
            p.clone()
        }
        None => format!("[{}]", class_body(&value_split)),
    };
    let vsp = if whitespace == "lenient" {
        format!(" *(?:{vsp}) *")
    } else {
        format!("(?:{vsp})")
    };
    let key = if field_split_pattern.is_some() || value_split_pattern.is_some() {
        until_pattern(&format!("(?:{vsp})|(?:{fsp})"))
    } else {
        until_class(&class_body(&format!("{value_split}{field_split}")))
    };
    let mut values = vec![quoted("\"", "\""), quoted("'", "'")];
    if include_brackets {
        values.push(quoted("(", ")"));
        values.push(quoted("[", "]"));
        values.push(quoted("<", ">"));
    }
    values.push(if field_split_pattern.is_some() {
        until_pattern(&fsp)
    } else {
        until_class(&class_body(&field_split))
    });
    let scan_text = format!("{key}{vsp}(?:{})?(?:(?:{fsp})|$)", values.join("|"));
    let scan = Regex::new(&scan_text).map_err(|e| {
        opts.plugin_error(format!(
            "kv filter: the options make an invalid scan regex {scan_text:?}: {e}"
        ))
    })?;
    let value_split_re = Regex::new(&vsp)
        .map_err(|e| opts.error("value_split", format!("invalid regex {vsp:?}: {e}")))?;

    let class_re =
        |opts: &mut Options, name: &str, trim: bool| -> Result<Option<Regex>, ConfigError> {
            let Some(chars) = opts.string(name)? else {
                return Ok(None);
            };
            let body = class_body(&chars);
            let text = if trim {
                format!("^[{body}]+|[{body}]+$")
            } else {
                format!("[{body}]")
            };
            Regex::new(&text)
                .map(Some)
                .map_err(|e| opts.error(name, format!("invalid character set {chars:?}: {e}")))
        };
    let trim_key = class_re(opts, "trim_key", true)?;
    let trim_value = class_re(opts, "trim_value", true)?;
    let remove_char_key = class_re(opts, "remove_char_key", false)?;
    let remove_char_value = class_re(opts, "remove_char_value", false)?;
    let transform_key = transform_opt(opts, "transform_key")?;
    let transform_value = transform_opt(opts, "transform_value")?;
    let prefix = Template::parse(&opts.string_or("prefix", "")?);
    let templates = |l: Option<Vec<String>>| -> Vec<Template> {
        l.unwrap_or_default()
            .iter()
            .map(|s| Template::parse(s))
            .collect()
    };
    let include_keys = templates(opts.string_list("include_keys")?);
    let exclude_keys = templates(opts.string_list("exclude_keys")?);
    let default_keys = opts
        .hash("default_keys")?
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| (k.clone(), sluice_pipeline::options::ast_to_value(v)))
        .collect();
    let allow_duplicate_values = opts.boolean_or("allow_duplicate_values", true)?;
    let allow_empty_values = opts.boolean_or("allow_empty_values", false)?;
    let recursive = opts.boolean_or("recursive", false)?;
    let timeout_millis = opts.float("timeout_millis")?.unwrap_or(30_000.0);
    let tag_on_timeout = opts.string_or("tag_on_timeout", "_kv_filter_timeout")?;
    let tag_on_failure = opts
        .string_list("tag_on_failure")?
        .unwrap_or_else(|| vec!["_kv_filter_error".to_owned()]);
    crate::ecs::Ecs::from_options(opts)?;
    Ok(Box::new(Kv {
        source,
        target,
        scan,
        value_split: value_split_re,
        trim_key,
        trim_value,
        remove_char_key,
        remove_char_value,
        transform_key,
        transform_value,
        prefix,
        include_keys,
        exclude_keys,
        default_keys,
        allow_duplicate_values,
        allow_empty_values,
        recursive,
        timeout: (timeout_millis > 0.0).then(|| Duration::from_secs_f64(timeout_millis / 1000.0)),
        tag_on_timeout,
        tag_on_failure,
    }))
}

/// Why a parse stopped early.
enum Abort {
    Timeout,
}

/// Keys in the order first seen, as Ruby's Hash keeps them.
type Pairs = Vec<(sluice_event::Key, Value)>;

fn find<'a>(kv: &'a mut Pairs, key: &str) -> Option<&'a mut Value> {
    kv.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// Ruby's `include?` on what a key already holds: substring for a string, element for an
/// array, key for a hash.
fn already_has(existing: &Value, value: &Value) -> bool {
    match (existing, value) {
        (Value::String(s), Value::String(v)) => s.contains(v.as_str()),
        (Value::Array(a), v) => a.contains(v),
        (Value::Object(m), Value::String(v)) => m.contains_key(v.as_str()),
        _ => false,
    }
}

struct Ctx {
    include: Vec<String>,
    exclude: Vec<String>,
    prefix: String,
    deadline: Option<Instant>,
}

impl Kv {
    fn parse(&self, text: &str, ctx: &Ctx, kv: &mut Pairs) -> Result<(), Abort> {
        if !self.value_split.is_match(text) {
            return Ok(());
        }
        for caps in self.scan.captures_iter(text) {
            if ctx.deadline.is_some_and(|d| Instant::now() > d) {
                return Err(Abort::Timeout);
            }
            let caps = caps.map_err(|_| Abort::Timeout)?;
            let Some(key) = caps.get(1) else { continue };
            let value = (2..caps.len()).find_map(|i| caps.get(i)).unwrap_or("");
            if value.is_empty() && !self.allow_empty_values {
                continue;
            }
            let mut key = key.to_owned();
            if let Some(re) = &self.trim_key {
                key = re.replace_all(&key, &Replacement::parse("")).into_owned();
            }
            if let Some(re) = &self.remove_char_key {
                key = re.replace_all(&key, &Replacement::parse("")).into_owned();
            }
            if let Some(t) = self.transform_key {
                key = t.apply(&key);
            }
            if !ctx.include.is_empty() && !ctx.include.contains(&key) {
                continue;
            }
            if ctx.exclude.contains(&key) {
                continue;
            }
            if !ctx.prefix.is_empty() {
                key.insert_str(0, &ctx.prefix);
            }
            let mut value = value.to_owned();
            if let Some(re) = &self.trim_value {
                value = re.replace_all(&value, &Replacement::parse("")).into_owned();
            }
            if let Some(re) = &self.remove_char_value {
                value = re.replace_all(&value, &Replacement::parse("")).into_owned();
            }
            if let Some(t) = self.transform_value {
                value = t.apply(&value);
            }
            let mut value = Value::String(value.into());
            if !self.allow_duplicate_values {
                if let Some(existing) = find(kv, &key) {
                    if already_has(existing, &value) {
                        continue;
                    }
                }
            }
            if self.recursive {
                let mut inner = Pairs::new();
                if let Value::String(s) = &value {
                    self.parse(s, ctx, &mut inner)?;
                }
                if !inner.is_empty() {
                    value = Value::Object(inner.into_iter().collect());
                }
            }
            match find(kv, &key) {
                Some(Value::Array(a)) => a.push(value),
                Some(existing) => {
                    let first = std::mem::take(existing);
                    *existing = Value::Array(vec![first, value]);
                }
                None => kv.push((key.into(), value)),
            }
        }
        Ok(())
    }
}

impl Filter for Kv {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let Some(src) = self.source.resolve(event).map(|r| r.into_owned()) else {
            return false;
        };
        let ctx = Ctx {
            include: self.include_keys.iter().map(|t| t.render(event)).collect(),
            exclude: self.exclude_keys.iter().map(|t| t.render(event)).collect(),
            prefix: self.prefix.render(event),
            deadline: self.timeout.map(|t| Instant::now() + t),
        };
        let mut parsed = Pairs::new();
        let outcome = match event.get(&src) {
            Some(Value::String(s)) => self.parse(s, &ctx, &mut parsed),
            Some(Value::Array(items)) => items.iter().try_for_each(|i| match i {
                Value::String(s) => self.parse(s, &ctx, &mut parsed),
                _ => Ok(()),
            }),
            _ => Ok(()),
        };
        drop(ctx);
        if let Err(Abort::Timeout) = outcome {
            event.add_tag(&self.tag_on_timeout);
            return false;
        }
        // default_keys.merge(parsed): defaults first, parsed values win.
        let mut kv: Pairs = Vec::with_capacity(self.default_keys.len() + parsed.len());
        for (k, v) in &self.default_keys {
            match parsed.iter().position(|(pk, _)| pk == k) {
                Some(i) => kv.push(parsed.remove(i)),
                None => kv.push((k.as_str().into(), v.clone())),
            }
        }
        kv.extend(parsed);
        if kv.is_empty() {
            return false;
        }
        match &self.target {
            Some(t) => {
                let Some(t) = t.resolve(event).map(|r| r.into_owned()) else {
                    return false;
                };
                event.set(&t, Value::Object(kv.into_iter().collect()));
            }
            None => {
                for (k, v) in kv {
                    match FieldRef::parse(&k) {
                        Ok(r) => event.set(&r, v),
                        Err(_) => {
                            for tag in &self.tag_on_failure {
                                event.add_tag(tag);
                            }
                            return false;
                        }
                    }
                }
            }
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

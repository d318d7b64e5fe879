//! `mutate`: rename, replace, convert and reshape fields.
//!
//! Operations run in Logstash's fixed order, whatever the order in the config: coerce, rename,
//! update, replace, convert, gsub, uppercase, capitalize, lowercase, strip, split, join, merge,
//! copy; then the common options (add_field, add_tag, ...) apply. A value an operation cannot
//! handle (converting a hash, say) is left as it is and the event is tagged `tag_on_failure`.

use sluice_event::{Event, Template, Value};
use sluice_pipeline::{ConfigError, Filter, Options};
use sluice_regex::{Regex, Replacement};

use crate::field::FieldName;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conversion {
    Integer,
    IntegerEu,
    Float,
    FloatEu,
    String,
    Boolean,
}

#[derive(Debug, Clone, Copy)]
enum Case {
    Upper,
    Lower,
    Capitalize,
}

#[derive(Clone, Default)]
pub struct Mutate {
    coerce: Vec<(FieldName, Template)>,
    rename: Vec<(FieldName, FieldName)>,
    update: Vec<(FieldName, Template)>,
    replace: Vec<(FieldName, Template)>,
    convert: Vec<(FieldName, Conversion)>,
    gsub: Vec<Gsub>,
    /// Patterns built per event (`%{field}` in a gsub pattern), compiled once each: at most
    /// [`DYNAMIC_PATTERNS`], then forgotten all at once.
    dynamic: std::collections::HashMap<String, Option<Regex>>,
    uppercase: Vec<FieldName>,
    capitalize: Vec<FieldName>,
    lowercase: Vec<FieldName>,
    strip: Vec<FieldName>,
    split: Vec<(FieldName, String)>,
    join: Vec<(FieldName, String)>,
    merge: Vec<(FieldName, FieldName)>,
    copy: Vec<(FieldName, FieldName)>,
    tag_on_failure: String,
}

/// One `gsub` triple. As Logstash's mutate: a pattern holding `%{...}` is filled in from the
/// event and compiled then; the replacement is filled in from the event too.
#[derive(Clone)]
struct Gsub {
    field: FieldName,
    pattern: Pattern,
    /// Parsed once when fixed; filled in and parsed per event otherwise.
    replacement: Result<Replacement, Template>,
}

#[derive(Clone)]
enum Pattern {
    Fixed(Regex),
    PerEvent(Template),
}

/// How many per-event gsub patterns a worker keeps compiled.
const DYNAMIC_PATTERNS: usize = 256;

fn names(opts: &mut Options, option: &str) -> Result<Vec<FieldName>, ConfigError> {
    let list = opts.string_list(option)?.unwrap_or_default();
    list.iter()
        .map(|f| FieldName::parse(opts, option, f))
        .collect()
}

fn pairs(opts: &mut Options, option: &str) -> Result<Vec<(String, String)>, ConfigError> {
    Ok(opts.string_hash(option)?.unwrap_or_default())
}

fn field_templates(
    opts: &mut Options,
    option: &str,
) -> Result<Vec<(FieldName, Template)>, ConfigError> {
    pairs(opts, option)?
        .into_iter()
        .map(|(k, v)| Ok((FieldName::parse(opts, option, &k)?, Template::parse(&v))))
        .collect()
}

fn field_pairs(
    opts: &mut Options,
    option: &str,
) -> Result<Vec<(FieldName, FieldName)>, ConfigError> {
    pairs(opts, option)?
        .into_iter()
        .map(|(k, v)| {
            Ok((
                FieldName::parse(opts, option, &k)?,
                FieldName::parse(opts, option, &v)?,
            ))
        })
        .collect()
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let mut m = Mutate {
        coerce: field_templates(opts, "coerce")?,
        rename: field_pairs(opts, "rename")?,
        update: field_templates(opts, "update")?,
        replace: field_templates(opts, "replace")?,
        ..Mutate::default()
    };
    for (field, ty) in pairs(opts, "convert")? {
        let conv = match ty.as_str() {
            "integer" => Conversion::Integer,
            "integer_eu" => Conversion::IntegerEu,
            "float" => Conversion::Float,
            "float_eu" => Conversion::FloatEu,
            "string" => Conversion::String,
            "boolean" => Conversion::Boolean,
            other => {
                return Err(opts.error(
                    "convert",
                    format!("unknown type {other:?} for field {field:?} (expected integer, integer_eu, float, float_eu, string or boolean)"),
                ))
            }
        };
        m.convert
            .push((FieldName::parse(opts, "convert", &field)?, conv));
    }
    let gsub = opts.string_list("gsub")?.unwrap_or_default();
    if gsub.len() % 3 != 0 {
        return Err(opts.error(
            "gsub",
            "expects triples: [field, pattern, replacement, ...]",
        ));
    }
    for t in gsub.chunks(3) {
        let pattern = if t[1].contains("%{") {
            Pattern::PerEvent(Template::parse(&t[1]))
        } else {
            Pattern::Fixed(
                Regex::new(&t[1])
                    .map_err(|e| opts.error("gsub", format!("invalid regex {:?}: {e}", t[1])))?,
            )
        };
        m.gsub.push(Gsub {
            field: FieldName::parse(opts, "gsub", &t[0])?,
            pattern,
            replacement: if t[2].contains("%{") {
                Err(Template::parse(&t[2]))
            } else {
                Ok(Replacement::parse(&t[2]))
            },
        });
    }
    m.uppercase = names(opts, "uppercase")?;
    m.capitalize = names(opts, "capitalize")?;
    m.lowercase = names(opts, "lowercase")?;
    m.strip = names(opts, "strip")?;
    for (option, target) in [("split", &mut m.split), ("join", &mut m.join)] {
        for (k, sep) in pairs(opts, option)? {
            target.push((FieldName::parse(opts, option, &k)?, sep));
        }
    }
    m.merge = field_pairs(opts, "merge")?;
    m.copy = field_pairs(opts, "copy")?;
    m.tag_on_failure = opts.string_or("tag_on_failure", "_mutate_error")?;
    Ok(Box::new(m))
}

/// Ruby's `String#to_i` / `to_f`: the longest numeric prefix, 0 when there is none.
fn leading_number(s: &str, float: bool) -> Value {
    let s = s.trim_start();
    let b = s.as_bytes();
    let mut end = 0;
    if end < b.len() && (b[end] == b'-' || b[end] == b'+') {
        end += 1;
    }
    let digits_start = end;
    while end < b.len() && (b[end].is_ascii_digit() || b[end] == b'_') {
        end += 1;
    }
    if float && end < b.len() && b[end] == b'.' && end + 1 < b.len() && b[end + 1].is_ascii_digit()
    {
        end += 1;
        while end < b.len() && b[end].is_ascii_digit() {
            end += 1;
        }
        if end < b.len() && (b[end] == b'e' || b[end] == b'E') {
            let mut e = end + 1;
            if e < b.len() && (b[e] == b'-' || b[e] == b'+') {
                e += 1;
            }
            if e < b.len() && b[e].is_ascii_digit() {
                while e < b.len() && b[e].is_ascii_digit() {
                    e += 1;
                }
                end = e;
            }
        }
    }
    let text: String = s[..end].chars().filter(|&c| c != '_').collect();
    if float {
        Value::Float(text.parse().unwrap_or(0.0))
    } else if end == digits_start {
        Value::Int(0)
    } else {
        Value::Int(text.parse().unwrap_or(0))
    }
}

fn convert_scalar(v: &Value, conv: Conversion) -> Option<Value> {
    Some(match (conv, v) {
        (Conversion::String, Value::String(_)) => v.clone(),
        (Conversion::String, other) => Value::String(other.to_display_string().into()),
        (Conversion::Boolean, Value::Bool(_)) => v.clone(),
        (Conversion::Boolean, other) => {
            let s = other.to_display_string().to_ascii_lowercase();
            match s.as_str() {
                "true" | "t" | "yes" | "y" | "1" | "1.0" => Value::Bool(true),
                "false" | "f" | "no" | "n" | "0" | "0.0" => Value::Bool(false),
                _ => return Some(v.clone()),
            }
        }
        (Conversion::Integer | Conversion::IntegerEu, Value::Bool(b)) => Value::Int(*b as i64),
        (Conversion::Integer | Conversion::IntegerEu, Value::Int(_)) => v.clone(),
        (Conversion::Integer | Conversion::IntegerEu, Value::Float(f)) => {
            Value::Int(f.trunc() as i64)
        }
        (Conversion::Integer, Value::String(s)) => leading_number(s, false),
        (Conversion::IntegerEu, Value::String(s)) => {
            leading_number(&s.replace('.', "").replace(',', "."), false)
        }
        (Conversion::Float | Conversion::FloatEu, Value::Bool(b)) => Value::Float(*b as i64 as f64),
        (Conversion::Float | Conversion::FloatEu, Value::Int(i)) => Value::Float(*i as f64),
        (Conversion::Float | Conversion::FloatEu, Value::Float(_)) => v.clone(),
        (Conversion::Float, Value::String(s)) => leading_number(&s.replace(',', ""), true),
        (Conversion::FloatEu, Value::String(s)) => {
            leading_number(&s.replace('.', "").replace(',', "."), true)
        }
        (_, Value::Null) => Value::Null,
        _ => return None,
    })
}

/// Applies `f` to a string value or to each string of an array; other values are failures.
fn map_strings(v: &mut Value, f: &dyn Fn(&str) -> String) -> bool {
    match v {
        Value::String(s) => {
            *s = f(s).into();
            true
        }
        Value::Array(items) => {
            let mut ok = true;
            for i in items {
                if let Value::String(s) = i {
                    *s = f(s).into();
                } else {
                    ok = false;
                }
            }
            ok
        }
        Value::Null => true,
        _ => false,
    }
}

/// First character upper case, the rest lower case (Ruby's `String#capitalize`).
pub(crate) fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first
            .to_uppercase()
            .chain(c.flat_map(char::to_lowercase))
            .collect(),
        None => String::new(),
    }
}

impl Mutate {
    fn apply(&mut self, e: &mut Event) -> bool {
        let mut ok = true;
        for (f, default) in &self.coerce {
            let Some(r) = f.resolve(e) else { continue };
            if matches!(e.get(&r), Some(Value::Null)) {
                let v = Value::String(default.render(e).into());
                e.set(&r, v);
            }
        }
        for (from, to) in &self.rename {
            let (Some(src), Some(dst)) = (
                from.resolve(e).map(|r| r.into_owned()),
                to.resolve(e).map(|r| r.into_owned()),
            ) else {
                continue;
            };
            if src == dst {
                continue;
            }
            if let Some(v) = e.remove(&src) {
                e.set(&dst, v);
            }
        }
        for (f, t) in &self.update {
            let Some(r) = f.resolve(e).map(|r| r.into_owned()) else {
                continue;
            };
            if e.get(&r).is_some() {
                let v = Value::String(t.render(e).into());
                e.set(&r, v);
            }
        }
        for (f, t) in &self.replace {
            let Some(r) = f.resolve(e).map(|r| r.into_owned()) else {
                continue;
            };
            let v = Value::String(t.render(e).into());
            e.set(&r, v);
        }
        for (f, conv) in &self.convert {
            let Some(r) = f.resolve(e).map(|r| r.into_owned()) else {
                continue;
            };
            let Some(v) = e.get_mut(&r) else { continue };
            let converted = match &*v {
                Value::Array(items) => items
                    .iter()
                    .map(|i| convert_scalar(i, *conv))
                    .collect::<Option<Vec<_>>>()
                    .map(Value::Array),
                other => convert_scalar(other, *conv),
            };
            match converted {
                Some(c) => *v = c,
                None => ok = false,
            }
        }
        for g in &self.gsub {
            let Some(r) = g.field.resolve(e).map(|r| r.into_owned()) else {
                continue;
            };
            if e.get(&r).is_none() {
                continue;
            }
            let re = match &g.pattern {
                Pattern::Fixed(re) => re,
                Pattern::PerEvent(t) => {
                    let text = t.render(e);
                    if self.dynamic.len() >= DYNAMIC_PATTERNS && !self.dynamic.contains_key(&text) {
                        self.dynamic.clear();
                    }
                    let compiled = self.dynamic.entry(text).or_insert_with_key(|text| {
                        Regex::new(text)
                            .map_err(|err| tracing::warn!(pattern = %text, "mutate gsub: the pattern filled in from the event is not a valid regex: {err}"))
                            .ok()
                    });
                    match compiled {
                        Some(re) => re,
                        None => {
                            ok = false;
                            continue;
                        }
                    }
                }
            };
            let filled;
            let rep = match &g.replacement {
                Ok(fixed) => fixed,
                Err(t) => {
                    filled = Replacement::parse(&t.render(e));
                    &filled
                }
            };
            if let Some(v) = e.get_mut(&r) {
                // Non-string values are skipped, as in Logstash (not a failure).
                map_strings(v, &|s| re.replace_all(s, rep).into_owned());
            }
        }
        for (fields, case) in [
            (&self.uppercase, Case::Upper),
            (&self.capitalize, Case::Capitalize),
            (&self.lowercase, Case::Lower),
        ] {
            for f in fields {
                let Some(r) = f.resolve(e).map(|r| r.into_owned()) else {
                    continue;
                };
                if let Some(v) = e.get_mut(&r) {
                    ok &= map_strings(v, &|s| match case {
                        Case::Upper => s.to_uppercase(),
                        Case::Lower => s.to_lowercase(),
                        Case::Capitalize => capitalize(s),
                    });
                }
            }
        }
        for f in &self.strip {
            let Some(r) = f.resolve(e).map(|r| r.into_owned()) else {
                continue;
            };
            if let Some(v) = e.get_mut(&r) {
                ok &= map_strings(v, &|s| s.trim().to_owned());
            }
        }
        for (f, sep) in &self.split {
            let Some(r) = f.resolve(e).map(|r| r.into_owned()) else {
                continue;
            };
            if let Some(Value::String(s)) = e.get(&r) {
                let mut parts: Vec<Value> = if sep.is_empty() {
                    s.chars()
                        .map(|c| Value::String(c.to_string().into()))
                        .collect()
                } else {
                    s.split(sep.as_str()).map(Value::from).collect()
                };
                // Ruby's String#split drops trailing empty strings.
                while parts.last().is_some_and(|p| p.as_str() == Some("")) {
                    parts.pop();
                }
                e.set(&r, Value::Array(parts));
            }
        }
        for (f, sep) in &self.join {
            let Some(r) = f.resolve(e).map(|r| r.into_owned()) else {
                continue;
            };
            if let Some(Value::Array(items)) = e.get(&r) {
                let joined = items
                    .iter()
                    .map(Value::to_display_string)
                    .collect::<Vec<_>>()
                    .join(sep);
                e.set(&r, Value::String(joined.into()));
            }
        }
        for (dst, src) in &self.merge {
            let (Some(d), Some(s)) = (
                dst.resolve(e).map(|r| r.into_owned()),
                src.resolve(e).map(|r| r.into_owned()),
            ) else {
                continue;
            };
            let added = e.get(&s).cloned();
            let current = e.get(&d).cloned();
            match (current, added) {
                (Some(Value::Object(mut a)), Some(Value::Object(b))) => {
                    a.extend(b);
                    e.set(&d, Value::Object(a));
                }
                (Some(Value::Object(_)), Some(_)) | (Some(_), Some(Value::Object(_))) => ok = false,
                (cur, add) => {
                    let mut list = match cur {
                        Some(Value::Array(a)) => a,
                        Some(v) => vec![v],
                        None => Vec::new(),
                    };
                    match add {
                        Some(Value::Array(a)) => list.extend(a),
                        Some(v) => list.push(v),
                        None => {}
                    }
                    e.set(&d, Value::Array(list));
                }
            }
        }
        for (src, dst) in &self.copy {
            let (Some(s), Some(d)) = (
                src.resolve(e).map(|r| r.into_owned()),
                dst.resolve(e).map(|r| r.into_owned()),
            ) else {
                continue;
            };
            if let Some(v) = e.get(&s).cloned() {
                e.set(&d, v);
            }
        }
        ok
    }
}

impl Filter for Mutate {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        if !self.apply(event) {
            event.add_tag(&self.tag_on_failure);
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_ruby_prefix_rules() {
        assert_eq!(leading_number("123abc", false), Value::Int(123));
        assert_eq!(leading_number("abc", false), Value::Int(0));
        assert_eq!(leading_number("-12.5", false), Value::Int(-12));
        assert_eq!(leading_number("1.5e3x", true), Value::Float(1500.0));
        assert_eq!(
            convert_scalar(&"1.234,5".into(), Conversion::FloatEu),
            Some(Value::Float(1234.5))
        );
        assert_eq!(
            convert_scalar(&"yes".into(), Conversion::Boolean),
            Some(Value::Bool(true))
        );
        assert_eq!(
            convert_scalar(&Value::Object(Default::default()), Conversion::Integer),
            None
        );
    }
}

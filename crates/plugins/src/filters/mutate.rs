//! `mutate`: rename, replace, convert and reshape fields.
//!
//! Operations run in Logstash's fixed order, whatever the order in the config: coerce, rename,
//! update, replace, convert, gsub, uppercase, capitalize, lowercase, strip, split, join, merge,
//! copy; then the common options (add_field, add_tag, ...) apply. Where Logstash's mutate
//! raises (text that is not a number for `convert`, a `rename` name filled in from the event
//! that is no field reference, a gsub pattern from the event that is no regex, `strip` on an
//! array holding a non-string), the remaining operations and the common options are skipped
//! and the event is tagged `tag_on_failure`; where it logs and skips (case changes or gsub on a
//! number, `convert` on a hash, `merge` of a hash with a non-hash), so does this.

use sluice_event::{Event, FieldRef, Template, Value};
use sluice_pipeline::{ConfigError, Filter, Options};
use sluice_regex::{Regex, Replacement};

use crate::field::FieldName;
use crate::numbers::{self, Decimal, Syntax};

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
    dynamic: std::collections::HashMap<String, Result<Regex, String>>,
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

/// A field an operation works on. Only `rename` fills its names in from the event (as
/// Logstash's mutate does); the other operations take the name as written, `%{` and all.
fn literal(opts: &Options, option: &str, text: &str) -> Result<FieldName, ConfigError> {
    FieldRef::parse(text)
        .map(FieldName::Fixed)
        .map_err(|e| opts.error(option, e.to_string()))
}

fn names(opts: &mut Options, option: &str) -> Result<Vec<FieldName>, ConfigError> {
    let list = opts.string_list(option)?.unwrap_or_default();
    list.iter().map(|f| literal(opts, option, f)).collect()
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
        .map(|(k, v)| Ok((literal(opts, option, &k)?, Template::parse(&v))))
        .collect()
}

fn field_pairs(
    opts: &mut Options,
    option: &str,
) -> Result<Vec<(FieldName, FieldName)>, ConfigError> {
    let name = if option == "rename" {
        FieldName::parse
    } else {
        literal
    };
    pairs(opts, option)?
        .into_iter()
        .map(|(k, v)| Ok((name(opts, option, &k)?, name(opts, option, &v)?)))
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
        m.convert.push((literal(opts, "convert", &field)?, conv));
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
            field: literal(opts, "gsub", &t[0])?,
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
            target.push((literal(opts, option, &k)?, sep));
        }
    }
    m.merge = field_pairs(opts, "merge")?;
    m.copy = field_pairs(opts, "copy")?;
    m.tag_on_failure = opts.string_or("tag_on_failure", "_mutate_error")?;
    Ok(Box::new(m))
}

/// Logstash 8.14+'s `convert_integer` / `convert_float` on a string: `_eu` swaps `,` and
/// `.`; then surrounding space and every `,` go (thousands separators) and the text is lower
/// cased; `0x…` is hexadecimal (an integer, or a hex float when it has a point); anything else
/// must be a whole decimal number (`BigDecimal` for integers, truncated: `"1.230000e+02"` is
/// 123; Ruby's strict `Float()` for floats). Text that is none of these is an error.
fn number_from_text(text: &str, float: bool, eu: bool) -> Result<Value, String> {
    let swapped;
    let text = if eu {
        swapped = text
            .chars()
            .map(|c| match c {
                ',' => '.',
                '.' => ',',
                c => c,
            })
            .collect::<String>();
        &swapped
    } else {
        text
    };
    let cleaned = text.trim().replace(',', "").to_lowercase();
    let t = cleaned.as_str();
    let hex = numbers::split_sign(t).1.starts_with("0x");
    let invalid = || {
        let kind = if float { "Float" } else { "Integer" };
        format!("invalid value for {kind}(): {text:?}")
    };
    if float {
        let f = if hex {
            numbers::ruby_hex_float(t)
        } else {
            numbers::ruby_float(t)
        };
        return f.map(Value::Float).ok_or_else(invalid);
    }
    if hex {
        return if t.contains('.') {
            let f = numbers::ruby_hex_float(t).ok_or_else(invalid)?;
            float_to_integer(f)
        } else {
            numbers::ruby_hex_integer(t).ok_or_else(invalid)
        };
    }
    Decimal::parse(t, Syntax::Ruby)
        .ok_or_else(invalid)?
        .to_integer()
        .ok_or_else(|| format!("{text:?} has more than {} digits", numbers::MAX_DIGITS))
}

/// Ruby's `Integer(float)`: truncated toward zero; NaN and infinities are errors.
fn float_to_integer(f: f64) -> Result<Value, String> {
    if !f.is_finite() {
        return Err(format!("{f} cannot be converted to an integer"));
    }
    let t = f.trunc();
    if t.abs() >= 1.7e38 {
        return Err(format!("{f} is beyond 128 bits"));
    }
    Ok(Value::integer(t as i128))
}

/// Logstash's `TRUE_REGEX` / `FALSE_REGEX` (`/^(true|t|yes|y|1|1.0)$/i`), with Ruby's
/// meaning: `^`/`$` match at any line and the `.` of `1.0` is any character.
struct Booleans {
    yes: Regex,
    no: Regex,
}

fn booleans() -> &'static Booleans {
    static B: std::sync::OnceLock<Booleans> = std::sync::OnceLock::new();
    B.get_or_init(|| Booleans {
        yes: Regex::new("(?i)^(true|t|yes|y|1|1.0)$").expect("a valid regex"),
        no: Regex::new("(?i)^(false|f|no|n|0|0.0)$").expect("a valid regex"),
    })
}

/// One scalar converted as Logstash's mutate does; `Err` where Ruby raises (the filter then
/// stops and tags the event).
fn convert_scalar(v: &Value, conv: Conversion) -> Result<Value, String> {
    let float = matches!(conv, Conversion::Float | Conversion::FloatEu);
    let eu = matches!(conv, Conversion::IntegerEu | Conversion::FloatEu);
    Ok(match (conv, v) {
        (_, Value::Null) => Value::Null,
        (Conversion::String, Value::String(_)) => v.clone(),
        (Conversion::String, other) => Value::String(other.to_display_string().into()),
        (Conversion::Boolean, Value::Bool(_)) => v.clone(),
        (Conversion::Boolean, other) => {
            let s = other.to_display_string();
            let b = booleans();
            if b.yes.is_match(&s) {
                Value::Bool(true)
            } else if s.is_empty() || b.no.is_match(&s) {
                Value::Bool(false)
            } else {
                tracing::warn!("Failed to convert {s} into boolean.");
                v.clone()
            }
        }
        (_, Value::Bool(b)) if float => Value::Float(*b as i64 as f64),
        (_, Value::Bool(b)) => Value::Int(*b as i64),
        (_, Value::Int(_) | Value::BigInt(_)) if float => Value::Float(v.as_f64().unwrap_or(0.0)),
        (_, Value::Int(_) | Value::BigInt(_)) => v.clone(),
        // A Bignum or BigDecimal: Float() of it, or Integer() (truncated, exact).
        (_, Value::Decimal(_)) if float => Value::Float(v.as_f64().unwrap_or(f64::NAN)),
        (_, Value::Decimal(d)) => Decimal::parse(d, Syntax::Java)
            .and_then(|d| d.to_integer())
            .ok_or_else(|| format!("{d} cannot be converted to an integer"))?,
        (_, Value::Float(_)) if float => v.clone(),
        (_, Value::Float(f)) => float_to_integer(*f)?,
        (_, Value::String(s)) => number_from_text(s, float, eu)?,
        // Ruby's Float() and Integer() take a Timestamp's to_f / to_i: epoch seconds.
        (_, Value::Timestamp(t)) if float => Value::Float(t.millis() as f64 / 1000.0),
        (_, Value::Timestamp(t)) => Value::Int(t.millis().div_euclid(1000)),
        (_, other) => {
            return Err(format!(
                "can't convert {} into {}",
                other.type_name(),
                if float { "Float" } else { "Integer" }
            ))
        }
    })
}

/// Ruby's `String#split(separator)`: a single space splits on runs of white space (leading
/// white space ignored), an empty separator into characters; trailing empty strings go.
fn ruby_split(s: &str, sep: &str) -> Vec<Value> {
    let mut parts: Vec<Value> = if sep == " " {
        s.split_ascii_whitespace().map(Value::from).collect()
    } else if sep.is_empty() {
        s.chars()
            .map(|c| Value::String(c.to_string().into()))
            .collect()
    } else {
        s.split(sep).map(Value::from).collect()
    };
    while parts.last().is_some_and(|p| p.as_str() == Some("")) {
        parts.pop();
    }
    parts
}

/// Applies `f` to a string value or to each string of an array; anything else is left as it
/// is (Logstash logs and skips it).
fn map_strings(v: &mut Value, f: &dyn Fn(&str) -> String) {
    match v {
        Value::String(s) => *s = f(s).into(),
        Value::Array(items) => {
            for i in items {
                if let Value::String(s) = i {
                    *s = f(s).into();
                }
            }
        }
        _ => {}
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
    /// Runs the operations in order; an `Err` is where Logstash's mutate raises, and like it
    /// the operations after it do not run.
    fn apply(&mut self, e: &mut Event) -> Result<(), String> {
        for (f, default) in &self.coerce {
            let Some(r) = f.resolve(e) else { continue };
            if matches!(e.get(&r), Some(Value::Null)) {
                let v = Value::String(default.render(e).into());
                e.set(&r, v);
            }
        }
        for (from, to) in &self.rename {
            let src = resolve_name(from, e)?;
            let dst = resolve_name(to, e)?;
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
            *v = match &*v {
                // Logstash skips a hash (with a debug log) but raises on one inside an array.
                Value::Object(_) => continue,
                Value::Array(items) => Value::Array(
                    items
                        .iter()
                        .map(|i| convert_scalar(i, *conv))
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                other => convert_scalar(other, *conv)?,
            };
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
                    let compiled = self
                        .dynamic
                        .entry(text)
                        .or_insert_with_key(|text| Regex::new(text).map_err(|e| e.to_string()));
                    match compiled {
                        Ok(re) => re,
                        Err(err) => return Err(format!("invalid gsub pattern: {err}")),
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
                    map_strings(v, &|s| match case {
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
            match e.get_mut(&r) {
                Some(Value::String(s)) => *s = s.trim().into(),
                Some(Value::Array(items)) => {
                    for i in items {
                        match i {
                            Value::String(s) => *s = s.trim().into(),
                            // Ruby calls `strip` on each item: a non-string raises.
                            other => {
                                return Err(format!(
                                    "undefined method `strip' for a {}",
                                    other.type_name()
                                ))
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        for (f, sep) in &self.split {
            let Some(r) = f.resolve(e).map(|r| r.into_owned()) else {
                continue;
            };
            if let Some(Value::String(s)) = e.get(&r) {
                let parts = ruby_split(s, sep);
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
            let is_hash = |v: &Option<Value>| matches!(v, Some(Value::Object(_)));
            if is_hash(&current) != is_hash(&added) {
                // Logstash logs this and goes on, without tagging the event.
                tracing::error!(dest_field = %d, added_field = %s, "Not possible to merge an array and a hash");
                continue;
            }
            match (current, added) {
                (Some(Value::Object(mut a)), Some(Value::Object(b))) => {
                    a.extend(b);
                    e.set(&d, Value::Object(a));
                }
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
        Ok(())
    }
}

/// A `rename` name filled in from the event; one that is not a valid field reference is
/// an error, as Logstash raises on it.
fn resolve_name<'a>(
    name: &'a FieldName,
    e: &Event,
) -> Result<std::borrow::Cow<'a, FieldRef>, String> {
    name.resolve(e).ok_or_else(|| match name {
        FieldName::Dynamic(t) => format!("invalid field reference {:?}", t.render(e)),
        FieldName::Fixed(r) => format!("invalid field reference {r:?}"),
    })
}

impl Filter for Mutate {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        match self.apply(event) {
            Ok(()) => true,
            Err(exception) => {
                // As Logstash: warn, tag, and skip the common options (no filter_matched).
                tracing::warn!(%exception, "Exception caught while applying mutate filter");
                event.add_tag(&self.tag_on_failure);
                false
            }
        }
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn convert_follows_logstash_8_14() {
        let c = |v: &str, conv| convert_scalar(&v.into(), conv);
        use Conversion::*;
        assert_eq!(c("1,000", Integer), Ok(Value::Int(1000)));
        assert_eq!(c(" 1,234,567.8 ", Integer), Ok(Value::Int(1234567)));
        assert_eq!(c("1.230000e+02", Integer), Ok(Value::Int(123)));
        assert_eq!(c("1.230000E+02", Float), Ok(Value::Float(123.0)));
        assert_eq!(c("0x7B", Integer), Ok(Value::Int(123)));
        assert_eq!(c("-0x1A", Float), Ok(Value::Float(-26.0)));
        assert_eq!(c("0x1.8p1", Integer), Ok(Value::Int(3)));
        assert_eq!(c("1.234,56", IntegerEu), Ok(Value::Int(1234)));
        assert_eq!(c("1.234,56", FloatEu), Ok(Value::Float(1234.56)));
        assert_eq!(
            c("123456789012345678901234", Integer),
            Ok(Value::parse_integer("123456789012345678901234").unwrap())
        );
        for bad in ["abc", "12abc", "", "1.5.5", "0x", "infinity"] {
            assert!(c(bad, Integer).is_err(), "{bad:?}");
            assert!(c(bad, Float).is_err(), "{bad:?}");
        }
        assert_eq!(c("yes", Boolean), Ok(Value::Bool(true)));
        // Ruby's regex: `1.0` has an unescaped dot, and `^`/`$` match at lines.
        assert_eq!(c("1x0", Boolean), Ok(Value::Bool(true)));
        assert_eq!(c("maybe\nno", Boolean), Ok(Value::Bool(false)));
        assert_eq!(c("maybe", Boolean), Ok(Value::String("maybe".into())));
        assert!(convert_scalar(&Value::Object(Default::default()), Integer).is_err());
        assert_eq!(
            convert_scalar(&Value::Float(-2.9), Integer),
            Ok(Value::Int(-2))
        );
        assert!(convert_scalar(&Value::Float(f64::NAN), Integer).is_err());
        assert_eq!(
            ruby_split("  a  b ", " "),
            vec![Value::from("a"), Value::from("b")]
        );
        assert_eq!(
            ruby_split("a,,b,,", ","),
            vec![Value::from("a"), "".into(), "b".into()]
        );
    }
}

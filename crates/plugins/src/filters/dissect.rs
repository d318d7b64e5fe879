//! `dissect`: splits a field on the delimiters of a pattern, without regexes, as
//! logstash-filter-dissect does.
//!
//! A pattern is fields (`%{...}`) and the delimiters between them. Scanning left to right,
//! each field's value runs up to the first occurrence of the next delimiter; the last field
//! takes the rest. Field forms:
//! - `%{name}` (or `%{[a][b]}`) stores the value;
//! - `%{}`, `%{?name}` skip it (a named skip can still be referred to by `&`);
//! - `%{+name}` appends to `name` with the delimiter before the field (a space if none) in
//!   between, in pattern order or by `/N` (`%{+name/2}`); an existing event field is
//!   appended to as well;
//! - `%{&name}` stores the value under the field named by `name`'s value (an event field, or
//!   another field of the pattern);
//! - a `->` suffix (`%{name->}`) skips repeats of the following delimiter (padding).
//!
//! A pattern that does not fit tags `tag_on_failure` (`_dissectfailure`) and changes nothing;
//! so does an empty or null source. A missing source field is skipped silently, as in
//! Logstash. `convert_datatype` (field => `int` | `float`) runs afterwards, tagging
//! `_dataconversionnullvalue_<field>_<type>` or `_dataconversionuncoercible_<field>_<type>`
//! when it cannot convert. The scan keeps the Java implementation's quirks: a leading
//! delimiter must start the text; an empty first field at position 0 does not consume its
//! delimiter.

use crate::numbers::{Decimal, Syntax};
use regex::Regex;
use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

#[derive(Debug, Clone)]
enum Kind {
    Skip,
    Normal(FieldRef),
    Append(FieldRef),
    Indirect(Option<FieldRef>),
}

#[derive(Debug, Clone)]
struct DField {
    /// The key as written, without prefix and suffix (what `&` refers to).
    name: String,
    kind: Kind,
    /// Index into `delims` of the delimiter before this field (possibly empty).
    prev: usize,
    /// Index into `delims` of the delimiter after it (none for the last field).
    next: Option<usize>,
    ordinal: u32,
}

#[derive(Debug, Clone)]
struct Delim {
    text: String,
    greedy: bool,
}

#[derive(Debug, Clone)]
struct Dissector {
    source: FieldRef,
    mapping: String,
    fields: Vec<DField>,
    delims: Vec<Delim>,
    /// Length of the text before the first field (it must start the source).
    first_offset: usize,
    /// Fields to store, normal first, then appends by order, then indirect ones.
    save_order: Vec<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conversion {
    Int,
    Float,
}

#[derive(Clone)]
pub struct Dissect {
    dissectors: Vec<Dissector>,
    conversions: Vec<(String, FieldRef, Conversion)>,
    tag_on_failure: Vec<String>,
}

/// Splits `name/2->` into `("name", "/2->")`, as the Java plugin's suffix regexes do.
fn name_and_suffix(s: &str, suffix_re: &Regex, suffix_only_re: &Regex) -> (String, String) {
    if suffix_only_re.is_match(s) {
        return (String::new(), s.to_owned());
    }
    match suffix_re.captures(s) {
        Some(c) => (
            c.get(1).map_or("", |m| m.as_str()).to_owned(),
            c.get(2).map_or("", |m| m.as_str()).to_owned(),
        ),
        None => (s.to_owned(), String::new()),
    }
}

fn parse_ref(name: &str) -> Result<FieldRef, String> {
    FieldRef::parse(name).map_err(|e| e.to_string())
}

impl Dissector {
    fn compile(source: FieldRef, mapping: &str) -> Result<Dissector, String> {
        let suffix_re = Regex::new(r"^(?s)(.+?)(/\d{1,2}|->|/\d{1,2}->|->/\d{1,2})?$").unwrap();
        let suffix_only_re = Regex::new(r"^(/\d{1,2}|->|/\d{1,2}->|->/\d{1,2})?$").unwrap();
        let field_re = Regex::new(r"(?s)(.*?)%\{([^}]*?)\}").unwrap();
        // (delimiter before, field text) pairs, then the text after the last `}`.
        let mut raw: Vec<(String, String)> = field_re
            .captures_iter(mapping)
            .map(|c| (c[1].to_owned(), c[2].to_owned()))
            .collect();
        if raw.is_empty() {
            return Err(format!("no %{{field}} in dissect pattern {mapping:?}"));
        }
        let first_offset = raw[0].0.len();
        let trailing = mapping.rsplit('}').next().unwrap_or("");
        if !mapping.ends_with('}') && !trailing.is_empty() {
            raw.push((trailing.to_owned(), "?auto_added_skip".to_owned()));
        }
        let mut delims: Vec<Delim> = raw
            .iter()
            .map(|(d, _)| Delim {
                text: d.clone(),
                greedy: false,
            })
            .collect();
        // After a `+` or `&` prefix: the name and suffix, which must have a name.
        let prefixed_name = |rest: &str| -> Result<(String, String), String> {
            if rest.is_empty() {
                return Err("field cannot be a prefix on its own without further text".into());
            }
            let (n, s) = name_and_suffix(rest, &suffix_re, &suffix_only_re);
            if n.is_empty() {
                return Err("field cannot be a prefix and a suffix without a name section".into());
            }
            Ok((n, s))
        };
        let mut fields = Vec::with_capacity(raw.len());
        for (i, (_, text)) in raw.iter().enumerate() {
            let next = (i + 1 < raw.len()).then_some(i + 1);
            let (kind, name, suffix) = if text.is_empty() || text.starts_with('?') {
                let (n, s) = name_and_suffix(
                    text.strip_prefix('?').unwrap_or(text),
                    &suffix_re,
                    &suffix_only_re,
                );
                (Kind::Skip, n, s)
            } else if text.starts_with("+&") || text.starts_with("&+") {
                return Err(format!(
                    "field cannot prefix with both Append and Indirect Prefix ({}): {text}",
                    &text[..2]
                ));
            } else if let Some(rest) = text.strip_prefix('+') {
                let (n, s) = prefixed_name(rest)?;
                (Kind::Append(parse_ref(&n)?), n, s)
            } else if let Some(rest) = text.strip_prefix('&') {
                let (n, s) = prefixed_name(rest)?;
                (Kind::Indirect(FieldRef::parse(&n).ok()), n, s)
            } else {
                let (n, s) = name_and_suffix(text, &suffix_re, &suffix_only_re);
                // `%{->}`: a nameless field only pads; nothing to store.
                let kind = if n.is_empty() {
                    Kind::Skip
                } else {
                    Kind::Normal(parse_ref(&n)?)
                };
                (kind, n, s)
            };
            if let Some(n) = next {
                delims[n].greedy = suffix.contains("->");
            }
            let ordinal = match &kind {
                Kind::Skip => 0,
                Kind::Normal(_) => 1,
                Kind::Append(_) => {
                    let digits: String = suffix
                        .chars()
                        .skip_while(|c| !c.is_ascii_digit())
                        .take_while(|c| c.is_ascii_digit())
                        .collect();
                    100 + digits.parse::<u32>().unwrap_or(0)
                }
                Kind::Indirect(_) => 1000,
            };
            fields.push(DField {
                name,
                kind,
                prev: i,
                next,
                ordinal,
            });
        }
        let mut save_order: Vec<usize> = (0..fields.len())
            .filter(|&i| !matches!(fields[i].kind, Kind::Skip))
            .collect();
        save_order.sort_by_key(|&i| fields[i].ordinal);
        Ok(Dissector {
            source,
            mapping: mapping.to_owned(),
            fields,
            delims,
            first_offset,
            save_order,
        })
    }

    /// Finds each field's value as a byte range of `src`, or `None` if the text does not fit.
    fn scan(&self, src: &str, ranges: &mut Vec<(usize, usize)>) -> bool {
        let hay = src.as_bytes();
        let find = |d: &Delim, from: usize| -> Option<usize> {
            let needle = d.text.as_bytes();
            if needle.is_empty() || from >= hay.len() {
                return None;
            }
            hay[from..]
                .windows(needle.len())
                .position(|w| w == needle)
                .map(|p| p + from)
        };
        ranges.clear();
        ranges.resize(self.fields.len(), (0, 0));
        let mut left = 0usize;
        // Moves past the delimiter before a field; false when a leading delimiter is missing.
        let beyond = |d: &Delim, left: &mut usize| -> bool {
            if d.greedy {
                while let Some(p) = find(d, *left) {
                    if p != *left {
                        break;
                    }
                    *left = p + d.text.len();
                }
            } else if *left == 0 && self.first_offset > 0 {
                if find(d, 0) == Some(0) {
                    *left = d.text.len();
                } else {
                    return false;
                }
            }
            true
        };
        let last = self.fields.len() - 1;
        for (i, f) in self.fields[..last].iter().enumerate() {
            if !beyond(&self.delims[f.prev], &mut left) {
                return false;
            }
            let start = left;
            let next = &self.delims[f.next.unwrap_or(last)];
            let Some(pos) = find(next, left) else {
                return false;
            };
            let mut length = 0;
            if pos > 0 {
                length = pos - left;
                left = pos + next.text.len();
            }
            ranges[i] = (start, start + length);
        }
        if !beyond(&self.delims[self.fields[last].prev], &mut left) {
            return false;
        }
        ranges[last] = (left, hay.len());
        true
    }

    /// Stores the found values; `false` if an indirect name was not a valid field name.
    fn save(&self, e: &mut Event, src: &str, ranges: &[(usize, usize)]) -> bool {
        let value = |i: usize| -> &str {
            let (a, b) = ranges[i];
            src.get(a..b).unwrap_or("")
        };
        for &i in &self.save_order {
            let f = &self.fields[i];
            match &f.kind {
                Kind::Skip => {}
                Kind::Normal(r) => e.set(r, Value::String(value(i).into())),
                Kind::Append(r) => {
                    let v = match e.get(r) {
                        Some(old) => {
                            let d = &self.delims[f.prev].text;
                            let join = if d.is_empty() { " " } else { d.as_str() };
                            let mut s = old.to_display_string();
                            s.push_str(join);
                            s.push_str(value(i));
                            s
                        }
                        None => value(i).to_owned(),
                    };
                    e.set(r, Value::String(v.into()));
                }
                Kind::Indirect(r) => {
                    let key = match r.as_ref().and_then(|r| e.get(r)) {
                        Some(v) => v.to_display_string(),
                        None => self
                            .fields
                            .iter()
                            .enumerate()
                            .find(|(j, o)| *j != i && o.name == f.name)
                            .map(|(j, _)| value(j).to_owned())
                            .unwrap_or_default(),
                    };
                    if !key.is_empty() {
                        match FieldRef::parse(&key) {
                            Ok(r) => e.set(&r, Value::String(value(i).into())),
                            Err(_) => return false,
                        }
                    }
                }
            }
        }
        true
    }
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let mut dissectors = Vec::new();
    for (field, pattern) in opts.string_hash("mapping")?.unwrap_or_default() {
        if pattern.is_empty() {
            continue;
        }
        let source = FieldRef::parse(&field).map_err(|e| opts.error("mapping", e.to_string()))?;
        let d = Dissector::compile(source, &pattern)
            .map_err(|e| opts.error("mapping", format!("{e} (in {pattern:?})")))?;
        dissectors.push(d);
    }
    let mut conversions = Vec::new();
    for (field, ty) in opts.string_hash("convert_datatype")?.unwrap_or_default() {
        let conv = match ty.to_ascii_lowercase().as_str() {
            "int" => Conversion::Int,
            "float" => Conversion::Float,
            _ => {
                return Err(opts.error(
                    "convert_datatype",
                    format!("datatype not supported: {ty:?} (expected int or float)"),
                ))
            }
        };
        let r =
            FieldRef::parse(&field).map_err(|e| opts.error("convert_datatype", e.to_string()))?;
        conversions.push((field, r, conv));
    }
    let tag_on_failure = opts
        .string_list("tag_on_failure")?
        .unwrap_or_else(|| vec!["_dissectfailure".to_owned()]);
    Ok(Box::new(Dissect {
        dissectors,
        conversions,
        tag_on_failure,
    }))
}

/// Logstash's conversion: `new BigDecimal(String.valueOf(value))`, then `toBigInteger()` for
/// `int` (exact at any size); `float` keeps the BigDecimal: the nearest double when that
/// holds its digits (15 or fewer), else the exact decimal.
fn convert(v: &Value, conv: Conversion) -> Option<Value> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Null => return None,
        other => other.to_display_string().into(),
    };
    let d = Decimal::parse(&text, Syntax::Java)?;
    match conv {
        Conversion::Float => Some(d.to_exact()),
        Conversion::Int => d.to_integer(),
    }
}

impl Filter for Dissect {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let mut matched = false;
        let mut ranges = Vec::new();
        for d in &self.dissectors {
            let src = match event.get(&d.source) {
                None => continue,
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) => String::new().into(),
                Some(other) => other.to_display_string().into(),
            };
            let ok = !src.is_empty() && d.scan(&src, &mut ranges) && d.save(event, &src, &ranges);
            if ok {
                matched = true;
            } else {
                tracing::debug!(pattern = %d.mapping, "dissect: pattern did not match");
                for t in &self.tag_on_failure {
                    event.add_tag(t);
                }
            }
        }
        for (name, r, conv) in &self.conversions {
            let (converted, null) = match event.get(r) {
                None | Some(Value::Null) => (None, true),
                Some(v) => (convert(v, *conv), false),
            };
            match converted {
                Some(v) => event.set(r, v),
                None => {
                    let ty = match conv {
                        Conversion::Int => "int",
                        Conversion::Float => "float",
                    };
                    let kind = if null { "nullvalue" } else { "uncoercible" };
                    event.add_tag(&format!("_dataconversion{kind}_{name}_{ty}"));
                }
            }
        }
        matched
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pattern: &str, text: &str) -> Option<Vec<String>> {
        let d = Dissector::compile(FieldRef::parse("message").unwrap(), pattern).unwrap();
        let mut ranges = Vec::new();
        d.scan(text, &mut ranges)
            .then(|| ranges.iter().map(|&(a, b)| text[a..b].to_owned()).collect())
    }

    #[test]
    fn scanning_follows_the_java_plugin() {
        assert_eq!(run("%{a} %{b} %{c}", "1 2 3 4").unwrap(), ["1", "2", "3 4"]);
        assert_eq!(run("%{a},%{b},%{c}", "x,,z").unwrap(), ["x", "", "z"]);
        assert_eq!(
            run("%{a} %{b->} %{c}", "x     y    z").unwrap(),
            ["x", "", "y    z"]
        );
        assert_eq!(
            run("%{a} %{b->} %{c}", "x y    z").unwrap(),
            ["x", "y", "z"]
        );
        assert_eq!(run("[%{a}] %{b}", "[x] y").unwrap(), ["x", "y"]);
        assert!(run("[%{a}] %{b}", "x] y").is_none());
        assert!(run("%{a} %{b} %{c}", "1 2").is_none());
        // Text after the last field becomes a delimiter that must be found.
        assert_eq!(run("%{a}.%{b}!", "x.y!").unwrap(), ["x", "y", ""]);
        assert!(run("%{a}.%{b}!", "x.y").is_none());
    }

    #[test]
    fn field_names_and_suffixes() {
        let s = Regex::new(r"^(?s)(.+?)(/\d{1,2}|->|/\d{1,2}->|->/\d{1,2})?$").unwrap();
        let so = Regex::new(r"^(/\d{1,2}|->|/\d{1,2}->|->/\d{1,2})?$").unwrap();
        let ns = |t: &str| name_and_suffix(t, &s, &so);
        assert_eq!(ns("a/2->"), ("a".into(), "/2->".into()));
        assert_eq!(ns("a->"), ("a".into(), "->".into()));
        assert_eq!(ns("a/123"), ("a/123".into(), "".into()));
        assert_eq!(ns("->"), ("".into(), "->".into()));
    }

    #[test]
    fn conversions_are_big_decimal_exact() {
        let int = |s: &str| convert(&s.into(), Conversion::Int);
        assert_eq!(int("1.5e3"), Some(Value::Int(1500)));
        assert_eq!(int("-7.9"), Some(Value::Int(-7)));
        assert_eq!(
            int("123456789012345678901234"),
            Value::parse_integer("123456789012345678901234")
        );
        assert_eq!(int(" 1"), None);
        assert_eq!(int("."), None);
        assert_eq!(
            convert(&"2.5".into(), Conversion::Float),
            Some(Value::Float(2.5))
        );
        // Logstash's spec: a float a double cannot hold keeps its BigDecimal digits.
        let float = |s: &str| convert(&s.into(), Conversion::Float);
        assert_eq!(
            float("43947404257507186289.345324"),
            Value::decimal("43947404257507186289.345324")
        );
        assert_eq!(
            float("-0.0000012345678901234567"),
            Value::decimal("-0.0000012345678901234567")
        );
        assert_eq!(float("1e-400"), Value::decimal("1E-400"));
        assert_eq!(
            float("1234567890123456789e30"),
            Value::decimal("1.234567890123456789E+48")
        );
        assert_eq!(
            int("123456789012345678901234567890123456789012"),
            Value::decimal("123456789012345678901234567890123456789012")
        );
    }
}

//! Values in settings files: sizes (`64mb`), times (`5s`), port ranges (`9600-9700`), and
//! the typed reading of YAML scalars ([`Val`]) after nested mappings are flattened to dotted
//! keys ([`flatten`]).

use std::path::PathBuf;
use std::time::Duration;

use super::types::*;
use crate::error::SettingsError;
use crate::yaml::{Kind, Node, Pos};

pub(super) type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

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

pub(super) fn flatten_into<'a>(
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

pub(super) fn push<'a>(
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
pub(super) type Mismatch = Option<String>;

impl Val<'_> {
    pub(super) fn error(&self, pos: Pos, message: String) -> SettingsError {
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
    pub(super) fn get<T>(
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

pub(super) fn one_of_text(options: &[&str]) -> String {
    if options.len() > 1 {
        format!("one of {}", alternatives(options))
    } else {
        alternatives(options)
    }
}

/// "`a`, `b` or `c`".
pub(super) fn alternatives(options: &[&str]) -> String {
    let quoted: Vec<String> = options.iter().map(|o| format!("`{o}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

/// A decimal integer (an optional `+`, digits; surrounding spaces allowed).
pub(super) fn parse_uint(t: &str) -> Option<u64> {
    let t = t.trim();
    let digits = t.strip_prefix('+').unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

pub(super) const LOG_LEVELS: &[&str] = &["fatal", "error", "warn", "info", "debug", "trace"];
pub(super) const ORDERED: &[&str] = &["auto", "true", "false"];
pub(super) const SAMPLING_MODES: &[&str] = &["disabled", "minimal", "full"];
pub(super) const ECS: &[&str] = &["disabled", "v1", "v8"];
/// `queue.compression` values (Logstash 9.2).
pub const QUEUE_COMPRESSION: &[&str] = &["none", "disabled", "speed", "balanced", "size"];
pub(super) const REQUIRED_OPTIONAL: &[&str] = &["REQUIRED", "OPTIONAL"];
pub(super) const TLS_PROTOCOLS: &[&str] = &["TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"];

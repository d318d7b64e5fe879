//! `grok`: named captures from regular expressions built out of a library of named patterns.
//!
//! Behaviour follows Logstash's grok filter and jls-grok:
//! - `match => { field => pattern | [patterns] }`; each pattern is expanded (`%{SYNTAX}`,
//!   `%{SYNTAX:semantic}`, `%{SYNTAX:semantic:int|float}`, `%{NAME=regex}`, see [`expand`]),
//!   translated from Oniguruma to PCRE2 (see [`onig`]) and compiled once, with the JIT.
//! - Patterns come from the built-in logstash-patterns-core set chosen by `ecs_compatibility`
//!   (`disabled` = legacy, `v1`/`v8` = ecs-v1), then `patterns_dir` files (matching
//!   `patterns_files_glob`), then `pattern_definitions`; later ones override earlier ones.
//! - Fields are tried in the order written, each field's patterns in order; with
//!   `break_on_match` (default) the first match ends the search. A field holding an array has
//!   every element matched; a missing field is matched as the empty string, a number as its text.
//! - Each capture (in Ruby's `named_captures` order) goes to its field, under `target` if set:
//!   empty or unmatched captures are skipped unless `keep_empty_captures`; `:int`/`:float` use
//!   Ruby's `to_i`/`to_f`; a field listed in `overwrite` is replaced, otherwise an absent/null
//!   field is set, an array gets the value appended, a string becomes `[old, new]`, and any
//!   other existing value is left alone.
//! - No match: the `tag_on_failure` tags are added and the filter reports no match (so
//!   `add_field`/`add_tag` do not apply).
//!
//! Timeouts. Logstash interrupts a match after `timeout_millis` with a timer thread. Here two
//! things stand in for it: PCRE2's own limits stop a runaway backtracking match inside the
//! engine (the match limit of 10,000,000 steps, the heap limit, and a 1 MiB JIT stack per
//! pattern per worker), and the elapsed time of every regex execution (or of the whole event,
//! with `timeout_scope => event`) is checked against `timeout_millis` after it returns: one
//! clock read per execution. Either way the event gets `tag_on_timeout` (and no failure tag),
//! as in Logstash. `timeout_millis => 0` turns the elapsed-time check off; PCRE2's limits
//! always apply.
//!
//! Per worker, each pattern owns its PCRE2 match data (reused for every event): the only
//! allocations per event are the captured values themselves.

pub mod convert;
pub mod expand;
pub mod patterns;

use std::sync::Arc;
use std::time::{Duration, Instant};

use pcre2::bytes::{CaptureLocations, Regex, RegexBuilder};
use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{ConfigError, Filter, Options};
use sluice_regex::onig;

use crate::ecs::Ecs;
use patterns::PatternSet;

/// The largest JIT stack one pattern may use per worker.
const JIT_STACK_MAX: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conversion {
    None,
    Int,
    Float,
}

#[derive(Debug)]
struct Capture {
    /// PCRE2 group number.
    group: usize,
    /// Where the value goes; a name that is no valid field reference fails when it first
    /// captures something, as `event.set` raises in Logstash.
    target: Result<FieldRef, String>,
    overwrite: bool,
    /// The target is `@timestamp`, whose strings `Event::set` parses.
    timestamp: bool,
    conversion: Conversion,
}

struct Pattern {
    /// As written in the config, for log messages.
    text: String,
    regex: Regex,
    captures: Vec<Capture>,
}

struct FieldMatch {
    field: FieldRef,
    name: String,
    patterns: Vec<Pattern>,
}

struct Config {
    matches: Vec<FieldMatch>,
    break_on_match: bool,
    keep_empty_captures: bool,
    tag_on_failure: Vec<String>,
    tag_on_timeout: String,
    timeout: Option<Duration>,
    timeout_per_event: bool,
}

pub struct Grok {
    cfg: Arc<Config>,
    /// `dlq_on_failure`.
    on_failure: crate::dead_letter::OnFailure,
    /// Match data, per field, per pattern: this worker's own.
    locs: Vec<Vec<CaptureLocations>>,
    /// Captures of the input being matched: (pattern, capture, value). Reused.
    found: Vec<(usize, usize, Value)>,
}

enum Stop {
    /// A regex execution ran past `timeout_millis` or hit PCRE2's limits.
    Timeout,
    /// A capture names no valid field: Logstash's `event.set` raises, and the field's match
    /// fails (captures stored before it stay).
    BadField(String),
}

impl Grok {
    fn new(cfg: Arc<Config>, on_failure: crate::dead_letter::OnFailure) -> Grok {
        let locs = cfg
            .matches
            .iter()
            .map(|m| {
                m.patterns
                    .iter()
                    .map(|p| p.regex.capture_locations())
                    .collect()
            })
            .collect();
        Grok {
            cfg,
            on_failure,
            locs,
            found: Vec::new(),
        }
    }
}

fn convert(text: &str, conversion: Conversion) -> Value {
    match conversion {
        Conversion::None => Value::String(text.into()),
        Conversion::Int => convert::ruby_to_i(text),
        Conversion::Float => convert::ruby_to_f(text),
    }
}

/// Stores one capture as Logstash's grok `handle` does.
fn handle(event: &mut Event, c: &Capture, value: Value) {
    let Ok(target) = &c.target else {
        return;
    };
    if c.overwrite {
        event.set(target, value);
        return;
    }
    // One walk: the field as it is, or a null made for the capture.
    let Some(slot) = event.slot(target) else {
        return;
    };
    match slot {
        // `Event::set` parses a string for `@timestamp`.
        Value::Null if c.timestamp => event.set(target, value),
        Value::Null => *slot = value,
        Value::Array(items) => items.push(value),
        v @ Value::String(_) => {
            let old = std::mem::take(v);
            *v = Value::Array(vec![old, value]);
        }
        other => tracing::debug!(
            field = %target,
            existing = other.type_name(),
            "grok: not adding a captured value to a field holding a non-string value"
        ),
    }
}

/// Matches `input` against a field's patterns, collecting captures into `found`.
#[allow(clippy::too_many_arguments)]
fn collect(
    cfg: &Config,
    fm: &FieldMatch,
    locs: &mut [CaptureLocations],
    input: &str,
    found: &mut Vec<(usize, usize, Value)>,
    clock: &mut Option<Instant>,
) -> Result<bool, Stop> {
    let mut matched = false;
    for (pi, (p, loc)) in fm.patterns.iter().zip(locs.iter_mut()).enumerate() {
        let result = p.regex.captures_read(loc, input.as_bytes());
        if let (Some(limit), Some(since)) = (cfg.timeout, clock.as_mut()) {
            let now = Instant::now();
            if now.duration_since(*since) > limit {
                warn_timeout(p, fm, input, "ran past timeout_millis");
                return Err(Stop::Timeout);
            }
            if !cfg.timeout_per_event {
                *since = now;
            }
        }
        match result {
            Err(e) => {
                warn_timeout(p, fm, input, &e.to_string());
                return Err(Stop::Timeout);
            }
            Ok(None) => {}
            Ok(Some(_)) => {
                matched = true;
                for (ci, c) in p.captures.iter().enumerate() {
                    let value = match loc.get(c.group).and_then(|(s, e)| input.get(s..e)) {
                        Some(text) => convert(text, c.conversion),
                        None => Value::Null,
                    };
                    if !cfg.keep_empty_captures
                        && (matches!(&value, Value::Null)
                            || matches!(&value, Value::String(s) if s.is_empty()))
                    {
                        continue;
                    }
                    if let Err(e) = &c.target {
                        return Err(Stop::BadField(e.clone()));
                    }
                    found.push((pi, ci, value));
                }
                if cfg.break_on_match {
                    break;
                }
            }
        }
    }
    Ok(matched)
}

fn warn_timeout(p: &Pattern, fm: &FieldMatch, input: &str, why: &str) {
    let shown: String = input.chars().take(255).collect();
    tracing::warn!(
        pattern = %p.text,
        field = %fm.name,
        value = %shown,
        "grok: timeout executing pattern ({why})"
    );
}

fn apply(fm: &FieldMatch, found: &mut Vec<(usize, usize, Value)>, event: &mut Event) {
    for (pi, ci, value) in found.drain(..) {
        handle(event, &fm.patterns[pi].captures[ci], value);
    }
}

/// Matches one `match` entry against the event.
fn match_field(
    cfg: &Config,
    fm: &FieldMatch,
    locs: &mut [CaptureLocations],
    found: &mut Vec<(usize, usize, Value)>,
    event: &mut Event,
    clock: &mut Option<Instant>,
) -> Result<bool, Stop> {
    found.clear();
    let owned: String;
    let input: &str = match event.get(&fm.field) {
        Some(Value::Array(items)) => {
            let items: Vec<String> = items.iter().map(Value::to_display_string).collect();
            let mut any = false;
            for item in &items {
                let r = collect(cfg, fm, locs, item, found, clock);
                apply(fm, found, event);
                any |= r?;
            }
            return Ok(any);
        }
        Some(Value::String(s)) => s,
        None | Some(Value::Null) => "",
        Some(other) => {
            owned = other.to_display_string();
            &owned
        }
    };
    let r = collect(cfg, fm, locs, input, found, clock);
    apply(fm, found, event);
    r
}

impl Filter for Grok {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let Grok {
            cfg,
            on_failure,
            locs,
            found,
        } = self;
        let mut clock = cfg.timeout.map(|_| Instant::now());
        let mut matched = false;
        for (fm, locs) in cfg.matches.iter().zip(locs.iter_mut()) {
            let result = match match_field(cfg, fm, locs, found, event, &mut clock) {
                Err(Stop::BadField(e)) => {
                    tracing::warn!(field = %fm.name, "grok: captured value not stored: {e}");
                    Ok(false)
                }
                other => other,
            };
            match result {
                Ok(true) => {
                    matched = true;
                    if cfg.break_on_match {
                        break;
                    }
                }
                Ok(false) => {}
                Err(_) => {
                    event.add_tag(&cfg.tag_on_timeout);
                    let field = &fm.name;
                    on_failure.take(event, |_| {
                        format!(
                            "grok: timed out matching [{field}] ({})",
                            cfg.tag_on_timeout
                        )
                    });
                    return false;
                }
            }
        }
        if !matched {
            for tag in &cfg.tag_on_failure {
                event.add_tag(tag);
            }
            on_failure.take(event, |_| {
                let fields: Vec<&str> = cfg.matches.iter().map(|m| m.name.as_str()).collect();
                format!("grok: no pattern matched {}", fields.join(", "))
            });
        }
        matched
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(Grok::new(Arc::clone(&self.cfg), self.on_failure.clone()))
    }

    fn take_dead_letters(&mut self, out: &mut Vec<(Event, String)>) {
        self.on_failure.drain_into(out);
    }
}

/// Ruby's `String#split(":")`: trailing empty pieces dropped.
fn ruby_split_colon(s: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = s.split(':').collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    parts
}

/// Builds the captures of a compiled pattern from its group names, in Ruby's
/// `named_captures` order: names by first appearance, each with all its groups.
fn captures(names: &[String], target: Option<&FieldRef>, overwrite: &[String]) -> Vec<Capture> {
    let mut by_name: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        match by_name.iter_mut().find(|(n, _)| *n == name) {
            Some((_, groups)) => groups.push(i + 1),
            None => by_name.push((name, vec![i + 1])),
        }
    }
    let mut out = Vec::new();
    for (name, groups) in by_name {
        let parts = ruby_split_colon(name);
        let Some(field) = parts.get(1).or(parts.first()).copied() else {
            continue;
        };
        let conversion = match parts.get(2).copied() {
            Some("int") => Conversion::Int,
            Some("float") => Conversion::Float,
            _ => Conversion::None,
        };
        let target_ref = match (FieldRef::parse(field), target) {
            (Ok(f), None) => Ok(f),
            (Ok(f), Some(t)) => {
                let path: String = t
                    .segments()
                    .iter()
                    .chain(f.segments())
                    .map(|s| format!("[{s}]"))
                    .collect();
                FieldRef::parse(&path).map_err(|e| e.to_string())
            }
            (Err(e), _) => {
                tracing::warn!(
                    capture = %name,
                    "grok: this capture names no valid field; an event where it captures \
                     something fails to match: {e}"
                );
                Err(e.to_string())
            }
        };
        let overwrite = overwrite.iter().any(|o| o == field);
        let timestamp = target_ref
            .as_ref()
            .is_ok_and(|r| r.is_top_level() && r.segments()[0] == sluice_event::TIMESTAMP);
        for group in groups {
            out.push(Capture {
                group,
                target: target_ref.clone(),
                overwrite,
                timestamp,
                conversion,
            });
        }
    }
    out
}

/// Expands, translates and compiles one pattern.
fn compile(
    opts: &Options,
    text: &str,
    table: expand::Table<'_>,
    named_captures_only: bool,
    target: Option<&FieldRef>,
    overwrite: &[String],
) -> Result<Pattern, ConfigError> {
    let expanded = expand::expand(text, table, named_captures_only)
        .map_err(|e| opts.error("match", format!("{e} (in grok pattern {text:?})")))?;
    let translated = onig::translate(&expanded);
    let regex = RegexBuilder::new()
        .utf(true)
        .dotall(true)
        .multi_line(true)
        .jit_if_available(true)
        .max_jit_stack_size(Some(JIT_STACK_MAX))
        .build(&translated.pattern)
        .map_err(|e| {
            opts.error(
                "match",
                format!("invalid regular expression in grok pattern {text:?}: {e}"),
            )
        })?;
    Ok(Pattern {
        text: text.to_owned(),
        regex,
        captures: captures(&translated.names, target, overwrite),
    })
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let set = if Ecs::from_options(opts)?.enabled() {
        PatternSet::EcsV1
    } else {
        PatternSet::Legacy
    };
    let entries = opts.string_hash("match")?.unwrap_or_default();
    let break_on_match = opts.boolean_or("break_on_match", true)?;
    let named_captures_only = opts.boolean_or("named_captures_only", true)?;
    let keep_empty_captures = opts.boolean_or("keep_empty_captures", false)?;
    let overwrite = opts.string_list("overwrite")?.unwrap_or_default();
    let tag_on_failure = opts
        .string_list("tag_on_failure")?
        .unwrap_or_else(|| vec!["_grokparsefailure".to_owned()]);
    let tag_on_timeout = opts.string_or("tag_on_timeout", "_groktimeout")?;
    let timeout_millis = opts.float("timeout_millis")?.unwrap_or(30000.0);
    if !(timeout_millis >= 0.0 && timeout_millis.is_finite()) {
        return Err(opts.error("timeout_millis", "expected a number of milliseconds >= 0"));
    }
    let timeout_per_event =
        opts.choice("timeout_scope", &["pattern", "event"], "pattern")? == "event";
    let target = match opts.string("target")? {
        None => None,
        Some(t) => {
            let t = t.trim();
            let parsed = if t.contains('[') {
                FieldRef::parse(t)
            } else if t.is_empty() {
                return Err(opts.error("target", "empty field name"));
            } else {
                Ok(FieldRef::top_level(t))
            };
            Some(parsed.map_err(|e| opts.error("target", e.to_string()))?)
        }
    };
    let dirs = opts.string_list("patterns_dir")?.unwrap_or_default();
    let glob = opts.string_or("patterns_files_glob", "*")?;
    let definitions = opts.string_hash("pattern_definitions")?.unwrap_or_default();

    let mut user =
        patterns::load_user_patterns(&dirs, &glob).map_err(|e| opts.error("patterns_dir", e))?;
    for (name, pattern) in definitions {
        user.insert(name, patterns::chomp(&pattern).to_owned());
    }

    let builtin = patterns::builtin(set);
    let mut matches: Vec<FieldMatch> = Vec::new();
    for (field, text) in entries {
        let pattern = compile(
            opts,
            &text,
            expand::Table {
                builtin,
                user: &user,
            },
            named_captures_only,
            target.as_ref(),
            &overwrite,
        )?;
        match matches.iter_mut().find(|m| m.name == field) {
            Some(m) => m.patterns.push(pattern),
            None => {
                let field_ref =
                    FieldRef::parse(&field).map_err(|e| opts.error("match", e.to_string()))?;
                matches.push(FieldMatch {
                    field: field_ref,
                    name: field,
                    patterns: vec![pattern],
                });
            }
        }
    }
    let cfg = Config {
        matches,
        break_on_match,
        keep_empty_captures,
        tag_on_failure,
        tag_on_timeout,
        timeout: (timeout_millis > 0.0).then(|| Duration::from_secs_f64(timeout_millis / 1000.0)),
        timeout_per_event,
    };
    let on_failure = crate::dead_letter::OnFailure::from_options(opts)?;
    Ok(Box::new(Grok::new(Arc::new(cfg), on_failure)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pattern of both built-in sets expands and compiles with PCRE2.
    #[test]
    fn every_builtin_pattern_compiles() {
        let user = std::collections::HashMap::new();
        let mut failures = Vec::new();
        for set in [PatternSet::Legacy, PatternSet::EcsV1] {
            let builtin = patterns::builtin(set);
            let mut names: Vec<&&str> = builtin.keys().collect();
            names.sort();
            for name in names {
                let table = expand::Table {
                    builtin,
                    user: &user,
                };
                let result = expand::expand(&format!("%{{{name}}}"), table, true)
                    .map_err(|e| e.to_string())
                    .and_then(|x| {
                        RegexBuilder::new()
                            .utf(true)
                            .dotall(true)
                            .multi_line(true)
                            .build(&onig::translate(&x).pattern)
                            .map_err(|e| e.to_string())
                    });
                if let Err(e) = result {
                    failures.push(format!("{set:?} {name}: {e}"));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn split_like_ruby() {
        assert_eq!(ruby_split_colon("NUMBER:x:int"), vec!["NUMBER", "x", "int"]);
        assert_eq!(ruby_split_colon("x"), vec!["x"]);
        assert_eq!(ruby_split_colon("WORD:"), vec!["WORD"]);
    }
}

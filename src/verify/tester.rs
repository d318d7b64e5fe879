//! logstash-tester suites (gaspaio/logstash-tester's layout and JSON, as its rspec runner
//! checks them), run by `sluice test --logstash-tester DIR`.
//!
//! A suite directory holds `config/filter/*.conf` (concatenated in name order; only their
//! filters run), `config/pattern/` (grok pattern files) and the tests: `test/filters/**/*.json`
//! (`{fields, ignore, cases: [{in, out}]}`) and `test/patterns/**/*.json` (`{pattern, cases}`).
//!
//! Filter case: one event, `fields` plus `message` = `in` (JSON types kept, keys literal, no
//! input or codec), through freshly built filters and their final flush; the first event not
//! dropped (or `{}`) is compared with `out`: its top-level keys other than `ignore`d ones must
//! be exactly `out`'s, and each value must read the same as text, as Ruby's `to_s` writes
//! both sides (`200` equals `"200"`, `1.0` does not equal `1`, lists and hashes in Ruby's
//! inspect form, a timestamp in ISO 8601 with milliseconds).
//!
//! Pattern case: grok `%{PATTERN}` (unanchored) on a `message`-only event, with the suite's
//! pattern files and the legacy core patterns; the result's keys other than `@version`,
//! `@timestamp` and `message` must be exactly `out`'s (`tags` included, so a miss is written
//! `"tags": ["_grokparsefailure"]`) and values equal with their types (`"200"` is not `200`).
//!
//! As the runner's Logstash 5 did: ECS compatibility off, and the filters run with the
//! suite's `config/pattern` as working directory, so a `patterns_dir => ["."]` finds its
//! patterns (the runner's container mapped them there).

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Map, Value as Json};
use sluice_config::{Config, SectionKind};
use sluice_event::value::ruby_float_to_s;
use sluice_event::{Event, Value};
use sluice_pipeline::{graph, Registry};

use super::{compare, FileResult, Outcome};

/// Runs every test of the suite in `dir`.
pub fn run(dir: &Path) -> Result<Vec<FileResult>, String> {
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let filter_tests = json_files(&dir.join("test/filters"))?;
    let pattern_tests = json_files(&dir.join("test/patterns"))?;
    if filter_tests.is_empty() && pattern_tests.is_empty() {
        return Err(format!(
            "{}: no tests (test/filters/**/*.json, test/patterns/**/*.json): not a logstash-tester suite",
            dir.display()
        ));
    }
    let pattern_dir = dir.join("config/pattern");
    let mut registry = sluice_plugins::registry();
    registry.set_ecs_compatibility(Some("disabled".to_owned()));
    let filters = if filter_tests.is_empty() {
        None
    } else {
        Some(filter_config(&dir.join("config/filter"))?)
    };
    if pattern_dir.is_dir() {
        std::env::set_current_dir(&pattern_dir)
            .map_err(|e| format!("{}: {e}", pattern_dir.display()))?;
    }
    let name = |p: &Path| {
        p.strip_prefix(dir.join("test"))
            .unwrap_or(p)
            .display()
            .to_string()
    };
    let mut results = Vec::new();
    for path in &filter_tests {
        let config = filters.as_ref().expect("read when there are filter tests");
        results.push(each_case(path, &name(path), |doc, case| {
            filter_case(config, &registry, doc, case)
        }));
    }
    for path in &pattern_tests {
        let grok = match pattern_config(path, &pattern_dir) {
            Ok(c) => c,
            Err(e) => {
                results.push(failed_file(&name(path), e));
                continue;
            }
        };
        results.push(each_case(path, &name(path), |_, case| {
            pattern_case(&grok, &registry, case)
        }));
    }
    Ok(results)
}

/// The `*.json` files under `dir`, at any depth, in name order (none if `dir` is absent).
fn json_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
            if path.is_dir() {
                walk(&path, out)?;
            } else if path.extension().is_some_and(|x| x == "json") {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    if dir.is_dir() {
        walk(dir, &mut out)?;
    }
    out.sort();
    Ok(out)
}

/// The filters of `config/filter/*.conf`, in name order (inputs and outputs are not run).
fn filter_config(dir: &Path) -> Result<Config, String> {
    let mut sources = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "conf"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!("{}: no *.conf files", dir.display()));
    }
    for p in paths {
        let text =
            std::fs::read_to_string(&p).map_err(|e| format!("reading {}: {e}", p.display()))?;
        sources.push((p.display().to_string(), text));
    }
    let mut config = sluice_config::parse_sources(&sources).map_err(|e| e.to_string())?;
    config
        .substitute_env(&|name| std::env::var(name).ok())
        .map_err(|e| e.to_string())?;
    config
        .sections
        .retain(|s| matches!(s.kind, SectionKind::Filter));
    Ok(config)
}

/// The grok a pattern test file runs: `%{<its pattern>}` on `message`.
fn pattern_config(path: &Path, pattern_dir: &Path) -> Result<Config, String> {
    let doc = read(path)?;
    let pattern = doc
        .get("pattern")
        .and_then(Json::as_str)
        .ok_or_else(|| format!("{}: needs \"pattern\" (a pattern's name)", path.display()))?;
    let text = format!(
        "filter {{ grok {{ match => {{ \"message\" => \"%{{{}}}\" }} patterns_dir => [\"{}\"] }} }}",
        super::quoted(pattern),
        super::quoted(&pattern_dir.display().to_string())
    );
    sluice_config::parse(&path.display().to_string(), &text).map_err(|e| e.to_string())
}

fn read(path: &Path) -> Result<Map<String, Json>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    match serde_json::from_str(&text) {
        Ok(Json::Object(m)) => Ok(m),
        Ok(_) => Err(format!("{}: not a JSON object", path.display())),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn failed_file(name: &str, why: String) -> FileResult {
    FileResult {
        name: name.to_owned(),
        outcomes: vec![Outcome {
            name: format!("Running {name}"),
            failure: Some(format!("  error: {why}")),
        }],
        seconds: 0.0,
    }
}

/// Runs `check` on each of the file's `cases` (named `<file>#<i>`, as the runner names them).
fn each_case(
    path: &Path,
    name: &str,
    check: impl Fn(&Map<String, Json>, &Map<String, Json>) -> Result<Option<String>, String>,
) -> FileResult {
    let t = Instant::now();
    let doc = match read(path) {
        Ok(d) => d,
        Err(e) => return failed_file(name, e),
    };
    let Some(Json::Array(cases)) = doc.get("cases") else {
        return failed_file(name, "needs \"cases\": a list of {in, out}".to_owned());
    };
    let outcomes = cases
        .iter()
        .enumerate()
        .map(|(i, case)| {
            let failure = match case {
                Json::Object(c) => check(&doc, c).unwrap_or_else(|e| Some(format!("  error: {e}"))),
                _ => Some("  error: a case must be an object {in, out}".to_owned()),
            };
            Outcome {
                name: format!("{name}#{i}"),
                failure,
            }
        })
        .collect();
    FileResult {
        name: name.to_owned(),
        outcomes,
        seconds: t.elapsed().as_secs_f64(),
    }
}

/// A case's `in` and `out`.
fn in_out(case: &Map<String, Json>) -> Result<(&str, &Map<String, Json>), String> {
    let input = case
        .get("in")
        .and_then(Json::as_str)
        .ok_or("needs \"in\": the message")?;
    let out = case
        .get("out")
        .and_then(Json::as_object)
        .ok_or("needs \"out\": the expected fields")?;
    Ok((input, out))
}

/// Runs the filters on `event`, then their final flush: the first event not dropped.
fn first_out(config: &Config, registry: &Registry, event: Event) -> Result<Json, String> {
    let compiled = graph::compile(config, registry).map_err(|e| e.to_string())?;
    let mut chain = compiled.filter_chain();
    let mut events = vec![event];
    chain.run(&mut events);
    events.extend(chain.flush());
    match events.iter().find(|e| !e.is_cancelled()) {
        Some(e) => serde_json::to_value(e).map_err(|e| e.to_string()),
        None => Ok(Json::Object(Map::new())),
    }
}

fn filter_case(
    config: &Config,
    registry: &Registry,
    doc: &Map<String, Json>,
    case: &Map<String, Json>,
) -> Result<Option<String>, String> {
    let fields = doc
        .get("fields")
        .and_then(Json::as_object)
        .ok_or("the file needs \"fields\" (an object; the runner fails without it)")?;
    let ignore: Vec<&str> = doc
        .get("ignore")
        .and_then(Json::as_array)
        .ok_or("the file needs \"ignore\" (a list; the runner fails without it)")?
        .iter()
        .filter_map(Json::as_str)
        .collect();
    let (input, out) = in_out(case)?;
    let mut map = sluice_event::value::Map::new();
    for (k, v) in fields {
        map.insert(k.as_str().into(), Value::from(v.clone()));
    }
    map.insert("message".into(), Value::from(input));
    let actual = first_out(config, registry, Event::from_map(map))?;
    let empty = Map::new();
    let got = actual.as_object().unwrap_or(&empty);
    let keys: Vec<&String> = got
        .keys()
        .filter(|k| !ignore.contains(&k.as_str()))
        .collect();
    let mut why = String::new();
    for k in out.keys().filter(|k| !keys.contains(k)) {
        why.push_str(&format!("  [{k}]: missing\n"));
    }
    for k in keys.iter().filter(|k| !out.contains_key(k.as_str())) {
        why.push_str(&format!("  [{k}]: not expected\n"));
    }
    for (k, want) in out {
        let have = ruby_to_s(got.get(k).unwrap_or(&Json::Null));
        let want = ruby_to_s(want);
        if have != want && got.contains_key(k) {
            why.push_str(&format!("  [{k}]: expected {want:?}, got {have:?}\n"));
        }
    }
    Ok((!why.is_empty()).then(|| why + &format!("The event: {}", compare::pretty(&actual))))
}

fn pattern_case(
    grok: &Config,
    registry: &Registry,
    case: &Map<String, Json>,
) -> Result<Option<String>, String> {
    let (input, out) = in_out(case)?;
    let actual = first_out(grok, registry, Event::with_message(input))?;
    let mut got = actual.as_object().cloned().unwrap_or_default();
    for k in ["@version", "@timestamp", "message"] {
        got.remove(k);
    }
    let mut why = String::new();
    for k in out.keys().filter(|k| !got.contains_key(k.as_str())) {
        why.push_str(&format!("  [{k}]: missing\n"));
    }
    for (k, v) in &got {
        match out.get(k) {
            None => why.push_str(&format!("  [{k}]: not expected (got {v})\n")),
            Some(want) if !compare::same(want, v) => {
                why.push_str(&format!("  [{k}]: expected {want}, got {v}\n"))
            }
            Some(_) => {}
        }
    }
    Ok((!why.is_empty()).then_some(why))
}

/// A value as Ruby's `to_s` writes it: nil as "", a string as itself, anything else as
/// `inspect` does.
fn ruby_to_s(v: &Json) -> String {
    match v {
        Json::Null => String::new(),
        Json::String(s) => s.clone(),
        other => {
            let mut out = String::new();
            inspect(other, &mut out);
            out
        }
    }
}

/// Ruby's `inspect` (1.9 to 3.3): `nil`, `"text"` with escapes, `[a, b]`, `{"k"=>v}`.
fn inspect(v: &Json, out: &mut String) {
    match v {
        Json::Null => out.push_str("nil"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => out.push_str(&i.to_string()),
            (None, Some(u)) => out.push_str(&u.to_string()),
            _ => out.push_str(&ruby_float_to_s(n.as_f64().unwrap_or(f64::NAN))),
        },
        Json::String(s) => inspect_str(s, out),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                inspect(item, out);
            }
            out.push(']');
        }
        Json::Object(m) => {
            out.push('{');
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                inspect_str(k, out);
                out.push_str("=>");
                inspect(item, out);
            }
            out.push('}');
        }
    }
}

fn inspect_str(s: &str, out: &mut String) {
    out.push('"');
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            '\u{0c}' => out.push_str("\\f"),
            '\u{0b}' => out.push_str("\\v"),
            '\u{08}' => out.push_str("\\b"),
            '\u{07}' => out.push_str("\\a"),
            '#' if matches!(chars.peek(), Some('{' | '$' | '@')) => out.push_str("\\#"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_read_as_ruby_writes_them() {
        assert_eq!(ruby_to_s(&json!(200)), "200");
        assert_eq!(ruby_to_s(&json!("200")), "200");
        assert_eq!(ruby_to_s(&json!(null)), "");
        assert_eq!(ruby_to_s(&json!(1.0)), "1.0");
        assert_eq!(
            ruby_to_s(&json!(["a", 1, null, true])),
            r#"["a", 1, nil, true]"#
        );
        assert_eq!(
            ruby_to_s(&json!({"k": "v\"#{x}\n"})),
            r##"{"k"=>"v\"\#{x}\n"}"##
        );
    }
}

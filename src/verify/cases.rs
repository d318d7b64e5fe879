//! Test-case files in logstash-filter-verifier's (LFV) format, JSON or YAML: which input the
//! events enter through, the lines fed to it, the fields given to every event, the fields to
//! ignore, and the events expected out.
//!
//! ```json
//! { "input_plugin": "stdin", "fields": { "type": "syslog" }, "ignore": ["@timestamp"],
//!   "export_metadata": false, "export_outputs": false, "codec": "line",
//!   "testcases": [ { "description": "...", "input": ["a line"], "fields": {},
//!                    "expected": [ { "message": "a line", "type": "syslog" } ] } ] }
//! ```
//!
//! As LFV does: `fields` keys written as field references (`[a][b]`) become nested objects,
//! other keys are taken as they are; a test case's `fields` replace the file's, key by key;
//! a test case without `input` feeds one placeholder line whose `message` is removed, so that
//! its event carries only the fields.
//!
//! A file without `input_plugin` is LFV 1.x's (standalone mode): `codec` (default `line`),
//! `fields` (given through the input's `add_field`), `ignore`, and `input`/`expected` at the top
//! and in each of `testcases`; all of a file's inputs then make one list and all its expected
//! events another, compared in order (an item may hold only inputs or only events).
//!
//! sluice's own format (a file with `tests` where LFV's has `testcases`) is for what LFV
//! makes awkward: an expected event lists only the fields it checks (LFV compares whole
//! events, so every other field needs an `ignore`), `absent` names fields that must not be
//! there, and the input needs no id when the config has one. Such files live beside the
//! config (`pipeline.conf` → `pipeline.test.yml`), where `sluice test` finds them alone:
//!
//! ```yaml
//! input: syslog_in            # optional with a single input
//! fields: { type: syslog }    # optional, given to every test's events
//! tests:
//!   - name: an sshd login is parsed
//!     line: "Nov 24 10:00:01 web1 sshd[42]: Accepted password for bob"   # or lines: [...]
//!     expect: { program: sshd, "[host][name]": web1 }  # one event; a list for several
//!     absent: [tags]
//! ```

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The line fed for a test case without input; its event's `message` is removed.
pub const DUMMY_LINE: &str = "__lfv_dummy_event";

/// Which format a test-case file is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// logstash-filter-verifier's: whole events compared, LFV's quirks kept.
    Lfv,
    /// LFV 1.x's standalone files (no `input_plugin`): the configs' filters alone, fed
    /// through an input LFV makes (the file's `codec`, its `fields` as `add_field`); every
    /// event of the file compared in order with every expected one.
    Lfv1,
    /// sluice's own: expected events list only the fields they check.
    Sluice,
}

/// One test-case file.
#[derive(Debug)]
pub struct TestFile {
    /// The file's name, as reports name it.
    pub name: String,
    pub format: Format,
    /// The id of the input the events enter through; empty: the config's only input.
    pub input_plugin: String,
    /// `codec`: `json_lines` makes input lines' field references nested (LFV); the codec that
    /// decodes the lines is the input's own.
    pub codec: String,
    pub ignore: Vec<String>,
    pub export_metadata: bool,
    pub export_outputs: bool,
    pub cases: Vec<Case>,
    /// LFV 1.x: `fields` as the generated input's `add_field` (key, value) pairs, as LFV
    /// writes them (a nested object's keys as a field reference, an array's elements one
    /// by one, every value a string).
    pub add_field: Vec<(String, String)>,
}

#[derive(Debug)]
pub struct Case {
    pub description: Option<String>,
    pub lines: Vec<String>,
    /// The file's `fields` with this case's over them.
    pub fields: Map<String, Value>,
    pub expected: Vec<Value>,
    /// Fields none of the case's events may have (sluice's format).
    pub absent: Vec<String>,
}

const FILE_KEYS: &[&str] = &[
    "input_plugin",
    "codec",
    "ignore",
    "fields",
    "export_metadata",
    "export_outputs",
    "testcases",
];
const CASE_KEYS: &[&str] = &["description", "input", "fields", "expected"];
const OWN_FILE_KEYS: &[&str] = &["input", "fields", "tests"];
const OWN_TEST_KEYS: &[&str] = &["name", "line", "lines", "fields", "expect", "absent"];

/// The test files of sluice's format beside a config: `x.test.yml` (or `.yaml`) for a file
/// `x.conf`, every `*.test.yml` / `*.test.yaml` in a config directory.
pub fn beside(config: &str) -> Result<Vec<PathBuf>, String> {
    let path = Path::new(config);
    let (found, looked) = if path.is_dir() {
        let is_test = |f: &Path| {
            f.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".test.yml") || n.ends_with(".test.yaml"))
        };
        let looked = format!("*.test.yml in {}", path.display());
        (files_in(path, is_test)?, looked)
    } else if path.is_file() {
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        let candidates =
            ["yml", "yaml"].map(|ext| path.with_file_name(format!("{stem}.test.{ext}")));
        let looked = candidates[0].display().to_string();
        let found = candidates.into_iter().filter(|f| f.is_file()).collect();
        (found, looked)
    } else {
        return Err(format!(
            "{config}: no test-case files given, and tests are looked for beside a config file \
             or directory only (name the test-case files)"
        ));
    };
    if found.is_empty() {
        return Err(format!(
            "no test-case files given, and none beside the config (looked for {looked})"
        ));
    }
    Ok(found)
}

/// The files in `dir` (not recursive) that `wanted` picks, in name order.
fn files_in(dir: &Path, wanted: impl Fn(&Path) -> bool) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| f.is_file() && wanted(f))
        .collect();
    files.sort();
    Ok(files)
}

/// The test-case files named: files as given, directories' `*.json`, `*.yaml` and `*.yml`
/// files (not recursive), each list in name order.
pub fn find(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let files = files_in(p, |f| {
                matches!(
                    f.extension().and_then(|x| x.to_str()),
                    Some("json" | "yaml" | "yml")
                )
            })?;
            if files.is_empty() {
                return Err(format!(
                    "{}: no test-case files (*.json, *.yaml, *.yml)",
                    p.display()
                ));
            }
            out.extend(files);
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            return Err(format!(
                "{}: no such test-case file or directory",
                p.display()
            ));
        }
    }
    Ok(out)
}

/// A test-case file's document: YAML for `.yaml`/`.yml`, else JSON; an object.
pub fn read_doc(path: &Path) -> Result<Map<String, Value>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let at = |msg: String| format!("{}: {msg}", path.display());
    let doc = match path.extension().and_then(|x| x.to_str()) {
        Some("yaml" | "yml") => yaml_to_json(&text).map_err(at)?,
        _ => serde_json::from_str(&text).map_err(|e| at(format!("invalid JSON: {e}")))?,
    };
    match doc {
        Value::Object(doc) => Ok(doc),
        _ => Err(at("expected an object of test-case settings".into())),
    }
}

/// Reads and checks one test-case file.
pub fn load(path: &Path) -> Result<TestFile, String> {
    let at = |msg: String| format!("{}: {msg}", path.display());
    let doc = read_doc(path)?;
    match doc.contains_key("tests") {
        true => parse_own(path, doc).map_err(at),
        false => parse(path, doc).map_err(at),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    )
}

/// A list of strings (or one string, when `one` allows it).
fn strings(key: &str, v: &Value, one: bool) -> Result<Vec<String>, String> {
    match v {
        Value::String(s) if one => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!("{key:?} lists strings, not {other}")),
            })
            .collect(),
        other => Err(format!("{key:?} must be a list of strings, not {other}")),
    }
}

/// A file in sluice's own format (see the module docs).
fn parse_own(path: &Path, doc: Map<String, Value>) -> Result<TestFile, String> {
    if let Some(key) = doc.keys().find(|k| !OWN_FILE_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "unknown key {key:?} (known in a file with \"tests\": {})",
            OWN_FILE_KEYS.join(", ")
        ));
    }
    let input_plugin = match doc.get("input") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => Err(format!("\"input\" is an input's id, not {other}"))?,
    };
    let global = match doc.get("fields") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => expand(m),
        Some(other) => Err(format!("\"fields\" must be an object, not {other}"))?,
    };
    let Some(Value::Array(tests)) = doc.get("tests") else {
        return Err("\"tests\" must be a list of tests".to_owned());
    };
    if tests.is_empty() {
        return Err("\"tests\" is empty".to_owned());
    }
    let mut cases = Vec::new();
    for (i, t) in tests.iter().enumerate() {
        let Value::Object(t) = t else {
            return Err(format!("tests[{i}] must be an object"));
        };
        let case = own_case(t, &global).map_err(|e| {
            let name = t.get("name").and_then(Value::as_str);
            match name {
                Some(n) => format!("tests[{i}] ({n}): {e}"),
                None => format!("tests[{i}]: {e}"),
            }
        })?;
        cases.push(case);
    }
    let export_metadata = cases
        .iter()
        .flat_map(|c| &c.expected)
        .any(|e| e.get("@metadata").is_some())
        || cases
            .iter()
            .flat_map(|c| &c.absent)
            .any(|a| a.starts_with("[@metadata]") || a == "@metadata");
    Ok(TestFile {
        name: file_name(path),
        format: Format::Sluice,
        input_plugin,
        codec: "line".to_owned(),
        ignore: Vec::new(),
        export_metadata,
        export_outputs: false,
        cases,
        add_field: Vec::new(),
    })
}

fn own_case(t: &Map<String, Value>, global: &Map<String, Value>) -> Result<Case, String> {
    if let Some(key) = t.keys().find(|k| !OWN_TEST_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "unknown key {key:?} (known: {})",
            OWN_TEST_KEYS.join(", ")
        ));
    }
    let lines = match (t.get("line"), t.get("lines")) {
        (Some(_), Some(_)) => Err("give \"line\" or \"lines\", not both".to_owned())?,
        (Some(Value::String(s)), None) => vec![s.clone()],
        (Some(other), None) => Err(format!("\"line\" must be a string, not {other}"))?,
        (None, Some(v)) => {
            let lines = strings("lines", v, false)?;
            if lines.is_empty() {
                return Err("\"lines\" is empty (leave it out to test fields alone)".into());
            }
            lines
        }
        // The event carries only the fields.
        (None, None) => vec![DUMMY_LINE.to_owned()],
    };
    let fields = case_fields(t, global)?;
    let expected = match t.get("expect") {
        None => Err("\"expect\" is required: the events out (an empty list if none)".to_owned())?,
        Some(Value::Object(m)) => vec![Value::Object(expand(m))],
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, e)| match e {
                Value::Object(m) => Ok(Value::Object(expand(m))),
                other => Err(format!(
                    "expect[{i}] must be an object (an event), not {other}"
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => Err(format!(
            "\"expect\" must be an event or a list of events, not {other}"
        ))?,
    };
    let absent = match t.get("absent") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => strings("absent", v, true)?,
    };
    Ok(Case {
        description: t.get("name").map(|n| match n {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }),
        lines,
        fields,
        expected,
        absent,
    })
}

fn parse(path: &Path, doc: Map<String, Value>) -> Result<TestFile, String> {
    let v1 = doc.get("input_plugin").is_none_or(Value::is_null);
    if v1 {
        return parse_v1(path, doc);
    }
    for key in doc.keys() {
        if key == "input" || key == "expected" {
            return Err(format!(
                "top-level {key:?} is the old format: put inputs and expected events in \"testcases\""
            ));
        }
        if !FILE_KEYS.contains(&key.as_str()) {
            return Err(format!(
                "unknown key {key:?} (known: {})",
                FILE_KEYS.join(", ")
            ));
        }
    }
    let string = |key: &str| -> Result<Option<String>, String> {
        match doc.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("{key:?} must be a string, not {other}")),
        }
    };
    let flag = |key: &str| -> Result<bool, String> {
        match doc.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(format!("{key:?} must be true or false, not {other}")),
        }
    };
    let input_plugin = string("input_plugin")?.unwrap_or_default();
    if input_plugin.is_empty() {
        return Err(
            "\"input_plugin\" is required: the id of the input the events enter through".to_owned(),
        );
    }
    let ignore = match doc.get("ignore") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!("\"ignore\" lists field names, not {other}")),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => Err(format!("\"ignore\" must be a list, not {other}"))?,
    };
    let global = match doc.get("fields") {
        None => Map::new(),
        Some(Value::Object(m)) => {
            for (k, v) in m {
                if let Value::Array(items) = v {
                    if items.iter().any(Value::is_object) {
                        return Err(format!(
                            "fields: {k:?} holds objects inside a list, which are not supported"
                        ));
                    }
                }
            }
            expand(m)
        }
        Some(other) => Err(format!("\"fields\" must be an object, not {other}"))?,
    };
    let mut cases = Vec::new();
    match doc.get("testcases") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let Value::Object(c) = item else {
                    return Err(format!("testcases[{i}] must be an object"));
                };
                cases.push(parse_case(c, &global).map_err(|e| format!("testcases[{i}]: {e}"))?);
            }
        }
        Some(other) => Err(format!("\"testcases\" must be a list, not {other}"))?,
    }
    Ok(TestFile {
        name: file_name(path),
        format: Format::Lfv,
        input_plugin,
        codec: string("codec")?.unwrap_or_else(|| "line".to_owned()),
        ignore,
        export_metadata: flag("export_metadata")?,
        export_outputs: flag("export_outputs")?,
        cases,
        add_field: Vec::new(),
    })
}

const V1_FILE_KEYS: &[&str] = &[
    "codec",
    "ignore",
    "fields",
    "input",
    "expected",
    "testcases",
];
const V1_CASE_KEYS: &[&str] = &["input", "expected", "description"];

/// An LFV 1.x file (standalone mode, no `input_plugin`): the top-level `input` and `expected`
/// first, then each of `testcases`' (an item may hold only one of them: the file's inputs
/// and expected events are compared as two lists, in order).
fn parse_v1(path: &Path, doc: Map<String, Value>) -> Result<TestFile, String> {
    if let Some(key) = doc.keys().find(|k| !V1_FILE_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "unknown key {key:?} (known in a file without \"input_plugin\", LFV 1.x's: {}; LFV 2's files name an \"input_plugin\")",
            V1_FILE_KEYS.join(", ")
        ));
    }
    let codec = match doc.get("codec") {
        None | Some(Value::Null) => "line".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(format!("\"codec\" must be a string, not {other}")),
    };
    let ignore = match doc.get("ignore") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => strings("ignore", v, false)?,
    };
    let add_field = match doc.get("fields") {
        None => Vec::new(),
        Some(Value::Null) => return Err("\"fields\" must not be null".to_owned()),
        Some(Value::Object(m)) => {
            let mut out = Vec::new();
            v1_add_field("", m, &mut out)?;
            // LFV writes the entries sorted; a list's elements stay in their order.
            out.sort_by(|a, b| a.0.cmp(&b.0));
            out
        }
        Some(other) => return Err(format!("\"fields\" must be an object, not {other}")),
    };
    let lines = |v: Option<&Value>, at: &str| -> Result<Vec<String>, String> {
        match v {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(v) => strings(at, v, false),
        }
    };
    let events = |v: Option<&Value>, at: &str| -> Result<Vec<Value>, String> {
        match v {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, e)| match e {
                    Value::Object(m) => Ok(Value::Object(expand(m))),
                    _ => Err(format!("{at}[{i}] must be an object (an event)")),
                })
                .collect(),
            Some(other) => Err(format!("{at:?} must be a list of events, not {other}")),
        }
    };
    let case = |c: &Map<String, Value>, at: &str| -> Result<Case, String> {
        Ok(Case {
            description: c.get("description").and_then(|d| match d {
                Value::Null => None,
                Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            }),
            lines: lines(c.get("input"), "input").map_err(|e| format!("{at}: {e}"))?,
            fields: Map::new(),
            expected: events(c.get("expected"), "expected").map_err(|e| format!("{at}: {e}"))?,
            absent: Vec::new(),
        })
    };
    let mut cases = vec![case(&doc, "the file's own input and expected")?];
    match doc.get("testcases") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let Value::Object(c) = item else {
                    return Err(format!("testcases[{i}] must be an object"));
                };
                if let Some(key) = c.keys().find(|k| !V1_CASE_KEYS.contains(&k.as_str())) {
                    return Err(format!(
                        "testcases[{i}]: unknown key {key:?} (known: {})",
                        V1_CASE_KEYS.join(", ")
                    ));
                }
                cases.push(case(c, &format!("testcases[{i}]"))?);
            }
        }
        Some(other) => return Err(format!("\"testcases\" must be a list, not {other}")),
    }
    cases.retain(|c| !c.lines.is_empty() || !c.expected.is_empty());
    Ok(TestFile {
        name: file_name(path),
        format: Format::Lfv1,
        input_plugin: String::new(),
        codec,
        ignore,
        export_metadata: false,
        export_outputs: false,
        cases,
        add_field,
    })
}

/// LFV 1.x's `fields` as the `add_field` pairs it writes: a nested object's keys as a field
/// reference (`[a][b]`), an array's elements one by one (Logstash then appends them), every
/// value as its text; objects inside arrays are refused, as LFV refuses them.
fn v1_add_field(
    prefix: &str,
    m: &Map<String, Value>,
    out: &mut Vec<(String, String)>,
) -> Result<(), String> {
    for (k, v) in m {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}[{k}]")
        };
        let nested_key = || {
            if prefix.is_empty() {
                format!("[{k}]")
            } else {
                key.clone()
            }
        };
        match v {
            Value::Object(inner) => v1_add_field(&nested_key(), inner, out)?,
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::Object(_) => {
                            return Err(format!(
                                "fields: {key:?} holds objects inside a list, which LFV does not support"
                            ))
                        }
                        Value::String(s) => out.push((key.clone(), s.clone())),
                        other => out.push((key.clone(), other.to_string())),
                    }
                }
            }
            Value::String(s) => out.push((key, s.clone())),
            Value::Null => out.push((key, String::new())),
            other => out.push((key, other.to_string())),
        }
    }
    Ok(())
}

fn parse_case(c: &Map<String, Value>, global: &Map<String, Value>) -> Result<Case, String> {
    if let Some(key) = c.keys().find(|k| !CASE_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "unknown key {key:?} (known: {})",
            CASE_KEYS.join(", ")
        ));
    }
    let lines = match c.get("input") {
        None | Some(Value::Null) => vec![DUMMY_LINE.to_owned()],
        Some(Value::Array(items)) if items.is_empty() => vec![DUMMY_LINE.to_owned()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!("\"input\" lists lines (strings), not {other}")),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => Err(format!("\"input\" must be a list of lines, not {other}"))?,
    };
    let fields = case_fields(c, global)?;
    let expected = match c.get("expected") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            for (i, e) in items.iter().enumerate() {
                if !e.is_object() {
                    return Err(format!("expected[{i}] must be an object (an event)"));
                }
            }
            items.clone()
        }
        Some(other) => Err(format!(
            "\"expected\" must be a list of events, not {other}"
        ))?,
    };
    let description = match c.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    Ok(Case {
        description,
        lines,
        fields,
        expected,
        absent: Vec::new(),
    })
}

/// A test case's `fields` over the file's, key by key (field references made nested).
fn case_fields(
    case: &Map<String, Value>,
    global: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let mut fields = global.clone();
    match case.get("fields") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in expand(m) {
                fields.insert(k, v);
            }
        }
        Some(other) => Err(format!("\"fields\" must be an object, not {other}"))?,
    }
    Ok(fields)
}

/// The parts of a field reference written wholly in brackets (`[a][b]` → `a`, `b`).
pub fn bracket_parts(key: &str) -> Option<Vec<&str>> {
    let mut rest = key;
    let mut parts = Vec::new();
    while !rest.is_empty() {
        let inner = rest.strip_prefix('[')?;
        let end = inner.find(']')?;
        let part = &inner[..end];
        if part.is_empty() || part.contains(['[', ',']) {
            return None;
        }
        parts.push(part);
        rest = &inner[end + 1..];
    }
    (!parts.is_empty()).then_some(parts)
}

/// Makes keys written as field references nested objects, merging those that share a parent
/// (with each other and with a plain key naming the same object).
pub fn expand(m: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in m {
        match bracket_parts(k) {
            Some(parts) => insert_path(&mut out, &parts, v.clone()),
            None => insert_path(&mut out, &[k.as_str()], v.clone()),
        }
    }
    out
}

/// Sets `parts` in `m` to `v`; objects already there take `v`'s keys instead of being
/// replaced.
fn insert_path(m: &mut Map<String, Value>, parts: &[&str], v: Value) {
    let (first, rest) = parts.split_first().expect("at least one part");
    if rest.is_empty() {
        match (m.get_mut(*first), v) {
            (Some(Value::Object(old)), Value::Object(new)) => {
                for (k, v) in new {
                    insert_path(old, &[k.as_str()], v);
                }
            }
            (_, v) => {
                m.insert((*first).to_owned(), v);
            }
        }
        return;
    }
    let slot = m
        .entry((*first).to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    if let Value::Object(inner) = slot {
        insert_path(inner, rest, v);
    }
}

/// A YAML document as JSON. libyaml's grammar (through `serde_norway`), as lenient as the
/// go-yaml LFV reads test files with: a flow list closed at its key's indentation is fine.
pub fn yaml_to_json(text: &str) -> Result<Value, String> {
    serde_norway::from_str(text).map_err(|e| format!("invalid YAML: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_references_become_nested_and_other_keys_stay() {
        let m = json!({"[a][b]": 1, "[a][c]": 2, "d.e": 3, "[x": 4, "[]": 5, "a": {"z": 0}});
        let Value::Object(m) = m else { unreachable!() };
        assert_eq!(
            Value::Object(expand(&m)),
            json!({"a": {"b": 1, "c": 2, "z": 0}, "d.e": 3, "[x": 4, "[]": 5})
        );
    }

    #[test]
    fn a_case_without_input_feeds_the_placeholder_and_case_fields_replace_file_fields() {
        let doc = json!({
            "input_plugin": "in",
            "fields": {"a": {"x": 1}, "b": 2},
            "testcases": [{"fields": {"a": {"y": 1}}, "expected": [{"a": {"y": 1}}]}]
        });
        let Value::Object(doc) = doc else {
            unreachable!()
        };
        let f = parse(Path::new("t.json"), doc).unwrap();
        assert_eq!(f.cases[0].lines, [DUMMY_LINE]);
        assert_eq!(
            Value::Object(f.cases[0].fields.clone()),
            json!({"a": {"y": 1}, "b": 2})
        );
        assert_eq!(f.codec, "line");
    }

    #[test]
    fn lfv1_files_are_flat_lists_with_fields_as_add_field() {
        let doc = json!({
            "codec": "json_lines",
            "fields": {"z": 1, "tags": ["b", "a"], "n": {"k": {"j": true}}, "a.b": "x"},
            "input": ["top"],
            "testcases": [{"input": ["one"]}, {"expected": [{"[a][b]": 1}]}, {}]
        });
        let Value::Object(doc) = doc else {
            unreachable!()
        };
        let f = parse(Path::new("t.yaml"), doc).unwrap();
        assert_eq!(f.format, Format::Lfv1);
        // Sorted by key; a list's elements in their order; nested keys as references.
        let pairs: Vec<(&str, &str)> = f
            .add_field
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("[n][k][j]", "true"),
                ("a.b", "x"),
                ("tags", "b"),
                ("tags", "a"),
                ("z", "1")
            ]
        );
        // The file's own input first, then each item's; an empty item goes.
        let lines: Vec<&[String]> = f.cases.iter().map(|c| &c.lines[..]).collect();
        assert_eq!(lines, [&["top".to_owned()][..], &["one".to_owned()], &[]]);
        assert_eq!(f.cases[2].expected, [json!({"a": {"b": 1}})]);
    }

    #[test]
    fn mistakes_are_named() {
        let check = |doc: Value, want: &str| {
            let Value::Object(doc) = doc else {
                unreachable!()
            };
            let e = parse(Path::new("t.json"), doc).unwrap_err();
            assert!(e.contains(want), "{e}");
        };
        check(json!({"input_plugin": ""}), "\"input_plugin\" is required");
        // Without input_plugin: LFV 1.x's keys only.
        check(json!({"inputs": []}), "unknown key \"inputs\"");
        check(json!({"fields": null}), "\"fields\" must not be null");
        check(
            json!({"testcases": [{"fields": {}}]}),
            "testcases[0]: unknown key \"fields\"",
        );
        check(
            json!({"fields": {"a": [{"b": 1}]}}),
            "objects inside a list",
        );
        check(json!({"input_plugin": "i", "input": ["x"]}), "old format");
        check(
            json!({"input_plugin": "i", "inputs": []}),
            "unknown key \"inputs\"",
        );
        check(
            json!({"input_plugin": "i", "testcases": [{"expected": [1]}]}),
            "testcases[0]: expected[0] must be an object",
        );
        check(
            json!({"input_plugin": "i", "fields": {"a": [{"b": 1}]}}),
            "objects inside a list",
        );
    }

    #[test]
    fn sluice_format_expectations_are_partial_events_with_nested_references() {
        let doc = json!({
            "fields": {"type": "t"},
            "tests": [
                {"name": "one", "line": "a", "expect": {"[a][b]": 1, "c": 2}, "absent": "tags"},
                {"lines": ["x", "y"], "fields": {"[@metadata][m]": 1}, "expect": []},
                {"expect": [{"[@metadata][k]": "v"}], "absent": ["[x][y]"]}
            ]
        });
        let Value::Object(doc) = doc else {
            unreachable!()
        };
        let f = parse_own(Path::new("t.test.yml"), doc).unwrap();
        assert_eq!(f.format, Format::Sluice);
        assert_eq!(f.input_plugin, "");
        assert!(f.export_metadata, "an expected @metadata field exports it");
        assert_eq!(f.cases[0].lines, ["a"]);
        assert_eq!(f.cases[0].expected, [json!({"a": {"b": 1}, "c": 2})]);
        assert_eq!(f.cases[0].absent, ["tags"]);
        assert_eq!(f.cases[0].description.as_deref(), Some("one"));
        assert_eq!(f.cases[1].lines, ["x", "y"]);
        assert_eq!(
            Value::Object(f.cases[1].fields.clone()),
            json!({"type": "t", "@metadata": {"m": 1}})
        );
        assert_eq!(f.cases[2].lines, [DUMMY_LINE]);
        assert_eq!(f.cases[2].absent, ["[x][y]"]);
    }

    #[test]
    fn sluice_format_mistakes_are_named() {
        let check = |doc: Value, want: &str| {
            let Value::Object(doc) = doc else {
                unreachable!()
            };
            let e = parse_own(Path::new("t.test.yml"), doc).unwrap_err();
            assert!(e.contains(want), "{e}");
        };
        check(json!({"tests": []}), "\"tests\" is empty");
        check(
            json!({"tests": [], "testcases": []}),
            "unknown key \"testcases\"",
        );
        check(
            json!({"tests": [{"name": "n", "line": "a"}]}),
            "tests[0] (n): \"expect\" is required",
        );
        check(
            json!({"tests": [{"line": "a", "lines": ["b"], "expect": []}]}),
            "not both",
        );
        check(
            json!({"tests": [{"line": "a", "expect": [1]}]}),
            "expect[0] must be an object",
        );
        check(
            json!({"tests": [{"line": "a", "expect": [], "absent": [1]}]}),
            "\"absent\" lists strings",
        );
        check(
            json!({"tests": [{"line": "a", "expected": []}]}),
            "unknown key \"expected\"",
        );
    }

    #[test]
    fn tests_beside_a_config_are_found_by_its_name() {
        let dir = std::env::temp_dir().join(format!("sluice-beside-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("p.conf");
        std::fs::write(&config, "").unwrap();
        let e = beside(config.to_str().unwrap()).unwrap_err();
        assert!(e.contains("p.test.yml"), "{e}");
        std::fs::write(dir.join("p.test.yaml"), "").unwrap();
        std::fs::write(dir.join("q.test.yml"), "").unwrap();
        std::fs::write(dir.join("p.yml"), "").unwrap();
        assert_eq!(
            beside(config.to_str().unwrap()).unwrap(),
            [dir.join("p.test.yaml")]
        );
        assert_eq!(
            beside(dir.to_str().unwrap()).unwrap(),
            [dir.join("p.test.yaml"), dir.join("q.test.yml")]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn yaml_scalars_keep_their_types() {
        let v = yaml_to_json("a: 1\nb: 1.5\nc: true\nd: text\ne: >\n  folded\n").unwrap();
        assert_eq!(
            v,
            json!({"a": 1, "b": 1.5, "c": true, "d": "text", "e": "folded\n"})
        );
        // go-yaml (LFV) takes a flow list closed at its key's indentation; so do we.
        let v = yaml_to_json("a:\n  - t: [\n      \"x\"\n    ]\n").unwrap();
        assert_eq!(v, json!({"a": [{"t": ["x"]}]}));
    }
}

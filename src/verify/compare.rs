//! Turning collected events into what LFV compares, and comparing them with the expected ones.
//!
//! As LFV: events are ordered by their input number, then by output id (a stable sort, so
//! clones keep the order they left the filters in); `export_outputs` adds the output's id as
//! `__lfv_out_passed`, `export_metadata` keeps `@metadata` (but for `__lfv_`/`__tmp_` keys);
//! tags starting with `__lfv_` go; the `ignore`d fields and `@version` are removed from the
//! actual events (a parent left empty goes too). Then the i-th actual event is compared with
//! the i-th expected one of the file; numbers compare as numbers (`1` equals `1.0`).

use serde_json::{Map, Value};

use super::cases::{bracket_parts, Format, TestFile};
use super::run::Collected;

/// LFV's name for an output id in `__lfv_out_passed`: letters and digits kept, the rest `_`.
pub fn sanitize(id: &str) -> String {
    id.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The actual events, ordered and cleaned as LFV does.
pub fn actual(
    file: &TestFile,
    collected: Vec<Collected>,
    debug: bool,
    sockets: bool,
) -> Result<Vec<Value>, String> {
    let mut rows: Vec<(u64, String, Value, Map<String, Value>)> = Vec::new();
    for c in collected {
        let meta = match serde_json::to_value(c.event.metadata_value()) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let id = meta
            .get("__lfv_id")
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let doc = serde_json::to_value(&c.event).map_err(|e| {
            format!(
                "event {id} at output {:?} cannot be shown as JSON: {e}",
                c.output
            )
        })?;
        rows.push((id, sanitize(&c.output), doc, meta));
    }
    rows.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut ignore: Vec<&str> = file.ignore.iter().map(String::as_str).collect();
    ignore.push("@version");
    // LFV 1.x's `--sockets`: the unix input's `path`, where a filter left it.
    let socket = (file.format == Format::Lfv1 && sockets)
        .then(|| Value::String(super::setup::SOCKET_PATH.to_owned()));
    Ok(rows
        .into_iter()
        .map(|(id, out, doc, meta)| {
            let Value::Object(mut doc) = doc else {
                return doc;
            };
            if debug {
                doc.insert("__lfv_id".into(), Value::String(id.to_string()));
            }
            if file.export_outputs || debug {
                doc.insert("__lfv_out_passed".into(), Value::String(out));
            }
            if file.export_metadata {
                let kept: Map<String, Value> = meta
                    .into_iter()
                    .filter(|(k, _)| !k.starts_with("__lfv_") && !k.starts_with("__tmp_"))
                    .collect();
                if !kept.is_empty() {
                    doc.insert("@metadata".into(), Value::Object(kept));
                }
            }
            if !debug {
                if let Some(Value::Array(tags)) = doc.get_mut("tags") {
                    let before = tags.len();
                    tags.retain(|t| !t.as_str().is_some_and(|t| t.starts_with("__lfv_")));
                    if tags.is_empty() && before > 0 {
                        doc.remove("tags");
                    }
                }
            }
            if socket.is_some() && doc.get("path") == socket.as_ref() {
                doc.remove("path");
            }
            for field in &ignore {
                match bracket_parts(field) {
                    Some(parts) => {
                        remove_path(&mut doc, &parts);
                    }
                    None => {
                        doc.remove(*field);
                    }
                }
            }
            Value::Object(doc)
        })
        .collect())
}

/// Removes `parts` from `m`; a parent left empty is removed too.
fn remove_path(m: &mut Map<String, Value>, parts: &[&str]) {
    let (first, rest) = parts.split_first().expect("at least one part");
    if rest.is_empty() {
        m.remove(*first);
        return;
    }
    if let Some(Value::Object(inner)) = m.get_mut(*first) {
        remove_path(inner, rest);
        if inner.is_empty() {
            m.remove(*first);
        }
    }
}

/// Whether two JSON values are equal, numbers by value.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Whether `actual` has what `expected` lists (sluice's format): objects compare key by key
/// for the keys `expected` has, at every level; anything else compares whole.
pub fn contains(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(x), Value::Object(y)) => x
            .iter()
            .all(|(k, v)| y.get(k).is_some_and(|w| contains(v, w))),
        _ => same(expected, actual),
    }
}

/// `actual` cut down to the keys `expected` lists (at every level of objects), for a diff
/// that shows only what a partial expectation checks.
pub fn project(expected: &Value, actual: &Value) -> Value {
    match (expected, actual) {
        (Value::Object(x), Value::Object(y)) => Value::Object(
            x.iter()
                .filter_map(|(k, v)| y.get(k).map(|w| (k.clone(), project(v, w))))
                .collect(),
        ),
        _ => actual.clone(),
    }
}

/// The value at a field reference (`[a][b]`) or top-level name, if there is one.
pub fn lookup<'v>(doc: &'v Value, field: &str) -> Option<&'v Value> {
    let parts = bracket_parts(field).unwrap_or_else(|| vec![field]);
    parts.iter().try_fold(doc, |v, p| match v {
        Value::Object(m) => m.get(*p),
        Value::Array(a) => p.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

/// The paths (`[a][0][b]`) where `actual` differs from `expected`, each with what changed.
pub fn changed_paths(expected: &Value, actual: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk("", expected, actual, &mut out);
    out
}

fn walk(path: &str, e: &Value, a: &Value, out: &mut Vec<String>) {
    walk_keys(path, e, a, false, out);
}

/// [`changed_paths`] for a partial expectation: keys `expected` does not list are not
/// reported.
pub fn changed_listed_paths(expected: &Value, actual: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk_keys("", expected, actual, true, &mut out);
    out
}

fn walk_keys(path: &str, e: &Value, a: &Value, listed_only: bool, out: &mut Vec<String>) {
    match (e, a) {
        (Value::Object(x), Value::Object(y)) => {
            let extra = y.keys().filter(|k| !listed_only || x.contains_key(*k));
            let mut keys: Vec<&String> = x.keys().chain(extra).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let p = format!("{path}[{k}]");
                match (x.get(k), y.get(k)) {
                    (Some(v), Some(w)) => walk_keys(&p, v, w, listed_only, out),
                    (Some(_), None) => out.push(format!("{p}: missing")),
                    (None, Some(_)) => out.push(format!("{p}: not expected")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                walk_keys(&format!("{path}[{i}]"), v, w, listed_only, out);
            }
        }
        _ if same(e, a) => {}
        _ => out.push(format!(
            "{}: expected {}, got {}",
            if path.is_empty() { "(event)" } else { path },
            compact(e),
            compact(a)
        )),
    }
}

fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(77).collect::<String>())
    } else {
        s
    }
}

/// Pretty JSON with keys sorted at every level.
pub fn pretty(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&m[k]));
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string_pretty(&sorted(v)).unwrap_or_default()
}

/// A line diff of two texts (`-` expected only, `+` actual only, ` ` both), whole.
pub fn line_diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // Longest common subsequence table, from the ends.
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = String::from("--- expected\n+++ actual\n");
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!(" {}\n", a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push_str(&format!("-{}\n", a[i]));
            i += 1;
        } else {
            out.push_str(&format!("+{}\n", b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_by_value_and_paths_name_the_differences() {
        assert!(same(&json!({"a": 1}), &json!({"a": 1.0})));
        assert!(!same(&json!({"a": 1}), &json!({"a": "1"})));
        let e = json!({"a": {"b": 1}, "t": ["x", "y"], "gone": 1});
        let a = json!({"a": {"b": 2}, "t": ["x", "z"], "new": true});
        assert_eq!(
            changed_paths(&e, &a),
            [
                "[a][b]: expected 1, got 2",
                "[gone]: missing",
                "[new]: not expected",
                "[t][1]: expected \"y\", got \"z\""
            ]
        );
    }

    #[test]
    fn a_partial_expectation_checks_only_the_keys_it_lists() {
        let a = json!({"a": {"b": 1, "c": 2}, "t": ["x"], "other": true});
        assert!(contains(&json!({"a": {"b": 1.0}}), &a));
        assert!(contains(&json!({"t": ["x"]}), &a));
        assert!(!contains(&json!({"t": []}), &a));
        assert!(!contains(&json!({"a": {"d": 1}}), &a));
        assert!(!contains(&json!({"a": 1}), &a));
        assert_eq!(
            changed_listed_paths(&json!({"a": {"b": 2, "d": 1}}), &a),
            ["[a][b]: expected 2, got 1", "[a][d]: missing"]
        );
        assert_eq!(
            project(&json!({"a": {"b": 2}, "z": 1}), &a),
            json!({"a": {"b": 1}})
        );
        assert_eq!(lookup(&a, "[a][c]"), Some(&json!(2)));
        assert_eq!(lookup(&a, "[t][0]"), Some(&json!("x")));
        assert_eq!(lookup(&a, "other"), Some(&json!(true)));
        assert_eq!(lookup(&a, "[a][x]"), None);
    }

    #[test]
    fn the_line_diff_marks_what_differs() {
        let d = line_diff("a\nb\nc\n", "a\nx\nc\n");
        assert_eq!(d, "--- expected\n+++ actual\n a\n-b\n+x\n c\n");
    }

    #[test]
    fn ignored_paths_and_empty_parents_are_removed() {
        let mut m = json!({"a": {"b": 1}, "c": {"d": 1, "e": 2}});
        let Value::Object(m) = &mut m else {
            unreachable!()
        };
        remove_path(m, &["a", "b"]);
        remove_path(m, &["c", "d"]);
        assert_eq!(Value::Object(m.clone()), json!({"c": {"e": 2}}));
    }
}

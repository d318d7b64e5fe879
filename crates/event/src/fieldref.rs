//! [`FieldRef`]: Logstash field references (`message`, `[a][b]`, `[tags][0]`, `[@metadata][x]`).
//!
//! A reference is parsed once (at plugin construction) into path segments; lookups then walk
//! the event's tree without re-parsing. A segment that reads as an integer indexes an array
//! (negative counts from the end) and names a key in an object, as in Logstash.

use std::fmt;

use crate::value::{Key, Map, Value};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldRef {
    segments: Vec<Key>,
    /// Whether the first segment is `@metadata`: known once, asked on every get and set.
    metadata: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid field reference {text:?}: {reason}")]
pub struct FieldRefError {
    pub text: String,
    pub reason: &'static str,
}

impl FieldRef {
    /// Parses `name` or `[a][b]...`.
    pub fn parse(text: &str) -> Result<FieldRef, FieldRefError> {
        let err = |reason| FieldRefError {
            text: text.to_owned(),
            reason,
        };
        if !text.starts_with('[') {
            if text.contains('[') || text.contains(']') {
                return Err(err(
                    "brackets must enclose every path segment, as in [a][b]",
                ));
            }
            if text.is_empty() {
                return Err(err("empty field name"));
            }
            return Ok(FieldRef::from_segments(vec![Key::from(text)]));
        }
        // Logstash's strict tokenizer: brackets may nest (`[[a][b]]` and `[[a]][b]` are
        // `[a][b]`); a `[` must open right at the start or after another bracket, only a
        // bracket may follow a `]`, an empty `[]` is refused, and every bracket is closed.
        // The segments are the non-empty texts between brackets, in order.
        let mut segments = Vec::new();
        let bytes = text.as_bytes();
        let (mut depth, mut start) = (0usize, 0usize);
        for (i, &b) in bytes.iter().enumerate() {
            let previous = i.checked_sub(1).map(|p| bytes[p]);
            match b {
                b'[' => {
                    if start != i {
                        return Err(err(
                            "a [ must open a segment right after another bracket, as in [a][b]",
                        ));
                    }
                    depth += 1;
                    start = i + 1;
                }
                b']' => {
                    if depth == 0 {
                        return Err(err("a ] closes no bracket"));
                    }
                    if start == i && previous != Some(b']') {
                        return Err(err("empty segment []"));
                    }
                    if start < i {
                        segments.push(Key::from(&text[start..i]));
                    }
                    depth -= 1;
                    start = i + 1;
                }
                _ if previous == Some(b']') => {
                    return Err(err(
                        "text after a closing bracket must start another [segment]",
                    ));
                }
                _ => {}
            }
        }
        if depth > 0 {
            return Err(err("missing closing bracket"));
        }
        if segments.is_empty() {
            return Err(err("empty field reference"));
        }
        Ok(FieldRef::from_segments(segments))
    }

    /// A reference to one top-level field, taken literally (no bracket parsing).
    pub fn top_level(name: &str) -> FieldRef {
        FieldRef::from_segments(vec![Key::from(name)])
    }

    /// `[@metadata][name]`, `name` taken literally.
    pub fn metadata_field(name: &str) -> FieldRef {
        FieldRef::from_segments(vec![Key::from(crate::event::METADATA), Key::from(name)])
    }

    /// A reference to the path `segments` (non-empty), taken literally.
    pub fn from_segments(segments: Vec<Key>) -> FieldRef {
        let metadata = segments
            .first()
            .is_some_and(|s| s == crate::event::METADATA);
        FieldRef { segments, metadata }
    }

    pub fn segments(&self) -> &[Key] {
        &self.segments
    }

    pub fn is_top_level(&self) -> bool {
        self.segments.len() == 1
    }

    /// Whether this reference points into `@metadata`.
    pub fn is_metadata(&self) -> bool {
        self.metadata
    }
}

impl fmt::Display for FieldRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.segments {
            write!(f, "[{s}]")?;
        }
        Ok(())
    }
}

fn index_of(seg: &str, len: usize) -> Option<usize> {
    let i: i64 = seg.parse().ok()?;
    let idx = if i < 0 { len as i64 + i } else { i };
    (0..len as i64).contains(&idx).then_some(idx as usize)
}

fn child<'a>(v: &'a Value, seg: &Key) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => index_of(seg, a.len()).map(|i| &a[i]),
        _ => None,
    }
}

fn child_mut<'a>(v: &'a mut Value, seg: &Key) -> Option<&'a mut Value> {
    match v {
        Value::Object(m) => m.get_mut(seg),
        Value::Array(a) => index_of(seg, a.len()).map(move |i| &mut a[i]),
        _ => None,
    }
}

/// Looks up `path` under `root`.
pub fn get<'a>(root: &'a Map, path: &[Key]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut v = root.get(first)?;
    for seg in rest {
        v = child(v, seg)?;
    }
    Some(v)
}

pub fn get_mut<'a>(root: &'a mut Map, path: &[Key]) -> Option<&'a mut Value> {
    let (first, rest) = path.split_first()?;
    let mut v = root.get_mut(first)?;
    for seg in rest {
        v = child_mut(v, seg)?;
    }
    Some(v)
}

/// Sets `path` under `root`, creating intermediate objects; an intermediate that is a scalar
/// is replaced by an object, as Logstash does. Array elements are addressed by index; an index
/// past the end appends.
pub fn set(root: &mut Map, path: &[Key], value: Value) {
    put(root, path, value, true);
}

/// The value at `path` under `root`, made null (with the objects on the way, as [`set`] makes
/// them) if absent: for code that looks at a field and then sets or extends it, in one walk,
/// writing the value where it stays. `None` for an empty path.
pub fn slot<'a>(root: &'a mut Map, path: &[Key]) -> Option<&'a mut Value> {
    let (last, parents) = path.split_last()?;
    let Some((first, middle)) = parents.split_first() else {
        return Some(root.entry(last.clone()).or_insert(Value::Null));
    };
    let mut cur: &mut Value = root.entry(first.clone()).or_insert_with(new_object);
    for seg in middle {
        cur = descend_or_create(cur, seg, new_object);
    }
    Some(descend_or_create(cur, last, || Value::Null))
}

/// [`set`] unless something (even null) is already at `path`: what `get(...).is_none()`
/// followed by `set` does, in one walk. Returns whether it set the value.
pub fn set_if_absent(root: &mut Map, path: &[Key], value: Value) -> bool {
    put(root, path, value, false)
}

fn put(root: &mut Map, path: &[Key], value: Value, overwrite: bool) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let Some((first, middle)) = parents.split_first() else {
        return insert(root, last, value, overwrite);
    };
    let mut cur: &mut Value = root.entry(first.clone()).or_insert_with(new_object);
    for seg in middle {
        cur = descend_or_create(cur, seg, new_object);
    }
    match cur {
        Value::Array(a) => match index_of(last, a.len()) {
            Some(i) if overwrite => {
                a[i] = value;
                true
            }
            Some(_) => false,
            None => {
                a.push(value);
                true
            }
        },
        other => {
            if !matches!(other, Value::Object(_)) {
                *other = new_object();
            }
            match other {
                Value::Object(m) => insert(m, last, value, overwrite),
                _ => unreachable!("replaced by an object above"),
            }
        }
    }
}

fn insert(m: &mut Map, key: &Key, value: Value, overwrite: bool) -> bool {
    if overwrite {
        m.insert(key.clone(), value);
        return true;
    }
    match m.entry(key.clone()) {
        litemap::Entry::Occupied(_) => false,
        litemap::Entry::Vacant(v) => {
            v.insert(value);
            true
        }
    }
}

/// An object made on the way to a field being set: it gets one entry now, and room for a
/// second (`[event][original]` then `[event][sequence]`, `[url][path]` then `[url][query]`),
/// which saves the reallocation to four that the second entry would make.
fn new_object() -> Value {
    Value::Object(Map::with_capacity(2))
}

/// The child `seg` of `cur`, made by `make` if absent; a scalar `cur` becomes an object first.
fn descend_or_create<'a>(cur: &'a mut Value, seg: &Key, make: fn() -> Value) -> &'a mut Value {
    if let Value::Array(a) = cur {
        let len = a.len();
        return match index_of(seg, len) {
            Some(i) => &mut a[i],
            None => {
                a.push(make());
                &mut a[len]
            }
        };
    }
    if !matches!(cur, Value::Object(_)) {
        *cur = new_object();
    }
    match cur {
        Value::Object(m) => m.entry(seg.clone()).or_insert_with(make),
        _ => unreachable!("replaced by an object above"),
    }
}

/// Removes and returns the value at `path`.
pub fn remove(root: &mut Map, path: &[Key]) -> Option<Value> {
    let (last, parents) = path.split_last()?;
    if parents.is_empty() {
        return root.remove(last);
    }
    match get_mut(root, parents)? {
        Value::Object(m) => m.remove(last),
        Value::Array(a) => index_of(last, a.len()).map(|i| a.remove(i)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Vec<Key> {
        FieldRef::parse(s).unwrap().segments().to_vec()
    }

    /// `set_if_absent` does what `get(...).is_none()` then `set` does, whatever is in the way;
    /// so does `slot` for an absent or null field.
    #[test]
    fn set_if_absent_and_slot_match_get_then_set() {
        let shapes = [
            r#"{}"#,
            r#"{"a": null}"#,
            r#"{"a": {"b": null}}"#,
            r#"{"a": "scalar"}"#,
            r#"{"a": {"b": 1}}"#,
            r#"{"a": {"c": 1}}"#,
            r#"{"a": [1, {"b": 2}]}"#,
            r#"{"a": []}"#,
        ];
        for shape in shapes {
            for path in ["a", "[a][b]", "[a][1]", "[a][0]", "[a][1][b]", "[a][x][y]"] {
                let path = p(path);
                let Value::Object(start) = crate::json::parse(shape.as_bytes()).unwrap() else {
                    panic!("{shape}")
                };
                let mut expected = start.clone();
                let absent = get(&expected, &path).is_none();
                if absent {
                    set(&mut expected, &path, Value::Int(9));
                }
                let mut got = start.clone();
                assert_eq!(set_if_absent(&mut got, &path, Value::Int(9)), absent);
                assert_eq!(got, expected, "{shape} {path:?}");
                // `slot`, written where it is null, does what `get` then `set` where the
                // field is absent or null does, and leaves any other value where it is.
                let mut expected = start.clone();
                if matches!(get(&expected, &path), None | Some(Value::Null)) {
                    set(&mut expected, &path, Value::Int(9));
                }
                let mut got = start;
                let found = slot(&mut got, &path).expect("a non-empty path");
                if matches!(found, Value::Null) {
                    *found = Value::Int(9);
                }
                assert_eq!(got, expected, "slot: {shape} {path:?}");
            }
        }
        let r = FieldRef::parse("[@metadata][m]").unwrap();
        assert!(r.is_metadata() && !FieldRef::parse("[a][m]").unwrap().is_metadata());
    }

    #[test]
    fn parses_forms() {
        assert_eq!(p("message"), ["message"]);
        assert_eq!(p("[a][b]"), ["a", "b"]);
        assert_eq!(p("[field with space]"), ["field with space"]);
        assert_eq!(p("@timestamp"), ["@timestamp"]);
        assert!(FieldRef::parse("a[b]").is_err());
        assert!(FieldRef::parse("[a").is_err());
        assert!(FieldRef::parse("[a]b").is_err());
        assert!(FieldRef::parse("").is_err());
    }

    /// Embedded references, as Logstash's strict tokenizer reads them (its FieldReference
    /// spec): the brackets nest without making levels of their own.
    #[test]
    fn embedded_brackets_flatten() {
        assert_eq!(p("[[service][version]]"), ["service", "version"]);
        assert_eq!(p("[[foo]][bar]"), ["foo", "bar"]);
        assert_eq!(p("[foo][[bar]]"), ["foo", "bar"]);
        assert_eq!(p("[[foo]]"), ["foo"]);
        assert_eq!(p("[[[foo]]]"), ["foo"]);
        assert_eq!(p("[[foo][bar]][baz]"), ["foo", "bar", "baz"]);
        for bad in [
            "[]",
            "[foo][]",
            "[[]]",
            "]",
            "foo]",
            "[foo]]",
            "[[foo]bar]",
            "[nope[foo][bar]][baz]",
            "[[foo][bar]nope][baz]",
            "[foo][bar][baz",
            "[foo][",
            "foo[bar]",
            "[foo]bar",
        ] {
            assert!(FieldRef::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn set_get_remove_nested() {
        let mut m = Map::new();
        set(&mut m, &p("[a][b][c]"), Value::Int(1));
        assert_eq!(get(&m, &p("[a][b][c]")), Some(&Value::Int(1)));
        set(&mut m, &p("[a][b][d]"), "x".into());
        assert_eq!(remove(&mut m, &p("[a][b][c]")), Some(Value::Int(1)));
        assert_eq!(get(&m, &p("[a][b][c]")), None);
        assert_eq!(get(&m, &p("[a][b][d]")), Some(&"x".into()));
    }

    #[test]
    fn arrays_are_indexed() {
        let mut m = Map::new();
        m.insert("tags".into(), Value::Array(vec!["a".into(), "b".into()]));
        assert_eq!(get(&m, &p("[tags][1]")), Some(&"b".into()));
        assert_eq!(get(&m, &p("[tags][-1]")), Some(&"b".into()));
        assert_eq!(get(&m, &p("[tags][2]")), None);
        set(&mut m, &p("[tags][0]"), "z".into());
        assert_eq!(get(&m, &p("[tags][0]")), Some(&"z".into()));
    }

    #[test]
    fn scalar_intermediate_becomes_object() {
        let mut m = Map::new();
        m.insert("a".into(), Value::Int(1));
        set(&mut m, &p("[a][b]"), Value::Int(2));
        assert_eq!(get(&m, &p("[a][b]")), Some(&Value::Int(2)));
    }
}

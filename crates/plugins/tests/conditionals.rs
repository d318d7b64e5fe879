//! Logstash's own conditional specs (`compat/conditional_cases.json`, extracted from
//! logstash-core/spec/conditionals_spec.rb): each case runs one or more events through a
//! filter section and checks the events that come out.

mod common;

use sluice_event::{Event, FieldRef, Value};

fn check(events: &[Event], a: &serde_json::Value) -> Result<(), String> {
    if let Some(n) = a.get("output_event_count") {
        let n = n.as_u64().unwrap() as usize;
        return if events.len() == n {
            Ok(())
        } else {
            Err(format!("expected {n} events, got {}", events.len()))
        };
    }
    let event = match a["event_index"].as_u64() {
        Some(i) => events
            .get(i as usize)
            .ok_or_else(|| format!("no event #{i} (got {})", events.len()))?,
        None if events.len() == 1 => &events[0],
        None => return Err(format!("expected a single event, got {}", events.len())),
    };
    let field = a["field"].as_str().unwrap();
    let r = FieldRef::parse(field).map_err(|e| e.to_string())?;
    let got = event.get(&r);
    let want = a.get("value").map(|v| Value::from(v.clone()));
    let ok = match a["op"].as_str().unwrap() {
        "eq" => got == want.as_ref(),
        "absent" => got.is_none(),
        "includes" | "not_includes" => {
            let want = want.as_ref().unwrap();
            let found = match got {
                Some(Value::Array(items)) => items.contains(want),
                Some(Value::String(s)) => want.as_str().is_some_and(|w| s.contains(w)),
                _ => false,
            };
            found == (a["op"] == "includes")
        }
        other => return Err(format!("unknown op {other}")),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{} {field} {:?}: got {:?}", a["op"], want, got))
    }
}

#[test]
fn logstash_conditional_specs() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let text = std::fs::read_to_string(shared.join("compat/conditional_cases.json")).unwrap();
    let cases: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(cases.len(), 106, "corpus changed size");
    let mut failures = Vec::new();
    let mut assertions = 0;
    for case in &cases {
        let id = case["id"].as_str().unwrap();
        let events = match common::run_filters(
            case["filter_config"].as_str().unwrap(),
            case["input_events"].as_array().unwrap(),
        ) {
            Ok(e) => e,
            Err(e) => {
                failures.push(format!("{id}: {e}"));
                continue;
            }
        };
        for a in case["assertions"].as_array().unwrap() {
            assertions += 1;
            if let Err(e) = check(&events, a) {
                failures.push(format!("{id}: {e}"));
            }
        }
    }
    assert!(assertions >= 163, "only {assertions} assertions checked");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Regular expressions in conditions are Ruby's: a `{` that starts no interval is a literal,
/// `\h` is a hex digit, `\A`/`\z`/`\Z`, named back-references and look-behind work, `^`/`$`
/// match at line breaks (Rust's regex crate refused or read these differently).
#[test]
fn condition_regexes_are_ruby_regexes() {
    let config = r#"filter {
        if [message] =~ /^{.*}$/ { mutate { add_tag => ["json"] } }
        if [message] =~ /\A\h+\z/ { mutate { add_tag => ["hex"] } }
        if [message] =~ /(?<w>\w+) \k<w>/ { mutate { add_tag => ["twice"] } }
        if [message] =~ /(?<=id=)\d+/ { mutate { add_tag => ["id"] } }
        if [message] =~ /^second$/ { mutate { add_tag => ["line"] } }
        if [message] !~ /{name=/ { mutate { add_tag => ["no-name"] } }
    }"#;
    let tags = |message: &str| -> Vec<String> {
        let e = common::one(config, serde_json::json!({ "message": message }));
        match common::get(&e, "tags") {
            Some(sluice_event::Value::Array(a)) => a
                .iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    };
    assert_eq!(tags(r#"{"a": 1}"#), ["json", "no-name"]);
    assert_eq!(tags("c0ffee"), ["hex", "no-name"]);
    assert_eq!(tags("go go id=42"), ["twice", "id", "no-name"]);
    assert_eq!(tags("first\nsecond"), ["line", "no-name"]);
    assert_eq!(tags("x {name=y}"), Vec::<String>::new());
}

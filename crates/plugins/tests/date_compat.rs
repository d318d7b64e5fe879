//! The date filter against `../shared/compat/date_cases.json`: cases taken from
//! logstash-filter-date's own specs (date_spec.rb and DateFilterTest.java). Each case gives a
//! config (or its parts), an event, an optional mocked "now" and the expected result.

mod common;

use serde_json::Value as J;
use sluice_event::{Event, FieldRef, Timestamp, Value};
use sluice_plugins::filters::date::mock_now;

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// The case's config, or one assembled from its parts (the Java cases give none).
fn config(case: &J) -> String {
    if let Some(c) = case["config"].as_str() {
        return c.to_owned();
    }
    let mut items = vec![quote(case["field"].as_str().unwrap())];
    items.extend(
        case["formats"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| quote(f.as_str().unwrap())),
    );
    let mut s = format!("filter {{ date {{ match => [ {} ]", items.join(", "));
    for opt in ["timezone", "locale", "target"] {
        if let Some(v) = case[opt].as_str() {
            s.push_str(&format!(" {opt} => {}", quote(v)));
        }
    }
    if let Some(tags) = case["tag_on_failure"].as_array() {
        let t: Vec<String> = tags.iter().map(|t| quote(t.as_str().unwrap())).collect();
        s.push_str(&format!(" tag_on_failure => [{}]", t.join(", ")));
    }
    s.push_str(" } }");
    s
}

fn tags(e: &Event) -> Vec<String> {
    match e.get_field("tags") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

fn str_list(v: &J) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs one case; `Err` says what differed.
fn check(case: &J, now_year: i32) -> Result<(), String> {
    let cfg = config(case);
    let _clock = match case["clock_now"].as_str() {
        Some(s) if s != "{now}" => Some(mock_now(
            Timestamp::parse_iso8601(s)
                .ok_or_else(|| format!("bad clock_now {s:?}"))?
                .millis(),
        )),
        _ => None,
    };
    let out = common::run_filters(&cfg, &[case["event"].clone()])?;
    let [e] = out.as_slice() else {
        return Err(format!("expected one event, got {}", out.len()));
    };
    let target = case["target"].as_str().unwrap_or("@timestamp");
    let got = e
        .get(&FieldRef::parse(target).unwrap())
        .and_then(|v| match v {
            Value::Timestamp(t) => Some(t.to_iso8601()),
            _ => None,
        });
    let failure_tags = case["tag_on_failure"]
        .as_array()
        .map(|_| str_list(&case["tag_on_failure"]))
        .unwrap_or_else(|| vec!["_dateparsefailure".to_owned()]);
    let tagged_failure = failure_tags.iter().any(|t| e.has_tag(t));
    let year = now_year.to_string();
    match case["expect_success"].as_bool() {
        Some(true) => {
            if tagged_failure {
                return Err(format!("tagged as a failure: {:?}", tags(e)));
            }
            if let Some(want) = case["expected_timestamp"].as_str() {
                let want = want.replace("{now.year}", &year);
                if got.as_deref() != Some(want.as_str()) {
                    return Err(format!("{target}: want {want}, got {got:?}"));
                }
            }
            if !case["expected_year"].is_null() {
                let want = match &case["expected_year"] {
                    J::String(s) => s.replace("{now.year}", &year),
                    other => other.to_string(),
                };
                let got_year = got.as_deref().map(|g| g[..4].to_owned());
                if got_year.as_deref() != Some(want.as_str()) {
                    return Err(format!("year: want {want}, got {got:?}"));
                }
            }
        }
        Some(false) if !tagged_failure => {
            return Err(format!(
                "expected a failure tag {failure_tags:?}, got tags {:?} and {target} {got:?}",
                tags(e)
            ));
        }
        Some(false) | None => {}
    }
    if let Some(not) = case["expected_not_timestamp"].as_str() {
        if got.as_deref() == Some(not) {
            return Err(format!("{target} should not be {not}"));
        }
    }
    let have = tags(e);
    for t in str_list(&case["expected_tags_include"]) {
        if !have.contains(&t) {
            return Err(format!("missing tag {t:?} in {have:?}"));
        }
    }
    for t in str_list(&case["expected_tags_exclude"]) {
        if have.contains(&t) {
            return Err(format!("unexpected tag {t:?} in {have:?}"));
        }
    }
    if case["expected_tags"].is_array() && have != str_list(&case["expected_tags"]) {
        return Err(format!(
            "tags: want {:?}, got {have:?}",
            case["expected_tags"]
        ));
    }
    Ok(())
}

#[test]
fn date_cases_from_logstash_specs() {
    let Some(dir) = common::shared_dir() else {
        return;
    };
    let path = dir.join("compat/date_cases.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cases: Vec<J> = serde_json::from_str(&text).unwrap();
    let now_year: i32 = Timestamp::now().to_iso8601()[..4].parse().unwrap();
    let mut failures = Vec::new();
    for case in &cases {
        let id = case["id"].as_str().unwrap_or("?");
        if let Err(why) = check(case, now_year) {
            failures.push(format!(
                "{id} ({}): {why}",
                case["spec_group"].as_str().unwrap_or("")
            ));
        }
    }
    let passed = cases.len() - failures.len();
    for f in &failures {
        eprintln!("FAIL {f}");
    }
    eprintln!("date compat: {passed}/{} cases pass", cases.len());
    assert!(
        passed >= 105,
        "only {passed} of {} date cases pass",
        cases.len()
    );
}

//! Parse validity against Logstash's own grammar: `config_parse_cases.json` and the
//! real-world `configs/*.conf` (truth = what Logstash's treetop parser said).

mod common;

#[test]
fn config_parse_cases_agree_with_logstash() {
    let Some(cases) = common::read_json("config_parse_cases.json") else {
        return;
    };
    let cases = cases.as_array().expect("a list of cases");
    let mut failures = Vec::new();
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let text = case["config"].as_str().unwrap();
        let valid = case["lscl_valid"].as_bool().unwrap();
        let result = sluice_config::parse("config string", text);
        if result.is_ok() != valid {
            failures.push(format!("{id}: expected valid={valid}, got {result:?}"));
        }
    }
    assert_eq!(cases.len(), 102);
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn real_world_configs_agree_with_logstash() {
    let Some(dir) = common::compat_dir() else {
        return;
    };
    let dir = dir.join("configs");
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("INDEX.json")).unwrap()).unwrap();
    let mut failures = Vec::new();
    let configs = index["configs"].as_array().unwrap();
    for entry in configs {
        let file = entry["file"].as_str().unwrap();
        let ok = entry["lscl_parse_ok"].as_bool().unwrap();
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let result = sluice_config::parse(file, &text);
        if result.is_ok() != ok {
            failures.push(format!("{file}: expected ok={ok}, got {result:?}"));
        }
    }
    assert!(!configs.is_empty());
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every invalid case gives a located, readable error (not a panic, not "something else").
#[test]
fn invalid_cases_have_located_messages() {
    let Some(cases) = common::read_json("config_parse_cases.json") else {
        return;
    };
    for case in cases.as_array().unwrap() {
        if case["lscl_valid"].as_bool().unwrap() {
            continue;
        }
        let text = case["config"].as_str().unwrap();
        let err = sluice_config::parse("t.conf", text).unwrap_err();
        println!("{}: {err}", case["id"].as_str().unwrap());
        assert!(err.line >= 1 && err.column >= 1);
        assert!(!err.message.contains("something else"), "{err}");
    }
}

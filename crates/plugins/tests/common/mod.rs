//! Shared test support: finding `../shared` (Logstash's behaviour as data) at run time, and
//! running events through a config's filters.

use std::path::PathBuf;

/// The shared corpus directory: `$SLUICE_SHARED`, else `../shared` beside the project root.
/// Returns `None` (after saying so) when it is absent; under `CI=true` absence is a failure.
#[allow(dead_code)]
pub fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("SLUICE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    if dir.join("compat").is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "shared corpus not found at {} (set SLUICE_SHARED); required under CI=true",
            dir.display()
        );
    }
    eprintln!(
        "SKIP: shared corpus not found at {}; set SLUICE_SHARED to run these tests",
        dir.display()
    );
    None
}

/// Runs events (JSON objects) through a config's filter section; returns what comes out.
#[allow(dead_code)]
pub fn run_filters(
    config: &str,
    inputs: &[serde_json::Value],
) -> Result<Vec<sluice_event::Event>, String> {
    use sluice_event::{Event, Value};
    let parsed = sluice_config::parse("test config", config).map_err(|e| e.to_string())?;
    let registry = sluice_plugins::registry();
    let compiled =
        sluice_pipeline::graph::compile(&parsed, &registry).map_err(|e| e.to_string())?;
    let mut chain = compiled.filter_chain();
    let mut events: Vec<Event> = inputs
        .iter()
        .map(|v| match Value::from(v.clone()) {
            Value::Object(m) => Event::from_map(m),
            other => panic!("input event is not an object: {other:?}"),
        })
        .collect();
    chain.run(&mut events);
    events.retain(|e| !e.is_cancelled());
    Ok(events)
}

/// Runs one event through a config's filters; panics if the config does not build.
#[allow(dead_code)]
pub fn run(config: &str, input: serde_json::Value) -> Vec<sluice_event::Event> {
    run_filters(config, &[input]).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs one event through a config's filters and expects exactly one event back.
#[allow(dead_code)]
pub fn one(config: &str, input: serde_json::Value) -> sluice_event::Event {
    let mut out = run(config, input);
    assert_eq!(out.len(), 1, "expected one event");
    out.remove(0)
}

/// The value at a field reference.
#[allow(dead_code)]
pub fn get(e: &sluice_event::Event, field: &str) -> Option<sluice_event::Value> {
    e.get(&sluice_event::FieldRef::parse(field).unwrap())
        .cloned()
}

/// A JSON value as the event value it should equal.
#[allow(dead_code)]
pub fn v(j: serde_json::Value) -> Option<sluice_event::Value> {
    Some(sluice_event::Value::from(j))
}

/// The tags of an event, as strings (empty when it has none).
#[allow(dead_code)]
pub fn tags(e: &sluice_event::Event) -> Vec<String> {
    match get(e, "tags") {
        Some(sluice_event::Value::Array(a)) => a
            .iter()
            .map(|t| t.as_str().unwrap_or_default().to_owned())
            .collect(),
        _ => Vec::new(),
    }
}

/// A filter chain kept across calls (state, periodic and final flushes); panics if the
/// config does not build.
#[allow(dead_code)]
pub fn chain(config: &str) -> sluice_pipeline::graph::FilterChain {
    let parsed = sluice_config::parse("test", config).unwrap();
    sluice_pipeline::graph::compile(&parsed, &sluice_plugins::registry())
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_chain()
}

/// Events from JSON objects.
#[allow(dead_code)]
pub fn events(inputs: &[serde_json::Value]) -> Vec<sluice_event::Event> {
    inputs
        .iter()
        .map(|j| match sluice_event::Value::from(j.clone()) {
            sluice_event::Value::Object(m) => sluice_event::Event::from_map(m),
            other => panic!("input event is not an object: {other:?}"),
        })
        .collect()
}

//! Throughput of a config's filters on one field's values, for the `#[ignore]`d figures in
//! geoip.rs and useragent.rs (run them with `--release -- --ignored --nocapture`).

use sluice_event::{Event, Value};

/// This thread's CPU time (Linux `/proc/thread-self/schedstat`), so that the figures hold on a
/// busy machine; wall time where that is not available.
pub fn cpu_time() -> std::time::Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map(std::time::Duration::from_nanos)
        .unwrap_or_else(|| {
            static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
            START.get_or_init(std::time::Instant::now).elapsed()
        })
}

/// Events per CPU-second through `config`'s filters over events that each hold one of
/// `values` in `field`, in batches of 125 as a worker runs them: one untimed pass (to fill
/// whatever the filters cache), then `passes` timed ones.
pub fn events_per_second(config: &str, field: &str, values: &[String], passes: usize) -> f64 {
    let parsed = sluice_config::parse("bench", config).unwrap();
    let registry = sluice_plugins::registry();
    let compiled = sluice_pipeline::graph::compile(&parsed, &registry).unwrap();
    let mut chain = compiled.filter_chain();
    let events: Vec<Event> = values
        .iter()
        .map(|v| {
            let mut e = Event::new();
            e.set_field(field, Value::String(v.as_str().into()));
            e
        })
        .collect();
    let mut timed = std::time::Duration::ZERO;
    for pass in 0..=passes {
        for batch in events.chunks(125) {
            let mut batch = batch.to_vec();
            let started = cpu_time();
            chain.run(&mut batch);
            if pass > 0 {
                timed += cpu_time() - started;
            }
        }
    }
    (values.len() * passes) as f64 / timed.as_secs_f64()
}

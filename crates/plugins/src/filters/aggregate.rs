//! `aggregate`: gathers information across the events of one task (`task_id`, a sprintf
//! pattern) into a map that its Ruby `code` fills, as logstash-filter-aggregate does, on the
//! ruby filter's embedded runtime (`sluice-ruby`'s `aggregate.rb` holds the logic).
//!
//! Options are checked here (types, `map_action`'s values) and in Ruby when the filter is
//! compiled (the dynamic `task_id`, timeout options on one filter per pattern,
//! `inactivity_timeout` under `timeout`, `aggregate_maps_path` once). The aggregate filters of
//! one pipeline share their maps; a reloaded pipeline gets maps of its own (stored to and
//! read from `aggregate_maps_path` between them, as at a restart). Timeouts are checked at
//! the periodic flush (every 5 s, once for all workers) and the final one; the released
//! events (`push_map_as_event_on_timeout`, `push_previous_map_as_event`) go through the
//! filters that follow, without the common options, as in Logstash. Like Logstash, this
//! filter needs `pipeline.workers: 1` to see a task's events in order.

use sluice_pipeline::{ConfigError, Filter, Options};

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    use sluice_event::Value;
    let mut options: Vec<(String, Value)> = Vec::new();
    let task_id = opts.required_string("task_id")?;
    options.push(("task_id".into(), task_id.into()));
    let code = opts.required_string("code")?;
    options.push(("code".into(), code.into()));
    let action = opts.choice(
        "map_action",
        &["create", "update", "create_or_update"],
        "create_or_update",
    )?;
    options.push(("map_action".into(), action.into()));
    for name in [
        "end_of_task",
        "push_map_as_event_on_timeout",
        "push_previous_map_as_event",
    ] {
        if let Some(b) = opts.boolean(name)? {
            options.push((name.into(), b.into()));
        }
    }
    for name in [
        "aggregate_maps_path",
        "timeout_code",
        "timeout_timestamp_field",
        "timeout_task_id_field",
    ] {
        if let Some(s) = opts.string(name)? {
            options.push((name.into(), s.into()));
        }
    }
    for name in [
        "timeout",
        "inactivity_timeout",
        "map_count_warning_threshold",
    ] {
        if let Some(n) = opts.float(name)? {
            let v = if n.fract() == 0.0 {
                Value::Int(n as i64)
            } else {
                Value::Float(n)
            };
            options.push((name.into(), v));
        }
    }
    if let Some(tags) = opts.string_list("timeout_tags")? {
        options.push((
            "timeout_tags".into(),
            Value::Array(tags.into_iter().map(Value::from).collect()),
        ));
    }
    compile(opts, options)
}

#[cfg(not(feature = "ruby"))]
fn compile(
    opts: &mut Options,
    _options: Vec<(String, sluice_event::Value)>,
) -> Result<Box<dyn Filter>, ConfigError> {
    Err(opts.plugin_error(
        "this sluice was built without the `ruby` feature, so the aggregate filter (whose code is Ruby) is not compiled in",
    ))
}

#[cfg(feature = "ruby")]
fn compile(
    opts: &mut Options,
    options: Vec<(String, sluice_event::Value)>,
) -> Result<Box<dyn Filter>, ConfigError> {
    let label = opts.location();
    let scope = format!(
        "{}#{}",
        opts.pipeline_id().unwrap_or("main"),
        opts.compile_id()
    );
    let script = sluice_ruby::Script::compile(sluice_ruby::Spec {
        label: label.clone(),
        source: sluice_ruby::Source::Aggregate { scope, options },
    })
    .map_err(|e| opts.plugin_error(e))?;
    Ok(Box::new(super::ruby::Ruby {
        script,
        label,
        tag_on_exception: "_aggregateexception".into(),
        tag_with_message: false,
        cut: false,
        flushes: Some(Default::default()),
    }))
}

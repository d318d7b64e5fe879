//! The ruby filter: Logstash's Event API in Ruby, method by method (cases from
//! logstash-filter-ruby's spec and Logstash's event specs), exceptions, new_event_block,
//! init, and option errors.
#![cfg(feature = "ruby")]

mod common;

use common::{get, one, run_filters, v};

use serde_json::json;
use sluice_event::Value;

fn tags(e: &sluice_event::Event) -> Vec<String> {
    match get(e, "tags") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|t| t.as_str().unwrap_or_default().to_owned())
            .collect(),
        _ => Vec::new(),
    }
}

/// A ruby filter with `code` (single quotes in the code are fine: it is written in a
/// double-quoted config string with `"` escaped away).
fn ruby(code: &str) -> String {
    format!(
        "filter {{ ruby {{ code => \"{}\" }} }}",
        code.replace('"', "\\\"")
    )
}

#[test]
fn get_and_set_convert_values_both_ways() {
    let e = one(
        &ruby(
            "event.set('up', event.get('message').upcase); \
             event.set('[nested][copy]', event.get('obj')); \
             event.set('classes', [event.get('i'), event.get('f'), event.get('big'), event.get('obj'), event.get('list'), event.get('t'), event.get('nothing'), event.get('@timestamp')].map { |x| x.class.name }); \
             event.set('sum', event.get('i') + 1); \
             event.set('big2', event.get('big') * 2); \
             event.set('half', event.get('f') / 2); \
             event.set('sym', :abc); \
             event.set('when', Time.at(0).utc)",
        ),
        json!({"message": "hello", "i": 41, "f": 3.0, "big": 12345678901234567890u64, "obj": {"a": [1, {"b": null}]}, "list": ["x", 2], "t": true}),
    );
    assert_eq!(get(&e, "up"), v(json!("HELLO")));
    assert_eq!(get(&e, "[nested][copy]"), v(json!({"a": [1, {"b": null}]})));
    assert_eq!(
        get(&e, "classes"),
        v(json!([
            "Integer",
            "Float",
            "Integer",
            "Hash",
            "Array",
            "TrueClass",
            "NilClass",
            "LogStash::Timestamp"
        ]))
    );
    assert_eq!(get(&e, "sum"), v(json!(42)));
    assert_eq!(get(&e, "big2"), Some(Value::integer(24691357802469135780)));
    assert_eq!(get(&e, "half"), v(json!(1.5)));
    assert_eq!(get(&e, "sym"), v(json!("abc")));
    assert_eq!(
        get(&e, "when"),
        Some(Value::Timestamp(sluice_event::Timestamp::from_millis(0)))
    );
}

#[test]
fn get_returns_a_copy() {
    let e = one(
        &ruby("h = event.get('obj'); h['added'] = 1; event.get('list') << 3"),
        json!({"obj": {"a": 1}, "list": [1]}),
    );
    assert_eq!(get(&e, "obj"), v(json!({"a": 1})));
    assert_eq!(get(&e, "list"), v(json!([1])));
}

#[test]
fn remove_include_tag_and_cancel() {
    let out = run_filters(
        &ruby(
            "event.set('had_a', event.include?('a')); \
             event.set('removed', event.remove('a')); \
             event.set('has_a', event.include?('a')); \
             event.tag('one'); event.tag('one'); \
             event.cancel if event.get('drop')",
        ),
        &[json!({"a": 5}), json!({"a": 6, "drop": true})],
    )
    .unwrap();
    // The cancelled event is gone.
    assert_eq!(out.len(), 1);
    let e = &out[0];
    assert_eq!(get(e, "had_a"), v(json!(true)));
    assert_eq!(get(e, "removed"), v(json!(5)));
    assert_eq!(get(e, "has_a"), v(json!(false)));
    assert_eq!(tags(e), vec!["one"]);
    assert_eq!(get(e, "drop"), None);
}

#[test]
fn hashes_json_timestamps_sprintf_clone_and_append() {
    let e = one(
        &ruby(
            "event.set('keys', event.to_hash.keys.sort); \
             event.set('meta_keys', event.to_hash_with_metadata.keys.sort); \
             event.set('json', JSON.parse(event.to_json)['message']); \
             event.set('ts', event.timestamp.to_s); \
             event.set('ts_i', event.timestamp.to_i); \
             event.set('ts_year', event.timestamp.time.year); \
             event.set('later', (event.timestamp + 60).to_s); \
             event.set('line', event.sprintf('%{message} at %{+YYYY}')); \
             c = event.clone; c.set('message', 'changed'); event.set('clone_said', c.get('message')); \
             other = LogStash::Event.new('extra' => 1, 'message' => 'more'); event.append(other)",
        ),
        json!({"message": "hi", "@timestamp": "2026-11-24T10:00:00.000Z", "@metadata": {"m": 1}}),
    );
    assert_eq!(
        get(&e, "keys"),
        v(json!(["@timestamp", "@version", "message"]))
    );
    assert_eq!(
        get(&e, "meta_keys"),
        v(json!([
            "@metadata",
            "@timestamp",
            "@version",
            "keys",
            "message"
        ]))
    );
    assert_eq!(get(&e, "json"), v(json!("hi")));
    assert_eq!(get(&e, "ts"), v(json!("2026-11-24T10:00:00.000Z")));
    assert_eq!(get(&e, "ts_i"), v(json!(1795514400)));
    assert_eq!(get(&e, "ts_year"), v(json!(2026)));
    assert_eq!(get(&e, "later"), v(json!("2026-11-24T10:01:00.000Z")));
    assert_eq!(get(&e, "line"), v(json!("hi at 2026")));
    assert_eq!(get(&e, "clone_said"), v(json!("changed")));
    assert_eq!(get(&e, "extra"), v(json!(1)));
    assert_eq!(get(&e, "message"), v(json!(["hi", "more"])));
}

#[test]
fn exceptions_tag_the_event_and_the_pipeline_goes_on() {
    let out = run_filters(
        "filter { ruby { code => \"raise ArgumentError, 'bad value' if event.get('n') == 2; event.set('ok', true)\" add_tag => ['matched'] } }",
        &[json!({"n": 1}), json!({"n": 2}), json!({"n": 3})],
    )
    .unwrap();
    assert_eq!(tags(&out[0]), vec!["matched"]);
    assert_eq!(tags(&out[1]), vec!["_rubyexception"]);
    assert_eq!(get(&out[1], "ok"), None);
    assert_eq!(tags(&out[2]), vec!["matched"]);

    let e = one(
        "filter { ruby { code => \"event.get('x').nope\" tag_on_exception => '_custom' tag_with_exception_message => true } }",
        json!({"x": 1}),
    );
    let t = tags(&e);
    assert_eq!(t.len(), 2, "{t:?}");
    assert!(
        t[0].starts_with("_custom: undefined method `nope'"),
        "{t:?}"
    );
    assert_eq!(t[1], "_custom");

    // Direct field access is refused as in Logstash 5+.
    let e = one(&ruby("event['message']"), json!({"message": "m"}));
    assert_eq!(tags(&e), vec!["_rubyexception"]);
}

#[test]
fn init_state_and_new_event_block() {
    let out = run_filters(
        "filter { ruby { init => \"@count = 0\" code => \"@count += 1; event.set('count', @count); new_event_block.call(LogStash::Event.new('child_of' => @count)) if @count.odd?\" add_tag => ['seen'] } }",
        &[json!({}), json!({}), json!({})],
    )
    .unwrap();
    let counts: Vec<_> = out.iter().map(|e| get(e, "count")).collect();
    assert_eq!(
        counts,
        vec![v(json!(1)), v(json!(2)), v(json!(3)), None, None]
    );
    assert_eq!(get(&out[3], "child_of"), v(json!(1)));
    assert_eq!(get(&out[4], "child_of"), v(json!(3)));
    // New events are not decorated, as Logstash yields them.
    assert_eq!(tags(&out[0]), vec!["seen"]);
    assert!(tags(&out[3]).is_empty());
}

#[test]
fn logger_and_errors_at_load() {
    let e = one(
        &ruby("@logger.info('from ruby', :n => 1); @logger.debug? ; event.set('logged', true)"),
        json!({}),
    );
    assert_eq!(get(&e, "logged"), v(json!(true)));

    let err = run_filters(&ruby("event.set('a'"), &[]).unwrap_err();
    assert!(err.contains("does not compile"), "{err}");
    assert!(err.contains("SyntaxError"), "{err}");
    let err = run_filters(
        "filter { ruby { init => \"raise 'no init'\" code => \"1\" } }",
        &[],
    )
    .unwrap_err();
    assert!(err.contains("no init"), "{err}");
    let err = run_filters("filter { ruby { } }", &[]).unwrap_err();
    assert!(
        err.contains("You must either use an inline script"),
        "{err}"
    );
    let err = run_filters("filter { ruby { path => \"/x.rb\" } }", &[]).unwrap_err();
    assert!(err.contains("not supported"), "{err}");
}

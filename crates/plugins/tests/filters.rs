//! Behaviour of the filters built here (mutate, drop, clone) and of the options every filter
//! has, checked by running configs on events.

mod common;

use common::{get, one, run, v};

use serde_json::json;

#[test]
fn mutate_rename_replace_update_coerce() {
    let e = one(
        r#"filter { mutate {
            rename => { "a" => "[x][y]" "missing" => "nowhere" }
            update => { "b" => "new %{b}" "absent" => "never" }
            replace => { "c" => "%{b}-c" }
            coerce => { "n" => "default" }
        } }"#,
        json!({"a": 1, "b": "old", "n": null}),
    );
    assert_eq!(get(&e, "[x][y]"), v(json!(1)));
    assert_eq!(get(&e, "a"), None);
    assert_eq!(get(&e, "nowhere"), None);
    assert_eq!(get(&e, "b"), v(json!("new old")));
    assert_eq!(get(&e, "absent"), None);
    // replace runs after update, so it sees the updated value.
    assert_eq!(get(&e, "c"), v(json!("new old-c")));
    assert_eq!(get(&e, "n"), v(json!("default")));
}

#[test]
fn mutate_convert() {
    let e = one(
        r#"filter { mutate { convert => {
            "i" => "integer" "f" => "float" "s" => "string" "b" => "boolean" "list" => "integer"
            "eu" => "float_eu" "bad" => "boolean"
        } } }"#,
        json!({"i": "42", "f": "3.5", "s": 7, "b": "yes", "list": ["1", "2"], "eu": "1.234,5", "bad": "maybe"}),
    );
    assert_eq!(get(&e, "i"), v(json!(42)));
    assert_eq!(get(&e, "f"), v(json!(3.5)));
    assert_eq!(get(&e, "s"), v(json!("7")));
    assert_eq!(get(&e, "b"), v(json!(true)));
    assert_eq!(get(&e, "list"), v(json!([1, 2])));
    assert_eq!(get(&e, "eu"), v(json!(1234.5)));
    assert_eq!(get(&e, "bad"), v(json!("maybe")));
    assert!(!e.has_tag("_mutate_error"));
}

/// Logstash's mutate skips a hash given to `convert` (a debug log, no tag) but raises on a
/// hash inside an array, on text that is no number, and on a `rename` name that the event
/// fills in as no valid field reference. When it raises, the operations after it and the
/// common options are skipped and the event is tagged `_mutate_error`.
#[test]
fn mutate_errors_stop_the_filter_as_logstash_raises() {
    let e = one(
        r#"filter { mutate { convert => { "h" => "integer" } } }"#,
        json!({"h": {"a": 1}}),
    );
    assert!(!e.has_tag("_mutate_error"));
    assert_eq!(get(&e, "h"), v(json!({"a": 1})));

    let config = r#"filter { mutate {
        convert => { "n" => "integer" }
        uppercase => [ "u" ]
        add_tag => [ "mutated" ]
    } }"#;
    for bad in [
        json!({"n": [1, {"a": 1}], "u": "x"}),
        json!({"n": "12abc", "u": "x"}),
    ] {
        let e = one(config, bad.clone());
        assert!(e.has_tag("_mutate_error"), "{bad}");
        assert!(!e.has_tag("mutated"), "{bad}");
        assert_eq!(get(&e, "u"), v(json!("x")), "{bad}");
    }
    let e = one(config, json!({"n": "1,234.9", "u": "x"}));
    assert_eq!(get(&e, "n"), v(json!(1234)));
    assert_eq!(get(&e, "u"), v(json!("X")));
    assert!(e.has_tag("mutated"));

    let e = one(
        r#"filter { mutate { rename => { "a" => "%{target}" } } }"#,
        json!({"a": 1, "target": "[broken"}),
    );
    assert!(e.has_tag("_mutate_error"));
    assert_eq!(get(&e, "a"), v(json!(1)));

    // Logged and skipped, not tagged: case changes on a number, merging a hash with a string.
    let e = one(
        r#"filter { mutate { uppercase => [ "n" ] merge => { "h" => "s" } } }"#,
        json!({"n": 5, "h": {"a": 1}, "s": "x"}),
    );
    assert!(!e.has_tag("_mutate_error"));
    assert_eq!(get(&e, "h"), v(json!({"a": 1})));
}

/// Integers past 64 bits stay exact from JSON through convert, conditions and output.
#[test]
fn big_integers_stay_exact() {
    let big = "123456789012345678901234567";
    let e = one(
        r#"filter {
            json { source => "message" }
            mutate { convert => { "s" => "integer" "c" => "string" } }
            if [n] > [m] { mutate { add_tag => "gt" } }
            if [n] == [s] { mutate { add_tag => "eq" } }
        }"#,
        json!({"message": format!(r#"{{"n": {big}, "m": 18446744073709551616, "c": {big}, "s": "{big}"}}"#)}),
    );
    assert_eq!(get(&e, "c"), v(json!(big)));
    assert_eq!(
        get(&e, "n").map(|n| n.to_display_string()),
        Some(big.to_owned())
    );
    assert!(e.has_tag("gt") && e.has_tag("eq"), "{:?}", get(&e, "tags"));
    let out = sluice_event::json::event_to_string(&e);
    assert!(out.contains(&format!(r#""n":{big}"#)), "{out}");
}

/// Issue 45, Logstash's specs: `convert => integer` past 128 bits keeps a Bignum's digits,
/// dissect's `->float` of a number a double cannot hold keeps the BigDecimal; both are
/// written as those numbers, compare as numbers, and survive the persisted queue's format.
#[test]
fn bignums_and_big_decimals_stay_exact() {
    let huge = "123456789012345678901234567890123456789012";
    let e = one(
        r#"filter {
            mutate { convert => { "i" => "integer" } }
            dissect { mapping => { "d" => "%{f}" } convert_datatype => { "f" => "float" "g" => "float" } }
            if [i] > 170141183460469231731687303715884105727 { mutate { add_tag => "bigger" } }
            if [i] < -1 { mutate { add_tag => "wrong" } }
            if [f] > 43000000000000000000.0 { mutate { add_tag => "f_big" } }
        }"#,
        json!({"i": huge, "d": "43947404257507186289.345324", "g": "2.5"}),
    );
    assert!(!e.has_tag("_mutate_error"), "{:?}", get(&e, "tags"));
    assert_eq!(get(&e, "i"), sluice_event::Value::decimal(huge));
    assert_eq!(
        get(&e, "f"),
        sluice_event::Value::decimal("43947404257507186289.345324")
    );
    assert_eq!(get(&e, "g"), v(json!(2.5)));
    assert!(e.has_tag("bigger") && e.has_tag("f_big") && !e.has_tag("wrong"));
    let out = sluice_event::json::event_to_string(&e);
    assert!(out.contains(&format!(r#""i":{huge}"#)), "{out}");
    assert!(out.contains(r#""f":43947404257507186289.345324"#), "{out}");
    let mut bytes = Vec::new();
    sluice_event::binary::encode(&e, &mut bytes);
    let back = sluice_event::binary::decode(&bytes).unwrap();
    assert_eq!(back.get_field("i"), get(&e, "i").as_ref());
    assert_eq!(back.get_field("f"), get(&e, "f").as_ref());
    // A UNIX time with microseconds (16 digits) stays a BigDecimal, and the date filter
    // reads it as it reads the text.
    let e = one(
        r#"filter {
            dissect { mapping => { "m" => "%{ts}" } convert_datatype => { "ts" => "float" } }
            date { match => [ "ts", "UNIX" ] }
        }"#,
        json!({"m": "1700000000.123456"}),
    );
    assert!(matches!(
        get(&e, "ts"),
        Some(sluice_event::Value::Decimal(_))
    ));
    assert_eq!(
        get(&e, "@timestamp").map(|t| t.to_display_string()),
        Some("2023-11-14T22:13:20.123Z".to_owned())
    );
}

/// A gsub pattern or replacement holding `%{field}` is filled in from each event, as in
/// Logstash's mutate (this was a configuration error: `{` is a regex quantifier).
#[test]
fn mutate_gsub_fills_in_field_references_per_event() {
    let config = r#"filter { mutate { gsub => [ "message", "%{host}:", "[%{service}] " ] } }"#;
    let a = one(
        config,
        json!({"message": "web1: up", "host": "web1", "service": "nginx"}),
    );
    assert_eq!(get(&a, "message"), v(json!("[nginx]  up")));
    let b = one(
        config,
        json!({"message": "db2: down web1: x", "host": "db2", "service": "pg"}),
    );
    assert_eq!(get(&b, "message"), v(json!("[pg]  down web1: x")));
    // A pattern that the event turns into an invalid regex fails that event only.
    let c = one(config, json!({"message": "x", "host": "(", "service": "s"}));
    assert!(c.has_tag("_mutate_error"), "{c:?}");
    assert_eq!(get(&c, "message"), v(json!("x")));
}

#[test]
fn mutate_string_operations() {
    let e = one(
        r#"filter { mutate {
            gsub => [ "path", "/", "_", "date", "(\d+)-(\d+)", "\2/\1" ]
            uppercase => [ "up" ]
            lowercase => [ "low" ]
            capitalize => [ "cap" ]
            strip => [ "pad" ]
            split => { "csv" => "," }
            join => { "arr" => "|" }
        } }"#,
        json!({"path": "/a/b", "date": "11-22", "up": "abc", "low": "ABC", "cap": "hELLO",
               "pad": "  x  ", "csv": "a,b,,c,,", "arr": ["x", 1, true]}),
    );
    assert_eq!(get(&e, "path"), v(json!("_a_b")));
    assert_eq!(get(&e, "date"), v(json!("22/11")));
    assert_eq!(get(&e, "up"), v(json!("ABC")));
    assert_eq!(get(&e, "low"), v(json!("abc")));
    assert_eq!(get(&e, "cap"), v(json!("Hello")));
    assert_eq!(get(&e, "pad"), v(json!("x")));
    assert_eq!(get(&e, "csv"), v(json!(["a", "b", "", "c"])));
    assert_eq!(get(&e, "arr"), v(json!("x|1|true")));
}

#[test]
fn mutate_merge_and_copy() {
    let e = one(
        r#"filter { mutate {
            merge => { "dest" => "src" "h1" => "h2" "new" => "src" }
            copy => { "[h1]" => "[copy][h]" }
        } }"#,
        json!({"dest": "a", "src": ["b", "c"], "h1": {"x": 1}, "h2": {"y": 2}}),
    );
    assert_eq!(get(&e, "dest"), v(json!(["a", "b", "c"])));
    assert_eq!(get(&e, "new"), v(json!(["b", "c"])));
    assert_eq!(get(&e, "h1"), v(json!({"x": 1, "y": 2})));
    assert_eq!(get(&e, "[copy][h]"), v(json!({"x": 1, "y": 2})));
}

#[test]
fn common_options_apply_in_logstash_order_with_sprintf() {
    let e = one(
        r#"filter { mutate {
            add_field => { "from_%{kind}" => "v-%{kind}" "existing" => "second" }
            remove_field => [ "gone", "[nested][drop]" ]
            add_tag => [ "t-%{kind}", "plain" ]
            remove_tag => [ "old" ]
        } }"#,
        json!({"kind": "k", "existing": "first", "gone": 1, "nested": {"drop": 1, "keep": 2}, "tags": ["old", "other"]}),
    );
    assert_eq!(get(&e, "from_k"), v(json!("v-k")));
    assert_eq!(get(&e, "existing"), v(json!(["first", "second"])));
    assert_eq!(get(&e, "gone"), None);
    assert_eq!(get(&e, "nested"), v(json!({"keep": 2})));
    assert_eq!(get(&e, "tags"), v(json!(["other", "t-k", "plain"])));
}

#[test]
fn drop_removes_events_and_clone_adds_them() {
    assert!(run(r#"filter { drop { } }"#, json!({"a": 1})).is_empty());
    assert_eq!(
        run(r#"filter { drop { percentage => 0 } }"#, json!({"a": 1})).len(),
        1
    );
    let out = run(
        r#"filter { clone { clones => ["c1", "c2"] ecs_compatibility => disabled add_tag => ["cloned"] } }"#,
        json!({"type": "orig"}),
    );
    let types: Vec<_> = out.iter().map(|e| get(e, "type")).collect();
    assert_eq!(types, [v(json!("orig")), v(json!("c1")), v(json!("c2"))]);
    // As Logstash's clone: the common options apply to the copies, not the original.
    assert!(!out[0].has_tag("cloned"), "{:?}", out[0]);
    assert!(out[1..].iter().all(|e| e.has_tag("cloned")));
    let out = run(
        r#"filter { clone { clones => ["c1"] add_field => { "copy" => "yes" } remove_field => ["secret"] remove_tag => ["t"] } }"#,
        json!({"secret": 1, "tags": ["t", "u"]}),
    );
    assert_eq!(get(&out[0], "secret"), v(json!(1)));
    assert_eq!(get(&out[0], "copy"), None);
    assert_eq!(get(&out[0], "tags"), v(json!(["t", "u"])));
    assert_eq!(get(&out[1], "secret"), None);
    assert_eq!(get(&out[1], "copy"), v(json!("yes")));
    assert_eq!(get(&out[1], "tags"), v(json!(["u", "c1"])));
    let out = run(
        r#"filter { clone { clones => ["c1"] } }"#,
        json!({"type": "orig"}),
    );
    assert!(out[1].has_tag("c1") && get(&out[1], "type") == v(json!("orig")));
    // `clones => []` is a warning in every ECS mode (the event passes alone); no `clones` at
    // all is an error.
    for ecs in ["disabled", "v8"] {
        let config = format!(r#"filter {{ clone {{ clones => [] ecs_compatibility => {ecs} }} }}"#);
        assert_eq!(run(&config, json!({"a": 1})).len(), 1, "{ecs}");
    }
    let err = common::run_filters("filter { clone { } }", &[]).unwrap_err();
    assert!(err.contains("clones"), "{err}");
}

#[test]
fn events_created_by_a_filter_flow_through_later_filters() {
    let out = run(
        r#"filter {
            clone { clones => ["copy"] ecs_compatibility => disabled }
            if [type] == "copy" { mutate { add_field => { "seen" => "yes" } } }
        }"#,
        json!({"type": "orig"}),
    );
    assert_eq!(out.len(), 2);
    assert_eq!(out.iter().filter(|e| get(e, "seen").is_some()).count(), 1);
}

#[test]
fn sprintf_java_time_dates_render_and_bad_patterns_are_refused_at_load() {
    let out = run(
        r#"filter { mutate { add_field => { "week" => "%{{YYYY-'W'ww}}" "day" => "%{{uuuu-DDD}}" } } }"#,
        json!({"@timestamp": "2015-10-01T00:00:00.000Z"}),
    );
    assert_eq!(get(&out[0], "week"), v(json!("2015-W40")));
    assert_eq!(get(&out[0], "day"), v(json!("2015-274")));
    let err = common::run_filters(
        "filter {\n  mutate {\n    add_field => { \"d\" => \"%{{yyyy-MM-ddd}}\" }\n  }\n}",
        &[],
    )
    .unwrap_err();
    assert!(
        err.starts_with("test config:3:5: invalid setting \"add_field\""),
        "{err}"
    );
    assert!(err.contains("ddd"), "{err}");
}

#[test]
fn option_errors_name_their_location() {
    let err = common::run_filters(
        "filter {\n  mutate {\n    lowercase => \"x\"\n    bogus => 1\n  }\n}",
        &[],
    )
    .unwrap_err();
    assert_eq!(
        err,
        r#"test config:4:5: unknown setting "bogus" for filter plugin "mutate""#
    );
    let err = common::run_filters(
        "filter { mutate { convert => { \"a\" => \"number\" } } }",
        &[],
    )
    .unwrap_err();
    assert!(
        err.starts_with("test config:1:19: invalid setting \"convert\""),
        "{err}"
    );
    let err = common::run_filters("filter { nosuch { } }", &[]).unwrap_err();
    assert!(
        err.starts_with("test config:1:10: unknown filter plugin \"nosuch\""),
        "{err}"
    );
    let err = common::run_filters("filter { drop { percentage => \"lots\" } }", &[]).unwrap_err();
    assert!(err.contains("expected a whole number"), "{err}");
}

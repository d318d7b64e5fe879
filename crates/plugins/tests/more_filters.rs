//! Behaviour of the csv and split filters (cases from the plugins' specs, and Ruby's
//! reading of bad CSV lines), and their option errors.

mod common;

use common::{get, one, run_filters, v};

use serde_json::json;
use sluice_event::Value;

fn err(config: &str) -> String {
    run_filters(config, &[]).unwrap_err()
}

fn tags(e: &sluice_event::Event) -> Vec<String> {
    match get(e, "tags") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|t| t.as_str().unwrap_or_default().to_owned())
            .collect(),
        _ => Vec::new(),
    }
}

// ------------------------------------------------------------------------------------- csv

#[test]
fn csv_defaults_separators_and_quotes() {
    let e = one(
        r#"filter { csv { } }"#,
        json!({"message": "big,bird,\"sesame, street\""}),
    );
    assert_eq!(get(&e, "column1"), v(json!("big")));
    assert_eq!(get(&e, "column2"), v(json!("bird")));
    assert_eq!(get(&e, "column3"), v(json!("sesame, street")));
    assert_eq!(get(&e, "message"), v(json!("big,bird,\"sesame, street\"")));

    let e = one(
        r#"filter { csv { separator => ";" } }"#,
        json!({"message": "big,bird;sesame street"}),
    );
    assert_eq!(get(&e, "column1"), v(json!("big,bird")));
    assert_eq!(get(&e, "column2"), v(json!("sesame street")));

    let e = one(
        r#"filter { csv { separator => "||" quote_char => "'" } }"#,
        json!({"message": "'a||b'||c||"}),
    );
    assert_eq!(get(&e, "column1"), v(json!("a||b")));
    assert_eq!(get(&e, "column2"), v(json!("c")));
    // A trailing empty unquoted column is null, as Ruby's nil.
    assert_eq!(get(&e, "column3"), Some(Value::Null));

    let e = one(
        r#"filter { csv { quote_char => "\x00" } }"#,
        json!({"message": "big,bird,\"sesame\" street"}),
    );
    assert_eq!(get(&e, "column3"), v(json!("\"sesame\" street")));

    let e = one(
        "filter { csv { separator => \"\t\" } }",
        json!({"message": "a\tb c\t"}),
    );
    assert_eq!(get(&e, "column2"), v(json!("b c")));
}

#[test]
fn csv_columns_autogeneration_target_and_source() {
    let e = one(
        r#"filter { csv { columns => ["first", "last", "address"] } }"#,
        json!({"message": "big,bird,sesame street,extra"}),
    );
    assert_eq!(get(&e, "first"), v(json!("big")));
    assert_eq!(get(&e, "address"), v(json!("sesame street")));
    assert_eq!(get(&e, "column4"), v(json!("extra")));

    let e = one(
        r#"filter { csv { columns => ["custom1", "custom2"] autogenerate_column_names => false } }"#,
        json!({"message": "val1,val2,val3"}),
    );
    assert_eq!(get(&e, "custom2"), v(json!("val2")));
    assert_eq!(get(&e, "column3"), None);

    let e = one(
        r#"filter { csv { columns => ["custom1", "custom2", "custom3"] skip_empty_columns => true } }"#,
        json!({"message": "val1,,val3"}),
    );
    assert_eq!(get(&e, "custom1"), v(json!("val1")));
    assert_eq!(get(&e, "custom2"), None);
    assert_eq!(get(&e, "custom3"), v(json!("val3")));

    let e = one(
        r#"filter { csv { source => "[@metadata][line]" target => "data" columns => ["[test][one]", "two"] } }"#,
        json!({"@metadata": {"line": "hello,world"}}),
    );
    assert_eq!(get(&e, "[data][test][one]"), v(json!("hello")));
    assert_eq!(get(&e, "[data][two]"), v(json!("world")));

    // A missing source is left alone, untagged.
    let e = one(r#"filter { csv { source => "nothing" } }"#, json!({"a": 1}));
    assert!(tags(&e).is_empty());
    assert_eq!(get(&e, "column1"), None);
}

#[test]
fn csv_conversions() {
    let e = one(
        r#"filter { csv { convert => {
             "column1" => "integer" "column3" => "boolean" "column4" => "float"
             "column5" => "date" "column6" => "date_time" "column7" => "date" "column8" => "date_time" } } }"#,
        json!({"message": "1234,bird,false,1.25,2017-06-01,2001-02-03 04:05:06,invalid_date,invalid_date_time"}),
    );
    assert_eq!(get(&e, "column1"), v(json!(1234)));
    assert_eq!(get(&e, "column2"), v(json!("bird")));
    assert_eq!(get(&e, "column3"), v(json!(false)));
    assert_eq!(get(&e, "column4"), v(json!(1.25)));
    assert!(matches!(get(&e, "column5"), Some(Value::Timestamp(_))));
    match get(&e, "column6") {
        Some(Value::Timestamp(t)) => assert_eq!(t.to_iso8601(), "2001-02-03T04:05:06.000Z"),
        other => panic!("{other:?}"),
    }
    assert_eq!(get(&e, "column7"), v(json!("invalid_date")));
    assert_eq!(get(&e, "column8"), v(json!("invalid_date_time")));

    let e = one(
        r#"filter { csv { columns => ["custom1", "custom2"] convert => { "custom1" => "integer" } } }"#,
        json!({"message": "0x1A,2"}),
    );
    assert_eq!(get(&e, "custom1"), v(json!(26)));
    assert_eq!(get(&e, "custom2"), v(json!("2")));

    assert!(err(r#"filter { csv { convert => { "a" => "numeric" } } }"#)
        .contains("Invalid conversion types: numeric"));
}

#[test]
fn csv_headers_empty_rows_and_failures() {
    let cfg = r#"filter { csv { columns => ["a", "b"] skip_header => true } }"#;
    let out = run_filters(cfg, &[json!({"message": "a,b"}), json!({"message": "1,2"})]).unwrap();
    assert_eq!(out.len(), 1, "the header line is dropped");
    assert_eq!(get(&out[0], "b"), v(json!("2")));

    let out = run_filters(
        r#"filter { csv { autodetect_column_names => true } }"#,
        &[
            json!({"message": "first,last,address"}),
            json!({"message": "big,bird,sesame street"}),
        ],
    )
    .unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(get(&out[0], "last"), v(json!("bird")));
    assert_eq!(get(&out[0], "address"), v(json!("sesame street")));

    let e = one(
        r#"filter { csv { skip_empty_rows => true } }"#,
        json!({"message": ""}),
    );
    assert_eq!(tags(&e), ["_csvskippedemptyfield"]);
    let e = one(r#"filter { csv { } }"#, json!({"message": ""}));
    assert_eq!(tags(&e), ["_csvparsefailure"]);

    for bad in ["a,b\"c", "\"a\"b,c", "\"unclosed,x", "\"x\ny\",a\rb"] {
        let e = one(
            r#"filter { csv { add_tag => ["parsed"] } }"#,
            json!({"message": bad}),
        );
        assert_eq!(tags(&e), ["_csvparsefailure"], "{bad:?}");
        assert_eq!(get(&e, "column1"), None, "{bad:?}");
    }
    let e = one(r#"filter { csv { source => "n" } }"#, json!({"n": [1, 2]}));
    assert_eq!(tags(&e), ["_csvparsefailure"]);
    // Ruby raises on `boolean` of an empty column: the event is tagged.
    let e = one(
        r#"filter { csv { convert => { "column2" => "boolean" } } }"#,
        json!({"message": "x,"}),
    );
    assert_eq!(tags(&e), ["_csvparsefailure"]);

    assert!(err(r#"filter { csv { quote_char => "ab" } }"#).contains("one character"));
    assert!(err(r#"filter { csv { separator => "" } }"#).contains("must not be empty"));
    assert!(err(r#"filter { csv { target => "[a" } }"#).contains("target"));
    assert!(err(r#"filter { csv { columnz => ["a"] } }"#).contains("columnz"));
}

// ----------------------------------------------------------------------------------- split

fn messages(out: &[sluice_event::Event], field: &str) -> Vec<Option<Value>> {
    out.iter().map(|e| get(e, field)).collect()
}

#[test]
fn split_strings_and_arrays() {
    let out = run_filters(
        r#"filter { split { add_tag => ["piece"] } }"#,
        &[json!({"message": "big\nbird\n\nsesame street\n", "keep": 1})],
    )
    .unwrap();
    assert_eq!(
        messages(&out, "message"),
        [v(json!("big")), v(json!("bird")), v(json!("sesame street"))]
    );
    assert!(out
        .iter()
        .all(|e| get(e, "keep") == v(json!(1)) && tags(e) == ["piece"]));

    let out = run_filters(
        r#"filter { split { field => "custom" terminator => "," target => "one" } }"#,
        &[json!({"custom": "a,b"})],
    )
    .unwrap();
    assert_eq!(messages(&out, "one"), [v(json!("a")), v(json!("b"))]);
    assert_eq!(get(&out[0], "custom"), v(json!("a,b")));

    // An array without target: the field holds one item in each copy.
    let out = run_filters(
        r#"filter { split { field => "list" } }"#,
        &[json!({"list": ["x", null, "", {"k": 1}]})],
    )
    .unwrap();
    assert_eq!(messages(&out, "list"), [v(json!("x")), v(json!({"k": 1}))]);
    let out = run_filters(
        r#"filter { split { field => "list" target => "item" } }"#,
        &[json!({"list": ["x", "y"]})],
    )
    .unwrap();
    assert_eq!(messages(&out, "item"), [v(json!("x")), v(json!("y"))]);
    assert_eq!(get(&out[1], "list"), v(json!(["x", "y"])));
}

#[test]
fn split_unsplittable_values() {
    // No terminator: unchanged and unmatched.
    let e = one(
        r#"filter { split { add_tag => ["piece"] } }"#,
        json!({"message": "one line"}),
    );
    assert_eq!(get(&e, "message"), v(json!("one line")));
    assert!(tags(&e).is_empty());
    // Empty text: nothing comes out.
    let out = run_filters(r#"filter { split { } }"#, &[json!({"message": ""})]).unwrap();
    assert!(out.is_empty());
    for input in [json!({"message": 42}), json!({"other": "a\nb"})] {
        let e = one(r#"filter { split { } }"#, input.clone());
        assert_eq!(tags(&e), ["_split_type_failure"], "{input}");
    }
    let out = run_filters(
        r#"filter { split { terminator => " " } }"#,
        &[json!({"message": "  a \t b "})],
    )
    .unwrap();
    assert_eq!(messages(&out, "message"), [v(json!("a")), v(json!("b"))]);
    assert!(err(r#"filter { split { terminator => "" } }"#).contains("must not be empty"));
}

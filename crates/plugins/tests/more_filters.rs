//! Behaviour of the csv, split, fingerprint, anonymize, logfmt, urldecode, json_encode, uuid, truncate, de_dot, prune, translate, bytes, age, environment, sleep, cidr, tld, xml, dns, elapsed and throttle filters (cases from the plugins' specs, and Ruby's
//! reading of bad CSV lines), and their option errors.

mod common;

use common::{chain, events, get, one, run_filters, tags, v};

use std::time::Duration;

use serde_json::json;
use sluice_event::Value;

fn err(config: &str) -> String {
    run_filters(config, &[]).unwrap_err()
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

// ----------------------------------------------------------------------------- fingerprint

fn fingerprint(options: &str, input: serde_json::Value) -> Option<Value> {
    let e = one(
        &format!("filter {{ fingerprint {{ ecs_compatibility => disabled {options} }} }}"),
        input,
    );
    get(&e, "fingerprint")
}

/// The digests of logstash-filter-fingerprint's spec.
#[test]
fn fingerprint_digests_and_hmac() {
    let ip = json!({"clientip": "123.123.123.123"});
    for (options, want) in [
        ("", "3a5076c520b4b463f43806896ea0b3978d09dcae"),
        (r#"key => "longencryptionkey""#, "fdc60acc4773dc5ac569ffb78fcb93c9630797f4"),
        (r#"key => "longencryptionkey" base64encode => true"#, "/cYKzEdz3FrFaf+3j8uTyWMHl/Q="),
        ("base64encode => true", "OlB2xSC0tGP0OAaJbqCzl40J3K4="),
        ("method => SHA256", "4dabcab210766e35f03e77120e6986d6e6d4752b2a9ff22980b9253d026080d8"),
        (r#"method => SHA256 key => "longencryptionkey" base64encode => true"#, "NFvsPv8kLVO1aJFsJhCz45PYhda5bWQ/OElP10v0qco="),
        ("method => SHA384", "fd605b0a3af3e04ce0d7a0b0d9c48d67a12dab811f60072e6eae84e35d567793ffb68a1807536f11c90874065c2a4392"),
        (r#"method => SHA384 key => "longencryptionkey""#, "22d4c0e8c4fbcdc4887d2038fca7650f0e2e0e2457ff41c06eb2a980dded6749561c814fe182aff93e2538d18593947a"),
        ("method => SHA512", "5468e2dc64ea92b617782aae884b35af60041ac9e168a283615b6a462c54c13d42fa9542cce9b7d76a8124ac6616818905e3e5dd35d6e519f77c3b517558639a"),
        (r#"method => SHA512 key => "longencryptionkey" base64encode => true"#, "EcGbMmk2wI1sUKPIR9iD5aE2Lmpk3VUgGiXywawbZz99i/FbjxEqSXgnbVcydeOxQWbhckb2cMKlOUAcW/2s6A=="),
        ("method => MD5", "ccdd8d3d940a01b2fb3258c059924c0d"),
        (r#"method => MD5 key => "longencryptionkey""#, "9336c879e305c9604a3843fc3e75948f"),
        (r#"method => MD5 key => "longencryptionkey" base64encode => true"#, "kzbIeeMFyWBKOEP8PnWUjw=="),
        ("method => MURMUR3_128", "41cbc4056eed401d091dfbeabf7ea9e0"),
        ("method => MURMUR3_128 base64encode => true", "QcvEBW7tQB0JHfvqv36p4A=="),
        (r#"method => IPV4_NETWORK key => "24""#, "123.123.123.0"),
    ] {
        assert_eq!(
            fingerprint(&format!(r#"source => ["clientip"] {options}"#), ip.clone()),
            v(json!(want)),
            "{options}"
        );
    }
    let murmur =
        |options: &str, input| fingerprint(&format!(r#"source => "clientip" {options}"#), input);
    assert_eq!(
        murmur("method => MURMUR3", ip.clone()),
        v(json!(4013733395u32))
    );
    assert_eq!(
        murmur("method => MURMUR3", json!({"clientip": 123})),
        v(json!(823512154))
    );
    for (n, hex, b64) in [
        (
            json!(123),
            "286816c693ac410ed63e1430dcd6f6fe",
            "KGgWxpOsQQ7WPhQw3Nb2/g==",
        ),
        (
            json!(2148483647i64),
            "fdc7699a82556c8c584131f0133ee989",
            "/cdpmoJVbIxYQTHwEz7piQ==",
        ),
    ] {
        let input = json!({ "clientip": n });
        assert_eq!(
            murmur("method => MURMUR3_128", input.clone()),
            v(json!(hex))
        );
        assert_eq!(
            murmur("method => MURMUR3_128 base64encode => true", input),
            v(json!(b64))
        );
    }
}

#[test]
fn fingerprint_sources_concatenation_and_other_methods() {
    assert_eq!(
        fingerprint(
            r#"source => "clientip""#,
            json!({"clientip": ["123.123.123.123", "223.223.223.223"]})
        ),
        v(json!([
            "3a5076c520b4b463f43806896ea0b3978d09dcae",
            "47bbc4e06edebbace047fed35abeceec64968b81"
        ]))
    );
    let two = json!({"field1": "test1", "field2": "test2"});
    assert_eq!(
        fingerprint(r#"source => ["field1", "field2"]"#, two.clone()),
        v(json!("109f4b3c50d7b0df729d299bc6f8e9ef9066971f"))
    );
    assert_eq!(
        fingerprint(
            r#"source => ["field1", "field2"] concatenate_sources => true"#,
            two
        ),
        v(json!("e3b6b71eedc656f1d29408264e8a75535db985cb"))
    );
    let utf8 = json!({"field1": [{"inner_key": "🂡"}, {"1": "2"}], "field2": "🂡"});
    assert_eq!(
        fingerprint(r#"source => ["field1", "field2"]"#, utf8.clone()),
        v(json!("58fa9e0e60c9f0d24b51d84cddb26732a39eeb3d"))
    );
    assert_eq!(
        fingerprint(
            r#"source => ["field1", "field2"] concatenate_sources => true"#,
            utf8
        ),
        v(json!("d2a1c14e0c9ef137d67114db23b3f2fdbcc90d08"))
    );
    assert_eq!(
        fingerprint(
            "concatenate_all_fields => true",
            json!({"@timestamp": "2017-07-26T14:44:27.064Z", "clientip": "123.123.123.123",
                   "message": "This is a test message", "log_level": "INFO", "offset": 123456789,
                   "type": "test", "@version": "1"})
        ),
        v(json!("cbf022518e97860403160ed8a41847c0db104e63"))
    );
    let epoch = json!({"@timestamp": "1970-01-01T00:00:00Z"});
    assert_eq!(
        fingerprint(r#"source => "@timestamp" key => "0123""#, epoch.clone()),
        v(json!("1d5379ec92d86a67cfc642d55aa050ca312d3b9a"))
    );
    assert_eq!(
        fingerprint(r#"source => "@timestamp" method => MURMUR3"#, epoch.clone()),
        v(json!(743372282))
    );
    assert_eq!(
        fingerprint(r#"source => "@timestamp" method => MURMUR3_128"#, epoch),
        v(json!("37785b62a8cae473acc315d39b66d86e"))
    );
    assert_eq!(
        fingerprint(
            r#"source => "@timestamp" method => MURMUR3"#,
            json!({"@timestamp": "2000-01-01T05:00:00.12Z"})
        ),
        v(json!(4263087275u32))
    );
    assert_eq!(
        fingerprint(
            "method => PUNCTUATION source => \"field1\"",
            json!({"field1": "PHP Warning:  json_encode() [<a href='function.json-encode'>function.json-encode</a>]: Invalid UTF-8 sequence in argument in /var/www/htdocs/test.php on line 233"})
        ),
        v(json!(":_()[<='.-'>.-</>]:-////."))
    );
    let id = fingerprint("method => UUID", json!({})).unwrap();
    let id = id.as_str().unwrap();
    assert!(id.len() == 36 && id.as_bytes()[14] == b'4', "{id}");
    assert_ne!(
        fingerprint("method => UUID", json!({})).unwrap().as_str(),
        Some(id)
    );

    let e = one(r#"filter { fingerprint { } }"#, json!({"message": "x"}));
    assert!(get(&e, "[event][hash]").is_some(), "ECS target");
    // Not an address: the event goes on unchanged.
    let e = one(
        r#"filter { fingerprint { method => IPV4_NETWORK key => "16" source => "ip" add_tag => ["t"] } }"#,
        json!({"ip": "nope"}),
    );
    assert_eq!(get(&e, "[event][hash]"), None);
    assert!(tags(&e).is_empty());
    assert!(err(r#"filter { fingerprint { method => IPV4_NETWORK } }"#)
        .contains("subnet prefix length"));
    assert!(err(r#"filter { fingerprint { method => CRC32 } }"#).contains("CRC32"));
}

// ------------------------------------------------- urldecode, json_encode, uuid, truncate

#[test]
fn urldecode_fields() {
    let e = one(
        r#"filter { urldecode { } }"#,
        json!({"message": "http://example.com?name=Jos%C3%A9%20Garc%C3%ADa+x%2"}),
    );
    assert_eq!(
        get(&e, "message"),
        v(json!("http://example.com?name=José García+x%2"))
    );
    let e = one(
        r#"filter { urldecode { all_fields => true } }"#,
        json!({"a": "%41", "b": ["%42", 1], "c": {"d": "%43"}, "n": 5}),
    );
    assert_eq!(get(&e, "a"), v(json!("A")));
    assert_eq!(get(&e, "b"), v(json!(["B", 1])));
    assert_eq!(get(&e, "[c][d]"), v(json!("C")));
    assert_eq!(get(&e, "n"), v(json!(5)));
    // Bytes that are not UTF-8 show as Ruby's inspect shows them.
    let e = one(
        r#"filter { urldecode { field => "u" } }"#,
        json!({"u": "%FFok"}),
    );
    assert_eq!(get(&e, "u"), v(json!("\\xFFok")));
    let e = one(
        r#"filter { urldecode { field => "u" charset => "ISO-8859-1" } }"#,
        json!({"u": "caf%E9"}),
    );
    assert_eq!(get(&e, "u"), v(json!("café")));
    // A missing field becomes null, as the plugin sets what it decoded (nil).
    let e = one(r#"filter { urldecode { field => "u" } }"#, json!({}));
    assert_eq!(get(&e, "u"), Some(Value::Null));
}

#[test]
fn json_encode_uuid_and_truncate() {
    let e = one(
        r#"filter { json_encode { source => "h" } json_encode { source => "a" target => "t" } }"#,
        json!({"h": {"b": [1, 2.5, null], "a": "x"}, "a": "s\"q"}),
    );
    assert_eq!(get(&e, "h"), v(json!(r#"{"a":"x","b":[1,2.5,null]}"#)));
    assert_eq!(get(&e, "t"), v(json!(r#""s\"q""#)));
    assert_eq!(get(&e, "a"), v(json!("s\"q")));
    let e = one(r#"filter { json_encode { source => "none" } }"#, json!({}));
    assert_eq!(get(&e, "none"), v(json!("null")));

    let e = one(
        r#"filter { uuid { target => "id" } }"#,
        json!({"id": "kept"}),
    );
    assert_eq!(get(&e, "id"), v(json!("kept")));
    let e = one(
        r#"filter { uuid { target => "id" overwrite => true } }"#,
        json!({"id": "kept"}),
    );
    let id = get(&e, "id").unwrap();
    let id = id.as_str().unwrap();
    assert!(id.len() == 36 && id.as_bytes()[14] == b'4', "{id}");
    assert!(err(r#"filter { uuid { } }"#).contains("target"));

    let e = one(
        r#"filter { truncate { length_bytes => 5 add_tag => ["cut"] } }"#,
        json!({"a": "0123456789", "b": ["héllo wörld", 7], "c": {"d": "abcdefgh"}, "n": 123456789}),
    );
    assert_eq!(get(&e, "a"), v(json!("01234")));
    // Never inside a character: "hé" is 3 bytes, "hél" 4, "héll" 5.
    assert_eq!(get(&e, "b"), v(json!(["héll", 7])));
    assert_eq!(get(&e, "[c][d]"), v(json!("abcde")));
    assert_eq!(get(&e, "n"), v(json!(123456789)));
    assert_eq!(tags(&e), ["cut"]);
    let e = one(
        r#"filter { truncate { length_bytes => 3 fields => ["a"] add_tag => ["cut"] } }"#,
        json!({"a": "abc", "b": "abcdef"}),
    );
    assert_eq!(get(&e, "b"), v(json!("abcdef")));
    assert!(tags(&e).is_empty(), "nothing was cut");
    let e = one(
        r#"filter { truncate { length_bytes => 1 fields => ["a"] } }"#,
        json!({"a": "é"}),
    );
    assert_eq!(get(&e, "a"), v(json!("")));
    assert!(err(r#"filter { truncate { } }"#).contains("length_bytes"));
    assert!(err(r#"filter { truncate { length_bytes => -1 } }"#).contains("negative"));
}

// ----------------------------------------------------------------------- de_dot and prune

#[test]
fn de_dot_renames_dotted_fields() {
    let e = one(
        r#"filter { de_dot { } }"#,
        json!({"a.b": 1, "c": {"d.e": 2}, "plain": 3}),
    );
    assert_eq!(get(&e, "a_b"), v(json!(1)));
    assert_eq!(get(&e, "[a.b]"), None);
    assert_eq!(get(&e, "[c][d.e]"), v(json!(2)), "not recursive");
    assert_eq!(get(&e, "plain"), v(json!(3)));

    let e = one(
        r#"filter { de_dot { nested => true recursive => true } }"#,
        json!({"a.b": 1, "c": {"d.e": {"f.g": 2}}}),
    );
    assert_eq!(get(&e, "[a][b]"), v(json!(1)));
    assert_eq!(get(&e, "[c][d][e][f][g]"), v(json!(2)));
    assert_eq!(get(&e, "[c][d.e]"), None);

    let e = one(
        r#"filter { de_dot { separator => "__" fields => ["[x][y.z]", "not.here"] } }"#,
        json!({"x": {"y.z": 1, "k": 2}, "w.v": 3}),
    );
    assert_eq!(get(&e, "[x][y__z]"), v(json!(1)));
    assert_eq!(get(&e, "[x][k]"), v(json!(2)));
    assert_eq!(get(&e, "[w.v]"), v(json!(3)), "not in fields");
    assert!(err(r#"filter { de_dot { separator => "." } }"#).contains("cannot be or contain"));
}

#[test]
fn prune_by_names_and_values() {
    let borat = json!({
        "firstname": "Borat", "lastname": "Sagdiyev", "hobby": "Cloud", "status": "200",
        "Borat_saying": "Cloud is not ready", "%{hmm}": "doh", "list": ["a1", "b2", "a3"]
    });
    let e = one(r#"filter { prune { } }"#, borat.clone());
    assert_eq!(
        get(&e, "[%{hmm}]"),
        None,
        "unresolved references go by default"
    );
    assert_eq!(get(&e, "lastname"), v(json!("Sagdiyev")));

    let e = one(
        r#"filter { prune { whitelist_names => ["firstname", "(hobby|status)", "^@"] } }"#,
        borat.clone(),
    );
    assert_eq!(get(&e, "firstname"), v(json!("Borat")));
    assert_eq!(get(&e, "status"), v(json!("200")));
    assert_eq!(get(&e, "lastname"), None);
    assert_eq!(get(&e, "Borat_saying"), None);

    let e = one(
        r#"filter { prune { whitelist_names => ["firstname", "%{firstname}_saying", "^@"] interpolate => true } }"#,
        borat.clone(),
    );
    assert_eq!(get(&e, "Borat_saying"), v(json!("Cloud is not ready")));
    assert_eq!(get(&e, "hobby"), None);

    let e = one(
        r#"filter { prune { blacklist_names => ["name$"] blacklist_values => { "status" => "^2" "list" => "^a" } whitelist_values => { "hobby" => "^Sun" } } }"#,
        borat,
    );
    assert_eq!(get(&e, "firstname"), None);
    assert_eq!(get(&e, "status"), None);
    assert_eq!(get(&e, "hobby"), None);
    assert_eq!(get(&e, "list"), v(json!(["b2"])));
    assert_eq!(get(&e, "Borat_saying"), v(json!("Cloud is not ready")));
    assert!(err(r#"filter { prune { whitelist_names => ["("] } }"#)
        .contains("invalid regular expression"));
}

// ------------------------------------------------------------------------------- translate

fn translated(config: &str, input: serde_json::Value, field: &str) -> Option<Value> {
    get(&one(config, input), field)
}

#[test]
fn translate_inline_dictionaries() {
    let cfg = r#"filter { translate { source => "status" target => "text" dictionary => { "200" => "OK" "404" => "Not Found" "n" => 5 } fallback => "no %{status}" add_tag => ["t"] } }"#;
    let e = one(cfg, json!({"status": 200}));
    assert_eq!(
        get(&e, "text"),
        v(json!("OK")),
        "a number is looked up as its text"
    );
    assert_eq!(tags(&e), ["t"]);
    assert_eq!(
        translated(cfg, json!({"status": "404"}), "text"),
        v(json!("Not Found"))
    );
    assert_eq!(
        translated(cfg, json!({"status": ["n", "x"]}), "text"),
        v(json!(5))
    );
    assert_eq!(
        translated(cfg, json!({"status": "500"}), "text"),
        v(json!("no 500"))
    );
    // An existing target is kept unless override.
    assert_eq!(
        translated(cfg, json!({"status": "200", "text": "mine"}), "text"),
        v(json!("mine"))
    );
    let cfg = r#"filter { translate { field => "status" destination => "text" override => true dictionary => ["200", "OK"] } }"#;
    assert_eq!(
        translated(cfg, json!({"status": "200", "text": "mine"}), "text"),
        v(json!("OK"))
    );
    // No match, no fallback: untouched, unmatched.
    let e = one(
        r#"filter { translate { source => "s" target => "t" dictionary => { "a" => "b" } add_tag => ["t"] } }"#,
        json!({"s": "zzz"}),
    );
    assert_eq!(get(&e, "t"), None);
    assert!(tags(&e).is_empty());
    // ECS: in place by default.
    assert_eq!(
        translated(
            r#"filter { translate { source => "s" dictionary => { "a" => "b" } } }"#,
            json!({"s": "a"}),
            "s"
        ),
        v(json!("b"))
    );
    assert_eq!(
        translated(
            r#"filter { translate { source => "s" ecs_compatibility => disabled dictionary => { "a" => "b" } } }"#,
            json!({"s": "a"}),
            "translation"
        ),
        v(json!("b"))
    );
}

#[test]
fn translate_regex_fuzzy_and_iterate_on() {
    let cfg = r#"filter { translate { source => "s" target => "t" regex => true dictionary => { "^err" => "error" "or$" => "ends" "." => "any" } } }"#;
    assert_eq!(
        translated(cfg, json!({"s": "error"}), "t"),
        v(json!("error")),
        "first key that matches"
    );
    assert_eq!(
        translated(cfg, json!({"s": "mirror"}), "t"),
        v(json!("ends"))
    );
    assert_eq!(translated(cfg, json!({"s": "x"}), "t"), v(json!("any")));
    let cfg = r#"filter { translate { source => "s" target => "t" exact => false dictionary => { "dog" => "cat" "a.b" => "X" } } }"#;
    assert_eq!(
        translated(cfg, json!({"s": "a dog and a.b and axb"}), "t"),
        v(json!("a cat and X and axb"))
    );
    assert_eq!(translated(cfg, json!({"s": "nothing"}), "t"), None);

    let cfg = r#"filter { translate { source => "codes" iterate_on => "codes" target => "names" dictionary => { "1" => "one" "2" => "two" } fallback => "?" } }"#;
    assert_eq!(
        translated(cfg, json!({"codes": ["1", 2, "3"]}), "names"),
        v(json!(["one", "two", "?"]))
    );
    let cfg = r#"filter { translate { source => "[code]" iterate_on => "[items]" target => "[name]" dictionary => { "1" => "one" } } }"#;
    let e = one(
        cfg,
        json!({"items": [{"code": "1"}, {"code": "9"}, {"other": 1}]}),
    );
    assert_eq!(get(&e, "[items][0][name]"), v(json!("one")));
    assert_eq!(get(&e, "[items][1][name]"), None);

    assert!(
        err(r#"filter { translate { dictionary => { "a" => "b" } } }"#).contains("No source field")
    );
    assert!(
        err(r#"filter { translate { source => "a" field => "b" } }"#)
            .contains("only set the `source")
    );
    assert!(
        err(r#"filter { translate { source => "a" target => "a" override => false } }"#)
            .contains("in-place")
    );
    assert!(err(
        r#"filter { translate { source => "a" dictionary_path => "/nonexistent/d.yml" } }"#
    )
    .contains("dictionary_path"));
}

#[test]
fn translate_dictionary_files_and_reloads() {
    let dir = std::env::temp_dir().join(format!("sluice-translate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let yaml = dir.join("d.yml");
    std::fs::write(&yaml, "\"100\": Continue\n200: OK\nnested: {a: [1, 2]}\n").unwrap();
    let json_file = dir.join("d.json");
    std::fs::write(&json_file, "\u{feff}{\"k\": \"from json\", \"n\": 1.5}").unwrap();
    let csv_file = dir.join("d.csv");
    std::fs::write(&csv_file, "k,from csv\n\"a,b\",\"quoted, value\"\n").unwrap();
    let with = |path: &std::path::Path, s: &str| {
        translated(
            &format!(
                r#"filter {{ translate {{ source => "s" target => "t" dictionary_path => "{}" }} }}"#,
                path.display()
            ),
            json!({ "s": s }),
            "t",
        )
    };
    assert_eq!(with(&yaml, "100"), v(json!("Continue")));
    assert_eq!(with(&yaml, "200"), v(json!("OK")));
    assert_eq!(with(&yaml, "nested"), v(json!({"a": [1, 2]})));
    assert_eq!(with(&json_file, "k"), v(json!("from json")));
    assert_eq!(with(&json_file, "n"), v(json!(1.5)));
    assert_eq!(with(&csv_file, "k"), v(json!("from csv")));
    assert_eq!(with(&csv_file, "a,b"), v(json!("quoted, value")));
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"unclosed\": ").unwrap();
    assert!(err(&format!(
        r#"filter {{ translate {{ source => "s" dictionary_path => "{}" }} }}"#,
        bad.display()
    ))
    .contains("when loading dictionary file"));
    let txt = dir.join("d.txt");
    std::fs::write(&txt, "x").unwrap();
    assert!(err(&format!(
        r#"filter {{ translate {{ source => "s" dictionary_path => "{}" }} }}"#,
        txt.display()
    ))
    .contains("non valid format"));

    // Reloads, without rebuilding the filter: merge keeps old keys, replace drops them.
    for (behaviour, old_kept) in [("merge", true), ("replace", false)] {
        let file = dir.join(format!("{behaviour}.yml"));
        std::fs::write(&file, "a: one\n").unwrap();
        let config = format!(
            r#"filter {{ translate {{ source => "s" target => "t" dictionary_path => "{}" refresh_interval => 1 refresh_behaviour => {behaviour} }} }}"#,
            file.display()
        );
        let mut chain = chain(&config);
        let look = |chain: &mut sluice_pipeline::graph::FilterChain, s: &str| {
            let mut batch = events(&[json!({ "s": s })]);
            chain.run(&mut batch);
            get(&batch[0], "t")
        };
        assert_eq!(look(&mut chain, "a"), v(json!("one")));
        std::thread::sleep(Duration::from_millis(1100));
        std::fs::write(&file, "b: two\n").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while look(&mut chain, "b").is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "{behaviour}: not reloaded"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(look(&mut chain, "a").is_some(), old_kept, "{behaviour}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------ bytes, age, environment, sleep, cidr

#[test]
fn bytes_sizes() {
    let b = |options: &str, text: serde_json::Value| {
        let e = one(
            &format!(r#"filter {{ bytes {{ source => "s" target => "n" {options} }} }}"#),
            json!({ "s": text }),
        );
        (get(&e, "n"), tags(&e))
    };
    assert_eq!(b("", json!("1024")).0, v(json!(1024)));
    assert_eq!(b("", json!("1 KB")).0, v(json!(1024)));
    assert_eq!(b("", json!("1.5kb")).0, v(json!(1536)));
    assert_eq!(b("", json!(" 10M ")).0, v(json!(10485760)));
    assert_eq!(b("", json!("3,072 b")).0, v(json!(3072)));
    assert_eq!(
        b(r#"conversion_method => metric"#, json!("2.5 GB")).0,
        v(json!(2500000000i64))
    );
    assert_eq!(
        b(r#"decimal_separator => ",""#, json!("1.024,5 KB")).0,
        v(json!(1049088))
    );
    for bad in [json!("1.2.3 KB"), json!("lots"), json!("KB"), json!(12)] {
        assert_eq!(
            b("", bad.clone()),
            (None, vec!["_bytesparsefailure".to_owned()]),
            "{bad}"
        );
    }
    assert!(err(r#"filter { bytes { } }"#).contains("target"));
}

#[test]
fn age_environment_and_sleep() {
    let e = one(
        r#"filter { age { } }"#,
        json!({"@timestamp": "2000-01-01T00:00:00Z"}),
    );
    match get(&e, "[@metadata][age]") {
        Some(Value::Float(f)) => assert!(f > 7.8e8, "{f}"),
        other => panic!("{other:?}"),
    }
    std::env::set_var("SLUICE_ENV_FILTER_TEST", "from env");
    let e = one(
        r#"filter { environment { add_metadata_from_env => { "a" => "SLUICE_ENV_FILTER_TEST" "b" => "SLUICE_NOT_SET_ANYWHERE" } } }"#,
        json!({}),
    );
    assert_eq!(get(&e, "[@metadata][a]"), v(json!("from env")));
    assert_eq!(get(&e, "[@metadata][b]"), Some(Value::Null));

    let started = std::time::Instant::now();
    let out = run_filters(
        r#"filter { sleep { time => "0.1" every => 2 } }"#,
        &[json!({}), json!({}), json!({}), json!({})],
    )
    .unwrap();
    assert_eq!(out.len(), 4);
    // Two sleeps of 0.1 s for four events (a lower bound only: no upper bound on a busy machine).
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert!(err(r#"filter { sleep { } }"#).contains("time"));
}

#[test]
fn cidr_matches_addresses_in_networks() {
    let cfg = r#"filter { cidr { address => ["%{ip}"] network => ["192.168.0.0/24", "10.0.0.0/8,2001:db8::/32"] add_tag => ["internal"] } }"#;
    for (ip, inside) in [
        ("192.168.0.7", true),
        ("10.200.0.1", true),
        ("2001:db8::5", true),
        ("192.168.1.7", false),
        ("not an ip", false),
    ] {
        let e = one(cfg, json!({ "ip": ip }));
        assert_eq!(tags(&e) == ["internal"], inside, "{ip}");
    }
    let e = one(
        r#"filter { cidr { address_field => "ips" network => ["%{net}"] add_tag => ["in"] } }"#,
        json!({"ips": ["8.8.8.8", "172.16.5.4"], "net": "172.16.0.0/12"}),
    );
    assert_eq!(tags(&e), ["in"]);

    let dir = std::env::temp_dir().join(format!("sluice-cidr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let list = dir.join("nets.txt");
    std::fs::write(&list, "10.0.0.0/8;192.168.0.0/16").unwrap();
    let e = one(
        &format!(
            r#"filter {{ cidr {{ address => ["%{{ip}}"] network_path => "{}" separator => ";" add_tag => ["in"] }} }}"#,
            list.display()
        ),
        json!({"ip": "192.168.44.1"}),
    );
    assert_eq!(tags(&e), ["in"]);
    assert!(err(&format!(
        r#"filter {{ cidr {{ address => ["x"] network_path => "{}" network => ["1.0.0.0/8"] }} }}"#,
        list.display()
    ))
    .contains("mutually exclusive"));
    assert!(
        err(r#"filter { cidr { network_path => "/nonexistent/nets" } }"#)
            .contains("network list is invalid")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------------------------- tld

#[test]
fn tld_splits_domains_as_the_public_suffix_gem() {
    let parts = |name: &str| {
        get(
            &one(r#"filter { tld { source => "d" } }"#, json!({ "d": name })),
            "tld",
        )
    };
    assert_eq!(
        parts("google.com"),
        v(
            json!({"tld": "com", "top_level_domain": "com", "sld": "google", "trd": null, "domain": "google.com", "subdomain": null})
        )
    );
    assert_eq!(
        parts("google.co.uk"),
        v(
            json!({"tld": "co.uk", "top_level_domain": "co.uk", "sld": "google", "trd": null, "domain": "google.co.uk", "subdomain": null})
        )
    );
    assert_eq!(
        parts("www.google.com"),
        v(
            json!({"tld": "com", "top_level_domain": "com", "sld": "google", "trd": "www", "domain": "google.com", "subdomain": "www.google.com"})
        )
    );
    assert_eq!(
        parts("foo.bar.google.es"),
        v(
            json!({"tld": "es", "top_level_domain": "es", "sld": "google", "trd": "foo.bar", "domain": "google.es", "subdomain": "foo.bar.google.es"})
        )
    );
    for not_a_domain in ["co.uk", "example.notarealtld", "not a host", "a..b.com", ""] {
        assert_eq!(parts(not_a_domain), None, "{not_a_domain:?}");
    }
    let e = one(
        r#"filter { tld { source => "d" target => "[x][y]" add_tag => ["t"] } }"#,
        json!({"d": "blog.example.org"}),
    );
    assert_eq!(get(&e, "[x][y][domain]"), v(json!("example.org")));
    assert_eq!(tags(&e), ["t"]);
}

// ------------------------------------------------------------------------------------- xml

/// Cases of logstash-filter-xml's spec (XmlSimple's reading).
#[test]
fn xml_store_xml_as_xmlsimple() {
    let xml = |options: &str, raw: serde_json::Value| {
        let e = one(
            &format!(r#"filter {{ xml {{ source => "raw" target => "data" {options} }} }}"#),
            json!({ "raw": raw }),
        );
        (get(&e, "data"), tags(&e))
    };
    let ok = |v: serde_json::Value| (Some(Value::from(v)), Vec::<String>::new());
    assert_eq!(
        xml("", json!(r#"<foo key="value"/>"#)),
        ok(json!({"key": "value"}))
    );
    assert_eq!(
        xml("", json!("<foo><key>value1</key><key>value2</key></foo>")),
        ok(json!({"key": ["value1", "value2"]}))
    );
    assert_eq!(
        xml("", json!("<foo><key1><key2>value</key2></key1></foo>")),
        ok(json!({"key1": [{"key2": ["value"]}]}))
    );
    assert_eq!(
        xml("", json!([r#"<foo bar="baz"/>"#])),
        ok(json!({"bar": "baz"}))
    );
    let failed = (None, vec!["_xmlparsefailure".to_owned()]);
    for bad in [
        json!([r#"<foo bar="baz"/>"#, "jojoba"]),
        json!([]),
        json!({"foo": "bar"}),
        json!([{"foo": "bar"}]),
        json!("<foo /"),
        json!("<a><b></a>"),
        json!("<a/><b/>"),
    ] {
        assert_eq!(xml("", bad.clone()), failed, "{bad}");
    }
    assert_eq!(
        xml(
            "force_array => false",
            json!("<foo><bar>Content</bar></foo>")
        ),
        ok(json!({"bar": "Content"}))
    );
    assert_eq!(
        xml(
            "suppress_empty => false",
            json!("<foo><key>value1</key><key></key></foo>")
        ),
        ok(json!({"key": ["value1", {}]}))
    );
    assert_eq!(
        xml("", json!("<foo><key>value1</key><key></key></foo>")),
        ok(json!({"key": ["value1"]}))
    );
    let cases = r#"<opt><x>text1</x><y a="2">text2</y></opt>"#;
    assert_eq!(
        xml("force_array => false", json!(cases)),
        ok(json!({"x": "text1", "y": {"a": "2", "content": "text2"}}))
    );
    assert_eq!(
        xml("force_array => false force_content => true", json!(cases)),
        ok(json!({"x": {"content": "text1"}, "y": {"a": "2", "content": "text2"}}))
    );
    // Namespaces: attributes keep their written names, elements their local names;
    // entities, CDATA and mixed content.
    assert_eq!(
        xml(
            "force_array => false",
            json!(
                r#"<Event xmlns="urn:e" xmlns:h="urn:h"><h:div n="1 &lt; 2">a &amp; <![CDATA[<b>]]>&#233;</h:div><m>text<i>x</i>more</m></Event>"#
            )
        ),
        ok(
            json!({"xmlns": "urn:e", "xmlns:h": "urn:h", "div": {"n": "1 < 2", "content": "a & <b>é"}, "m": {"i": "x", "content": ["text", "more"]}})
        )
    );
    // Left alone: no source, blank text.
    let e = one(
        r#"filter { xml { source => "raw" target => "data" } }"#,
        json!({"raw": "  "}),
    );
    assert!(get(&e, "data").is_none() && tags(&e).is_empty());

    assert!(err(r#"filter { xml { source => "raw" } }"#).contains("'target' must also be set"));
    assert!(err(
        r#"filter { xml { source => "raw" target => "d" parse_options => "strict, bogus" } }"#
    )
    .contains("unsupported parse option"));
}

/// Cases of logstash-filter-xml's spec for `xpath` (Nokogiri's reading and `to_s`).
#[test]
fn xml_xpath_as_nokogiri() {
    let xml = |options: &str, raw: &str, field: &str| {
        let e = one(
            &format!(r#"filter {{ xml {{ source => "raw" {options} }} }}"#),
            json!({ "raw": raw }),
        );
        (get(&e, field), tags(&e))
    };
    let ok = |v: serde_json::Value| (Some(Value::from(v)), Vec::<String>::new());
    let text = r#"target => "data" xpath => [ "/foo/key/text()", "xpath_field" ]"#;
    assert_eq!(
        xml(text, "<foo><key>value</key></foo>", "xpath_field"),
        ok(json!(["value"]))
    );
    assert_eq!(
        xml(
            text,
            "<foo><key>value1</key><key>value2</key></foo>",
            "xpath_field"
        ),
        ok(json!(["value1", "value2"]))
    );
    assert_eq!(
        xml(text, "<foo><key>Français</key></foo>", "xpath_field"),
        ok(json!(["Français"]))
    );
    // Both stored: the queries and the hash.
    assert_eq!(
        xml(text, "<foo><key>value</key></foo>", "data"),
        ok(json!({"key": ["value"]}))
    );
    // Nothing found sets nothing.
    assert_eq!(
        xml(text, "<foobar></foobar>", "xpath_field"),
        (None, vec![])
    );

    // Namespaces: the root's declarations by default, the option's when given; elements
    // written with their own declarations only.
    let ns = r#"<foo xmlns:h="http://www.w3.org/TR/html4/"><h:div>Content</h:div></foo>"#;
    let query = r#"store_xml => false xpath => [ "/foo/h:div", "xpath_field" ]"#;
    assert_eq!(
        xml(query, ns, "xpath_field"),
        ok(json!(["<h:div>Content</h:div>"]))
    );
    let with_ns = r#"store_xml => false xpath => [ "/foo/h:div", "xpath_field" ] namespaces => {"h" => "http://www.w3.org/TR/html4/"}"#;
    assert_eq!(
        xml(with_ns, ns, "xpath_field"),
        ok(json!(["<h:div>Content</h:div>"]))
    );
    assert_eq!(
        xml(
            with_ns,
            r#"<foo><h:div xmlns:h="http://www.w3.org/TR/html4/">Content</h:div></foo>"#,
            "xpath_field"
        ),
        ok(json!([
            r#"<h:div xmlns:h="http://www.w3.org/TR/html4/">Content</h:div>"#
        ]))
    );
    assert_eq!(
        xml(
            r#"store_xml => false remove_namespaces => true xpath => [ "/foo/div", "xpath_field" ]"#,
            ns,
            "xpath_field"
        ),
        ok(json!(["<div>Content</div>"]))
    );
    // Without remove_namespaces, an unprefixed name does not match a namespaced element
    // (XPath 1.0); the default namespace is under the prefix xmlns.
    let default_ns = r#"<foo xmlns="urn:x"><bar>1</bar></foo>"#;
    assert_eq!(
        xml(
            r#"store_xml => false xpath => [ "/foo/bar/text()", "f" ]"#,
            default_ns,
            "f"
        ),
        (None, vec![])
    );
    assert_eq!(
        xml(
            r#"store_xml => false xpath => [ "/xmlns:foo/xmlns:bar/text()", "f" ]"#,
            default_ns,
            "f"
        ),
        ok(json!(["1"]))
    );
    // A prefix bound to nothing fails as Nokogiri's "Undefined namespace prefix".
    assert_eq!(
        xml(
            r#"store_xml => false xpath => [ "/foo/q:bar", "f" ]"#,
            "<foo><bar/></foo>",
            "f"
        ),
        (None, vec!["_xmlparsefailure".to_owned()])
    );

    // force_array => false: one result is a string. A broken document is queried as far as
    // it was read (RECOVER), without a tag.
    assert_eq!(
        xml(
            r#"store_xml => "false" force_array => "false" xpath => [ "/element/field1/text()", "field1" ]"#,
            "<element><field1>bbb</field1><field2>789</field2><field3>e3f<field3></element>",
            "field1"
        ),
        ok(json!("bbb"))
    );
    let invalid = r#"<xml> <sample attr='foo' attr="bar"> <invalid> </sample> </xml>"#;
    assert_eq!(xml("store_xml => false", invalid, "tags"), (None, vec![]));
    assert_eq!(
        xml(
            r#"store_xml => false parse_options => "strict""#,
            invalid,
            "nothing"
        ),
        (None, vec!["_xmlparsefailure".to_owned()])
    );

    // Results as Ruby's to_s of Nokogiri's: attributes as their value, text escaped, elements
    // with attributes by name and empty ones closed, numbers as floats, booleans, strings.
    let doc = r#"<r><a z="1" b="x &amp; &quot;y&quot;">t &lt; u<e/><!--c--></a><a z="2"/></r>"#;
    let run = |path: &str| {
        xml(
            &format!(r#"store_xml => false xpath => [ "{path}", "f" ]"#),
            doc,
            "f",
        )
    };
    assert_eq!(run("//a/@z"), ok(json!(["1", "2"])));
    assert_eq!(run("/r/a[1]/text()"), ok(json!(["t &lt; u"])));
    assert_eq!(
        run("/r/a[1]"),
        ok(json!([
            r#"<a b="x &amp; &quot;y&quot;" z="1">t &lt; u<e/><!--c--></a>"#
        ]))
    );
    assert_eq!(run("/r/a[1]/comment()"), ok(json!(["<!--c-->"])));
    assert_eq!(run("count(//a)"), ok(json!(["2.0"])));
    assert_eq!(run("count(//a) div 4"), ok(json!(["0.5"])));
    assert_eq!(run("boolean(//e)"), ok(json!(["true"])));
    assert_eq!(run("boolean(//nope)"), (None, vec![]));
    assert_eq!(run("string(//a[2]/@z)"), ok(json!(["2"])));
    assert_eq!(
        run("concat(name(/r), '-', local-name(//e))"),
        ok(json!(["r-e"]))
    );

    assert!(err(
        r#"filter { xml { source => "raw" store_xml => false xpath => [ "/a[", "f" ] } }"#
    )
    .contains("invalid XPath expression"));
    assert!(err(
        r#"filter { xml { source => "raw" store_xml => false parse_options => "dtdvalid" } }"#
    )
    .contains("needs a DTD"));
}

// ------------------------------------------------------------------------------------- dns

/// A DNS server on loopback: `example.test` is 10.1.2.3, 10.1.2.3 is `host.example.test`
/// (and `bücher.test` through IDNA), `slow.test` is never answered, the rest is NXDOMAIN.
/// Returns its address and the count of queries it received.
fn dns_server() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use hickory_proto::op::{Message, OpCode, ResponseCode};
    use hickory_proto::rr::rdata::{A, PTR};
    use hickory_proto::rr::{Name, RData, Record, RecordType};
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            let Ok((n, from)) = socket.recv_from(&mut buf) else {
                return;
            };
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let Ok(query) = Message::from_vec(&buf[..n]) else {
                continue;
            };
            let q = query.queries[0].clone();
            let name = q.name().to_ascii().to_lowercase();
            let mut reply = Message::response(query.metadata.id, OpCode::Query);
            reply.add_query(q.clone());
            let answer = match (name.as_str(), q.query_type()) {
                ("slow.test.", _) => continue,
                ("example.test.", RecordType::A) | ("xn--bcher-kva.test.", RecordType::A) => {
                    Some(RData::A(A("10.1.2.3".parse().unwrap())))
                }
                ("example.test.", _) => None,
                ("3.2.1.10.in-addr.arpa.", RecordType::PTR) => Some(RData::PTR(PTR(
                    Name::from_ascii("host.example.test.").unwrap(),
                ))),
                _ => {
                    reply.metadata.response_code = ResponseCode::NXDomain;
                    None
                }
            };
            if let Some(data) = answer {
                reply.add_answer(Record::from_rdata(q.name().clone(), 60, data));
            }
            let _ = socket.send_to(&reply.to_vec().unwrap(), from);
        }
    });
    (addr, count)
}

#[test]
fn dns_forward_reverse_caches_and_timeouts() {
    use std::sync::atomic::Ordering;
    let (server, queries) = dns_server();
    let cfg = |rest: &str| {
        format!(
            r#"filter {{ dns {{ nameserver => ["{server}"] timeout => 0.2 max_retries => 1 add_tag => ["dns"] {rest} }} }}"#
        )
    };
    let e = one(
        &cfg(r#"resolve => ["host"]"#),
        json!({"host": "example.test"}),
    );
    assert_eq!(get(&e, "host"), v(json!(["example.test", "10.1.2.3"])));
    assert_eq!(tags(&e), ["dns"]);
    let e = one(
        &cfg(r#"resolve => ["host"] action => replace"#),
        json!({"host": "bücher.test"}),
    );
    assert_eq!(get(&e, "host"), v(json!("10.1.2.3")), "IDNA");
    let e = one(
        &cfg(r#"reverse => ["ip"] action => replace"#),
        json!({"ip": ["10.1.2.3"]}),
    );
    assert_eq!(get(&e, "ip"), v(json!(["host.example.test"])));
    let e = one(&cfg(r#"reverse => ["ip"]"#), json!({"ip": "10.1.2.3"}));
    assert_eq!(get(&e, "ip"), v(json!(["10.1.2.3", "host.example.test"])));
    // Not found: unchanged, unmatched, untagged.
    let e = one(
        &cfg(r#"resolve => ["host"]"#),
        json!({"host": "nothing.test"}),
    );
    assert_eq!(get(&e, "host"), v(json!("nothing.test")));
    assert!(tags(&e).is_empty());
    // Several values, or not an address for reverse: stopped.
    let e = one(&cfg(r#"resolve => ["host"]"#), json!({"host": ["a", "b"]}));
    assert!(tags(&e).is_empty());
    let e = one(&cfg(r#"reverse => ["ip"]"#), json!({"ip": "not-an-ip"}));
    assert_eq!(get(&e, "ip"), v(json!("not-an-ip")));
    // No answer at all: tagged after the retries.
    let before = queries.load(Ordering::SeqCst);
    let e = one(&cfg(r#"resolve => ["host"]"#), json!({"host": "slow.test"}));
    assert_eq!(tags(&e), ["_dnstimeout"]);
    assert!(queries.load(Ordering::SeqCst) - before >= 2, "retried");

    // The hit cache answers repeated lookups without asking the server again.
    let before = queries.load(Ordering::SeqCst);
    let out = run_filters(
        &cfg(r#"resolve => ["host"] hit_cache_size => 10 failed_cache_size => 10"#),
        &[
            json!({"host": "example.test"}),
            json!({"host": "example.test"}),
            json!({"host": "nothing.test"}),
            json!({"host": "nothing.test"}),
        ],
    )
    .unwrap();
    assert_eq!(get(&out[1], "host"), v(json!(["example.test", "10.1.2.3"])));
    let asked = queries.load(Ordering::SeqCst) - before;
    // One A query for example.test; nothing.test: its candidates once (A and AAAA).
    assert!(asked <= 3, "{asked} queries: the caches did not answer");

    // hostsfile without nameserver: no DNS.
    let dir = std::env::temp_dir().join(format!("sluice-dns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "# comment\n192.0.2.7 fromfile.test alias\n").unwrap();
    let e = one(
        &format!(
            r#"filter {{ dns {{ hostsfile => ["{}"] resolve => ["a", "b"] action => replace }} }}"#,
            hosts.display()
        ),
        json!({"a": "alias", "b": "example.test"}),
    );
    assert_eq!(get(&e, "a"), v(json!("192.0.2.7")));
    assert_eq!(get(&e, "b"), v(json!("example.test")));
    let _ = std::fs::remove_dir_all(&dir);

    assert!(
        err(r#"filter { dns { nameserver => { search => ["x"] } } }"#)
            .contains("must include `address`")
    );
    assert!(
        err(r#"filter { dns { nameserver => { address => ["1.1.1.1"] ndots => 0 } } }"#)
            .contains("ndots")
    );
    assert!(err(r#"filter { dns { nameserver => ["not an ip"] } }"#).contains("not an IP address"));
}

// ------------------------------------------------------------------- elapsed and throttle

#[test]
fn elapsed_matches_starts_and_ends() {
    let mut c = chain(
        r#"filter { elapsed { start_tag => "start" end_tag => "end" unique_id_field => "id" timeout => 10 } }"#,
    );
    let mut batch = events(&[
        json!({"id": 1, "tags": ["start"], "@timestamp": "2026-01-01T00:00:00.000Z"}),
        json!({"id": 1, "tags": ["start"], "@timestamp": "2026-01-01T00:00:01.000Z"}),
        json!({"id": 2, "tags": ["start"], "@timestamp": "2026-01-01T00:00:00.000Z"}),
        json!({"id": 1, "tags": ["end"], "@timestamp": "2026-01-01T00:00:02.500Z"}),
        json!({"id": 3, "tags": ["end"]}),
    ]);
    c.run(&mut batch);
    assert_eq!(
        get(&batch[3], "elapsed_time"),
        v(json!(2.5)),
        "from the first start"
    );
    assert_eq!(tags(&batch[3]), ["end", "elapsed", "elapsed_match"]);
    match get(&batch[3], "elapsed_timestamp_start") {
        Some(Value::Timestamp(t)) => assert_eq!(t.to_iso8601(), "2026-01-01T00:00:00.000Z"),
        other => panic!("{other:?}"),
    }
    assert_eq!(tags(&batch[4]), ["end", "elapsed_end_without_start"]);
    // Id 2 never ends: expired after two periodic flushes (5 s each, timeout 10).
    assert!(c.periodic_flush().is_empty());
    std::thread::sleep(Duration::from_millis(4100));
    let expired = c.periodic_flush();
    assert_eq!(expired.len(), 1);
    assert_eq!(tags(&expired[0]), ["elapsed", "elapsed_expired_error"]);
    assert_eq!(get(&expired[0], "id"), v(json!(2)));
    assert_eq!(get(&expired[0], "elapsed_time"), v(json!(10.0)));

    let out = run_filters(
        r#"filter { elapsed { start_tag => "s" end_tag => "e" unique_id_field => "id" new_event_on_match => true keep_start_event => last add_tag => ["seen"] } }"#,
        &[
            json!({"id": "a", "tags": ["s"], "@timestamp": "2026-01-01T00:00:00Z"}),
            json!({"id": "a", "tags": ["s"], "@timestamp": "2026-01-01T00:00:01Z"}),
            json!({"id": "a", "tags": ["e"], "@timestamp": "2026-01-01T00:00:04Z"}),
        ],
    )
    .unwrap();
    assert_eq!(out.len(), 4);
    assert_eq!(
        get(&out[3], "elapsed_time"),
        v(json!(3.0)),
        "from the last start"
    );
    assert_eq!(tags(&out[3]), ["elapsed", "elapsed_match", "seen"]);
    assert_eq!(tags(&out[2]), ["e", "seen"]);
}

#[test]
fn throttle_counts_per_key_and_slot() {
    let cfg = r#"filter { throttle { key => "%{host}" before_count => 2 after_count => 3 period => 60 add_tag => ["throttled"] } }"#;
    let inputs: Vec<serde_json::Value> = (0..5)
        .map(|i| json!({"host": "a", "@timestamp": format!("2026-01-01T00:00:{i:02}Z")}))
        .chain([json!({"host": "b", "@timestamp": "2026-01-01T00:00:00Z"})])
        .chain([json!({"host": "a", "@timestamp": "2026-01-01T00:01:10Z"})])
        .collect();
    let out = run_filters(cfg, &inputs).unwrap();
    let throttled: Vec<bool> = out.iter().map(|e| tags(e) == ["throttled"]).collect();
    // a: 1st (< 2) and 4th, 5th (> 3) throttled; b's first too; a's next minute starts over.
    assert_eq!(throttled, [true, false, false, true, true, true, true]);
    assert!(err(r#"filter { throttle { } }"#).contains("key"));
}

/// `anonymize` (issue 45: Wikimedia's filters use it): an HMAC of each field's value with the
/// key (hex), every element of an array, IPV4_NETWORK masks; absent fields are left alone,
/// and `fields` and `key` are required.
#[test]
fn anonymize_replaces_values_with_keyed_hashes() {
    let e = one(
        r#"filter { anonymize { fields => ["m", "list", "absent"] algorithm => "MD5" key => "boringsalt" }
                    anonymize { fields => ["ip"] algorithm => "IPV4_NETWORK" key => "16" } }"#,
        json!({"m": "abc", "list": ["abc", "x"], "ip": "10.1.2.3"}),
    );
    // openssl dgst -md5 -hmac boringsalt <<< abc (without the newline)
    assert_eq!(get(&e, "m"), v(json!("0c8436dcdc6d6fe7772c223498ff21d7")));
    assert_eq!(
        get(&e, "[list][0]"),
        v(json!("0c8436dcdc6d6fe7772c223498ff21d7"))
    );
    assert_ne!(get(&e, "[list][1]"), v(json!("x")));
    assert_eq!(get(&e, "ip"), v(json!("10.1.0.0")));
    assert_eq!(get(&e, "absent"), None);
    for bad in [
        r#"filter { anonymize { key => "k" } }"#,
        r#"filter { anonymize { fields => ["a"] } }"#,
        r#"filter { anonymize { fields => ["a"] key => "k" algorithm => "SHA3" } }"#,
    ] {
        assert!(common::run_filters(bad, &[]).is_err(), "{bad}");
    }
}

/// `logfmt` (issue 45: Wikimedia's filters use it): the pairs under `target` (numbers as
/// numbers, bare keys true, dotted keys nested), the common options on a match; a line
/// without a `level` is left alone (no add_tag); `remove_source` nulls the source; `source`
/// is required.
#[test]
fn logfmt_parses_pairs_of_lines_with_a_level() {
    let e = one(
        r#"filter { logfmt { source => "message" target => "labels" add_tag => ["parsed"] } }"#,
        json!({"message": r#"t=2023 level=info msg="Request \"done\"" status=400 referer= req.path=/a"#}),
    );
    assert_eq!(
        get(&e, "labels"),
        v(
            json!({"t": 2023, "level": "info", "msg": "Request \"done\"", "status": 400,
                 "referer": true, "req": {"path": "/a"}})
        )
    );
    assert_eq!(tags(&e), ["parsed"]);
    let e = one(
        r#"filter { logfmt { source => "message" add_tag => ["parsed"] } }"#,
        json!({"message": "msg=no_level here"}),
    );
    assert_eq!(get(&e, "logfmt"), None);
    assert!(tags(&e).is_empty());
    let e = one(
        r#"filter { logfmt { source => "m" remove_source => true } }"#,
        json!({"m": "level=warn"}),
    );
    assert_eq!(get(&e, "[logfmt][level]"), v(json!("warn")));
    assert_eq!(get(&e, "m"), v(json!(null)));
    assert!(err(r#"filter { logfmt { } }"#).contains("source"));
}

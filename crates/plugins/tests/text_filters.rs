//! Behaviour of the date, json, kv and dissect filters (cases mostly from the Logstash
//! plugins' specs), and their option errors with locations.

mod common;

use common::{get, one, v};

use serde_json::json;
use sluice_event::{Event, Timestamp, Value};
use sluice_plugins::filters::date::mock_now;

fn ts(e: &Event, field: &str) -> Option<String> {
    match get(e, field) {
        Some(Value::Timestamp(t)) => Some(t.to_iso8601()),
        _ => None,
    }
}

fn err(config: &str) -> String {
    common::run_filters(config, &[]).unwrap_err()
}

fn millis(iso: &str) -> i64 {
    Timestamp::parse_iso8601(iso).unwrap().millis()
}

// ------------------------------------------------------------------------------------ date

#[test]
fn date_apache_syslog_and_fractions() {
    let e = one(
        r#"filter { date { match => ["t", "dd/MMM/yyyy:HH:mm:ss Z"] } }"#,
        json!({"t": "10/Oct/2000:13:55:36 -0700"}),
    );
    assert_eq!(ts(&e, "@timestamp").unwrap(), "2000-10-10T20:55:36.000Z");

    let e = one(
        r#"filter { date { match => ["t", "yyyy-MM-dd HH:mm:ss,SSS"] timezone => "Europe/Paris" target => "[when]" } }"#,
        json!({"t": "2014-07-01 12:00:00,123"}),
    );
    assert_eq!(ts(&e, "when").unwrap(), "2014-07-01T10:00:00.123Z");
    assert_ne!(ts(&e, "@timestamp").unwrap(), "2014-07-01T10:00:00.123Z");

    let e = one(
        r#"filter { date { match => ["t", "yyyy-MM-dd'T'HH:mm:ss.SSSZZ"] } }"#,
        json!({"t": "2014-07-01T12:00:00.5+02:00"}),
    );
    assert_eq!(ts(&e, "@timestamp").unwrap(), "2014-07-01T10:00:00.500Z");
}

#[test]
fn date_year_guessing_uses_the_clock() {
    let cfg = r#"filter { date { match => ["t", "MMM  d HH:mm:ss", "MMM dd HH:mm:ss"] timezone => "UTC" } }"#;
    let _clock = mock_now(millis("2020-06-15T00:00:00Z"));
    let e = one(cfg, json!({"t": "Feb  3 01:02:03"}));
    assert_eq!(ts(&e, "@timestamp").unwrap(), "2020-02-03T01:02:03.000Z");
    let e = one(cfg, json!({"t": "Feb 13 01:02:03"}));
    assert_eq!(ts(&e, "@timestamp").unwrap(), "2020-02-13T01:02:03.000Z");
    drop(_clock);
    let _clock = mock_now(millis("2021-01-02T00:00:00Z"));
    let e = one(cfg, json!({"t": "Dec 31 23:00:00"}));
    assert_eq!(ts(&e, "@timestamp").unwrap(), "2020-12-31T23:00:00.000Z");
}

#[test]
fn date_locales_numbers_and_failures() {
    let e = one(
        r#"filter { date { match => ["t", "EEEE d MMMM yyyy HH:mm"] locale => "es" timezone => "UTC" } }"#,
        json!({"t": "miércoles 3 marzo 2021 10:00"}),
    );
    // Joda moves the date to the parsed weekday within its week: 2021-03-03 is a Wednesday.
    assert_eq!(ts(&e, "@timestamp").unwrap(), "2021-03-03T10:00:00.000Z");
    let e = one(
        r#"filter { date { match => ["t", "dd. MMM yyyy"] locale => "de-DE" timezone => "UTC" } }"#,
        json!({"t": "05. Mär 2021"}),
    );
    assert_eq!(ts(&e, "@timestamp").unwrap(), "2021-03-05T00:00:00.000Z");

    let e = one(
        r#"filter { date { match => ["t", "UNIX_MS", "UNIX"] } }"#,
        json!({"t": 1_500_000_000_123i64}),
    );
    assert_eq!(ts(&e, "@timestamp").unwrap(), "2017-07-14T02:40:00.123Z");

    // Failure: tag, no add_tag; an array value fails as in the Java filter.
    for input in [json!({"t": "not a date"}), json!({"t": ["2020-01-01"]})] {
        let e = one(
            r#"filter { date { match => ["t", "ISO8601"] add_tag => ["ok"] } }"#,
            input,
        );
        assert!(e.has_tag("_dateparsefailure"));
        assert!(!e.has_tag("ok"));
    }
    // A missing field is left alone.
    let e = one(
        r#"filter { date { match => ["t", "ISO8601"] } }"#,
        json!({}),
    );
    assert!(!e.has_tag("_dateparsefailure"));
    // An unknown dynamic zone fails the event.
    let e = one(
        r#"filter { date { match => ["t", "yyyy-MM-dd"] timezone => "%{tz}" } }"#,
        json!({"t": "2020-01-01", "tz": "Nowhere/Atall"}),
    );
    assert!(e.has_tag("_dateparsefailure"));
}

#[test]
fn date_option_errors() {
    let e = err("filter {\n  date {\n    match => [\"t\"]\n  }\n}");
    assert!(
        e.starts_with("test config:3:5: invalid setting \"match\""),
        "{e}"
    );
    let e = err("filter { date { match => [\"t\", \"yyyy-MM-ddTHH\"] } }");
    assert!(e.contains("illegal pattern component \"T\""), "{e}");
    let e = err(
        "filter {\n date {\n  match => [\"t\", \"ISO8601\"]\n  timezone => \"Mars/Base\"\n }\n}",
    );
    assert!(
        e.starts_with("test config:4:3: invalid setting \"timezone\""),
        "{e}"
    );
}

// ------------------------------------------------------------------------------------ json

#[test]
fn json_merges_objects_and_sets_targets() {
    let e = one(
        r#"filter { json { source => "message" } }"#,
        json!({"message": r#"{ "hello": "world", "list": [ 1, 2, 3 ], "hash": { "k": "v" }, "[a][b]": 1 }"#}),
    );
    assert_eq!(get(&e, "hello"), v(json!("world")));
    assert_eq!(get(&e, "list"), v(json!([1, 2, 3])));
    assert_eq!(get(&e, "hash"), v(json!({"k": "v"})));
    assert_eq!(get(&e, "[a][b]"), v(json!(1)));

    let e = one(
        r#"filter { json { source => "message" target => "data" } }"#,
        json!({"message": r#"[ { "k": "v" }, { "l": [1, 2, 3] } ]"#}),
    );
    assert_eq!(get(&e, "[data][0][k]"), v(json!("v")));

    let e = one(
        r#"filter { json { source => "example" target => "example" } }"#,
        json!({"example": r#"{ "hello": "world" }"#}),
    );
    assert_eq!(get(&e, "example"), v(json!({"hello": "world"})));
}

#[test]
fn json_timestamps_and_failures() {
    let e = one(
        r#"filter { json { source => "message" } }"#,
        json!({"message": r#"{"@timestamp": "2015-12-02T17:40:00.666Z"}"#}),
    );
    assert_eq!(ts(&e, "@timestamp").unwrap(), "2015-12-02T17:40:00.666Z");

    let e = one(
        r#"filter { json { source => "message" } }"#,
        json!({"message": r#"{"@timestamp": "foobar"}"#}),
    );
    assert!(e.has_tag("_timestampparsefailure"));
    assert_eq!(get(&e, "_@timestamp"), v(json!("foobar")));
    assert!(ts(&e, "@timestamp").is_some());

    // An array without target, invalid JSON, and a key that is not a field name all fail.
    for m in [
        r#"[1, 2]"#,
        "invalid json",
        r#"{"okay":true, "un[sup]]ported": "foo"}"#,
    ] {
        let e = one(
            r#"filter { json { source => "message" tag_on_failure => ["_jsonparsefailure", "_custom"] add_tag => ["ok"] } }"#,
            json!({"message": m}),
        );
        assert!(
            e.has_tag("_jsonparsefailure") && e.has_tag("_custom"),
            "{m}"
        );
        assert!(!e.has_tag("ok"));
        assert_eq!(get(&e, "okay"), None);
    }

    let e = one(
        r#"filter { json { source => "message" skip_on_invalid_json => true remove_field => ["message"] } }"#,
        json!({"message": "not json"}),
    );
    assert_eq!(get(&e, "message"), v(json!("not json")));
    assert_eq!(get(&e, "tags"), None);
}

#[test]
fn json_option_errors() {
    let e = err("filter {\n  json { target => \"x\" }\n}");
    assert!(
        e.starts_with("test config:2:3:") && e.contains("\"source\""),
        "{e}"
    );
    let e = err("filter { json { source => \"m\" skip_on_invalid_json => \"maybe\" } }");
    assert!(e.contains("skip_on_invalid_json"), "{e}");
}

// -------------------------------------------------------------------------------------- kv

#[test]
fn kv_defaults_quotes_and_brackets() {
    let e = one(
        r#"filter { kv { } }"#,
        json!({"message": "hello=world foo=bar baz=fizz doublequoted=\"hello world\" singlequoted='hello world' bracketsone=(hello world) bracketstwo=[hello world] bracketsthree=<hello world>"}),
    );
    for (k, want) in [
        ("hello", "world"),
        ("foo", "bar"),
        ("baz", "fizz"),
        ("doublequoted", "hello world"),
        ("singlequoted", "hello world"),
        ("bracketsone", "hello world"),
        ("bracketstwo", "hello world"),
        ("bracketsthree", "hello world"),
    ] {
        assert_eq!(get(&e, k), v(json!(want)), "{k}");
    }

    let e = one(
        r#"filter { kv { include_brackets => false } }"#,
        json!({"message": "bracketsone=(hello world) other=x"}),
    );
    assert_eq!(get(&e, "bracketsone"), v(json!("(hello")));
    assert_eq!(get(&e, "other"), v(json!("x")));
}

#[test]
fn kv_whitespace_transforms_and_trims() {
    let e = one(
        r#"filter { kv { transform_key => "uppercase" transform_value => "lowercase" } }"#,
        json!({"message": "hello = world Foo =Bar BAZ= FIZZ doublequoteD = \"hellO worlD\""}),
    );
    assert_eq!(get(&e, "HELLO"), v(json!("world")));
    assert_eq!(get(&e, "FOO"), v(json!("bar")));
    assert_eq!(get(&e, "BAZ"), v(json!("fizz")));
    assert_eq!(get(&e, "DOUBLEQUOTED"), v(json!("hello world")));

    let e = one(
        r#"filter { kv { whitespace => strict } }"#,
        json!({"message": "IN=eth0 OUT= MAC=0f:5f SRC=192.168.0.1 hello = world"}),
    );
    assert_eq!(get(&e, "IN"), v(json!("eth0")));
    assert_eq!(get(&e, "OUT"), None);
    assert_eq!(get(&e, "MAC"), v(json!("0f:5f")));
    assert_eq!(get(&e, "SRC"), v(json!("192.168.0.1")));
    assert_eq!(get(&e, "hello"), None);

    let e = one(
        r#"filter { kv { field_split => "&?" trim_key => "<>" trim_value => "," remove_char_key => "-" prefix => "p_" } }"#,
        json!({"message": "?<a-b>=1,,&c=2"}),
    );
    assert_eq!(get(&e, "p_ab"), v(json!("1")));
    assert_eq!(get(&e, "p_c"), v(json!("2")));
}

#[test]
fn kv_keys_duplicates_targets_and_recursion() {
    let e = one(
        r#"filter { kv { include_keys => ["a", "b"] exclude_keys => ["b"] default_keys => { "a" => "none" "z" => "zz" } } }"#,
        json!({"message": "a=1 b=2 c=3"}),
    );
    assert_eq!(get(&e, "a"), v(json!("1")));
    assert_eq!(get(&e, "b"), None);
    assert_eq!(get(&e, "c"), None);
    assert_eq!(get(&e, "z"), v(json!("zz")));

    let e = one(
        r#"filter { kv { target => "kv" } }"#,
        json!({"message": "a=1 a=2 a=1"}),
    );
    assert_eq!(get(&e, "[kv][a]"), v(json!(["1", "2", "1"])));
    let e = one(
        r#"filter { kv { allow_duplicate_values => false } }"#,
        json!({"message": "a=1 a=2 a=1"}),
    );
    assert_eq!(get(&e, "a"), v(json!(["1", "2"])));

    let e = one(
        r#"filter { kv { recursive => true } }"#,
        json!({"message": "a=1 b=\"x=2 y=3\""}),
    );
    assert_eq!(get(&e, "b"), v(json!({"x": "2", "y": "3"})));

    let e = one(
        r#"filter { kv { field_split_pattern => ", *" value_split_pattern => ":+" source => "[in]" } }"#,
        json!({"in": "a::1,  b:2, c:::3"}),
    );
    assert_eq!(get(&e, "a"), v(json!("1")));
    assert_eq!(get(&e, "b"), v(json!("2")));
    assert_eq!(get(&e, "c"), v(json!("3")));

    // The split patterns are Ruby regexes: `\h` is a hex digit, a `{` that starts no
    // interval is a literal, `\A` anchors at the start.
    let e = one(
        r#"filter { kv { field_split_pattern => ";{|\s" value_split_pattern => "=\h?>" } }"#,
        json!({"message": "a=>1;{b=f>2 c=>3"}),
    );
    assert_eq!(get(&e, "a"), v(json!("1")));
    assert_eq!(get(&e, "b"), v(json!("2")));
    assert_eq!(get(&e, "c"), v(json!("3")));

    // Nothing found: no match, so no add_tag.
    let e = one(
        r#"filter { kv { add_tag => ["kv"] } }"#,
        json!({"message": "no pairs here"}),
    );
    assert!(!e.has_tag("kv"));
}

#[test]
fn kv_split_patterns_from_the_logstash_specs() {
    let e = one(
        r#"filter { kv { field_split_pattern => "!!!!!" } }"#,
        json!({"message": r#"foo=bar!!!!!baz="quoted stuff" and more unquoted!!!!!msg="fully-quoted with a part! of the separator"!!!!!blip="this!!!!!is it"!!!!!empty=""!!!!!non-empty="foo""#}),
    );
    assert_eq!(get(&e, "foo"), v(json!("bar")));
    assert_eq!(
        get(&e, "baz"),
        v(json!(r#""quoted stuff" and more unquoted"#))
    );
    assert_eq!(
        get(&e, "msg"),
        v(json!("fully-quoted with a part! of the separator"))
    );
    assert_eq!(get(&e, "blip"), v(json!("this!!!!!is it")));
    assert_eq!(get(&e, "empty"), None);
    assert_eq!(get(&e, "non-empty"), v(json!("foo")));

    let e = one(
        r#"filter { kv { } }"#,
        json!({"message": r#"foo=bar baz="quoted stuff" and more unquoted msg="some fully-quoted message " empty="" non-empty="foo""#}),
    );
    assert_eq!(get(&e, "baz"), v(json!("quoted stuff")));
    assert_eq!(get(&e, "msg"), v(json!("some fully-quoted message ")));
    assert_eq!(get(&e, "non-empty"), v(json!("foo")));

    let e = one(
        r#"filter { kv { field_split_pattern => ";\s*(?=key.+?:)|;$" value_split_pattern => ":\s+" } }"#,
        json!({"message": r#"key1: val1; key2: val2; key3:  https://site/?g={......"...;  CLR  rv:11.0)"..}; key4: val4;"#}),
    );
    assert_eq!(get(&e, "key1"), v(json!("val1")));
    assert_eq!(
        get(&e, "key3"),
        v(json!(r#"https://site/?g={......"...;  CLR  rv:11.0)"..}"#))
    );
    assert_eq!(get(&e, "key4"), v(json!("val4")));

    let e = one(
        r#"filter { kv { field_split => "\r\n" value_split => " " trim_key => ":" } }"#,
        json!({"message": "AccountStatus: 4\r\nAdditionalInformation\r\n\r\nCode: \r\nIsSuccess: True\r\nMessage: \r\n"}),
    );
    assert_eq!(get(&e, "AccountStatus"), v(json!("4")));
    assert_eq!(get(&e, "IsSuccess"), v(json!("True")));
    assert_eq!(get(&e, "Code"), None);
    assert_eq!(get(&e, "AdditionalInformation"), None);

    let e = one(
        r#"filter { kv { field_split => " " allow_empty_values => true whitespace => strict } }"#,
        json!({"message": "present=one empty= emptyquoted='' present=two emptybracketed=[] endofinput="}),
    );
    assert_eq!(get(&e, "present"), v(json!(["one", "two"])));
    assert_eq!(get(&e, "empty"), v(json!("")));
    assert_eq!(get(&e, "emptyquoted"), v(json!("")));
    assert_eq!(get(&e, "emptybracketed"), v(json!("")));
    assert_eq!(get(&e, "endofinput"), v(json!("")));
}

#[test]
fn kv_timeouts() {
    // Logstash's spec input that makes Ruby's regex engine backtrack for ever: here the
    // lookaround-free part runs on a linear-time engine, so it simply finishes.
    let started = std::time::Instant::now();
    let e = one(
        r#"filter { kv { value_split_pattern => "(?:=+=+)+:" timeout_millis => 250 } }"#,
        json!({"message": "foo========:bar baz================================================bingo"}),
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    assert_eq!(get(&e, "foo"), v(json!("bar")));
    // A scan that runs past timeout_millis stops and tags the event, setting nothing.
    let long: Vec<String> = (0..20_000).map(|i| format!("k{i}=v{i}")).collect();
    let e = one(
        r#"filter { kv { timeout_millis => 0.001 tag_on_timeout => "BADKV" add_tag => ["ok"] } }"#,
        json!({ "message": long.join(" ") }),
    );
    assert!(e.has_tag("BADKV") && !e.has_tag("ok"));
    assert_eq!(get(&e, "k0"), None);
}

#[test]
fn kv_option_errors() {
    let e = err("filter {\n  kv {\n    value_split => \"\"\n  }\n}");
    assert!(
        e.starts_with("test config:3:5: invalid setting \"value_split\""),
        "{e}"
    );
    let e = err("filter { kv { transform_key => \"sideways\" } }");
    assert!(e.contains("transform_key"), "{e}");
    let e = err("filter { kv { field_split_pattern => \"(\" } }");
    assert!(e.contains("field_split_pattern"), "{e}");
}

// --------------------------------------------------------------------------------- dissect

#[test]
fn dissect_fields_skips_appends_and_indirects() {
    let e = one(
        r#"filter { dissect { mapping => { "message" => "%{ts} %{+ts} %{+ts} %{src} %{} %{prog}[%{pid}]: %{msg}" } } }"#,
        json!({"message": "Mar 16 00:01:25 evita skipped postfix/smtpd[1713]: connect from camomile.cloud9.net"}),
    );
    assert_eq!(get(&e, "ts"), v(json!("Mar 16 00:01:25")));
    assert_eq!(get(&e, "src"), v(json!("evita")));
    assert_eq!(get(&e, "prog"), v(json!("postfix/smtpd")));
    assert_eq!(get(&e, "pid"), v(json!("1713")));
    assert_eq!(get(&e, "msg"), v(json!("connect from camomile.cloud9.net")));

    let e = one(
        r#"filter { dissect { mapping => { "message" => "%{+a/2} %{+a/1} %{+a/4} %{+a/3}" } } }"#,
        json!({"message": "1 2 3 go"}),
    );
    assert_eq!(get(&e, "a"), v(json!("2 1 go 3")));

    let e = one(
        r#"filter { dissect { mapping => { "message" => "%{?a}: %{&a}" } } }"#,
        json!({"message": "google: 77.98"}),
    );
    assert_eq!(get(&e, "google"), v(json!("77.98")));
    assert_eq!(get(&e, "a"), None);

    let e = one(
        r#"filter { dissect { mapping => { "message" => "%{id} %{function->} %{server}" } } }"#,
        json!({"message": "f3000a3b Calc            machine-123"}),
    );
    assert_eq!(get(&e, "function"), v(json!("Calc")));
    assert_eq!(get(&e, "server"), v(json!("machine-123")));

    let e = one(
        r#"filter { dissect { mapping => { "[in]" => "%{[out][a]},%{[out][b]}" } } }"#,
        json!({"in": "x,y"}),
    );
    assert_eq!(get(&e, "out"), v(json!({"a": "x", "b": "y"})));
}

#[test]
fn dissect_failures_and_conversions() {
    let e = one(
        r#"filter { dissect { mapping => { "message" => "%{a} %{b} %{c}" } add_tag => ["ok"] } }"#,
        json!({"message": "only two"}),
    );
    assert!(e.has_tag("_dissectfailure"));
    assert!(!e.has_tag("ok"));
    assert_eq!(get(&e, "a"), None);

    let e = one(
        r#"filter { dissect { mapping => { "message" => "%{a}" } } }"#,
        json!({"message": ""}),
    );
    assert!(e.has_tag("_dissectfailure"));
    // A missing source field is skipped without a tag.
    let e = one(
        r#"filter { dissect { mapping => { "message" => "%{a}" } } }"#,
        json!({}),
    );
    assert_eq!(get(&e, "tags"), None);

    let e = one(
        r#"filter { dissect {
            mapping => { "message" => "%{n} %{f} %{bad}" }
            convert_datatype => { "n" => "int" "f" => "float" "bad" => "int" "none" => "float" }
        } }"#,
        json!({"message": "42 2.5 x1"}),
    );
    assert_eq!(get(&e, "n"), v(json!(42)));
    assert_eq!(get(&e, "f"), v(json!(2.5)));
    assert_eq!(get(&e, "bad"), v(json!("x1")));
    assert!(e.has_tag("_dataconversionuncoercible_bad_int"));
    assert!(e.has_tag("_dataconversionnullvalue_none_float"));
}

#[test]
fn dissect_option_errors() {
    let e = err("filter {\n  dissect {\n    mapping => { \"m\" => \"%{+&x}\" }\n  }\n}");
    assert!(
        e.starts_with("test config:3:5: invalid setting \"mapping\""),
        "{e}"
    );
    assert!(e.contains("Append and Indirect"), "{e}");
    let e = err("filter { dissect { convert_datatype => { \"a\" => \"bool\" } } }");
    assert!(e.contains("datatype not supported"), "{e}");
    let e = err("filter { dissect { mapping => { \"m\" => \"no fields\" } } }");
    assert!(e.contains("no %{field}"), "{e}");
}

// ------------------------------------------------------------------------------ robustness

/// Random text (multi-byte characters, quotes, brackets, digits, separators) through every
/// filter: failures are tags, never panics.
#[test]
fn random_input_never_panics() {
    const ALPHABET: &[&str] = &[
        "a", "Z", "0", "1", "9", " ", "  ", "=", ":", ",", ".", "-", "+", "/", "\\", "\"", "'",
        "(", ")", "[", "]", "<", ">", "{", "}", "%{", "é", "ü", "日", "\n", "T", "Jan", "Mär",
        "2020", "-0700", "Z", "&", "|",
    ];
    let configs = [
        r#"filter { date { match => ["m", "dd/MMM/yyyy:HH:mm:ss Z", "ISO8601", "UNIX", "UNIX_MS", "TAI64N", "MMM  d HH:mm:ss", "yy-M-d h:m:s.SSS a ZZZ", "EEEE, dd MMMM yyyy z"] locale => "de" } }"#,
        r#"filter { json { source => "m" } }"#,
        r#"filter { json { source => "m" target => "t" } }"#,
        r#"filter { kv { source => "m" recursive => true } }"#,
        r#"filter { kv { source => "m" field_split_pattern => ",+" value_split_pattern => "[:=]" trim_key => "<>" } }"#,
        r#"filter { dissect { mapping => { "m" => "%{a} %{+a/2}: %{?b}[%{&b}] %{c->} %{}" } convert_datatype => { "a" => "int" } } }"#,
        r#"filter { dissect { mapping => { "m" => "<%{a}>%{b},%{c}." } } }"#,
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let inputs: Vec<serde_json::Value> = (0..3000)
        .map(|_| {
            let len = (next() % 24) as usize;
            let text: String = (0..len)
                .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                .collect();
            json!({ "m": text })
        })
        .collect();
    for cfg in configs {
        let out = common::run_filters(cfg, &inputs).unwrap();
        assert_eq!(out.len(), inputs.len(), "{cfg}");
    }
}

// ------------------------------------------------------------------------------ throughput

/// Events per second of each filter alone on typical input (run with
/// `cargo test --release -p sluice-plugins --test text_filters -- --ignored --nocapture`).
#[test]
#[ignore]
fn throughput_of_text_filters() {
    let cases = [
        (
            "no filter (baseline)",
            r#"filter { }"#,
            json!({"t": "10/Oct/2000:13:55:36 -0700"}),
        ),
        (
            "date",
            r#"filter { date { match => ["t", "dd/MMM/yyyy:HH:mm:ss Z"] } }"#,
            json!({"t": "10/Oct/2000:13:55:36 -0700"}),
        ),
        (
            "date (zone, year-less)",
            r#"filter { date { match => ["t", "MMM dd HH:mm:ss"] timezone => "Europe/Paris" } }"#,
            json!({"t": "Oct 10 13:55:36"}),
        ),
        (
            "json",
            r#"filter { json { source => "message" } }"#,
            json!({"message": r#"{"a": 1, "b": "two", "c": [1, 2, 3], "d": {"e": true}}"#}),
        ),
        (
            "kv",
            r#"filter { kv { } }"#,
            json!({"message": "IN=eth0 OUT= MAC=0f:5f:5e SRC=192.168.0.1 DST=10.0.0.1 LEN=60 PROTO=TCP SPT=5353 DPT=80"}),
        ),
        (
            "dissect",
            r#"filter { dissect { mapping => { "message" => "%{ts} %{+ts} %{+ts} %{src} %{prog}[%{pid}]: %{msg}" } } }"#,
            json!({"message": "Mar 16 00:01:25 evita postfix/smtpd[1713]: connect from camomile.cloud9.net"}),
        ),
    ];
    for (name, cfg, input) in cases {
        let n = 100_000;
        let inputs = vec![input; n];
        let started = std::time::Instant::now();
        let out = common::run_filters(cfg, &inputs).unwrap();
        let secs = started.elapsed().as_secs_f64();
        assert_eq!(out.len(), n);
        assert!(out.iter().all(|e| get(e, "tags").is_none()), "{name}");
        eprintln!(
            "{name}: {:.0} events/s (including event creation)",
            n as f64 / secs
        );
    }
}

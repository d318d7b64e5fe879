//! The grok filter's options and capture semantics, run through configs as a pipeline would.

mod common;

use common::{get, one, v};

use serde_json::json;
use sluice_event::Event;

fn config_error(config: &str) -> String {
    match common::run_filters(config, &[]) {
        Ok(_) => panic!("expected a config error for {config}"),
        Err(e) => e,
    }
}

#[test]
fn unknown_pattern_is_a_config_error_naming_it_with_its_location() {
    let e = config_error(
        "filter {\n  grok {\n    match => { \"message\" => \"%{WORD:w} %{NOSUCHPATTERN:x}\" }\n  }\n}",
    );
    assert!(e.contains("test config:3:5"), "{e}");
    assert!(e.contains("%{NOSUCHPATTERN:x} not defined"), "{e}");
}

#[test]
fn bad_regex_and_cycles_are_config_errors() {
    let e = config_error("filter { grok {\n match => { \"message\" => \"(?<x>unclosed\" } } }");
    assert!(e.contains("test config:2:2"), "{e}");
    assert!(e.contains("invalid regular expression"), "{e}");
    let e = config_error(
        r#"filter { grok {
            pattern_definitions => { "A" => "x%{B}" "B" => "y%{A}" }
            match => { "message" => "%{A:a}" }
        } }"#,
    );
    assert!(e.contains("refers to itself: %{A} -> %{B} -> %{A}"), "{e}");
    let e = config_error(r#"filter { grok { match => { "message" => "x" } bogus => 1 } }"#);
    assert!(e.contains("unknown setting \"bogus\""), "{e}");
    let e = config_error(r#"filter { grok { timeout_scope => "forever" } }"#);
    assert!(e.contains("timeout_scope"), "{e}");
}

#[test]
fn conversions_and_inline_definitions() {
    let e = one(
        r#"filter { grok { match => { "message" =>
            "%{NUMBER:i:int} %{NUMBER:f:float} %{NUMBER:s} %{ID:id=[a-z]+\d} (?<[nested][hex]>\h+) %{ID:again}"
        } } }"#,
        json!({"message": "42 2.5 7 abc9 00ff zz1"}),
    );
    assert_eq!(get(&e, "i"), v(json!(42)));
    assert_eq!(get(&e, "f"), v(json!(2.5)));
    assert_eq!(get(&e, "s"), v(json!("7")));
    assert_eq!(get(&e, "id"), v(json!("abc9")));
    assert_eq!(get(&e, "[nested][hex]"), v(json!("00ff")));
    assert_eq!(get(&e, "again"), v(json!("zz1")));
    assert!(!e.has_tag("_grokparsefailure"));
}

#[test]
fn existing_fields_become_arrays_unless_overwritten() {
    let config =
        r#"filter { grok { match => { "message" => "%{WORD:verb} %{GREEDYDATA:message}" } } }"#;
    let e = one(config, json!({"message": "GET /index", "verb": ["POST"]}));
    assert_eq!(get(&e, "message"), v(json!(["GET /index", "/index"])));
    assert_eq!(get(&e, "verb"), v(json!(["POST", "GET"])));

    let e = one(
        r#"filter { grok { match => { "message" => "%{WORD:verb} %{GREEDYDATA:message}" }
                           overwrite => [ "message" ] } }"#,
        json!({"message": "GET /index"}),
    );
    assert_eq!(get(&e, "message"), v(json!("/index")));

    // A value that is neither absent, a string nor an array is left alone.
    let e = one(
        r#"filter { grok { match => { "message" => "%{INT:n}" } } }"#,
        json!({"message": "7", "n": 5}),
    );
    assert_eq!(get(&e, "n"), v(json!(5)));
}

#[test]
fn same_field_captured_twice_gives_an_array() {
    let e = one(
        r#"filter { grok { match => { "message" => "%{WORD:w} %{WORD:w} %{INT:w}" } } }"#,
        json!({"message": "a b 3"}),
    );
    assert_eq!(get(&e, "w"), v(json!(["a", "b", "3"])));
}

#[test]
fn target_puts_captures_under_a_field() {
    let e = one(
        r#"filter { grok { match => { "message" => "%{WORD:[a][b]} %{INT:n:int}" } target => "parsed" } }"#,
        json!({"message": "x 1"}),
    );
    assert_eq!(get(&e, "[parsed][a][b]"), v(json!("x")));
    assert_eq!(get(&e, "[parsed][n]"), v(json!(1)));
    assert_eq!(get(&e, "n"), None);
    let e = one(
        r#"filter { grok { match => { "message" => "%{WORD:w}" } target => "[@metadata][g]" } }"#,
        json!({"message": "x"}),
    );
    assert_eq!(get(&e, "[@metadata][g][w]"), v(json!("x")));
}

#[test]
fn break_on_match_with_several_patterns_and_fields() {
    let several = |brk: bool| {
        one(
            &format!(
                r#"filter {{ grok {{ match => {{ "message" => [ "%{{INT:a}}", "%{{WORD:b}}" ] }}
                                     break_on_match => {brk} }} }}"#
            ),
            json!({"message": "12"}),
        )
    };
    let e = several(true);
    assert_eq!((get(&e, "a"), get(&e, "b")), (v(json!("12")), None));
    let e = several(false);
    assert_eq!(
        (get(&e, "a"), get(&e, "b")),
        (v(json!("12")), v(json!("12")))
    );

    let fields = |brk: bool| {
        one(
            &format!(
                r#"filter {{ grok {{ match => {{ "f1" => "%{{INT:a}}" "f2" => "%{{WORD:b}}" }}
                                     break_on_match => {brk} }} }}"#
            ),
            json!({"f1": "1", "f2": "two"}),
        )
    };
    let e = fields(true);
    assert_eq!((get(&e, "a"), get(&e, "b")), (v(json!("1")), None));
    let e = fields(false);
    assert_eq!(
        (get(&e, "a"), get(&e, "b")),
        (v(json!("1")), v(json!("two")))
    );

    // The first pattern that fails does not stop the next one.
    let e = one(
        r#"filter { grok { match => { "f1" => "^x$" "f2" => "%{WORD:b}" } } }"#,
        json!({"f1": "1", "f2": "two"}),
    );
    assert_eq!(get(&e, "b"), v(json!("two")));
    assert!(!e.has_tag("_grokparsefailure"));
}

#[test]
fn failure_tags_and_common_options() {
    let config = r#"filter { grok { match => { "message" => "^%{INT:n}$" }
                      tag_on_failure => [ "bad", "worse" ] add_tag => [ "ok" ] } }"#;
    let e = one(config, json!({"message": "x"}));
    assert!(e.has_tag("bad") && e.has_tag("worse") && !e.has_tag("ok"));
    let e = one(config, json!({"message": "3"}));
    assert!(e.has_tag("ok") && !e.has_tag("bad"));
}

#[test]
fn empty_captures_and_unnamed_patterns() {
    let config = |keep: bool| {
        format!(
            r#"filter {{ grok {{ match => {{ "message" => "a%{{DATA:empty}}b(?:%{{INT:missing}})?" }}
                                 keep_empty_captures => {keep} }} }}"#
        )
    };
    let e = one(&config(false), json!({"message": "ab"}));
    assert_eq!((get(&e, "empty"), get(&e, "missing")), (None, None));
    let e = one(&config(true), json!({"message": "ab"}));
    assert_eq!(get(&e, "empty"), v(json!("")));
    assert_eq!(get(&e, "missing"), v(json!(null)));

    let e = one(
        r#"filter { grok { match => { "message" => "%{INT} %{WORD:w}" } named_captures_only => false } }"#,
        json!({"message": "1 x"}),
    );
    assert_eq!(get(&e, "INT"), v(json!("1")));
    assert_eq!(get(&e, "w"), v(json!("x")));
}

#[test]
fn inputs_that_are_arrays_numbers_or_missing() {
    let e = one(
        r#"filter { grok { match => { "message" => "%{WORD:k}=%{INT:v:int}" } } }"#,
        json!({"message": ["a=1", "nope", "b=2"]}),
    );
    assert_eq!(get(&e, "k"), v(json!(["a", "b"])));
    assert_eq!(
        get(&e, "v"),
        v(json!(1)),
        "an int then blocks the second value"
    );
    assert!(!e.has_tag("_grokparsefailure"));

    let e = one(
        r#"filter { grok { match => { "n" => "^%{INT:digits}$" } } }"#,
        json!({"n": 1234}),
    );
    assert_eq!(get(&e, "digits"), v(json!("1234")));

    // A missing field is matched as "", as Logstash does.
    let e = one(
        r#"filter { grok { match => { "missing" => "^$" } } }"#,
        json!({"message": "x"}),
    );
    assert!(!e.has_tag("_grokparsefailure"));
}

#[test]
fn pattern_sets_follow_ecs_compatibility() {
    let line = r#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /a HTTP/1.1" 200 203 "-" "curl""#;
    let e = one(
        r#"filter { grok { match => { "message" => "%{COMBINEDAPACHELOG}" } } }"#,
        json!({ "message": line }),
    );
    assert_eq!(get(&e, "[source][address]"), v(json!("1.2.3.4")));
    assert_eq!(get(&e, "[http][response][status_code]"), v(json!(200)));
    assert_eq!(get(&e, "[user_agent][original]"), v(json!("curl")));
    let e = one(
        r#"filter { grok { match => { "message" => "%{COMBINEDAPACHELOG}" } ecs_compatibility => disabled } }"#,
        json!({ "message": line }),
    );
    assert_eq!(get(&e, "clientip"), v(json!("1.2.3.4")));
    assert_eq!(get(&e, "response"), v(json!("200")));
    assert_eq!(get(&e, "agent"), v(json!("\"curl\"")));
}

#[test]
fn oniguruma_semantics() {
    // `.` matches newlines; `^`/`$` match at line boundaries.
    let e = one(
        r#"filter { grok { match => { "message" => "^first%{GREEDYDATA:rest}" "other" => "^(?<line>b)$" }
                           break_on_match => false } }"#,
        json!({"message": "first\nsecond", "other": "a\nb\nc"}),
    );
    assert_eq!(get(&e, "rest"), v(json!("\nsecond")));
    assert_eq!(get(&e, "line"), v(json!("b")));
    // POSIX classes are Unicode-aware, `\h` is a hex digit.
    let e = one(
        r#"filter { grok { match => { "message" => "^%{UNIXPATH:p} %{RUUID:id}$" } } }"#,
        json!({"message": "/home/josé 0123456789abcdef0123456789ABCDEF"}),
    );
    assert_eq!(get(&e, "p"), v(json!("/home/josé")));
    assert_eq!(get(&e, "id"), v(json!("0123456789abcdef0123456789ABCDEF")));
    let e = one(
        r#"filter { grok { match => { "message" => "^\h+$" } } }"#,
        json!({"message": " \t "}),
    );
    assert!(e.has_tag("_grokparsefailure"));
}

#[test]
fn runaway_backtracking_is_a_timeout() {
    let e = one(
        r#"filter { grok { match => { "message" => "^(\w+\s?)*$" } add_tag => [ "ok" ] } }"#,
        json!({"message": format!("{}!", "a".repeat(4000))}),
    );
    assert!(e.has_tag("_groktimeout"), "{e:?}");
    assert!(!e.has_tag("_grokparsefailure") && !e.has_tag("ok"));
}

/// `timeout_millis` with `timeout_scope => event`: the elapsed time of all of an event's
/// patterns is checked against it (on the coarse clock), each pattern well inside PCRE2's own
/// limits. Forty scans of 2 MB without a match take far more than a millisecond.
#[test]
fn elapsed_time_past_timeout_millis_is_a_timeout() {
    let patterns = vec!["\"(?:a|b)c\""; 40].join(", ");
    let e = one(
        &format!(
            r#"filter {{ grok {{ match => {{ "message" => [ {patterns} ] }} timeout_millis => 1 timeout_scope => "event" }} }}"#
        ),
        json!({"message": "a".repeat(2_000_000)}),
    );
    assert!(e.has_tag("_groktimeout"), "{:?}", e.get_field("tags"));
    assert!(!e.has_tag("_grokparsefailure"));
    // Without a timeout the same event is an ordinary failure.
    let e = one(
        &format!(
            r#"filter {{ grok {{ match => {{ "message" => [ {patterns} ] }} timeout_millis => 0 }} }}"#
        ),
        json!({"message": "a".repeat(2_000_000)}),
    );
    assert!(e.has_tag("_grokparsefailure") && !e.has_tag("_groktimeout"));
}

#[test]
fn patterns_dir_glob_and_definitions() {
    let dir = std::env::temp_dir().join(format!("sluice-grok-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mine.grok"), "# mine\nTHREE \\d{3}\nWORD [xyz]+\n").unwrap();
    std::fs::write(dir.join("other.txt"), "OTHER \\d+\n").unwrap();
    let d = dir.display();
    let e = one(
        &format!(
            r#"filter {{ grok {{ patterns_dir => [ "{d}" ] patterns_files_glob => "*.grok"
                                 pattern_definitions => {{ "TWO" => "%{{THREE}}-%{{THREE}}" }}
                                 match => {{ "message" => "%{{TWO:t}} %{{WORD:w}}" }} }} }}"#
        ),
        json!({"message": "123-456 xyz"}),
    );
    assert_eq!(get(&e, "t"), v(json!("123-456")));
    // WORD from the file overrides the built-in one.
    assert_eq!(get(&e, "w"), v(json!("xyz")));
    let err = config_error(&format!(
        r#"filter {{ grok {{ patterns_dir => [ "{d}" ] patterns_files_glob => "*.grok"
                             match => {{ "message" => "%{{OTHER}}" }} }} }}"#
    ));
    assert!(err.contains("%{OTHER} not defined"), "{err}");
    // Without the glob, every file is read.
    let e = one(
        &format!(
            r#"filter {{ grok {{ patterns_dir => [ "{d}" ] match => {{ "message" => "%{{OTHER:o}}" }} }} }}"#
        ),
        json!({"message": "77"}),
    );
    assert_eq!(get(&e, "o"), v(json!("77")));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn every_worker_has_its_own_match_data() {
    let parsed = sluice_config::parse(
        "test",
        r#"filter { grok { match => { "message" => "%{WORD:w} %{INT:n:int}" } } }"#,
    )
    .unwrap();
    let registry = sluice_plugins::registry();
    let compiled = sluice_pipeline::graph::compile(&parsed, &registry).unwrap();
    let mut a = compiled.filter_chain();
    let mut b = compiled.filter_chain();
    let ev = |m: &str| vec![Event::with_message(m)];
    let (mut x, mut y) = (ev("a 1"), ev("b 2"));
    a.run(&mut x);
    b.run(&mut y);
    let mut z = ev("c 3");
    a.run(&mut z);
    assert_eq!(get(&x[0], "w"), v(json!("a")));
    assert_eq!(get(&y[0], "n"), v(json!(2)));
    assert_eq!(get(&z[0], "w"), v(json!("c")));
}

/// Issue 45: PCRE2 with 2-byte links refused compiled patterns over 64K ("regular expression
/// is too large"): eight `%{IP}` in one pattern already were (the postfix patterns' big ones
/// too), where Onigmo in Logstash takes them. PCRE2 is built with 4-byte links now
/// (`.cargo/config.toml`).
#[test]
fn large_expansions_compile_and_match() {
    let pattern = (0..12)
        .map(|i| format!("%{{IP:ip{i}}}"))
        .collect::<Vec<_>>()
        .join(" ");
    let config = format!(r#"filter {{ grok {{ match => {{ "message" => "{pattern}" }} }} }}"#);
    let addresses: Vec<String> = (0..12)
        .map(|i| match i % 3 {
            0 => format!("10.0.0.{i}"),
            1 => format!("2001:db8::{i}"),
            _ => format!("fe80::1:{i}"),
        })
        .collect();
    let e = one(&config, json!({"message": addresses.join(" ")}));
    assert!(!e.has_tag("_grokparsefailure"), "{:?}", common::tags(&e));
    for (i, a) in addresses.iter().enumerate() {
        assert_eq!(get(&e, &format!("ip{i}")), v(json!(a)));
    }
}

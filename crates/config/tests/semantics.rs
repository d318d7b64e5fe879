//! What the parser builds: values, escapes, numbers, condition grouping, merged options.

use serde_json::json;
use sluice_config::{ir, parse, parse_sources, parse_with, ParseOptions, Plugin, Statement, Value};

fn first_plugin(text: &str) -> Plugin {
    let config = parse("t.conf", text).unwrap();
    match &config.sections[0].body[0] {
        Statement::Plugin(p) => p.clone(),
        other => panic!("not a plugin: {other:?}"),
    }
}

fn condition(cond: &str) -> serde_json::Value {
    let text = format!("filter {{ if {cond} {{ x {{}} }} }}");
    let config = parse("t.conf", &text).unwrap();
    match &config.sections[0].body[0] {
        Statement::If(i) => ir::condition_ir(&i.branches[0].condition),
        other => panic!("not an if: {other:?}"),
    }
}

fn args(text: &str) -> serde_json::Value {
    ir::plugin_ir(&first_plugin(text), "filter").unwrap()["args"].clone()
}

#[test]
fn values_of_every_kind() {
    let got = args(
        r#"filter { x { b => true s => 'one' n => -12 f => 1.5 o => 010 a => [] h => {} "q k" => 1 } }"#,
    );
    assert_eq!(
        got,
        json!({"b": "true", "s": "one", "n": -12, "f": 1.5, "o": 8, "a": [], "h": {}, "q k": 1})
    );
    let p = first_plugin("input { x { codec => json { charset => \"UTF-8\" } } }");
    let Value::Plugin(codec) = &p.attributes[0].value else {
        panic!("codec is a plugin");
    };
    assert_eq!(codec.name, "json");
    assert_eq!((codec.span.line, codec.span.column), (1, 22));
    let got = ir::plugin_ir(&p, "input").unwrap();
    assert_eq!(
        got["args"]["codec"],
        json!({"plugin": "json", "type": "codec", "args": {"charset": "UTF-8"}})
    );
}

#[test]
fn comments_everywhere() {
    let text = "# early\ninput # a\n{ # b\n p # c\n { # d\n arg # e\n => # f\n [ # g\n 1 # h\n , # i\n 2 # j\n ] # k\n } # l\n } # eof";
    assert_eq!(args(text), json!({"arg": [1, 2]}));
}

#[test]
fn string_escapes() {
    let text = r#"input { x { a => "q\"uo\\te\n" b => 'it\'s' } }"#;
    let raw = parse("t", text).unwrap();
    let Statement::Plugin(p) = &raw.sections[0].body[0] else {
        panic!()
    };
    let Value::String(a) = &p.attributes[0].value else {
        panic!()
    };
    assert_eq!(a, r#"q\"uo\\te\n"#);
    let opts = ParseOptions {
        support_escapes: true,
    };
    let esc = parse_with("t", text, &opts).unwrap();
    let Statement::Plugin(p) = &esc.sections[0].body[0] else {
        panic!()
    };
    let Value::String(a) = &p.attributes[0].value else {
        panic!()
    };
    assert_eq!(a, "q\"uo\\te\n");
    let Value::String(b) = &p.attributes[1].value else {
        panic!()
    };
    assert_eq!(b, "it's");
}

#[test]
fn condition_grouping_follows_logstash() {
    let (a, b, c, d) = (
        json!({"truthy": {"field": "[a]"}}),
        json!({"truthy": {"field": "[b]"}}),
        json!({"truthy": {"field": "[c]"}}),
        json!({"truthy": {"field": "[d]"}}),
    );
    assert_eq!(
        condition("[a] and [b] or [c]"),
        json!({"or": [{"and": [a, b]}, c]})
    );
    assert_eq!(
        condition("[a] or [b] or [c]"),
        json!({"or": [a, {"or": [b, c]}]})
    );
    assert_eq!(
        condition("[a] or [b] and [c]"),
        json!({"or": [a, {"and": [b, c]}]})
    );
    assert_eq!(condition("[a] xor [b]"), json!({"xor": [a, b]}));
    assert_eq!(
        condition("[a] nand [b] or [c]"),
        json!({"or": [{"nand": [a, b]}, c]})
    );
    assert_eq!(
        condition("([a] or [b]) and ![c]"),
        json!({"and": [{"or": [a, b]}, {"not": c}]})
    );
    // Logstash's one-step shunting yard, quirk included.
    assert_eq!(
        condition("[a] or [b] and [c] and [d] or [e]"),
        json!({"or": [a, {"and": [b, {"or": [{"and": [c, d]}, {"truthy": {"field": "[e]"}}]}]}]})
    );
}

#[test]
fn condition_operands() {
    assert_eq!(
        condition(r#"[@metadata][x y] != "z""#),
        json!({"!=": [{"field": "[@metadata][x y]"}, {"value": "z"}]})
    );
    assert_eq!(
        condition(r#""a" not   in [tags]"#),
        json!({"not": {"in": [{"value": "a"}, {"field": "[tags]"}]}})
    );
    assert_eq!(
        condition(r#"[a] in ["x", yy, 3]"#),
        json!({"in": [{"field": "[a]"}, {"value": ["x", "yy", 3]}]})
    );
    // A one-element list is a field reference in Logstash's grammar.
    assert_eq!(
        condition(r#"[a] in ["x"]"#),
        json!({"in": [{"field": "[a]"}, {"field": "[\"x\"]"}]})
    );
    assert_eq!(
        condition(r#"[a] !~ /x\/y/"#),
        json!({"!~": [{"field": "[a]"}, {"regex": "x/y"}]})
    );
    assert_eq!(
        condition(r#"[a] =~ "\d+""#),
        json!({"=~": [{"field": "[a]"}, {"regex": "\\d+"}]})
    );
    assert_eq!(
        condition("-1.5 <= 2"),
        json!({"<=": [{"value": -1.5}, {"value": 2}]})
    );
    assert_eq!(condition("\"s\""), json!({"truthy": {"value": "s"}}));
}

#[test]
fn if_else_chains() {
    let text =
        "filter { if [a] { x {} } else if [b] { y {} } elseif [c] { z {} } else { w {} v {} } }";
    let config = parse("t", text).unwrap();
    let Statement::If(i) = &config.sections[0].body[0] else {
        panic!()
    };
    assert_eq!(i.branches.len(), 3);
    assert_eq!(i.else_body.as_ref().unwrap().len(), 2);
    assert_eq!(
        (i.branches[1].span.line, i.branches[1].span.column),
        (1, 26)
    );
    // Names that merely start with "if"/"else" are plugins.
    let config = parse("t", "filter { iffy {} if [a] {} elsewhere {} }").unwrap();
    assert_eq!(config.sections[0].body.len(), 3);
}

#[test]
fn repeated_options_merge_like_logstash() {
    assert_eq!(
        args("filter { x { a => [1] a => 2 a => '3' a => [4] } }"),
        json!({"a": [1, 2, "3", 4]})
    );
    assert_eq!(args("filter { x { a => 1 a => 1 } }"), json!({"a": 1}));
    assert_eq!(
        args("filter { x { a => 1 a => 2 a => 3 } }"),
        json!({"a": [1, 2, 3]})
    );
    assert_eq!(
        args(r#"filter { x { m => { "a" => "foo" } m => { "a" => "bar" "b" => 1 } } }"#),
        json!({"m": {"a": ["foo", "bar"], "b": 1}})
    );
    assert_eq!(
        args(r#"filter { x { m => { "a" => ["1"] } m => { "a" => ["1", "2"] } } }"#),
        json!({"m": {"a": ["1", "1", "2"]}})
    );
    let p = first_plugin("filter { x { a => 1 b => 2 a => 3 } }");
    let merged = p.merged_attributes().unwrap();
    assert_eq!(merged.len(), 2);
    assert_eq!((merged[0].name.as_str(), merged[0].span.column), ("a", 14));
}

#[test]
fn merge_errors() {
    let p = first_plugin("output {\n  stdout { codec => plain\n codec => json }\n}");
    let e = p.merged_attributes().unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"t.conf:3:2: duplicate "codec" option in plugin "stdout""#
    );
    let p = first_plugin(
        "input { example { match => {\n \"message\"=> \"p1\"\n \"more\" => {\n \"cool\" => true\n \"cool\" => true } } } }",
    );
    let e = p.merged_attributes().unwrap_err();
    assert_eq!((e.line, e.column), (5, 2));
    assert!(e.message.contains(r#"["cool"]"#), "{e}");
    // Inside a codec too.
    let p = first_plugin("input { x { codec => json { h => { aa => 1 aa => 2 } } } }");
    assert!(p.merged_attributes().is_err());
    // Same key written differently is not a duplicate for Logstash: the last one wins.
    assert_eq!(
        args(r#"filter { x { h => { "aa" => 1 aa => 2 } } }"#),
        json!({"h": {"aa": 2}})
    );
}

#[test]
fn sources_concatenate_and_errors_name_their_file() {
    let sources = vec![
        ("a.conf".to_string(), "input { x {} }".to_string()),
        (
            "b.conf".to_string(),
            "filter { y {} }\noutput { z {} }".to_string(),
        ),
    ];
    let config = parse_sources(&sources).unwrap();
    let kinds: Vec<&str> = config.sections.iter().map(|s| s.kind.as_str()).collect();
    assert_eq!(kinds, ["input", "filter", "output"]);
    assert_eq!(config.sections[1].source, "b.conf");
    let bad = vec![
        ("a.conf".to_string(), "input { x {} }".to_string()),
        ("b.conf".to_string(), "filter {".to_string()),
    ];
    let e = parse_sources(&bad).unwrap_err();
    assert_eq!(e.source_name, "b.conf");
    let json = sluice_config::to_json(&config);
    assert_eq!(json["sections"][0]["kind"], "input");
}

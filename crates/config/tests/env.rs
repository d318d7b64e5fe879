//! `${VAR}` / `${VAR:default}` substitution.

use serde_json::json;
use sluice_config::{ir, parse, substitute_vars, Statement};

fn vars(name: &str) -> Option<String> {
    match name {
        "HOST" => Some("db.local".into()),
        "PORT" => Some("5432".into()),
        "my.var" => Some("dotted".into()),
        _ => None,
    }
}

#[test]
fn substitutes_in_every_value_position() {
    let text = r#"
input {
  jdbc {
    url => "jdbc://${HOST}:${PORT}/x"
    user => "${USER_NAME:admin}"
    hosts => ["${HOST}", "${MISSING:fallback}"]
    opts => { "k" => "${my.var}" "${HOST}" => 1 }
    codec => json { charset => "${CHARSET:UTF-8}" }
    bare => ${NOPE}
  }
}"#;
    // `${NOPE}` unquoted is not LSCL: Logstash's grammar rejects it too.
    assert!(parse("t", text).is_err());
    let text = text.replace("    bare => ${NOPE}\n", "");
    let mut config = parse("t", &text).unwrap();
    config.substitute_env(&vars).unwrap();
    let Statement::Plugin(p) = &config.sections[0].body[0] else {
        panic!()
    };
    let got = ir::plugin_ir(p, "input").unwrap()["args"].clone();
    assert_eq!(
        got,
        json!({
            "url": "jdbc://db.local:5432/x",
            "user": "admin",
            "hosts": ["db.local", "fallback"],
            "opts": {"k": "dotted", "${HOST}": 1},
            "codec": {"plugin": "json", "type": "codec", "args": {"charset": "UTF-8"}},
        })
    );
}

#[test]
fn substitutes_in_condition_strings_but_not_regexes() {
    let text =
        r#"filter { if [h] == "${HOST}" and [p] in ["${PORT}"] or [x] =~ "${HOST}" { x {} } }"#;
    let mut config = parse("t", text).unwrap();
    config.substitute_env(&vars).unwrap();
    let Statement::If(i) = &config.sections[0].body[0] else {
        panic!()
    };
    let got = ir::condition_ir(&i.branches[0].condition).to_string();
    assert!(got.contains(r#"{"value":"db.local"}"#), "{got}");
    // A one-element list is a field reference; fields and regexes are left alone.
    assert!(got.contains(r#"{"field":"[\"${PORT}\"]"}"#), "{got}");
    assert!(got.contains(r#"{"regex":"${HOST}"}"#), "{got}");
}

#[test]
fn undefined_variable_is_an_error_at_the_value() {
    let text = "input {\n  x {\n    a => 1\n    path => \"/var/${LOGDIR}/x\"\n  }\n}";
    let mut config = parse("my.conf", text).unwrap();
    let e = config.substitute_env(&vars).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"my.conf:4:5: Cannot evaluate "${LOGDIR}": variable "LOGDIR" is not defined and has no default value"#
    );
    let mut config = parse("c.conf", "filter { if [a] == \"${X}\" { y {} } }").unwrap();
    let e = config.substitute_env(&vars).unwrap_err();
    assert_eq!(
        (e.source_name.as_str(), e.line, e.column),
        ("c.conf", 1, 10)
    );
}

#[test]
fn placeholder_syntax() {
    let s = |t: &str| substitute_vars(t, &vars);
    assert_eq!(s("${HOST}${PORT}").unwrap(), "db.local5432");
    assert_eq!(s("${X:}").unwrap(), "");
    assert_eq!(s("${X:a:b}").unwrap(), "a:b");
    assert_eq!(
        s("$HOST ${1x} ${} ${HOST").unwrap(),
        "$HOST ${1x} ${} ${HOST"
    );
    assert_eq!(s("$${HOST}").unwrap(), "$db.local");
    assert!(s("${X}").is_err());
    assert_eq!(s("no placeholders").unwrap(), "no placeholders");
}

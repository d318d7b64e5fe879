//! Error positions and messages: line and column point at the offending token.

use sluice_config::{parse, ParseError};

fn err(text: &str) -> ParseError {
    parse("t.conf", text).expect_err("should not parse")
}

fn at(e: &ParseError) -> (u32, u32) {
    (e.line, e.column)
}

#[test]
fn missing_arrow_after_attribute_name() {
    let e = err("filter {\n  mutate { value }\n}");
    assert_eq!(at(&e), (2, 18));
    assert_eq!(
        e.message,
        r#"expected "=>" after attribute name "value", found "}""#
    );
    assert_eq!(
        e.to_string(),
        r#"t.conf:2:18: expected "=>" after attribute name "value", found "}""#
    );
}

#[test]
fn unknown_section_name() {
    let e = err("# header\n\nFILTER {\n}\n");
    assert_eq!(at(&e), (3, 1));
    assert_eq!(
        e.message,
        r#"expected one of "input", "filter", "output", found "FILTER""#
    );
}

#[test]
fn unterminated_strings_point_at_the_opening_quote() {
    let e = err("filter {\n  plugin {\n    value => \"invalid\n  }\n}\n");
    assert_eq!(at(&e), (3, 14));
    assert_eq!(e.message, "unterminated string starting at 3:14");
    let e = err("filter { p { v => 'x } }");
    assert_eq!(e.message, "unterminated string starting at 1:19");
    let e = err("filter {\n  if [f] =~ /.*\n    p {}\n  }\n}");
    assert_eq!(at(&e), (2, 13));
    assert_eq!(e.message, "unterminated regex starting at 2:13");
}

#[test]
fn backslash_quote_does_not_end_a_string() {
    // As in Logstash's grammar, `\"` never ends a string, even after another backslash.
    let e = err(r#"input { x { path => "C:\\" } }"#);
    assert!(e.message.starts_with("unterminated string"), "{e}");
}

#[test]
fn missing_closing_braces() {
    let e = err("filter {\n  if 1 == 1 {\n    plugin{}\n  }\n");
    assert_eq!(at(&e), (5, 1));
    assert!(
        e.message.contains(r#""}" (closing "filter" at 1:1)"#),
        "{e}"
    );
    assert!(e.message.ends_with("found end of input"), "{e}");
    let e = err("filter {\n  plugin {\n    value => { \"bar\" => \"bar\"\n  }\n}\n");
    assert_eq!(at(&e), (6, 1));
}

#[test]
fn missing_array_bracket_and_trailing_comma() {
    let e = err("filter {\n  plugin {\n    value => [ \"bar\"\n  }\n}");
    assert_eq!(at(&e), (4, 3));
    assert_eq!(e.message, r#"expected one of ",", "]", found "}""#);
    let e = err("filter { p { v => [1, 2,] } }");
    assert_eq!(at(&e), (1, 25));
    assert_eq!(e.message, r#"expected a value, found "]""#);
}

#[test]
fn bad_values() {
    let e = err("filter { p { v => #comment\n } }");
    assert_eq!(at(&e), (2, 2));
    assert_eq!(e.message, r#"expected a value, found "}""#);
    let e = err("input { stdin { a => b } }");
    assert_eq!(at(&e), (1, 22));
    assert!(e.message.contains("at least two characters"), "{e}");
    let e = err("input { x { h => { a => 1 } } }");
    assert_eq!(at(&e), (1, 20));
    assert!(e.message.contains("a hash key"), "{e}");
    let e = err("filter { p { v => 09 } }");
    assert_eq!(at(&e), (1, 19));
    assert!(e.message.contains("octal"), "{e}");
}

#[test]
fn attributes_need_whitespace_between_them() {
    let e = err(r#"filter { p { a => "x"b => 1 } }"#);
    assert_eq!(at(&e), (1, 22));
    assert_eq!(
        e.message,
        r#"expected "}" (closing "p" at 1:10), found "b""#
    );
}

#[test]
fn condition_errors() {
    let e = err("filter {\n  if [a] == true { x {} }\n}");
    assert_eq!(at(&e), (2, 13));
    assert!(e.message.starts_with("expected a condition operand"), "{e}");
    assert!(e.message.ends_with(r#"found "true""#), "{e}");
    let e = err("filter {\n  if \"test\" =! \"test\" {\n    plugin{}\n  }\n}");
    assert_eq!(at(&e), (2, 13));
    assert!(e.message.contains("a comparison operator"), "{e}");
    assert!(e.message.ends_with(r#"found "=!""#), "{e}");
    let e = err("filter {\n  if 1 == 1 nor 2 == 2 {\n    plugin{}\n  }\n}");
    assert_eq!(at(&e), (2, 13));
    assert!(e.message.contains("a boolean operator"), "{e}");
    let e = err("filter {\n  if !( 1 == 1 {\n    plugin {}\n  }\n}");
    assert_eq!(at(&e), (2, 16));
    assert!(e.message.contains(r#"")""#), "{e}");
    let e = err("filter {\n  if \"test\" in [field][subfield {\n  }\n}\n");
    assert_eq!(
        e.message,
        r#"expected "]" to close the field reference at 2:23, found end of input"#
    );
    let e = err("filter { if len([a]) > 1 { x {} } }");
    assert_eq!(at(&e), (1, 13));
    assert!(e.message.contains("method calls"), "{e}");
}

#[test]
fn columns_count_characters_not_bytes() {
    let e = err("input {\n  x {\n    h => \"é\" y => 1 z\n  }\n}");
    assert_eq!(at(&e), (4, 3));
    let e = err("input { x { h => \"ééé\" 1 } }");
    assert_eq!(at(&e), (1, 26));
}

#[test]
fn empty_and_comment_only_sources_are_valid() {
    for text in ["", "  \n\t\n", "# only a comment", "# a\n\n# b\n"] {
        let config = parse("t.conf", text).unwrap();
        assert!(config.sections.is_empty());
    }
}

/// Deep nesting used to overflow the stack (exit 134), also through a reload. Every kind of
/// nesting stops at the limit with an error at the first level too deep; the limit itself
/// parses.
#[test]
fn nesting_beyond_the_limit_is_a_located_error() {
    use sluice_config::MAX_NESTING;
    let deep = |open: &str, close: &str, n: usize, inner: &str| {
        (open.repeat(n), close.repeat(n), inner.to_owned())
    };
    let cases = [
        (
            "if",
            deep("if [a] {\n", "}\n", MAX_NESTING + 1, "drop {}\n"),
        ),
        ("parentheses", deep("(", ")", MAX_NESTING + 1, "[a]")),
        ("arrays", deep("[", "]", MAX_NESTING + 1, "1")),
        ("hashes", deep("{ kk => ", "}", MAX_NESTING + 1, "1")),
    ];
    for (what, (open, close, inner)) in cases {
        let text = match what {
            "if" => format!("filter {{\n{open}{inner}{close}}}\n"),
            "parentheses" => format!("filter {{ if {open}{inner}{close} {{ drop {{}} }} }}"),
            _ => format!("filter {{ mutate {{ add_field => {open}{inner}{close} }} }}"),
        };
        let e = err(&text);
        assert!(
            e.message
                .contains(&format!("nested more than {MAX_NESTING} levels")),
            "{what}: {e}"
        );
        // The position is the first level too deep.
        let n = MAX_NESTING as u32;
        let expected = match what {
            // The `{` of the 101st `if`, on line 102.
            "if" => (n + 2, 8),
            "parentheses" => (1, 13 + n),
            "arrays" => (1, 32 + n),
            _ => (1, 32 + 8 * n),
        };
        assert_eq!(at(&e), expected, "{what}: {e}");
        // One level less is fine.
        let ok = text
            .replacen(&open[..open.len() / (MAX_NESTING + 1)], "", 1)
            .replacen(&close[..close.len() / (MAX_NESTING + 1)], "", 1);
        parse("t.conf", &ok).unwrap_or_else(|e| panic!("{what} at the limit: {e}"));
    }
    // Far beyond the limit: still an error, not a crash, and quick.
    let e = err(&format!(
        "filter {{ {} drop {{}} {} }}",
        "if [a] { ".repeat(100_000),
        "} ".repeat(100_000)
    ));
    assert!(e.message.contains("nested more than"), "{e}");
}

#[test]
fn conditions_beyond_the_size_limit_are_a_located_error() {
    use sluice_config::MAX_CONDITION_SIZE;
    let cond = |n: usize| {
        let parts: Vec<String> = (0..=n).map(|i| format!("[f] == {i}")).collect();
        format!("filter {{ if {} {{ drop {{}} }} }}", parts.join(" or "))
    };
    parse("t.conf", &cond(MAX_CONDITION_SIZE)).unwrap();
    let e = err(&cond(MAX_CONDITION_SIZE + 1));
    assert!(
        e.message
            .contains(&format!("more than {MAX_CONDITION_SIZE} boolean operators")),
        "{e}"
    );
    assert_eq!(e.line, 1);
}

//! The multiline codec against logstash-codec-multiline's spec cases (`multiline_spec.rb`):
//! joining by `previous`/`next`, `negate`, grok names in `pattern`, tags, the line and byte
//! limits, charsets, ECS fields, streaming chunks, and `auto_flush_interval`.

use std::time::{Duration, Instant};

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::Codec;

/// Builds the codec `codec_text` (e.g. `multiline { pattern => "^\s" what => previous }`).
fn codec(codec_text: &str) -> Result<Box<dyn Codec>, String> {
    let text = format!("input {{ stdin {{ codec => {codec_text} }} }}");
    let config = sluice_config::parse("test", &text).map_err(|e| e.to_string())?;
    let sluice_config::Statement::Plugin(input) = &config.sections[0].body[0] else {
        panic!("no input");
    };
    let attr = input.attributes.iter().find(|a| a.name == "codec").unwrap();
    let sluice_config::Value::Plugin(p) = &attr.value else {
        panic!("no codec plugin");
    };
    sluice_plugins::registry()
        .build_codec(&text, p)
        .map_err(|e| e.to_string())
}

/// Feeds each line through `decode_line` (as the file input does), then flushes.
fn lines(c: &mut Box<dyn Codec>, input: &[&str]) -> Vec<Event> {
    let mut out = Vec::new();
    for l in input {
        c.decode_line(l.as_bytes(), &mut out);
    }
    c.flush(&mut out);
    out
}

fn message(e: &Event) -> String {
    e.get_field("message").unwrap().to_display_string()
}

fn tags(e: &Event) -> Vec<String> {
    match e.get_field("tags") {
        Some(Value::Array(a)) => a.iter().map(Value::to_display_string).collect(),
        Some(v) => vec![v.to_display_string()],
        None => vec![],
    }
}

fn original(e: &Event) -> Option<String> {
    e.get(&FieldRef::parse("[event][original]").unwrap())
        .map(Value::to_display_string)
}

#[test]
fn previous_joins_indented_lines_with_the_tag_only_on_joined_ones() {
    for ecs in ["disabled", "v1", "v8"] {
        let mut c = codec(&format!(
            r#"multiline {{ pattern => "^\s" what => previous ecs_compatibility => {ecs} }}"#
        ))
        .unwrap();
        let out = lines(
            &mut c,
            &["hello world", "   second line", "another first line"],
        );
        assert_eq!(out.len(), 2, "{ecs}");
        assert_eq!(message(&out[0]), "hello world\n   second line");
        assert_eq!(tags(&out[0]), ["multiline"]);
        assert_eq!(message(&out[1]), "another first line");
        assert!(tags(&out[1]).is_empty());
        let expect_original = (ecs != "disabled").then(|| message(&out[0]));
        assert_eq!(original(&out[0]), expect_original, "{ecs}");
    }
    let mut c =
        codec(r#"multiline { pattern => "^\s" what => previous multiline_tag => "hurray" }"#)
            .unwrap();
    let out = lines(&mut c, &["hello world", "   second line", "another"]);
    assert_eq!(tags(&out[0]), ["hurray"]);
    let mut c =
        codec(r#"multiline { pattern => "^\s" what => previous multiline_tag => "" }"#).unwrap();
    let out = lines(&mut c, &["hello world", "   second line"]);
    assert!(tags(&out[0]).is_empty());
}

#[test]
fn one_chunk_of_several_lines_and_a_grok_pattern_with_negate() {
    let mut c = codec(r#"multiline { pattern => "\D" what => previous }"#).unwrap();
    let mut out = Vec::new();
    c.decode(
        b"1234567890\nA234567890\nB234567890\n0987654321\n",
        &mut out,
    );
    assert_eq!(out.len(), 1);
    assert_eq!(message(&out[0]), "1234567890\nA234567890\nB234567890");
    c.flush(&mut out);
    assert_eq!(message(&out[1]), "0987654321");

    let mut c =
        codec(r#"multiline { pattern => "^%{NUMBER} %{TIME}" negate => true what => previous }"#)
            .unwrap();
    let out = lines(
        &mut c,
        &["120913 12:04:33 first line", "second line", "third line"],
    );
    assert_eq!(out.len(), 1);
    assert_eq!(
        message(&out[0]),
        "120913 12:04:33 first line\nsecond line\nthird line"
    );
}

#[test]
fn java_stack_traces_with_next_and_previous() {
    // The usual Java setup: a line that does not start with a timestamp belongs to the one
    // before.
    let mut c = codec(
        r#"multiline { pattern => "^%{TIMESTAMP_ISO8601}" negate => true what => previous }"#,
    )
    .unwrap();
    let out = lines(
        &mut c,
        &[
            "2026-11-24 10:00:00,001 INFO started",
            "2026-11-24 10:00:01,002 ERROR request failed",
            "java.lang.IllegalStateException: boom",
            "\tat com.example.App.run(App.java:42)",
            "\tat com.example.App.main(App.java:7)",
            "Caused by: java.io.IOException: disk",
            "\t... 2 more",
            "2026-11-24 10:00:02,003 INFO recovered",
        ],
    );
    let messages: Vec<String> = out.iter().map(message).collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[1].lines().count(), 6);
    assert!(messages[1].ends_with("\t... 2 more"));
    assert_eq!(tags(&out[1]), ["multiline"]);

    // `next`: a line ending in `\` continues on the next one.
    let mut c = codec(r#"multiline { pattern => "\\$" what => next }"#).unwrap();
    let out = lines(&mut c, &["a \\", "b \\", "c", "d"]);
    let messages: Vec<String> = out.iter().map(message).collect();
    assert_eq!(messages, ["a \\\nb \\\nc", "d"]);
}

#[test]
fn charsets_and_invalid_utf8() {
    let mut c = codec(r#"multiline { pattern => "^\s" what => previous }"#).unwrap();
    let mut out = Vec::new();
    for l in ["foobar".as_bytes(), "κόσμε".as_bytes()] {
        c.decode_line(l, &mut out);
    }
    c.flush(&mut out);
    assert_eq!(
        out.iter().map(message).collect::<Vec<_>>(),
        ["foobar", "κόσμε"]
    );

    let mut out = Vec::new();
    for l in [&b"foo \xED\xB9\x81\xC3"[..], &b"bar \xAD"[..]] {
        c.decode_line(l, &mut out);
    }
    c.flush(&mut out);
    let messages: Vec<String> = out.iter().map(message).collect();
    assert_eq!(messages, [r"foo \xED\xB9\x81\xC3", r"bar \xAD"]);

    let mut c = codec(r#"multiline { pattern => "^\s" what => previous charset => "ISO-8859-1" }"#)
        .unwrap();
    let mut out = Vec::new();
    for l in [&b"foobar"[..], &b"\xE0 Montr\xE9al"[..]] {
        c.decode_line(l, &mut out);
    }
    c.flush(&mut out);
    assert_eq!(message(&out[1]), "à Montréal");
}

#[test]
fn max_lines_and_max_bytes_cut_and_tag() {
    // previous: a record is cut once it holds more than max_lines lines; the line that finds
    // it full starts the next one.
    let mut c = codec(
        r#"multiline { pattern => "^-" what => previous max_lines => 10 max_bytes => "2 mb" }"#,
    )
    .unwrap();
    let input = vec!["- Sample event"; 300];
    let out = lines(&mut c, &input);
    let counts: Vec<usize> = out.iter().map(|e| message(e).lines().count()).collect();
    assert_eq!(counts.iter().sum::<usize>(), 300);
    assert_eq!(counts[0], 11);
    assert!(tags(&out[0]).contains(&"multiline_codec_max_lines_reached".to_owned()));
    assert!(!tags(&out[0]).contains(&"multiline_codec_max_bytes_reached".to_owned()));

    // 14-byte lines, max_bytes 50: cut at the first sum of at least 50 bytes (4 lines).
    let mut c = codec(
        r#"multiline { pattern => "^-" what => previous max_lines => 20000 max_bytes => 50 }"#,
    )
    .unwrap();
    let out = lines(&mut c, &input);
    let counts: Vec<usize> = out.iter().map(|e| message(e).lines().count()).collect();
    assert_eq!(counts.iter().sum::<usize>(), 300);
    assert_eq!(counts[0], 4);
    assert!(tags(&out[0]).contains(&"multiline_codec_max_bytes_reached".to_owned()));

    // next: the line that finds the record full ends it.
    let mut c = codec(r#"multiline { pattern => "x$" what => next max_lines => 2 }"#).unwrap();
    let out = lines(&mut c, &["ax", "bx", "cx", "dx", "e"]);
    let messages: Vec<String> = out.iter().map(message).collect();
    assert_eq!(messages, ["ax\nbx\ncx", "dx\ne"]);
    assert!(tags(&out[0]).contains(&"multiline_codec_max_lines_reached".to_owned()));
}

#[test]
fn streaming_chunks_keep_the_unfinished_line() {
    let mut c = codec(r#"multiline { pattern => "^\s" what => previous }"#).unwrap();
    let mut out = Vec::new();
    c.decode(b"one\n  tw", &mut out);
    c.decode(b"o\r\nthr", &mut out);
    assert_eq!(
        out.len(),
        0,
        "the first record is open until a line starts the next"
    );
    c.decode(b"ee\n", &mut out);
    assert_eq!(message(&out[0]), "one\n  two\r");
    c.flush(&mut out);
    assert_eq!(message(&out[1]), "three");
    // Empty lines the file input hands over are no lines, as in Logstash.
    let out = lines(&mut c, &["a", "", "  b"]);
    assert_eq!(out.iter().map(message).collect::<Vec<_>>(), ["a\n  b"]);
}

#[test]
fn auto_flush_gives_out_an_idle_record() {
    let c = codec(r#"multiline { pattern => "^\s" what => previous }"#).unwrap();
    assert_eq!(c.idle_flush_interval(), None);
    let mut c =
        codec(r#"multiline { pattern => "^\s" what => previous auto_flush_interval => 2 }"#)
            .unwrap();
    assert_eq!(c.idle_flush_interval(), Some(Duration::from_secs(2)));
    let mut out = Vec::new();
    let start = Instant::now();
    for l in ["hello world", " second line", " third line"] {
        c.decode_line(l.as_bytes(), &mut out);
    }
    c.flush_idle(start + Duration::from_millis(1500), &mut out);
    assert!(out.is_empty(), "not idle long enough");
    c.flush_idle(Instant::now() + Duration::from_millis(2100), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(message(&out[0]), "hello world\n second line\n third line");
    // Nothing held: nothing more.
    c.flush_idle(Instant::now() + Duration::from_secs(10), &mut out);
    c.flush(&mut out);
    assert_eq!(out.len(), 1);
}

#[test]
fn options_are_checked() {
    for (text, want) in [
        (r#"multiline { what => previous }"#, "pattern"),
        (r#"multiline { pattern => "x" }"#, "what"),
        (r#"multiline { pattern => "x" what => later }"#, "previous"),
        (r#"multiline { pattern => "%{NOPE}" what => next }"#, "NOPE"),
        (
            r#"multiline { pattern => "(" what => next }"#,
            "invalid regular expression",
        ),
        (
            r#"multiline { pattern => "x" what => next max_bytes => "ten" }"#,
            "max_bytes",
        ),
        (
            r#"multiline { pattern => "x" what => next auto_flush_interval => 0 }"#,
            "auto_flush_interval",
        ),
        (
            r#"multiline { pattern => "x" what => next flush_now => true }"#,
            "flush_now",
        ),
    ] {
        let err = codec(text)
            .err()
            .unwrap_or_else(|| panic!("{text} was accepted"));
        assert!(err.contains(want), "{text}: {err}");
    }
}

//! [`Template`]: Logstash sprintf strings (`%{field}`, `%{[a][b]}`, `%{+yyyy.MM.dd}`, `%{+%s}`,
//! `%{{yyyy-MM-dd}}`, `%{{TIME_NOW}}`), parsed once per plugin option and rendered per event
//! without re-parsing.
//!
//! The text is scanned as Logstash's `StringInterpolation` does: from each `%{` to the next
//! `}`, with `%{{…}}` taking one more `}`. A reference to a missing field renders as the literal
//! `%{...}` text; a date with no `@timestamp` renders as nothing. `%{{…}}` uses java.time's
//! pattern letters, `%{+…}` Joda's; [`Template::check`] reports a java.time pattern that would
//! fail, so that configs holding one are refused when they load.

use crate::event::Event;
use crate::fieldref::FieldRef;
use crate::joda::{JavaTimeFormat, JodaFormat};
use crate::timestamp::Timestamp;

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    Field {
        field: FieldRef,
        raw: String,
    },
    /// `%{+FORMAT}`: `@timestamp` formatted with a Joda pattern, in UTC.
    Date(JodaFormat),
    /// `%{{FORMAT}}`: `@timestamp` formatted with a java.time pattern, in UTC.
    JavaDate(JavaTimeFormat),
    /// `%{{TIME_NOW}}`: the current time.
    Now,
    /// `%{+%s}`: `@timestamp` in epoch seconds.
    EpochSeconds,
}

/// What one `%{…}` holds.
enum Reference<'a> {
    /// `%{{FORMAT}}`.
    Java(&'a str),
    /// Anything else between `%{` and `}`.
    Plain(&'a str),
}

/// The references in `text` as Logstash scans them: `(start, end, reference)` with `end` past
/// the closing brace(s).
fn scan(text: &str) -> impl Iterator<Item = (usize, usize, Reference<'_>)> {
    let mut pos = 0;
    std::iter::from_fn(move || {
        let open = pos + text[pos..].find("%{")?;
        let close = open + text[open..].find('}')?;
        let inner = &text[open + 2..close];
        let (end, reference) = match inner.strip_prefix('{') {
            Some(java) if text[close + 1..].starts_with('}') => (close + 2, Reference::Java(java)),
            _ => (close + 1, Reference::Plain(inner)),
        };
        pos = end;
        Some((open, end, reference))
    })
}

#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    pub fn parse(text: &str) -> Template {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut pos = 0;
        for (start, end, reference) in scan(text) {
            literal.push_str(&text[pos..start]);
            pos = end;
            let raw = &text[start..end];
            let part = match reference {
                Reference::Java("TIME_NOW") => Some(Part::Now),
                Reference::Java(java) => JavaTimeFormat::compile(java).ok().map(Part::JavaDate),
                Reference::Plain(inner) => Template::plain_part(inner, raw),
            };
            match part {
                Some(p) => {
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(p);
                }
                None => literal.push_str(raw),
            }
        }
        literal.push_str(&text[pos..]);
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Template { parts }
    }

    fn plain_part(inner: &str, raw: &str) -> Option<Part> {
        if inner.is_empty() || "+%s".starts_with(inner) {
            // Logstash compares the text with a prefix of "+%s": `%{}` and `%{+}` too.
            Some(Part::EpochSeconds)
        } else if let Some(fmt) = inner.strip_prefix('+') {
            Some(Part::Date(JodaFormat::compile(fmt)))
        } else {
            FieldRef::parse(inner).ok().map(|field| Part::Field {
                field,
                raw: raw.to_owned(),
            })
        }
    }

    /// The first `%{{…}}` in `text` whose java.time pattern does not compile, as an error
    /// message (Logstash would throw on every event it formats).
    pub fn check(text: &str) -> Result<(), String> {
        for (_, _, reference) in scan(text) {
            if let Reference::Java(java) = reference {
                if java != "TIME_NOW" {
                    JavaTimeFormat::compile(java).map_err(|e| format!("in {text:?}: {e}"))?;
                }
            }
        }
        Ok(())
    }

    /// True when the template has no references (rendering returns the text unchanged).
    pub fn is_constant(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Literal(_)))
    }

    /// The text of a constant template.
    pub fn constant(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [] => Some(""),
            [Part::Literal(s)] => Some(s),
            _ => None,
        }
    }

    pub fn render_into(&self, event: &Event, out: &mut String) {
        for p in &self.parts {
            match p {
                Part::Literal(s) => out.push_str(s),
                Part::Field { field, raw } => match event.get(field) {
                    Some(v) => v.write_display(out),
                    None if field.is_metadata() && field.segments().len() == 1 => {
                        event.metadata_value().write_display(out)
                    }
                    None => out.push_str(raw),
                },
                Part::Date(fmt) => {
                    if let Some(t) = event.timestamp() {
                        fmt.format_into(&t.to_datetime(), out)
                    }
                }
                Part::JavaDate(fmt) => {
                    if let Some(t) = event.timestamp() {
                        fmt.format_into(&t.to_datetime(), out)
                    }
                }
                Part::Now => Timestamp::now().write_iso8601(out),
                Part::EpochSeconds => {
                    if let Some(t) = event.timestamp() {
                        out.push_str(&t.millis().div_euclid(1000).to_string());
                    }
                }
            }
        }
    }

    pub fn render(&self, event: &Event) -> String {
        if let Some(s) = self.constant() {
            return s.to_owned();
        }
        let mut s = String::new();
        self.render_into(event, &mut s);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Timestamp, Value};

    fn event() -> Event {
        let mut e = Event::with_message("hi");
        e.set_timestamp(Timestamp::parse_iso8601("2013-02-04T05:06:07.089Z").unwrap());
        e.set(&FieldRef::parse("[a][b]").unwrap(), Value::Int(5));
        e.set(
            &FieldRef::parse("list").unwrap(),
            Value::Array(vec!["x".into(), "y".into()]),
        );
        e
    }

    #[test]
    fn renders_fields_dates_and_missing() {
        let e = event();
        assert_eq!(Template::parse("%{message} %{[a][b]}").render(&e), "hi 5");
        assert_eq!(
            Template::parse("logs-%{+YYYY.MM.dd}").render(&e),
            "logs-2013.02.04"
        );
        assert_eq!(Template::parse("%{+%s}").render(&e), "1359954367");
        assert_eq!(
            Template::parse("%{missing}-%{list}").render(&e),
            "%{missing}-x,y"
        );
        assert_eq!(Template::parse("100%{").render(&e), "100%{");
        assert!(Template::parse("plain").is_constant());
        // Unclosed: the text stays as written (StringInterpolationTest.testUnclosedTag).
        assert_eq!(
            Template::parse("/full/%{+YYY/web").render(&e),
            "/full/%{+YYY/web"
        );
    }

    #[test]
    fn java_time_dates() {
        let e = event();
        assert_eq!(
            Template::parse("/full/%{{YYYY-DDD}}/weeee/%{message}").render(&e),
            "/full/2013-035/weeee/hi"
        );
        assert_eq!(Template::parse("%{{YYYY-'W'ww}}").render(&e), "2013-W06");
        // `%{{` without `}}` is a field name starting with `{`: missing, so literal.
        assert_eq!(Template::parse("%{{yyyy}").render(&e), "%{{yyyy}");
        let now = Template::parse("%{{TIME_NOW}}").render(&e);
        let t = Timestamp::parse_iso8601(&now).expect("TIME_NOW is ISO 8601");
        assert!(t > e.timestamp().unwrap());
        assert!(Template::check("a %{{yyyy-MM-dd}} %{+ddd} %{{TIME_NOW}}").is_ok());
        let err = Template::check("x-%{{yyyy-MM-ddd}}").unwrap_err();
        assert!(err.contains("ddd"), "{err}");
    }

    #[test]
    fn dates_without_a_timestamp_render_as_nothing() {
        let mut e = Event::with_message("hi");
        e.remove(&FieldRef::parse("@timestamp").unwrap());
        assert_eq!(e.timestamp(), None);
        assert_eq!(
            Template::parse("a%{+yyyy}b%{{yyyy}}c%{+%s}d").render(&e),
            "abcd"
        );
        // Logstash takes every prefix of "+%s" for epoch seconds, `%{}` included.
        assert_eq!(
            Template::parse("%{}|%{+}").render(&event()),
            "1359954367|1359954367"
        );
        assert!(!Template::parse("%{message}").is_constant());
    }
}

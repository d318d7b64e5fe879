//! [`Template`]: Logstash sprintf strings (`%{field}`, `%{[a][b]}`, `%{+yyyy.MM.dd}`, `%{+%s}`),
//! parsed once per plugin option and rendered per event without re-parsing.
//!
//! A reference to a missing field renders as the literal `%{...}` text, as in Logstash.

use crate::event::Event;
use crate::fieldref::FieldRef;
use crate::joda::JodaFormat;

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    Field {
        field: FieldRef,
        raw: String,
    },
    /// `%{+FORMAT}`: `@timestamp` formatted with a Joda pattern, in UTC.
    Date(JodaFormat),
    /// `%{+%s}`: `@timestamp` in epoch seconds.
    EpochSeconds,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    pub fn parse(text: &str) -> Template {
        let mut parts = Vec::new();
        let mut rest = text;
        let mut literal = String::new();
        while let Some(start) = rest.find("%{") {
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else { break };
            let inner = &after[..end];
            let raw = &rest[start..start + 2 + end + 1];
            literal.push_str(&rest[..start]);
            let part = if let Some(fmt) = inner.strip_prefix('+') {
                Some(if fmt == "%s" {
                    Part::EpochSeconds
                } else {
                    Part::Date(JodaFormat::compile(fmt))
                })
            } else {
                FieldRef::parse(inner).ok().map(|field| Part::Field {
                    field,
                    raw: raw.to_owned(),
                })
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
            rest = &after[end + 1..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Template { parts }
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
                Part::Date(fmt) => match event.timestamp() {
                    Some(t) => fmt.format_into(&t.to_datetime(), out),
                    None => out.push_str("%{+...}"),
                },
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
        assert!(!Template::parse("%{message}").is_constant());
    }
}

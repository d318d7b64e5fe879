//! Codecs: bytes ⇄ events. Decoders keep partial input between calls; encoders append to a
//! caller's buffer so an output can encode a whole batch into one write.

pub mod cef;
pub mod charset;
pub mod csv;
pub mod dots;
pub mod es_bulk;
pub mod fluent;
pub mod json;
pub mod json_lines;
pub mod line;
pub mod msgpack;
pub mod multiline;
pub mod netflow;
pub mod plain;
pub mod rubydebug;

use sluice_event::{Event, FieldRef, Template, Value};

use crate::ecs::Ecs;

/// Logstash's `Event#to_s`: `"<@timestamp> <host> <message>"`, used by `line` and `plain`
/// when no `format` is given.
pub fn event_to_s(e: &Event, out: &mut String) {
    if let Some(t) = e.timestamp() {
        t.write_iso8601(out);
    }
    out.push(' ');
    match e.get_field("host") {
        Some(v) => v.write_display(out),
        None => out.push_str("%{host}"),
    }
    out.push(' ');
    match e.get_field("message") {
        Some(v) => v.write_display(out),
        None => out.push_str("%{message}"),
    }
}

/// Encodes with `format` when given, else [`event_to_s`].
pub fn format_event(format: Option<&Template>, e: &Event, out: &mut Vec<u8>) {
    let mut s = String::new();
    match format {
        Some(t) => t.render_into(e, &mut s),
        None => event_to_s(e, &mut s),
    }
    out.extend_from_slice(s.as_bytes());
}

/// Byte offset of `needle` in `hay` (memchr's search; the file input and the line codecs
/// look for delimiters with it).
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    match needle {
        [b] => memchr::memchr(*b, hay),
        _ => memchr::memmem::find(hay, needle),
    }
}

/// Splits `data` at each `delimiter`, continuing the line `pending` holds from earlier reads:
/// `line` gets every complete line (without its delimiter); what follows the last delimiter
/// stays in `pending`. Without a pending line, `data` is split in place, without a copy.
pub fn split_lines(
    pending: &mut Vec<u8>,
    data: &[u8],
    delimiter: &[u8],
    mut line: impl FnMut(&[u8]),
) {
    if !pending.is_empty() {
        pending.extend_from_slice(data);
        let mut buf = std::mem::take(pending);
        let mut start = 0;
        while let Some(i) = find(&buf[start..], delimiter) {
            line(&buf[start..start + i]);
            start += i + delimiter.len();
        }
        buf.drain(..start);
        *pending = buf;
        return;
    }
    let mut rest = data;
    while let Some(i) = find(rest, delimiter) {
        line(&rest[..i]);
        rest = &rest[i + delimiter.len()..];
    }
    pending.extend_from_slice(rest);
}

/// Sets `[event][original]`, where ECS codecs keep the text they decoded.
pub fn set_original(e: &mut Event, text: &str) {
    thread_local! {
        static ORIGINAL: FieldRef = FieldRef::parse("[event][original]").expect("valid reference");
    }
    ORIGINAL.with(|r| e.set(r, Value::String(text.into())));
}

/// A new event from decoded fields: at the top level, or under `target` (the codecs'
/// `target` option, as Logstash's targeted event factory).
pub fn targeted_event(fields: sluice_event::Map, target: Option<&FieldRef>) -> Event {
    match target {
        Some(t) => {
            let mut e = Event::new();
            e.set(t, Value::Object(fields));
            e
        }
        None => Event::from_map(fields),
    }
}

/// A new event for a line of text, with `[event][original]` in ECS mode as Logstash's
/// line and plain codecs do.
pub fn text_event(text: String, ecs: Ecs) -> Event {
    let mut e = Event::new();
    if ecs.enabled() {
        set_original(&mut e, &text);
    }
    e.set_field("message", Value::String(text.into()));
    e
}

/// The `target` option of the json codecs: where the decoded document goes, as a field of a
/// new event, instead of becoming the event's fields.
pub fn json_target(
    opts: &mut sluice_pipeline::Options,
) -> Result<Option<FieldRef>, sluice_pipeline::ConfigError> {
    match opts.string("target")? {
        None => Ok(None),
        Some(t) => FieldRef::parse(&t)
            .map(Some)
            .map_err(|e| opts.error("target", e.to_string())),
    }
}

/// Decodes one JSON text into events, as Logstash's json codecs do: an object is one event,
/// an array of objects is several, anything else (or invalid JSON) is an event carrying the
/// text in `message`, tagged `_jsonparsefailure`. With a `target`, each object (or each item
/// of an array) is set at that field of a new event.
pub fn json_events(text: &[u8], target: Option<&FieldRef>, out: &mut Vec<Event>) {
    let parsed = sluice_event::json::parse(text);
    if let (Some(target), Ok(Value::Object(_) | Value::Array(_))) = (target, &parsed) {
        let items = match parsed {
            Ok(Value::Array(items)) => items,
            Ok(object) => vec![object],
            Err(_) => unreachable!("matched above"),
        };
        for item in items {
            let mut e = Event::new();
            e.set(target, item);
            out.push(e);
        }
        return;
    }
    match parsed {
        Ok(Value::Object(m)) => out.push(Event::from_map(m)),
        Ok(Value::Array(items)) if items.iter().all(|i| matches!(i, Value::Object(_))) => {
            for i in items {
                if let Value::Object(m) = i {
                    out.push(Event::from_map(m));
                }
            }
        }
        Ok(_) | Err(_) => {
            let raw = String::from_utf8_lossy(text).into_owned();
            tracing::warn!(data = %raw, "JSON parse failure: not a JSON object; keeping the text in message");
            let mut e = Event::with_message(raw);
            e.add_tag("_jsonparsefailure");
            out.push(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_lines;

    /// Lines come out whole however the reads cut them, a delimiter of two bytes included.
    #[test]
    fn lines_are_split_across_reads() {
        let text = b"one\r\ntwo\r\n\r\nthree\r\nfour";
        for cut in 1..text.len() {
            let mut pending = Vec::new();
            let mut lines: Vec<String> = Vec::new();
            for chunk in text.chunks(cut) {
                split_lines(&mut pending, chunk, b"\r\n", |l| {
                    lines.push(String::from_utf8(l.to_vec()).unwrap())
                });
            }
            assert_eq!(lines, ["one", "two", "", "three"], "reads of {cut}");
            assert_eq!(pending, b"four");
        }
    }
}

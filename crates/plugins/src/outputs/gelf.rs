//! `gelf`: events as GELF messages (see [`crate::gelf`]) to Graylog, as Logstash's gelf
//! output builds them.
//!
//! Each event becomes one message: `short_message` from the field named by `short_message`
//! (else `message`), `full_message` and `host` from their templates, `level` from the first
//! `level` template that resolves (syslog words become 0-7), `timestamp` from `@timestamp`,
//! and with `ship_metadata` every other top-level field as an additional field (`_name`;
//! a list joined with ", ", an object's entries as `_name_key`), less `ignore_metadata`;
//! `custom_fields` added as given. An event with no short message is logged and dropped, as
//! Logstash's does (GELF requires one).
//!
//! `protocol => "UDP"` (the default): each message zlib-compressed in one datagram, or cut into
//! chunks of `chunksize` bytes (at most 128; a bigger message is dropped and logged); a send
//! that fails is logged and the message dropped (UDP promises nothing). `protocol => "TCP"`:
//! uncompressed, each message ended by a zero byte, over one connection kept open; a batch
//! whose write fails is tried again after reconnecting.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use sluice_event::{Event, FieldRef, Key, Map, Template, Value};
use sluice_pipeline::{Codec, ConfigError, Options, Output, OutputError, WriteContext};

/// Over UDP: each message compressed, in chunks when it does not fit one datagram.
pub struct GelfUdp {
    target: SocketAddr,
    socket: UdpSocket,
    chunk_size: usize,
    messages: Messages,
}

/// How an event becomes a GELF message; as a codec, the TCP framing (JSON and a zero byte).
#[derive(Clone)]
struct Messages {
    sender: Template,
    /// Each `level` entry, with whether it names fields (and so may not resolve).
    levels: Vec<(Template, bool)>,
    facility: Option<Template>,
    file: Option<Template>,
    line: Option<Template>,
    ship_metadata: bool,
    ship_tags: bool,
    ignore: Vec<String>,
    custom: Vec<(String, Value)>,
    full_message: Template,
    short_message: FieldRef,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let host = opts.required_string("host")?;
    let port = crate::net::port(opts, "port", Some(12201))?;
    let chunk_size = opts.int("chunksize")?.unwrap_or(1420);
    if !(1..=65_000).contains(&chunk_size) {
        return Err(opts.error("chunksize", "must be between 1 and 65000"));
    }
    let protocol = opts.string_or("protocol", "UDP")?;
    let tcp = match protocol.to_ascii_uppercase().as_str() {
        "UDP" => false,
        "TCP" => true,
        _ => {
            return Err(opts.error(
                "protocol",
                format!("expected \"UDP\" or \"TCP\", got {protocol:?}"),
            ))
        }
    };
    let sender = Template::parse(&opts.string_or("sender", "%{host}")?);
    let levels = opts
        .string_list("level")?
        .unwrap_or_else(|| vec!["%{severity}".into(), "INFO".into()])
        .into_iter()
        .map(|l| {
            let dynamic = l.contains("%{");
            (Template::parse(&l), dynamic)
        })
        .collect();
    let facility = opts.string("facility")?.map(|t| Template::parse(&t));
    let file = opts.string("file")?.map(|t| Template::parse(&t));
    let line = opts.string("line")?.map(|t| Template::parse(&t));
    let ship_metadata = opts.boolean_or("ship_metadata", true)?;
    let ship_tags = opts.boolean_or("ship_tags", true)?;
    let ignore = opts.string_list("ignore_metadata")?.unwrap_or_else(|| {
        [
            "@timestamp",
            "@version",
            "severity",
            "host",
            "source_host",
            "source_path",
            "short_message",
        ]
        .map(String::from)
        .to_vec()
    });
    let custom = opts
        .hash("custom_fields")?
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, sluice_pipeline::options::ast_to_value(&v)))
        .collect();
    let full_message = Template::parse(&opts.string_or("full_message", "%{message}")?);
    let short_name = opts.string_or("short_message", "short_message")?;
    let short_message =
        FieldRef::parse(&short_name).map_err(|e| opts.error("short_message", e.to_string()))?;
    let messages = Messages {
        sender,
        levels,
        facility,
        file,
        line,
        ship_metadata,
        ship_tags,
        ignore,
        custom,
        full_message,
        short_message,
    };
    if tcp {
        return Ok(Box::new(super::tcp::client(
            "gelf output",
            crate::net::address(&host, port),
            Box::new(messages),
            Duration::from_secs(1),
            None,
        )));
    }
    let (target, socket) = super::udp::socket_to(opts, &host, port)?;
    Ok(Box::new(GelfUdp {
        target,
        socket,
        chunk_size: chunk_size as usize,
        messages,
    }))
}

impl Output for GelfUdp {
    fn write(&self, events: &[&Event], _ctx: &WriteContext) -> Result<(), OutputError> {
        for e in events {
            let Some(m) = self.messages.message(e) else {
                continue;
            };
            let json = sluice_event::json::to_string(&Value::Object(m));
            let packed = crate::http::zlib(json.as_bytes(), 6);
            let id = fastrand::u64(..).to_le_bytes();
            let Some(datagrams) = crate::gelf::chunks(&packed, self.chunk_size, id) else {
                tracing::warn!(
                    bytes = packed.len(),
                    "gelf output: a message dropped: it needs more than 128 chunks of {} bytes",
                    self.chunk_size
                );
                continue;
            };
            for d in datagrams {
                if let Err(err) = self.socket.send_to(&d, self.target) {
                    tracing::warn!(
                        "gelf output: a message dropped, sending to {} failed: {err}",
                        self.target
                    );
                    break;
                }
            }
        }
        Ok(())
    }
}

impl Codec for Messages {
    fn decode(&mut self, _data: &[u8], _out: &mut Vec<Event>) {}

    /// A TCP message: uncompressed JSON and a zero byte.
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        if let Some(m) = self.message(event) {
            let _ = serde_json::to_writer(&mut *out, &Value::Object(m));
            out.push(0);
        }
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(self.clone())
    }
}

impl Messages {
    /// The GELF message of one event; `None` (logged) without a short message.
    fn message(&self, e: &Event) -> Option<Map> {
        let mut m = Map::new();
        let mut put = |k: &str, v: Value| {
            m.insert(Key::from(k), v);
        };
        let mut short = e
            .get(&FieldRef::top_level("message"))
            .map(Value::to_display_string);
        if let Some(v) = e.get(&self.short_message) {
            let v = match v {
                Value::Array(a) if a.len() == 1 => &a[0],
                v => v,
            };
            let s = v.to_display_string();
            if !s.is_empty() {
                short = Some(s);
            }
        }
        let Some(short) = short.filter(|s| !s.is_empty()) else {
            tracing::warn!(
                "gelf output: an event without a short message (neither {} nor message) dropped",
                self.short_message
            );
            return None;
        };
        put("version", Value::String("1.1".into()));
        put("short_message", Value::String(short.into()));
        put(
            "full_message",
            Value::String(self.full_message.render(e).into()),
        );
        put("host", Value::String(self.sender.render(e).into()));
        if let Some(t) = &self.facility {
            put("facility", Value::String(t.render(e).into()));
        }
        if let Some(t) = &self.file {
            put("file", Value::String(t.render(e).into()));
        }
        if let Some(t) = &self.line {
            let line = t.render(e);
            match line.parse::<i64>() {
                Ok(n) => put("line", Value::Int(n)),
                Err(_) => put("line", Value::String(line.into())),
            }
        }
        if self.ship_metadata {
            for (name, value) in e.fields() {
                if matches!(value, Value::Null) || &**name == "message" {
                    continue;
                }
                let mut name: &str = name.strip_prefix('_').unwrap_or(name);
                if name == "id" {
                    // `_id` is reserved in GELF: it goes as `__id`.
                    name = "_id";
                }
                if self.ignore.iter().any(|i| i == name) {
                    continue;
                }
                match value {
                    Value::Array(items) => {
                        put(&format!("_{name}"), Value::String(joined(items).into()))
                    }
                    Value::Object(entries) => {
                        for (k, v) in entries {
                            put(&format!("_{name}_{k}"), v.clone());
                        }
                    }
                    Value::Timestamp(t) => {
                        put(&format!("_{name}"), Value::String(t.to_iso8601().into()))
                    }
                    v => put(&format!("_{name}"), v.clone()),
                }
            }
        }
        if self.ship_tags {
            if let Some(Value::Array(tags)) = e.get(&FieldRef::top_level("tags")) {
                put("_tags", Value::String(joined(tags).into()));
            }
        }
        for (k, v) in &self.custom {
            if k != "id" {
                put(&format!("_{k}"), v.clone());
            }
        }
        put("level", Value::Int(self.level(e)));
        let millis = e.timestamp().map(|t| t.millis()).unwrap_or_default();
        put("timestamp", Value::Float(millis as f64 / 1000.0));
        Some(m)
    }

    /// The first `level` that resolves, as a syslog severity.
    fn level(&self, e: &Event) -> i64 {
        let mut level = String::new();
        for (t, dynamic) in &self.levels {
            let v = t.render(e);
            // A template naming a field the event lacks renders as written: next one.
            if *dynamic && v.contains("%{") {
                continue;
            }
            level = v;
            break;
        }
        match level.to_ascii_lowercase().as_str() {
            "debug" | "d" => 7,
            "info" | "i" | "informational" => 6,
            "notice" | "n" => 5,
            "warn" | "w" | "warning" => 4,
            "error" => 3,
            "critical" | "c" => 2,
            "alert" | "a" => 1,
            // Logstash's table has "e" twice; the later one, 0, is what it uses.
            "emergency" | "e" => 0,
            other => ruby_to_i(other),
        }
    }
}

/// As Ruby's `Array#join(", ")`: nested lists flattened, each item as text.
fn joined(items: &[Value]) -> String {
    fn walk(items: &[Value], out: &mut Vec<String>) {
        for i in items {
            match i {
                Value::Array(a) => walk(a, out),
                v => out.push(v.to_display_string()),
            }
        }
    }
    let mut parts = Vec::new();
    walk(items, &mut parts);
    parts.join(", ")
}

/// As Ruby's `String#to_i`: the leading integer, else 0.
fn ruby_to_i(s: &str) -> i64 {
    let s = s.trim_start();
    let (sign, digits) = match s.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, s.strip_prefix('+').unwrap_or(s)),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse::<i64>().map(|n| sign * n).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::ruby_to_i;

    #[test]
    fn levels_read_as_ruby_reads_them() {
        assert_eq!(ruby_to_i("3"), 3);
        assert_eq!(ruby_to_i(" 6x"), 6);
        assert_eq!(ruby_to_i("-2"), -2);
        assert_eq!(ruby_to_i("fatal"), 0);
    }
}

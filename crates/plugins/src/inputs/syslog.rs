//! `syslog`: RFC 3164 syslog over UDP and TCP on the same port, as Logstash's syslog input, plus
//! RFC 5424 (beyond Logstash, which needs a grok pattern for it).
//!
//! A datagram, or a line of a TCP connection (with its `\n`, as Logstash keeps it; a partial
//! last line is dropped), goes through the codec (`plain`), then:
//! 1. the sender's address goes to `host` (`[host][ip]` with ECS), and with ECS the text to
//!    `[event][original]`;
//! 2. grok with `grok_pattern` (`<%{POSINT:priority}>%{SYSLOGLINE}`, or its ECS form) on
//!    `syslog_field`, overwriting it;
//! 3. matched: the priority is decoded into facility and severity (codes, and with
//!    `use_labels` the labels of `facility_labels` / `severity_labels`), and `timestamp`
//!    parsed into `@timestamp` (`MMM dd HH:mm:ss`, `MMM  d HH:mm:ss`, `MMM d HH:mm:ss`,
//!    `ISO8601`, with `timezone` and `locale`; ECS removes `timestamp` then);
//! 4. not matched: an RFC 5424 header (`<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD MSG`) is
//!    read if there is one; otherwise the event is tagged `_grokparsefailure_sysloginput` and
//!    gets priority 13 (user-level, notice), as Logstash does.
//!
//! Fields without ECS: `priority`, `facility`, `severity`, `facility_label`,
//! `severity_label`, `logsource`, `program`, `pid`, `timestamp`; with ECS:
//! `[log][syslog][priority]`, `[log][syslog][facility][code|name]`,
//! `[log][syslog][severity][code|name]`, `[host][hostname]`, `[process][name|pid]`,
//! `[service][type]`. With `proxy_protocol`, a TCP connection's first line is a PROXY v1
//! header, and the address it names is the client's. RFC 5424 adds `msgid` and `structured_data` (`[log][syslog][msgid]`,
//! `[log][syslog][structured_data]`).

use std::net::UdpSocket;
use std::sync::Arc;
use std::time::Duration;

use sluice_event::{Event, FieldRef, Timestamp, Value};
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::{Codec, ConfigError, Filter, Input, InputContext, Options};
use tokio::io::AsyncReadExt;

use crate::ecs::Ecs;
use crate::filters::syslog_pri::{label, priority_of};
use crate::net::{self, Conn, Peer};

/// The syslog input's own labels (Logstash's: capitalised severities, `system` for 3).
const FACILITY_LABELS: [&str; 24] = [
    "kernel",
    "user-level",
    "mail",
    "system",
    "security/authorization",
    "syslogd",
    "line printer",
    "network news",
    "UUCP",
    "clock",
    "security/authorization",
    "FTP",
    "NTP",
    "log audit",
    "log alert",
    "clock",
    "local0",
    "local1",
    "local2",
    "local3",
    "local4",
    "local5",
    "local6",
    "local7",
];
const SEVERITY_LABELS: [&str; 8] = [
    "Emergency",
    "Alert",
    "Critical",
    "Error",
    "Warning",
    "Notice",
    "Informational",
    "Debug",
];

pub struct SyslogInput {
    host: String,
    port: u16,
    shared: Arc<Shared>,
}

/// The parts every connection and datagram shares; each thread clones the filters.
struct Shared {
    codec: std::sync::Mutex<Box<dyn Codec>>,
    grok: std::sync::Mutex<Box<dyn Filter>>,
    date: std::sync::Mutex<Box<dyn Filter>>,
    ecs: bool,
    syslog_field: FieldRef,
    use_labels: bool,
    facility_labels: Vec<String>,
    severity_labels: Vec<String>,
    service_type: String,
    /// TCP connections start with a PROXY v1 header naming the real client.
    proxy_protocol: bool,
    f: Fields,
    counters: Arc<NamedCounters>,
}

struct Fields {
    host: FieldRef,
    original: FieldRef,
    priority: FieldRef,
    facility: FieldRef,
    severity: FieldRef,
    facility_label: FieldRef,
    severity_label: FieldRef,
    timestamp: FieldRef,
    timestamp8601: FieldRef,
    service_type: FieldRef,
    hostname: FieldRef,
    program: FieldRef,
    pid: FieldRef,
    msgid: FieldRef,
    structured: FieldRef,
}

/// A per-thread copy of the filters and codec.
struct Relay {
    codec: Box<dyn Codec>,
    grok: Box<dyn Filter>,
    date: Box<dyn Filter>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let host = opts.string_or("host", "0.0.0.0")?;
    let port = net::port(opts, "port", Some(514))?;
    let ecs = Ecs::from_options(opts)?;
    let mode = if ecs.enabled() { "v1" } else { "disabled" };
    let syslog_field = opts.string_or("syslog_field", "message")?;
    let default_pattern = if ecs.enabled() {
        "<%{POSINT:[log][syslog][priority]:int}>%{SYSLOGLINE}"
    } else {
        "<%{POSINT:priority}>%{SYSLOGLINE}"
    };
    let pattern = opts.string_or("grok_pattern", default_pattern)?;
    let use_labels = opts.boolean_or("use_labels", true)?;
    let labels = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let facility_labels = opts
        .string_list("facility_labels")?
        .unwrap_or_else(|| labels(&FACILITY_LABELS));
    let severity_labels = opts
        .string_list("severity_labels")?
        .unwrap_or_else(|| labels(&SEVERITY_LABELS));
    let timezone = opts.string("timezone")?;
    let locale = opts.string("locale")?;
    let service_type = opts.string_or("service_type", "system")?;
    let proxy_protocol = opts.boolean_or("proxy_protocol", false)?;
    let codec = opts.codec("plain")?;
    let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let mut date_extra = String::new();
    if let Some(tz) = &timezone {
        date_extra.push_str(&format!(" timezone => {}", quote(tz)));
    }
    if let Some(l) = &locale {
        date_extra.push_str(&format!(" locale => {}", quote(l)));
    }
    let snippet = format!(
        "filter {{
           grok {{ match => {{ {field} => {pattern} }} overwrite => [{field}]
                   tag_on_failure => [] ecs_compatibility => {mode} }}
           date {{ match => [\"timestamp\", \"MMM dd HH:mm:ss\", \"MMM  d HH:mm:ss\", \"MMM d HH:mm:ss\", \"ISO8601\"]{date_extra} }}
         }}",
        field = quote(&syslog_field),
        pattern = quote(&pattern),
    );
    let config = sluice_config::parse("syslog input", &snippet)
        .map_err(|e| opts.error("grok_pattern", e.to_string()))?;
    let compiled = sluice_pipeline::graph::compile(&config, &crate::registry())
        .map_err(|e| opts.error("grok_pattern", e.to_string()))?;
    let mut filters = compiled.filters.into_iter().map(|b| b.filter);
    let (Some(grok), Some(date)) = (filters.next(), filters.next()) else {
        return Err(opts.plugin_error("syslog input: internal filters missing"));
    };
    let f = |s: &str| FieldRef::parse(s).expect("a valid field reference");
    let fields = if ecs.enabled() {
        Fields {
            host: f("[host][ip]"),
            original: f("[event][original]"),
            priority: f("[log][syslog][priority]"),
            facility: f("[log][syslog][facility][code]"),
            severity: f("[log][syslog][severity][code]"),
            facility_label: f("[log][syslog][facility][name]"),
            severity_label: f("[log][syslog][severity][name]"),
            timestamp: f("timestamp"),
            timestamp8601: f("timestamp8601"),
            service_type: f("[service][type]"),
            hostname: f("[host][hostname]"),
            program: f("[process][name]"),
            pid: f("[process][pid]"),
            msgid: f("[log][syslog][msgid]"),
            structured: f("[log][syslog][structured_data]"),
        }
    } else {
        Fields {
            host: f("host"),
            original: f("[event][original]"),
            priority: f("priority"),
            facility: f("facility"),
            severity: f("severity"),
            facility_label: f("facility_label"),
            severity_label: f("severity_label"),
            timestamp: f("timestamp"),
            timestamp8601: f("timestamp8601"),
            service_type: f("[service][type]"),
            hostname: f("logsource"),
            program: f("program"),
            pid: f("pid"),
            msgid: f("msgid"),
            structured: f("structured_data"),
        }
    };
    let syslog_field =
        FieldRef::parse(&syslog_field).map_err(|e| opts.error("syslog_field", e.to_string()))?;
    Ok(Box::new(SyslogInput {
        host,
        port,
        shared: Arc::new(Shared {
            codec: std::sync::Mutex::new(codec),
            grok: std::sync::Mutex::new(grok),
            date: std::sync::Mutex::new(date),
            ecs: ecs.enabled(),
            syslog_field,
            use_labels,
            facility_labels,
            severity_labels,
            service_type,
            proxy_protocol,
            f: fields,
            counters: Arc::new(NamedCounters::with_paths(&[
                "current_connections",
                "peak_connections",
            ])),
        }),
    }))
}

impl Shared {
    fn relay(&self) -> Relay {
        let lock = |m: &std::sync::Mutex<Box<dyn Filter>>| {
            m.lock().unwrap_or_else(|e| e.into_inner()).clone_box()
        };
        Relay {
            codec: (self.codec.lock())
                .unwrap_or_else(|e| e.into_inner())
                .clone_box(),
            grok: lock(&self.grok),
            date: lock(&self.date),
        }
    }

    /// Decodes one message (a datagram or a line) from `ip` into `out`.
    fn message(&self, relay: &mut Relay, bytes: &[u8], ip: &str, out: &mut Vec<Event>) {
        let first = out.len();
        relay.codec.decode(bytes, out);
        relay.codec.flush(out);
        let mut emit = Vec::new();
        for e in &mut out[first..] {
            e.set(&self.f.host, Value::String(ip.into()));
            if self.ecs {
                if let Some(v) = e.get(&self.syslog_field).cloned() {
                    e.set(&self.f.original, v);
                }
            }
            let matched = relay.grok.filter(e, &mut emit);
            if self.ecs && e.get(&self.f.service_type).is_none() {
                e.set(
                    &self.f.service_type,
                    Value::String(self.service_type.as_str().into()),
                );
            }
            if matched {
                let pri = match e.get(&self.f.priority) {
                    // Ruby's `nil.to_i` is 0; only what has no to_i falls back to 13.
                    None | Some(Value::Null) => 0,
                    Some(Value::Object(_)) => 13,
                    v => priority_of(v),
                };
                self.set_priority(e, pri);
                if !self.ecs {
                    if let Some(t) = e.get(&self.f.timestamp8601).cloned() {
                        e.set(&self.f.timestamp, t);
                    }
                }
                relay.date.filter(e, &mut emit);
                if self.ecs {
                    e.remove(&self.f.timestamp);
                }
            } else if !self.rfc5424(e) {
                e.add_tag("_grokparsefailure_sysloginput");
                self.set_priority(e, 13);
            }
        }
    }

    fn set_priority(&self, e: &mut Event, pri: i64) {
        let (severity, facility) = (pri & 7, pri >> 3);
        e.set(&self.f.priority, Value::Int(pri));
        e.set(&self.f.severity, Value::Int(severity));
        e.set(&self.f.facility, Value::Int(facility));
        if self.use_labels {
            if let Some(l) = label(&self.facility_labels, facility) {
                e.set(&self.f.facility_label, Value::String(l.into()));
            }
            if let Some(l) = label(&self.severity_labels, severity) {
                e.set(&self.f.severity_label, Value::String(l.into()));
            }
        }
    }

    /// Reads an RFC 5424 message (`<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD MSG`) from the
    /// syslog field; false (nothing changed) when it is not one.
    fn rfc5424(&self, e: &mut Event) -> bool {
        let Some(text) = e.get(&self.syslog_field).and_then(Value::as_str) else {
            return false;
        };
        let text = text.trim_end_matches(['\n', '\r']);
        let Some(r) = parse_rfc5424(text) else {
            return false;
        };
        let nil = |s: &str| (s != "-").then(|| s.to_owned());
        let (host, app, procid, msgid) = (nil(r.host), nil(r.app), nil(r.procid), nil(r.msgid));
        let sd = nil(r.structured);
        let message = r.message.to_owned();
        let ts = (r.timestamp != "-")
            .then(|| Timestamp::parse_iso8601(r.timestamp))
            .flatten();
        self.set_priority(e, r.pri);
        if let Some(h) = host {
            e.set(&self.f.hostname, Value::String(h.into()));
        }
        if let Some(a) = app {
            e.set(&self.f.program, Value::String(a.into()));
        }
        if let Some(p) = procid {
            let v = match p.parse::<i64>() {
                Ok(n) if self.ecs => Value::Int(n),
                _ => Value::String(p.into()),
            };
            e.set(&self.f.pid, v);
        }
        if let Some(m) = msgid {
            e.set(&self.f.msgid, Value::String(m.into()));
        }
        if let Some(s) = sd {
            e.set(&self.f.structured, Value::String(s.into()));
        }
        if let Some(t) = ts {
            e.set_field("@timestamp", Value::Timestamp(t));
        }
        e.set(&self.syslog_field, Value::String(message.into()));
        true
    }
}

/// The parts of an RFC 5424 message.
struct Rfc5424<'a> {
    pri: i64,
    timestamp: &'a str,
    host: &'a str,
    app: &'a str,
    procid: &'a str,
    msgid: &'a str,
    structured: &'a str,
    message: &'a str,
}

fn parse_rfc5424(text: &str) -> Option<Rfc5424<'_>> {
    let rest = text.strip_prefix('<')?;
    let end = rest.find('>')?;
    let pri: i64 = rest[..end].parse().ok().filter(|p| (0..=191).contains(p))?;
    let rest = rest[end + 1..].strip_prefix("1 ")?;
    let mut parts = rest.splitn(6, ' ');
    let timestamp = parts.next()?;
    let host = parts.next()?;
    let app = parts.next()?;
    let procid = parts.next()?;
    let msgid = parts.next()?;
    let rest = parts.next().unwrap_or("");
    // Structured data: `-`, or one or more `[...]` elements (`]` escaped as `\]`).
    let (structured, message) = if let Some(after) = rest.strip_prefix('-') {
        ("-", after.strip_prefix(' ').unwrap_or(after))
    } else if rest.starts_with('[') {
        let b = rest.as_bytes();
        let mut i = 0;
        while i < b.len() && b[i] == b'[' {
            i += 1;
            while i < b.len() && b[i] != b']' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        }
        let i = i.min(b.len());
        let after = &rest[i..];
        (&rest[..i], after.strip_prefix(' ').unwrap_or(after))
    } else {
        return None;
    };
    // An optional BOM before a UTF-8 message.
    let message = message.strip_prefix('\u{feff}').unwrap_or(message);
    Some(Rfc5424 {
        pri,
        timestamp,
        host,
        app,
        procid,
        msgid,
        structured,
        message,
    })
}

impl Input for SyslogInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let addr = net::address(&self.host, self.port);
        let udp = UdpSocket::bind(&addr)
            .map_err(|e| format!("syslog input: cannot listen on udp {addr}: {e}"))?;
        udp.set_read_timeout(Some(Duration::from_millis(200)))
            .map_err(|e| format!("syslog input: {e}"))?;
        let rt = net::runtime("syslog", 1)?;
        let listener = rt.block_on(net::bind("syslog", &self.host, self.port))?;
        tracing::info!(address = %addr, "syslog input listening (udp and tcp)");
        let shared = Arc::clone(&self.shared);
        std::thread::scope(|scope| {
            let udp_shared = Arc::clone(&shared);
            scope.spawn(move || udp_loop(udp, &udp_shared, ctx));
            rt.block_on(net::serve(
                "syslog",
                listener,
                None,
                false,
                ctx,
                move |conn, peer, ctx| tcp_connection(conn, peer, Arc::clone(&shared), ctx),
            ));
        });
        rt.shutdown_timeout(Duration::from_secs(1));
        Ok(())
    }

    fn counters(&self) -> Option<Arc<NamedCounters>> {
        Some(Arc::clone(&self.shared.counters))
    }
}

fn udp_loop(socket: UdpSocket, shared: &Shared, ctx: &InputContext) {
    let mut relay = shared.relay();
    let mut buf = vec![0u8; 65507];
    while !ctx.is_stopping() {
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => {
                let mut events = Vec::new();
                shared.message(&mut relay, &buf[..n], &from.ip().to_string(), &mut events);
                if ctx.push(events).is_err() {
                    return;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => {
                tracing::warn!("syslog input: udp read failed: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

async fn tcp_connection(
    mut conn: Box<dyn Conn>,
    peer: Peer,
    shared: Arc<Shared>,
    ctx: InputContext,
) {
    let c = &shared.counters;
    c.add_with_peak("current_connections", 1, "peak_connections");
    let mut relay = shared.relay();
    let mut ip = peer.addr.ip().to_string();
    let mut buf: Vec<u8> = Vec::new();
    let mut header_pending = shared.proxy_protocol;
    let mut chunk = net::ReadBuffer::default();
    let mut stop = std::pin::pin!(ctx.stopped());
    loop {
        let n = tokio::select! {
            r = conn.read(chunk.space()) => match r {
                Ok(n) => n,
                Err(e) => {
                    tracing::debug!(client = %peer.addr, "syslog input: {e}");
                    0
                }
            },
            _ = &mut stop => 0,
        };
        if n == 0 {
            // As Logstash: a partial last line is dropped.
            break;
        }
        buf.extend_from_slice(chunk.get(n));
        chunk.filled(n);
        if header_pending {
            // As Logstash: the first line must be the PROXY header; its source is the client.
            let Some(end) = buf.iter().position(|&b| b == b'\n') else {
                if buf.len() > 107 {
                    tracing::warn!(client = %peer.addr, "syslog input: no PROXY protocol header; closing the connection");
                    break;
                }
                continue;
            };
            let header = String::from_utf8_lossy(&buf[..end]).into_owned();
            let parts: Vec<&str> = header.split_whitespace().collect();
            if parts.first() != Some(&"PROXY") || parts.len() < 3 {
                tracing::warn!(client = %peer.addr, "syslog input: expected a PROXY protocol header, got {header:?}; closing the connection");
                break;
            }
            ip = parts[2].to_owned();
            buf.drain(..end + 1);
            header_pending = false;
        }
        // Only the new bytes can hold the end of the pending line.
        if !buf[buf.len().saturating_sub(n)..].contains(&b'\n') {
            if buf.len() > 16 << 20 {
                tracing::warn!(client = %peer.addr, "syslog input: a line of more than 16 MiB; closing the connection");
                break;
            }
            continue;
        }
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(i) = buf[start..].iter().position(|&b| b == b'\n') {
            let line = &buf[start..start + i + 1];
            shared.message(&mut relay, line, &ip, &mut events);
            start += i + 1;
        }
        buf.drain(..start);
        if buf.len() > 16 << 20 {
            tracing::warn!(client = %peer.addr, "syslog input: a line of more than 16 MiB; closing the connection");
            break;
        }
        if net::push(&ctx, events).await.is_err() {
            break;
        }
    }
    c.sub("current_connections", 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc5424_headers() {
        let r = parse_rfc5424(
            r#"<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventID="1011"] An application event"#,
        )
        .unwrap();
        assert_eq!(r.pri, 165);
        assert_eq!(r.host, "mymachine.example.com");
        assert_eq!(r.app, "evntslog");
        assert_eq!(r.procid, "-");
        assert_eq!(r.msgid, "ID47");
        assert_eq!(
            r.structured,
            r#"[exampleSDID@32473 iut="3" eventID="1011"]"#
        );
        assert_eq!(r.message, "An application event");
        let r =
            parse_rfc5424("<34>1 2003-10-11T22:14:15Z host app 1234 - - \u{feff}hello").unwrap();
        assert_eq!((r.procid, r.structured, r.message), ("1234", "-", "hello"));
        assert!(parse_rfc5424("<34>Oct 11 22:14:15 host app: hello").is_none());
        assert!(parse_rfc5424("<999>1 - - - - - -").is_none());
    }
}

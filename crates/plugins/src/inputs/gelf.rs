//! `gelf`: GELF messages (see [`crate::gelf`]) as events, as Logstash's gelf input.
//!
//! UDP (`use_udp`, on by default, `port_udp` or `port`): one thread reads the socket, puts
//! chunks back together ([`Reassembler`], bounded in time and memory), opens compressed
//! messages, and queues what one wake-up found as one batch. TCP (`use_tcp`, `port_tcp` or
//! `port`): zero-byte-ended JSON messages on each connection, queued per read; the connection
//! reads nothing more while the queue is full.
//!
//! Each message's JSON object becomes the event, then as Logstash: `source_host` is the
//! sender's address; a numeric `timestamp` (seconds) becomes `@timestamp`; with `remap`,
//! `full_message` (or else `short_message`) becomes `message`; with
//! `strip_leading_underscore`, `_foo` becomes `foo`. A UDP message that is not JSON becomes
//! an event with the text in `message`, tagged `_jsonparsefailure`; a TCP one is logged and
//! skipped. What could not be read is counted in `/_node/stats`: `invalid_messages`, and
//! `incomplete_messages` for chunked messages that timed out or were dropped to bound memory.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_event::{Event, FieldRef, Key, Timestamp, Value};
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::{ConfigError, Input, InputContext, Options};
use tokio::io::AsyncReadExt;

use crate::gelf::{decompress, Datagram, Reassembler};
use crate::net::{self, Conn, Peer};

pub struct GelfInput {
    shared: Arc<Shared>,
    host: String,
    udp: Option<u16>,
    tcp: Option<u16>,
}

struct Shared {
    remap: bool,
    strip: bool,
    counters: Arc<NamedCounters>,
}

/// The longest TCP message without its zero byte before the connection is closed.
const MAX_TCP_MESSAGE: usize = crate::gelf::MAX_MESSAGE_BYTES;

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let host = opts.string_or("host", "0.0.0.0")?;
    let port = crate::net::port(opts, "port", Some(12201))?;
    let port_udp = crate::net::port(opts, "port_udp", Some(port))?;
    let port_tcp = crate::net::port(opts, "port_tcp", Some(port))?;
    let use_udp = opts.boolean_or("use_udp", true)?;
    let use_tcp = opts.boolean_or("use_tcp", false)?;
    if !use_udp && !use_tcp {
        return Err(opts.plugin_error(
            "gelf input: use_udp and use_tcp are both false; it would listen on nothing",
        ));
    }
    let remap = opts.boolean_or("remap", true)?;
    let strip = opts.boolean_or("strip_leading_underscore", true)?;
    // Read as every input's, though GELF's fields are the same in both modes.
    crate::ecs::Ecs::from_options(opts)?;
    // Logstash's gelf input takes a codec and does not use it: the same here.
    opts.codec("plain")?;
    Ok(Box::new(GelfInput {
        shared: Arc::new(Shared {
            remap,
            strip,
            counters: Arc::new(NamedCounters::with_paths(&[
                "invalid_messages",
                "incomplete_messages",
            ])),
        }),
        host,
        udp: use_udp.then_some(port_udp),
        tcp: use_tcp.then_some(port_tcp),
    }))
}

impl Input for GelfInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let socket = match self.udp {
            None => None,
            Some(port) => {
                let addr = net::address(&self.host, port);
                Some(super::udp::listen("gelf", &addr)?)
            }
        };
        std::thread::scope(|scope| {
            if let Some(socket) = socket {
                let shared = Arc::clone(&self.shared);
                std::thread::Builder::new()
                    .name("gelf-udp".into())
                    .spawn_scoped(scope, move || read_udp(socket, &shared, ctx))
                    .map_err(|e| format!("gelf input: {e}"))?;
            }
            if let Some(port) = self.tcp {
                let listen = net::Listen {
                    input: "gelf",
                    host: self.host.clone(),
                    port,
                    tls: None,
                    keep_alive: true,
                    threads: 1,
                };
                let shared = Arc::clone(&self.shared);
                listen.run(ctx, move |conn, peer, ctx| {
                    let shared = Arc::clone(&shared);
                    async move { read_tcp(conn, peer, &shared, &ctx).await }
                })?;
            }
            Ok(())
        })
    }

    fn counters(&self) -> Option<Arc<NamedCounters>> {
        Some(Arc::clone(&self.shared.counters))
    }
}

/// The UDP thread: reads what is waiting (at most a batch's worth), queues it as one batch.
fn read_udp(socket: UdpSocket, shared: &Shared, ctx: &InputContext) {
    let mut buf = vec![0u8; 65536];
    let mut chunks = Reassembler::default();
    let mut events = Vec::new();
    let mut last_expiry = Instant::now();
    while !ctx.is_stopping() {
        let now = Instant::now();
        if now.duration_since(last_expiry) >= Duration::from_millis(500) {
            last_expiry = now;
            let expired = chunks.expire(now);
            if expired > 0 {
                shared.counters.add("incomplete_messages", expired);
            }
        }
        if !super::udp::wait_readable(&socket, 200) {
            continue;
        }
        let mut dropped = 0;
        super::udp::drain(&socket, &mut buf, BATCH, "gelf", |data, from| {
            let message = match chunks.add(from, data, now, &mut dropped) {
                Datagram::Message(m) => m,
                Datagram::Pending => return,
                Datagram::Invalid(why) => return invalid(shared, from, &why),
            };
            match decompress(&message) {
                Ok(json) => {
                    if let Some(e) = shared.event(&json, from.ip(), true) {
                        events.push(e);
                    }
                }
                Err(why) => invalid(shared, from, &why),
            }
        });
        if dropped > 0 {
            shared.counters.add("incomplete_messages", dropped);
            tracing::warn!(
                dropped,
                "gelf input: incomplete chunked messages dropped: they held more than {} MiB",
                crate::gelf::MAX_PENDING_BYTES >> 20
            );
        }
        if !events.is_empty() && ctx.push(std::mem::take(&mut events)).is_err() {
            return;
        }
    }
}

/// Datagrams read per batch at most.
const BATCH: usize = 1000;

fn invalid(shared: &Shared, from: SocketAddr, why: &str) {
    shared.counters.add("invalid_messages", 1);
    tracing::warn!(sender = %from, "gelf input: a message skipped: {why}");
}

/// One TCP connection: zero-byte-ended messages until it closes or the pipeline stops.
async fn read_tcp(mut conn: Box<dyn Conn>, peer: Peer, shared: &Shared, ctx: &InputContext) {
    let mut stop = std::pin::pin!(ctx.stopped());
    let mut buf = net::ReadBuffer::default();
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let n = tokio::select! {
            r = conn.read(buf.space()) => match r {
                Ok(n) => n,
                Err(e) => {
                    tracing::warn!(client = %peer.addr, "gelf input: reading failed: {e}");
                    0
                }
            },
            _ = &mut stop => 0,
        };
        buf.filled(n);
        let mut events = Vec::new();
        if n == 0 {
            // What came without its zero byte, at the end, is a message too (as Logstash's
            // `gets`).
            if !pending.trim_ascii().is_empty() {
                events.extend(shared.event(&pending, peer.addr.ip(), false));
            }
            let _ = net::push(ctx, events).await;
            return;
        }
        pending.extend_from_slice(buf.get(n));
        let mut start = 0;
        while let Some(end) = memchr::memchr(0, &pending[start..]) {
            let message = &pending[start..start + end];
            if !message.trim_ascii().is_empty() {
                events.extend(shared.event(message, peer.addr.ip(), false));
            }
            start += end + 1;
        }
        pending.drain(..start);
        if pending.len() > MAX_TCP_MESSAGE {
            shared.counters.add("invalid_messages", 1);
            tracing::warn!(client = %peer.addr, "gelf input: closing the connection: a message of more than {MAX_TCP_MESSAGE} bytes without its zero byte");
            let _ = net::push(ctx, events).await;
            return;
        }
        if net::push(ctx, events).await.is_err() {
            return;
        }
    }
}

impl Shared {
    /// The event of one message's JSON; `None` for a TCP message that is not JSON (counted).
    fn event(&self, json: &[u8], from: IpAddr, udp: bool) -> Option<Event> {
        let parsed = sluice_event::json::parse(json);
        let mut e = match parsed {
            Ok(Value::Object(m)) => Event::from_map(m),
            Ok(Value::Array(items)) if matches!(items.first(), Some(Value::Object(_))) => {
                match items.into_iter().next() {
                    Some(Value::Object(m)) => Event::from_map(m),
                    _ => unreachable!("matched above"),
                }
            }
            other => {
                let why = match other {
                    Err(e) => e.to_string(),
                    Ok(_) => "not a JSON object".to_owned(),
                };
                let text = String::from_utf8_lossy(json).into_owned();
                self.counters.add("invalid_messages", 1);
                if !udp {
                    tracing::warn!(client = %from, data = %text, "gelf input: a message that is not JSON skipped: {why}");
                    return None;
                }
                tracing::warn!(client = %from, data = %text, "gelf input: JSON parse failure, falling back to plain text: {why}");
                let mut e = Event::with_message(text);
                e.add_tag("_jsonparsefailure");
                e.add_tag("_fromjsonparser");
                e
            }
        };
        let fields = e.fields_mut();
        fields.insert(
            Key::from("source_host"),
            Value::String(from.to_string().into()),
        );
        let seconds = match fields.get(&Key::from("timestamp")) {
            Some(Value::Int(i)) => Some(*i as f64),
            Some(Value::Float(f)) => Some(*f),
            Some(Value::BigInt(b)) => Some(b.get() as f64),
            Some(Value::Decimal(d)) => d.parse::<f64>().ok(),
            _ => None,
        };
        if let Some(s) = seconds.filter(|s| s.is_finite()) {
            // Microseconds first, so that 1.7e9's float error does not lose a millisecond.
            let micros = (s * 1e6).round() as i64;
            fields.remove(&Key::from("timestamp"));
            e.set_timestamp(Timestamp::from_millis(micros.div_euclid(1000)));
        }
        if self.remap {
            remap(&mut e);
        }
        if self.strip {
            let fields = e.fields_mut();
            let underscored: Vec<Key> = fields
                .keys()
                .filter(|k| k.starts_with('_') && k.len() > 1 && !k.starts_with("_@"))
                .cloned()
                .collect();
            for k in underscored {
                if let Some(v) = fields.remove(&k) {
                    fields.insert(Key::from(&k[1..]), v);
                }
            }
        }
        Some(e)
    }
}

/// `full_message` (or else `short_message`), when not empty, becomes `message`; a
/// `short_message` equal to the full one goes too.
fn remap(e: &mut Event) {
    let message = FieldRef::top_level("message");
    let full = FieldRef::top_level("full_message");
    let short = FieldRef::top_level("short_message");
    let non_empty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::Array(a)) if a.is_empty() => None,
        Some(v) => Some(v.clone()),
    };
    if let Some(v) = non_empty(e.get(&full)) {
        e.set(&message, v.clone());
        e.remove(&full);
        if e.get(&short) == Some(&v) {
            e.remove(&short);
        }
    } else if let Some(v) = non_empty(e.get(&short)) {
        e.set(&message, v);
        e.remove(&short);
    }
}

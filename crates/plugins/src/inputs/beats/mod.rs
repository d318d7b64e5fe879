//! `beats`: the Lumberjack server that Filebeat, Winlogbeat, Metricbeat and Elastic Agent send
//! to (see [`protocol`] for the frames), as Logstash's beats input behaves.
//!
//! Each connection is a task on the input's tokio runtime ([`crate::net`]). A client announces a
//! window of N events, sends them (JSON frames, v1 key/value frames, either of them inside zlib
//! frames), and waits for an ACK. The window's events are queued as one batch, and only then is
//! the ACK sent, with the window's highest sequence: with the persisted queue and
//! `queue.checkpoint.writes: 1`, an acknowledged event is on disk. While a batch waits for room
//! in a full queue the connection reads nothing more and sends a keep-alive (an ACK of
//! sequence 0) every 5 seconds, as Logstash does, so that the client waits instead of timing
//! out and sending again. A malformed frame closes its connection (with a log line); the other
//! connections go on. A connection with no traffic either way for `client_inactivity_timeout`
//! seconds is closed.
//!
//! Events, as Logstash 8 makes them: a payload with `message` (or `line`, from v1 frames) is
//! decoded by the codec (`plain`: the text becomes `message`, and `[event][original]` with
//! ECS), then gets the payload's other fields (objects merged one level deep; `@metadata`
//! into the metadata) and `@timestamp`, and the tag `beats_input_codec_<codec>_applied`. A
//! payload without either is taken as it is, tagged `beats_input_raw_event`. The client's
//! address goes in `[@metadata][input][beats][host][ip]` (`[@metadata][ip_address]` without
//! ECS). `enrich` picks which of these are added.

pub mod protocol;

use std::sync::Arc;
use std::time::Duration;

use sluice_event::{Event, FieldRef, Key, Map, Str, Timestamp, Value};
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::ecs::Ecs;
use crate::net::{self, Conn, Peer};
use protocol::{Frame, ProtocolError};

/// The largest window taken: events are held until their window is complete, so a client
/// announcing millions (or sending frames without a window) cannot make us hold them all.
/// Beats send at most a few thousand (`bulk_max_size`); go-lumber's own server takes 10,000.
const MAX_WINDOW: u32 = 100_000;

/// How often a keep-alive goes out while a window waits for the queue (Logstash: 5 s).
const KEEP_ALIVE: Duration = Duration::from_secs(5);

pub struct BeatsInput {
    listen: net::Listen,
    shared: Arc<Shared>,
}

/// What every connection reads (and counts into).
struct Shared {
    /// The codec each connection gets a copy of.
    codec: std::sync::Mutex<Box<dyn Codec>>,
    /// `beats_input_codec_<codec>_applied`.
    /// Kept once for the process ([`sluice_event::value::constant_str`]): every event gets
    /// it without a copy.
    codec_tag: Str,
    /// The codec is `plain`, whose decoding of `message` is known (the text in `message`, and
    /// in `[event][original]` when this is true): the payload becomes the event directly,
    /// without copying its fields into a decoded one.
    plain: Option<bool>,
    include_codec_tag: bool,
    source_metadata: bool,
    /// No `codec_metadata` and no explicit codec: the default plain codec without ECS fields.
    strip_original: bool,
    add_hostname: bool,
    ip_field: FieldRef,
    hostname_target: FieldRef,
    beat_hostname: FieldRef,
    original: FieldRef,
    inactivity: Option<Duration>,
    max_frame: usize,
    /// `enrich => ssl_peer_metadata`: where the client's TLS details go.
    peer_fields: Option<PeerFields>,
    counters: Arc<NamedCounters>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    opts.reject_obsolete(&[
        ("ssl", "ssl_enabled"),
        ("ssl_verify_mode", "ssl_client_authentication"),
        ("ssl_peer_metadata", "enrich => ssl_peer_metadata"),
        ("cipher_suites", "ssl_cipher_suites"),
        ("tls_min_version", "ssl_supported_protocols"),
        ("tls_max_version", "ssl_supported_protocols"),
    ])?;
    let host = opts.string_or("host", "0.0.0.0")?;
    let port = net::port(opts, "port", None)?;
    let ecs = Ecs::from_options(opts)?;
    let enrich_given = opts.has("enrich");
    let enrich = opts
        .string_list("enrich")?
        .unwrap_or_else(|| vec!["codec_metadata".into(), "source_metadata".into()]);
    const ENRICH: [&str; 5] = [
        "codec_metadata",
        "source_metadata",
        "ssl_peer_metadata",
        "all",
        "none",
    ];
    for e in &enrich {
        if !ENRICH.contains(&e.as_str()) {
            return Err(opts.error(
                "enrich",
                format!("unknown value {e:?} (expected codec_metadata, source_metadata, ssl_peer_metadata, all or none)"),
            ));
        }
    }
    if enrich.len() > 1 && enrich.iter().any(|e| e == "all" || e == "none") {
        return Err(opts.error("enrich", "`all` and `none` must be the only value"));
    }
    let has = |what: &str| {
        enrich.iter().any(|e| e == what || e == "all") && !enrich.iter().any(|e| e == "none")
    };
    let peer_metadata = has("ssl_peer_metadata");
    if peer_metadata
        && !matches!(
            opts.string("ssl_client_authentication")?.as_deref(),
            Some("optional") | Some("required")
        )
    {
        return Err(opts.error(
            "enrich",
            "ssl_peer_metadata needs ssl_client_authentication set to optional or required",
        ));
    }
    let explicit_tag = opts.boolean("include_codec_tag")?;
    if explicit_tag.is_some() && enrich_given {
        return Err(opts.error(
            "include_codec_tag",
            "cannot be set together with enrich (use enrich => codec_metadata)",
        ));
    }
    let include_codec_tag = explicit_tag.unwrap_or_else(|| has("codec_metadata"));
    let explicit_codec = opts.has("codec");
    let (codec_name, codec) = opts.codec_with_name("plain")?;
    let strip_original = !has("codec_metadata") && !explicit_codec;
    let plain = (codec_name == "plain").then(|| {
        let mut probe = Vec::new();
        codec.clone_box().decode(b"x", &mut probe);
        let original = FieldRef::parse("[event][original]").expect("a valid field reference");
        probe.first().is_some_and(|e| e.get(&original).is_some()) && !strip_original
    });
    let add_hostname = opts.boolean_or("add_hostname", false)?;
    if add_hostname {
        tracing::warn!("beats input: add_hostname is deprecated (as in Logstash)");
    }
    let inactivity = opts.int("client_inactivity_timeout")?.unwrap_or(60);
    if inactivity < 0 {
        return Err(opts.error(
            "client_inactivity_timeout",
            "must be 0 (never) or more seconds",
        ));
    }
    let threads = match opts.int("executor_threads")? {
        Some(n) if n < 1 => return Err(opts.error("executor_threads", "must be at least 1")),
        Some(n) => n as usize,
        None => std::thread::available_parallelism().map_or(2, |n| n.get()),
    };
    if let Some(n) = opts.int("event_loop_threads")? {
        if n < 0 {
            return Err(opts.error("event_loop_threads", "must be 0 (the default) or more"));
        }
    }
    let max_frame = match opts.string("max_frame_size")? {
        None => 100 << 20,
        Some(t) => sluice_config::parse_size(&t)
            .map_err(|e| opts.error("max_frame_size", e))?
            .clamp(1, u32::MAX as u64) as usize,
    };
    let field = |s: &str| FieldRef::parse(s).expect("a valid field reference");
    let tls = crate::tls::read_server(opts)?;
    let peer_fields = (peer_metadata && tls.is_some()).then(|| {
        if ecs.enabled() {
            PeerFields {
                status: field("[@metadata][tls_peer][status]"),
                protocol: field("[@metadata][input][beats][tls][version_protocol]"),
                subject: field("[@metadata][input][beats][tls][client][subject]"),
                cipher: field("[@metadata][input][beats][tls][cipher]"),
            }
        } else {
            PeerFields {
                status: field("[@metadata][tls_peer][status]"),
                protocol: field("[@metadata][tls_peer][protocol]"),
                subject: field("[@metadata][tls_peer][subject]"),
                cipher: field("[@metadata][tls_peer][cipher_suite]"),
            }
        }
    });
    let (ip_field, hostname_target) = if ecs.enabled() {
        (
            field("[@metadata][input][beats][host][ip]"),
            field("[@metadata][input][beats][host][name]"),
        )
    } else {
        (field("[@metadata][ip_address]"), field("host"))
    };
    Ok(Box::new(BeatsInput {
        listen: net::Listen {
            input: "beats",
            host,
            port,
            tls,
            keep_alive: false,
            threads,
        },
        shared: Arc::new(Shared {
            plain,
            codec_tag: sluice_event::value::constant_str(&format!(
                "beats_input_codec_{codec_name}_applied"
            )),
            codec: std::sync::Mutex::new(codec),
            include_codec_tag,
            source_metadata: has("source_metadata"),
            strip_original,
            add_hostname,
            ip_field,
            hostname_target,
            beat_hostname: field("[beat][hostname]"),
            original: field("[event][original]"),
            inactivity: (inactivity > 0).then(|| Duration::from_secs(inactivity as u64)),
            max_frame,
            peer_fields,
            counters: Arc::new(NamedCounters::with_paths(&[
                "current_connections",
                "peak_connections",
            ])),
        }),
    }))
}

struct PeerFields {
    status: FieldRef,
    protocol: FieldRef,
    subject: FieldRef,
    cipher: FieldRef,
}

impl Input for BeatsInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let shared = Arc::clone(&self.shared);
        self.listen.run(ctx, move |conn, peer, ctx| {
            connection(conn, peer, Arc::clone(&shared), ctx)
        })
    }

    fn counters(&self) -> Option<Arc<NamedCounters>> {
        Some(Arc::clone(&self.shared.counters))
    }
}

/// One client's window being received.
struct Window {
    version: u8,
    size: u32,
    received: u32,
    highest: u32,
    events: Vec<Event>,
    /// The time its events without a `@timestamp` get: read when the window begins and at
    /// each read from the connection, not once per event (the clock was a twentieth of the
    /// input's time).
    now: Timestamp,
}

/// Serves one connection until it closes, errs, idles out, or the pipeline stops.
async fn connection(conn: Box<dyn Conn>, peer: Peer, shared: Arc<Shared>, ctx: InputContext) {
    let c = &shared.counters;
    c.add_with_peak("current_connections", 1, "peak_connections");
    let addr = peer.addr;
    match serve_connection(conn, &peer, &shared, &ctx).await {
        Ok(()) => tracing::debug!(client = %addr, "beats connection closed"),
        Err(e) => tracing::warn!(client = %addr, "beats input: closing the connection: {e}"),
    }
    c.sub("current_connections", 1);
}

async fn serve_connection(
    conn: Box<dyn Conn>,
    peer: &Peer,
    shared: &Shared,
    ctx: &InputContext,
) -> Result<(), String> {
    let (mut rd, mut wr) = tokio::io::split(conn);
    let mut codec = (shared.codec.lock())
        .unwrap_or_else(|e| e.into_inner())
        .clone_box();
    let ip = Client::new(
        peer.addr.ip().to_string(),
        peer_metadata(peer, shared),
        shared,
    );
    // Nothing is held for an idle connection but what it sent; the buffer grows with frames
    // and shrinks back after a large one.
    let mut buf: Vec<u8> = Vec::new();
    let mut window: Option<Window> = None;
    let mut stop = std::pin::pin!(ctx.stopped());
    loop {
        if ctx.is_stopping() {
            return Ok(());
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(buf.len().clamp(4096, 1 << 20));
        }
        let read = rd.read_buf(&mut buf);
        let n = match shared.inactivity {
            Some(limit) => tokio::select! {
                r = tokio::time::timeout(limit, read) => match r {
                    Ok(r) => r,
                    Err(_) => return Err(format!("no traffic for {} s (client_inactivity_timeout)", limit.as_secs())),
                },
                _ = &mut stop => return Ok(()),
            },
            None => tokio::select! {
                r = read => r,
                _ = &mut stop => return Ok(()),
            },
        }
        .map_err(|e| format!("reading: {e}"))?;
        if n == 0 {
            return Ok(());
        }
        if let Some(w) = &mut window {
            w.now = Timestamp::now();
        }
        let mut at = 0;
        let mut frames = Vec::new();
        loop {
            match protocol::parse(&buf[at..], shared.max_frame) {
                Ok(Some((frame, used))) => {
                    at += used;
                    frames.push(frame);
                }
                Ok(None) => break,
                Err(e) => return Err(protocol_error(e)),
            }
        }
        for frame in frames {
            if let Frame::Compressed { data, .. } = frame {
                let inflated = protocol::inflate(data, shared.max_frame).map_err(protocol_error)?;
                let inner =
                    protocol::parse_all(&inflated, shared.max_frame).map_err(protocol_error)?;
                for f in inner {
                    if matches!(f, Frame::Compressed { .. }) {
                        return Err(
                            "malformed frame: a compressed frame inside a compressed frame"
                                .to_owned(),
                        );
                    }
                    step(f, &mut window, &ip, shared, &mut *codec, &mut wr, ctx).await?;
                }
            } else {
                step(frame, &mut window, &ip, shared, &mut *codec, &mut wr, ctx).await?;
            }
        }
        buf.drain(..at);
        if buf.capacity() > 1 << 20 && buf.len() < 64 * 1024 {
            buf.shrink_to(64 * 1024);
        }
    }
}

/// Takes one (uncompressed) frame into the window; queues and acknowledges the window once
/// it is complete.
async fn step<W: AsyncWriteExt + Unpin>(
    frame: Frame<'_>,
    window: &mut Option<Window>,
    ip: &Client,
    shared: &Shared,
    codec: &mut dyn Codec,
    wr: &mut W,
    ctx: &InputContext,
) -> Result<(), String> {
    match frame {
        Frame::Compressed { .. } => unreachable!("inflated by the caller"),
        Frame::Window { version, count } => {
            if let Some(w) = window.take() {
                if !w.events.is_empty() {
                    tracing::debug!("beats input: a new window began before the last was complete; queueing what came");
                    finish(w, wr, ctx).await?;
                }
            }
            if count > MAX_WINDOW {
                return Err(format!(
                    "malformed frame: a window of {count} events (more than {MAX_WINDOW})"
                ));
            }
            if count == 0 {
                // As Logstash: an empty window gets the keep-alive ACK.
                send(wr, &protocol::ack(version, 0)).await?;
            } else {
                *window = Some(Window {
                    version,
                    size: count,
                    received: 0,
                    highest: 0,
                    events: Vec::with_capacity(count.min(4096) as usize),
                    now: Timestamp::now(),
                });
            }
        }
        Frame::Json { seq, payload } => {
            let w = window.get_or_insert_with(|| Window::unannounced(b'2'));
            let map = match sluice_event::json::parse(payload) {
                Ok(Value::Object(m)) => m,
                _ => return Err("a JSON frame does not hold a JSON object".to_owned()),
            };
            events_from(map, ip, shared, codec, w.now, &mut w.events);
            w.received += 1;
            w.highest = w.highest.max(seq);
        }
        Frame::Data {
            version,
            seq,
            pairs,
        } => {
            let w = window.get_or_insert_with(|| Window::unannounced(version));
            let mut map = Map::new();
            for (k, v) in pairs {
                map.insert(k.into(), Value::String(v.into()));
            }
            events_from(map, ip, shared, codec, w.now, &mut w.events);
            w.received += 1;
            w.highest = w.highest.max(seq);
        }
    }
    if window.as_ref().is_some_and(|w| w.received > MAX_WINDOW) {
        return Err(format!(
            "malformed frame: more than {MAX_WINDOW} events without a window that ends"
        ));
    }
    if window.as_ref().is_some_and(|w| w.received >= w.size) {
        if let Some(w) = window.take() {
            finish(w, wr, ctx).await?;
        }
    }
    Ok(())
}

impl Window {
    /// Events that came without a window frame (a client that announces none).
    fn unannounced(version: u8) -> Window {
        Window {
            version,
            size: u32::MAX,
            received: 0,
            highest: 0,
            events: Vec::new(),
            now: Timestamp::now(),
        }
    }
}

fn protocol_error(e: ProtocolError) -> String {
    format!("malformed frame: {e}")
}

async fn send<W: AsyncWriteExt + Unpin>(wr: &mut W, bytes: &[u8]) -> Result<(), String> {
    wr.write_all(bytes)
        .await
        .map_err(|e| format!("writing an ACK: {e}"))?;
    wr.flush().await.map_err(|e| format!("writing an ACK: {e}"))
}

/// Queues a complete window, sending keep-alives while the queue is full, then ACKs it.
async fn finish<W: AsyncWriteExt + Unpin>(
    w: Window,
    wr: &mut W,
    ctx: &InputContext,
) -> Result<(), String> {
    let version = w.version;
    let push = net::push(ctx, w.events);
    tokio::pin!(push);
    loop {
        tokio::select! {
            r = &mut push => {
                if r.is_err() {
                    // The pipeline is stopping and took nothing: no ACK, the client sends again.
                    return Err("the pipeline is stopping; the window is not acknowledged".to_owned());
                }
                break;
            }
            _ = tokio::time::sleep(KEEP_ALIVE) => {
                send(wr, &protocol::ack(b'2', 0)).await?;
            }
        }
    }
    send(wr, &protocol::ack(version, w.highest)).await
}

/// The events of one payload (see the module docs).
fn events_from(
    mut map: Map,
    ip: &Client,
    shared: &Shared,
    codec: &mut dyn Codec,
    now: Timestamp,
    out: &mut Vec<Event>,
) {
    let first = out.len();
    if let Some(original) = shared.plain {
        if let Some(e) = plain_event(map, original, shared, now) {
            out.push(e);
            return enrich(&mut out[first..], ip, shared);
        }
        return;
    }
    let target = map.remove("message").or_else(|| map.remove("line"));
    match target {
        Some(text) => {
            let text = match text {
                Value::String(s) => s.to_string(),
                other => other.to_display_string(),
            };
            codec.decode(text.as_bytes(), out);
            codec.flush(out);
            let ts = match map.remove("@timestamp") {
                Some(Value::String(s)) => {
                    let t = Timestamp::parse_iso8601(&s);
                    if t.is_none() {
                        tracing::warn!(value = %s, "beats input: unrecognized @timestamp; the event gets the current time");
                    }
                    t
                }
                Some(Value::Timestamp(t)) => Some(t),
                Some(other) => {
                    tracing::warn!(value = %other.to_display_string(), "beats input: unrecognized @timestamp; the event gets the current time");
                    None
                }
                None => None,
            };
            for e in &mut out[first..] {
                if shared.strip_original {
                    e.remove(&shared.original);
                }
                if let Some(t) = ts {
                    e.set_field("@timestamp", Value::Timestamp(t));
                }
                for (k, v) in map.iter() {
                    merge(e, k.as_ref(), v);
                }
                if shared.include_codec_tag {
                    e.add_tag_str(&shared.codec_tag);
                }
            }
        }
        None => {
            let mut e = Event::from_map_at(map, || now);
            if shared.include_codec_tag {
                e.add_tag("beats_input_raw_event");
            }
            out.push(e);
        }
    }
    enrich(&mut out[first..], ip, shared);
}

/// The payload as the plain codec would decode it: its text field stays `message` (`line`
/// becomes `message`), copied to `[event][original]` when `original` (unless the payload has
/// one: its values win, as in the merge), `@timestamp` parsed (an unrecognized one is logged
/// and replaced by now, without a tag), the codec tag added. `None` for nothing (never: a
/// payload always makes one event).
fn plain_event(mut map: Map, original: bool, shared: &Shared, now: Timestamp) -> Option<Event> {
    let message = sluice_event::key!("message");
    // A string `message` stays where it lies; `line`, or a `message` of another type,
    // becomes the string `message`.
    let text = match map.get_mut(&message) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            let text: Str = other.to_display_string().into();
            *other = Value::String(text.clone());
            text
        }
        None => match map.remove(&sluice_event::key!("line")) {
            None => {
                let mut e = Event::from_map_at(map, || now);
                if shared.include_codec_tag {
                    e.add_tag("beats_input_raw_event");
                }
                return Some(e);
            }
            Some(line) => {
                let text: Str = match line {
                    Value::String(s) => s,
                    other => other.to_display_string().into(),
                };
                map.insert(message, Value::String(text.clone()));
                text
            }
        },
    };
    let bad_ts = match map.get(&sluice_event::key!("@timestamp")) {
        Some(Value::String(s)) => Timestamp::parse_iso8601(s).is_none(),
        Some(Value::Timestamp(_)) | None => false,
        Some(_) => true,
    };
    if bad_ts {
        if let Some(v) = map.remove(&sluice_event::key!("@timestamp")) {
            tracing::warn!(value = %v.to_display_string(), "beats input: unrecognized @timestamp; the event gets the current time");
        }
    }
    let mut e = Event::from_map_at(map, || now);
    if original && e.get(&shared.original).is_none() {
        e.set(&shared.original, Value::String(text));
    }
    if shared.include_codec_tag {
        e.add_tag_str(&shared.codec_tag);
    }
    Some(e)
}

/// Where a connection's events come from.
pub struct Client {
    ip: String,
    /// `source_metadata`'s field as the one entry of the metadata it goes in (for
    /// `[@metadata][input][beats][host][ip]`, `input` and the maps under it), made once for
    /// the connection: an event whose metadata has no such entry gets a copy, without a
    /// walk down the field or an insert at each level.
    ip_entry: Option<(Key, Value)>,
    /// `ssl_peer_metadata`'s fields and values.
    tls: Vec<(FieldRef, Value)>,
}

impl Client {
    fn new(ip: String, tls: Vec<(FieldRef, Value)>, shared: &Shared) -> Client {
        Client {
            ip_entry: metadata_entry(&shared.ip_field, Value::String(ip.as_str().into())),
            ip,
            tls,
        }
    }
}

/// `enrich => ssl_peer_metadata`: the client's TLS details, as Logstash sets them.
fn peer_metadata(peer: &Peer, shared: &Shared) -> Vec<(FieldRef, Value)> {
    let (Some(f), Some((version, cipher))) = (&shared.peer_fields, &peer.tls) else {
        return Vec::new();
    };
    let s = |t: &str| Value::String(t.into());
    match peer.certificate.as_deref() {
        None => vec![(f.status.clone(), s("unverified"))],
        Some(der) => vec![
            (f.status.clone(), s("verified")),
            (f.protocol.clone(), s(version)),
            (
                f.subject.clone(),
                s(&crate::tls::subject(der).unwrap_or_default()),
            ),
            (f.cipher.clone(), s(cipher)),
        ],
    }
}

/// `source_metadata`, `ssl_peer_metadata` and `add_hostname`.
fn enrich(events: &mut [Event], ip: &Client, shared: &Shared) {
    for e in events {
        if shared.source_metadata {
            match &ip.ip_entry {
                Some((k, v)) if !e.metadata().contains_key(k) => {
                    e.metadata_mut().insert(k.clone(), v.clone());
                }
                _ => e.set(&shared.ip_field, Value::String(ip.ip.as_str().into())),
            }
        }
        for (f, v) in &ip.tls {
            e.set(f, v.clone());
        }
        if shared.add_hostname && e.get(&shared.hostname_target).is_none() {
            if let Some(h) = e.get(&shared.beat_hostname).cloned() {
                e.set(&shared.hostname_target, h);
            }
        }
    }
}

/// `field` (under `@metadata`) set to `value`, as the one entry of the metadata it makes:
/// `[@metadata][a][b]` → (`a`, `{b: value}`). `None` for a field outside the metadata.
fn metadata_entry(field: &FieldRef, value: Value) -> Option<(Key, Value)> {
    let mut e = Event::from_parts(Map::new(), Map::new());
    e.set(field, value);
    if !e.fields().is_empty() || e.metadata().len() != 1 {
        return None;
    }
    e.into_parts().1.into_iter().next()
}

/// Sets a payload field on a decoded event as Logstash's beats input does: an object over an
/// existing object is merged one level deep (the payload's values win); anything else
/// replaces. `@metadata` goes to the metadata.
fn merge(e: &mut Event, key: &str, v: &Value) {
    if key == "@metadata" {
        if let Value::Object(m) = v {
            for (k, v) in m.iter() {
                let r = FieldRef::metadata_field(k.as_ref());
                set_merged(e, &r, v);
            }
        }
        return;
    }
    set_merged(e, &FieldRef::top_level(key), v);
}

fn set_merged(e: &mut Event, r: &FieldRef, v: &Value) {
    match (e.get_mut(r), v) {
        (Some(Value::Object(existing)), Value::Object(new)) => {
            for (k, v) in new.iter() {
                existing.insert(k.clone(), v.clone());
            }
        }
        _ => e.set(r, v.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codecs::plain::Plain;

    fn shared(plain: Option<bool>, ecs: Ecs) -> Shared {
        let field = |s: &str| FieldRef::parse(s).unwrap();
        Shared {
            codec: std::sync::Mutex::new(Box::new(Plain::new(ecs))),
            codec_tag: "beats_input_codec_plain_applied".into(),
            plain,
            include_codec_tag: true,
            source_metadata: true,
            strip_original: false,
            add_hostname: false,
            ip_field: field("[@metadata][input][beats][host][ip]"),
            hostname_target: field("[@metadata][input][beats][host][name]"),
            beat_hostname: field("[beat][hostname]"),
            original: field("[event][original]"),
            inactivity: None,
            max_frame: 1 << 20,
            peer_fields: None,
            counters: Arc::default(),
        }
    }

    fn events(payload: &str, s: &Shared) -> Vec<Event> {
        let Ok(Value::Object(map)) = sluice_event::json::parse(payload.as_bytes()) else {
            panic!("{payload}")
        };
        let mut codec = s.codec.lock().unwrap().clone_box();
        let mut out = Vec::new();
        let client = Client::new("10.1.2.3".into(), Vec::new(), s);
        events_from(map, &client, s, &mut *codec, Timestamp::now(), &mut out);
        out
    }

    /// The client's address: copied in as the metadata's entry when the metadata has none
    /// of that name, set down the field when it has; either way what setting the field
    /// makes.
    #[test]
    fn the_client_address_is_what_setting_the_field_makes() {
        for ecs in [Ecs::V8, Ecs::Disabled] {
            let mut s = shared(Some(ecs.enabled()), ecs);
            if !ecs.enabled() {
                s.ip_field = FieldRef::parse("[@metadata][ip_address]").unwrap();
            }
            let client = Client::new("10.1.2.3".into(), Vec::new(), &s);
            let entry = client.ip_entry.as_ref().expect("a metadata field");
            let walked = Client {
                ip_entry: None,
                ..Client::new("10.1.2.3".into(), Vec::new(), &s)
            };
            for payload in [
                r#"{"message":"m","@timestamp":"2026-11-24T10:00:00Z"}"#,
                r#"{"message":"m","@timestamp":"2026-11-24T10:00:00Z","@metadata":{"beat":"filebeat","input":{"kept":1},"ip_address":"old"}}"#,
            ] {
                let now = Timestamp::now();
                let mut codec = s.codec.lock().unwrap().clone_box();
                let Ok(Value::Object(map)) = sluice_event::json::parse(payload.as_bytes()) else {
                    panic!("{payload}")
                };
                let (mut a, mut b) = (Vec::new(), Vec::new());
                events_from(map.clone(), &client, &s, &mut *codec, now, &mut a);
                events_from(map, &walked, &s, &mut *codec, now, &mut b);
                assert_eq!(a, b, "{ecs:?} {payload}");
                assert_eq!(
                    a[0].get(&s.ip_field),
                    Some(&Value::String("10.1.2.3".into())),
                    "{ecs:?} {payload}"
                );
                if payload.contains("kept") {
                    let kept = FieldRef::parse("[@metadata][input][kept]").unwrap();
                    assert_eq!(a[0].get(&kept), Some(&Value::Int(1)), "{ecs:?}");
                }
            }
            let top = if ecs.enabled() { "input" } else { "ip_address" };
            assert_eq!(entry.0.as_str(), top);
        }
        let outside = FieldRef::parse("[host][ip]").unwrap();
        assert_eq!(metadata_entry(&outside, Value::Null), None);
    }

    /// The plain shortcut makes what decoding `message` with the plain codec and merging the
    /// payload makes.
    #[test]
    fn the_plain_shortcut_matches_decoding_with_the_codec() {
        for ecs in [Ecs::V8, Ecs::Disabled] {
            let fast = shared(Some(ecs.enabled()), ecs);
            let slow = shared(None, ecs);
            for payload in [
                r#"{"@timestamp":"2026-11-24T10:00:00.123Z","message":"hello","@metadata":{"beat":"filebeat","type":"_doc"},"host":{"name":"web1"},"event":{"dataset":"nginx.access"},"tags":["a"],"n":1}"#,
                r#"{"@timestamp":"2026-11-24T10:00:00Z","line":"from v1","offset":5}"#,
                r#"{"@timestamp":"2026-11-24T10:00:00Z","message":42}"#,
                r#"{"line":"stays a field","message":"the text","@timestamp":"2026-11-24T10:00:00Z"}"#,
                r#"{"@timestamp":"2026-11-24T10:00:00Z","message":"x","event":{"original":"kept"}}"#,
                r#"{"@timestamp":"2026-11-24T10:00:00Z","metricset":{"name":"cpu"}}"#,
            ] {
                let a = events(payload, &fast);
                let b = events(payload, &slow);
                assert_eq!(a, b, "{ecs:?} {payload}");
                assert_eq!(a.len(), 1);
                assert_eq!(
                    a[0].get(&FieldRef::parse("[@metadata][input][beats][host][ip]").unwrap()),
                    Some(&Value::String("10.1.2.3".into()))
                );
            }
        }
    }
}

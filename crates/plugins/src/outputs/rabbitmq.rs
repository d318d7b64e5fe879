//! `rabbitmq` output: publishes each event (encoded with the codec, `json` by default) to an
//! exchange, with a routing key rendered per event.
//!
//! Options, as Logstash's plugin: the connection's (see [`crate::rabbitmq_conn`]); `exchange`
//! and `exchange_type` (fanout, direct, topic, x-consistent-hash or x-modulus-hash), both
//! required, the exchange declared `durable` (true) with `arguments` (or only checked with
//! `passive`); `key` (default "logstash", sprintf); `persistent` (true: delivery mode 2, the
//! broker writes the message to disk); `message_properties`, a hash of `content_type`,
//! `content_encoding`, `priority`, `correlation_id`, `reply_to`, `expiration`, `message_id`,
//! `timestamp` (whole seconds), `type`, `user_id`, `app_id`, `cluster_id` (each a constant or
//! a sprintf template, as Logstash renders them) and `headers` (a hash of constants). Keys the
//! plugin would not send (`delivery_mode`, `persistent`: use `persistent`; anything else) are
//! configuration errors, where Logstash's plugin ignores them.
//!
//! Acknowledgement (beyond Logstash, which publishes without confirms): every channel is in
//! publisher-confirm mode, and `write` returns only once the broker has confirmed every message
//! of the batch (for persistent messages to durable queues: once they are on its disk). Only
//! then does the pipeline acknowledge the batch. A message the broker refuses (`basic.nack`)
//! or whose confirm never comes because the connection or channel went away is published
//! again, on a new channel (and connection) after `connect_retry_interval`, until confirmed:
//! the broker going away costs no event. A message that reached the broker before the
//! connection was lost, its confirm with it, is published twice: at-least-once. While the
//! broker blocks publishing (a resource alarm), `write` waits; a broker that confirms nothing
//! for a minute otherwise counts as lost.
//!
//! Data flow: workers call `write` at once, each with a slot of its own (a codec and a channel
//! on the one shared connection; Logstash uses a channel per worker thread too). The output
//! owns a small runtime on which the client's connection tasks run; `write` drives the
//! publishing on the worker's thread. An event whose routing key or property is longer than
//! AMQP allows (255 bytes) can never be published: it goes to the dead letter queue when the
//! pipeline has one, else it is logged with the event, and the rest of the batch goes on.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use amqprs::channel::{
    BasicPublishArguments, Channel, ConfirmSelectArguments, ExchangeDeclareArguments,
};
use amqprs::{BasicProperties, FieldTable};
use sluice_config::{Number, Value as Ast};
use sluice_event::{Event, Template};
use sluice_pipeline::{Codec, ConfigError, Options, Output, OutputError, WriteContext};

use crate::rabbitmq_conn::{short, table, ChannelState, ConnSettings, Link};
use crate::retry::Outage;

/// Logstash's exchange types for this output.
const EXCHANGE_TYPES: &[&str] = &[
    "fanout",
    "direct",
    "topic",
    "x-consistent-hash",
    "x-modulus-hash",
];

/// How long the broker may leave a batch unconfirmed, not blocked, before the connection is
/// taken for lost.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(60);

/// After a stop signal, how long to wait for confirms before giving the batch up (it is then
/// not acknowledged: a persisted queue replays it at the next start).
const CONFIRM_TIMEOUT_STOPPING: Duration = Duration::from_secs(5);

pub struct RabbitmqOutput {
    s: Settings,
    /// The shared connection; replaced by the first writer that finds it gone.
    link: tokio::sync::Mutex<Option<Arc<Link>>>,
    codec: Mutex<Box<dyn Codec>>,
    pool: Mutex<Vec<Slot>>,
    outage: Outage,
    /// Runs the client's connection tasks. Channels and connections are dropped inside it
    /// (their drop asks the broker to close them, from a task), so it is declared last.
    rt: tokio::runtime::Runtime,
}

struct Settings {
    conn: ConnSettings,
    exchange: String,
    exchange_type: String,
    durable: bool,
    key: Template,
    persistent: bool,
    properties: Vec<(Property, PropertyValue)>,
    headers: Option<FieldTable>,
}

/// What one worker's write uses.
struct Slot {
    codec: Box<dyn Codec>,
    publisher: Option<Publisher>,
}

/// A channel in confirm mode, on which the exchange is declared.
struct Publisher {
    link: Arc<Link>,
    channel: Channel,
    state: Arc<ChannelState>,
    /// The delivery tag of the next message published (they count from 1 per channel).
    next_tag: u64,
}

/// The message properties `message_properties` may set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Property {
    ContentType,
    ContentEncoding,
    Priority,
    CorrelationId,
    ReplyTo,
    Expiration,
    MessageId,
    Timestamp,
    Type,
    UserId,
    AppId,
    ClusterId,
}

const PROPERTIES: &[(&str, Property)] = &[
    ("content_type", Property::ContentType),
    ("content_encoding", Property::ContentEncoding),
    ("priority", Property::Priority),
    ("correlation_id", Property::CorrelationId),
    ("reply_to", Property::ReplyTo),
    ("expiration", Property::Expiration),
    ("message_id", Property::MessageId),
    ("timestamp", Property::Timestamp),
    ("type", Property::Type),
    ("user_id", Property::UserId),
    ("app_id", Property::AppId),
    ("cluster_id", Property::ClusterId),
];

/// A property's value: a constant, or (a string with `%{`) rendered per event.
#[derive(Debug, Clone)]
enum PropertyValue {
    Constant(String),
    Template(Template),
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let conn = ConnSettings::from_options(opts, "output")?;
    let exchange = opts.required_string("exchange")?;
    short("exchange", &exchange).map_err(|e| opts.error("exchange", e))?;
    if exchange.is_empty() {
        return Err(opts.error(
            "exchange",
            "must not be empty (the default exchange cannot be declared)",
        ));
    }
    if !opts.has("exchange_type") {
        return Err(opts.plugin_error(format!(
            "missing required setting \"exchange_type\" for output plugin \"rabbitmq\" (one of {EXCHANGE_TYPES:?})"
        )));
    }
    let exchange_type = opts.choice("exchange_type", EXCHANGE_TYPES, "fanout")?;
    let durable = opts.boolean_or("durable", true)?;
    let key = opts.string_or("key", "logstash")?;
    if !key.contains("%{") {
        short("key", &key).map_err(|e| opts.error("key", e))?;
    }
    let persistent = opts.boolean_or("persistent", true)?;
    let (properties, headers) = message_properties(opts)?;
    // Accepted as every Logstash plugin accepts it; this plugin sets no event fields.
    crate::ecs::Ecs::from_options(opts)?;
    let codec = opts.codec("json")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("rabbitmq-out")
        .enable_all()
        .build()
        .map_err(|e| {
            opts.plugin_error(format!("cannot start the rabbitmq output's thread: {e}"))
        })?;
    let outage = Outage::new(
        format!("rabbitmq output {} exchange {exchange:?}", conn.describe()),
        "RabbitMQ",
    );
    Ok(Box::new(RabbitmqOutput {
        s: Settings {
            conn,
            exchange,
            exchange_type,
            durable,
            key: Template::parse(&key),
            persistent,
            properties,
            headers,
        },
        link: tokio::sync::Mutex::new(None),
        codec: Mutex::new(codec),
        pool: Mutex::new(Vec::new()),
        outage,
        rt,
    }))
}

type Properties = (Vec<(Property, PropertyValue)>, Option<FieldTable>);

/// Reads `message_properties`.
fn message_properties(opts: &mut Options) -> Result<Properties, ConfigError> {
    let mut properties = Vec::new();
    let mut headers = None;
    let Some(entries) = opts.hash("message_properties")? else {
        return Ok((properties, headers));
    };
    let err = |opts: &Options, m: String| opts.error("message_properties", m);
    for (name, value) in entries {
        if name == "headers" {
            let Ast::Hash(h) = &value else {
                return Err(err(opts, "\"headers\" must be a hash".to_owned()));
            };
            let entries: Vec<(String, Ast)> =
                h.iter().map(|e| (e.key.clone(), e.value.clone())).collect();
            headers = Some(table(&entries).map_err(|e| err(opts, format!("headers: {e}")))?);
            continue;
        }
        let Some(&(_, property)) = PROPERTIES.iter().find(|(n, _)| *n == name) else {
            let hint = match name.as_str() {
                "delivery_mode" | "persistent" => " (set by the `persistent` option)".to_owned(),
                _ => {
                    let known: Vec<&str> = PROPERTIES.iter().map(|(n, _)| *n).collect();
                    format!(" (known: {}, headers)", known.join(", "))
                }
            };
            return Err(err(
                opts,
                format!("{name:?} is not a message property sluice can set{hint}"),
            ));
        };
        let text = match &value {
            Ast::String(s) | Ast::Bareword(s) => s.clone(),
            Ast::Number(Number::Int(i)) => i.to_string(),
            Ast::Number(Number::Float(f)) => f.to_string(),
            _ => return Err(err(opts, format!("{name:?} must be a string or a number"))),
        };
        let v = if text.contains("%{") {
            PropertyValue::Template(Template::parse(&text))
        } else {
            property_text(property, &text).map_err(|e| err(opts, format!("{name}: {e}")))?;
            PropertyValue::Constant(text)
        };
        properties.retain(|(p, _)| *p != property);
        properties.push((property, v));
    }
    Ok((properties, headers))
}

/// A property's value as text, checked: numbers for `priority` (0-255, and text that is not
/// a number is 0, as Logstash's `to_i`) and `timestamp`; at most 255 bytes for the rest.
fn property_text(p: Property, text: &str) -> Result<(), String> {
    match p {
        Property::Priority => {
            let n = ruby_to_i(text);
            if !(0..=255).contains(&n) {
                return Err(format!("priority {n} is not between 0 and 255"));
            }
            Ok(())
        }
        Property::Timestamp => {
            if text.trim().parse::<u64>().is_err() {
                return Err(format!(
                    "timestamp {text:?} is not a whole number of seconds"
                ));
            }
            Ok(())
        }
        _ => short("the value", text),
    }
}

/// Ruby's `String#to_i`: the leading (signed) digits, 0 when there are none.
fn ruby_to_i(text: &str) -> i64 {
    let t = text.trim_start();
    let (sign, digits) = match t.as_bytes().first() {
        Some(b'-') => (-1, &t[1..]),
        Some(b'+') => (1, &t[1..]),
        _ => (1, t),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse::<i64>().map_or(0, |n| sign * n)
}

/// One event's message, ready to publish (and to publish again).
struct Message {
    routing_key: String,
    properties: BasicProperties,
    body: Vec<u8>,
}

impl Settings {
    /// The message for `event` (encoded into `body`), or why it can never be published.
    fn message(&self, event: &Event, body: Vec<u8>) -> Result<Message, String> {
        let routing_key = match self.key.constant() {
            Some(k) => k.to_owned(),
            None => self.key.render(event),
        };
        short("the routing key", &routing_key)?;
        let mut props = BasicProperties::default();
        props.with_persistence(self.persistent);
        if let Some(h) = &self.headers {
            props.with_headers(h.clone());
        }
        for (p, v) in &self.properties {
            let rendered;
            let text = match v {
                PropertyValue::Constant(c) => c.as_str(),
                PropertyValue::Template(t) => {
                    rendered = t.render(event);
                    rendered.as_str()
                }
            };
            match p {
                Property::Priority => {
                    props.with_priority(ruby_to_i(text).clamp(0, 255) as u8);
                    continue;
                }
                Property::Timestamp => {
                    // A rendered value that is not a number leaves the property out.
                    if let Ok(t) = text.trim().parse::<u64>() {
                        props.with_timestamp(t);
                    }
                    continue;
                }
                _ => {}
            }
            short(&format!("message property {p:?}"), text)?;
            match p {
                Property::ContentType => props.with_content_type(text),
                Property::ContentEncoding => props.with_content_encoding(text),
                Property::CorrelationId => props.with_correlation_id(text),
                Property::ReplyTo => props.with_reply_to(text),
                Property::Expiration => props.with_expiration(text),
                Property::MessageId => props.with_message_id(text),
                Property::Type => props.with_message_type(text),
                Property::UserId => props.with_user_id(text),
                Property::AppId => props.with_app_id(text),
                Property::ClusterId => props.with_cluster_id(text),
                Property::Priority | Property::Timestamp => unreachable!("handled above"),
            };
        }
        Ok(Message {
            routing_key,
            properties: props,
            body,
        })
    }
}

/// Why a publishing attempt failed, and where.
struct Failure {
    target: String,
    error: String,
}

impl RabbitmqOutput {
    fn take_slot(&self) -> Slot {
        if let Some(s) = self.pool.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return s;
        }
        let codec = (self.codec.lock().unwrap_or_else(|p| p.into_inner())).clone_box();
        Slot {
            codec,
            publisher: None,
        }
    }

    fn put_slot(&self, slot: Slot) {
        (self.pool.lock().unwrap_or_else(|p| p.into_inner())).push(slot);
    }

    /// The shared connection, opened (once, for all writers) when there is none or it is
    /// gone.
    async fn link(&self) -> Result<Arc<Link>, Failure> {
        let mut shared = self.link.lock().await;
        if let Some(l) = shared.as_ref() {
            if l.is_open() {
                return Ok(Arc::clone(l));
            }
        }
        *shared = None;
        let link =
            (self.s.conn.connect().await).map_err(|(target, error)| Failure { target, error })?;
        let link = Arc::new(link);
        *shared = Some(Arc::clone(&link));
        Ok(link)
    }

    /// A channel in confirm mode with the exchange declared on it.
    async fn publisher(&self) -> Result<Publisher, Failure> {
        let link = self.link().await?;
        let fail = |error: String| Failure {
            target: link.target.clone(),
            error,
        };
        let (channel, state) = link.open_channel().await.map_err(fail)?;
        let why = |e: amqprs::error::Error| link.why(&state, e);
        (channel
            .confirm_select(ConfirmSelectArguments::default())
            .await)
            .map_err(|e| fail(format!("turning publisher confirms on: {}", why(e))))?;
        let s = &self.s;
        let mut args = ExchangeDeclareArguments::new(&s.exchange, &s.exchange_type);
        args.durable = s.durable;
        args.passive = s.conn.passive;
        args.arguments = s.conn.arguments.clone();
        (channel.exchange_declare(args).await)
            .map_err(|e| fail(format!("declaring exchange {:?}: {}", s.exchange, why(e))))?;
        Ok(Publisher {
            link: Arc::clone(&link),
            channel,
            state,
            next_tag: 1,
        })
    }

    /// Publishes `messages[i]` for each `i` of `todo` on the slot's channel (opened if
    /// needed) and waits for their confirms. Returns the ones not confirmed, with why; the
    /// slot loses its channel then.
    async fn attempt(
        &self,
        slot: &mut Slot,
        messages: &[Message],
        todo: &[usize],
        ctx: &WriteContext<'_>,
    ) -> Result<(), (Vec<usize>, Failure)> {
        if (slot.publisher.as_ref())
            .is_some_and(|p| !p.link.is_open() || p.state.closed().is_some())
        {
            slot.publisher = None;
        }
        if slot.publisher.is_none() {
            let p = tokio::select! {
                p = self.publisher() => p,
                _ = interrupted(ctx) => Err(Failure { target: String::new(), error: "stopping".to_owned() }),
            };
            slot.publisher = Some(p.map_err(|f| (todo.to_vec(), f))?);
        }
        let p = slot.publisher.as_mut().expect("just opened");
        let first_tag = p.next_tag;
        let mut published = 0;
        let mut failure = None;
        {
            // A send waits while the client's buffer is full (the broker reading slowly, or
            // blocking publishers): it must still see the connection go, and a stop.
            let mut gone = std::pin::pin!(gone(&p.link, &p.state, ctx));
            for &i in todo {
                let m = &messages[i];
                p.state.expect(p.next_tag);
                p.next_tag += 1;
                published += 1;
                let args = BasicPublishArguments::new(&self.s.exchange, &m.routing_key);
                let publish = p
                    .channel
                    .basic_publish(m.properties.clone(), m.body.clone(), args);
                let sent = tokio::select! {
                    r = publish => r.map_err(|e| (p.link.why(&p.state, e), false)),
                    why = &mut gone => Err(why),
                };
                if let Err(e) = sent {
                    failure = Some(e);
                    break;
                }
            }
        }
        if failure.is_none() {
            failure = wait_for_confirms(p, ctx).await.err();
        }
        let Some((error, suspect)) = failure else {
            return Ok(());
        };
        // Tags count from `first_tag` in the order of `todo`; what was never published is
        // not confirmed either.
        let unconfirmed = p.state.take_unconfirmed();
        let mut left: Vec<usize> = todo[..published]
            .iter()
            .enumerate()
            .filter(|(n, _)| unconfirmed.contains(&(first_tag + *n as u64)))
            .map(|(_, &i)| i)
            .collect();
        left.extend_from_slice(&todo[published..]);
        let target = p.link.target.clone();
        // A new channel next time (dropping this one closes it); a new connection too when
        // this one went silent.
        if let Some(p) = slot.publisher.take() {
            if suspect && p.link.is_open() {
                p.link.close().await;
            }
        }
        Err((left, Failure { target, error }))
    }
}

/// Resolves, with why, once the connection or the channel is gone, or a stop signal came
/// and the send has waited [`CONFIRM_TIMEOUT_STOPPING`] since (polled: these have no waker).
/// `true`: the connection is to be closed.
async fn gone(link: &Link, state: &ChannelState, ctx: &WriteContext<'_>) -> (String, bool) {
    let mut stopping_since: Option<Instant> = None;
    loop {
        if let Some(reason) = state.closed() {
            return (reason, false);
        }
        if !link.is_open() {
            return (link.lost_reason(), false);
        }
        if ctx.interrupted() {
            let since = *stopping_since.get_or_insert_with(Instant::now);
            if since.elapsed() > CONFIRM_TIMEOUT_STOPPING {
                return (
                    "stopping: the broker takes no more messages".to_owned(),
                    true,
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Resolves once a stop signal came (polled: the flag has no waker).
async fn interrupted(ctx: &WriteContext<'_>) {
    while !ctx.interrupted() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the broker has confirmed everything published on `p`; an error when it
/// refused some, the channel or connection went away, or it stays silent too long (then
/// `true`: the connection is suspect).
async fn wait_for_confirms(p: &Publisher, ctx: &WriteContext<'_>) -> Result<(), (String, bool)> {
    let mut progress = Instant::now();
    let mut last_left = usize::MAX;
    loop {
        let changed = p.state.changed.notified();
        let (left, nacked) = p.state.pending();
        if left == 0 {
            if nacked > 0 {
                let e = format!("the broker refused {nacked} message(s) (basic.nack)");
                return Err((e, false));
            }
            return Ok(());
        }
        if let Some(reason) = p.state.closed() {
            return Err((reason, false));
        }
        if !p.link.is_open() {
            return Err((p.link.lost_reason(), false));
        }
        if left < last_left || p.link.state.blocked.load(Ordering::Relaxed) {
            last_left = left;
            progress = Instant::now();
        }
        let limit = if ctx.interrupted() {
            CONFIRM_TIMEOUT_STOPPING
        } else {
            CONFIRM_TIMEOUT
        };
        if progress.elapsed() > limit {
            let e = format!("{left} message(s) unconfirmed after {} s", limit.as_secs());
            return Err((e, true));
        }
        let _ = tokio::time::timeout(Duration::from_millis(100), changed).await;
    }
}

impl Output for RabbitmqOutput {
    fn write(&self, events: &[&Event], ctx: &WriteContext) -> Result<(), OutputError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut slot = self.take_slot();
        let mut messages = Vec::with_capacity(events.len());
        let mut todo = Vec::with_capacity(events.len());
        let mut refused: Vec<(&Event, String)> = Vec::new();
        for e in events {
            let mut body = Vec::new();
            slot.codec.encode(e, &mut body);
            match self.s.message(e, body) {
                Ok(m) => {
                    todo.push(messages.len());
                    messages.push(m);
                }
                Err(why) => refused.push((e, why)),
            }
        }
        self.refuse(&refused, ctx);
        while !todo.is_empty() {
            match self
                .rt
                .block_on(self.attempt(&mut slot, &messages, &todo, ctx))
            {
                Ok(()) => {
                    if let Some(p) = &slot.publisher {
                        self.outage.recovered(&p.link.target);
                    }
                    todo.clear();
                }
                Err((left, failure)) => {
                    todo = left;
                    if !failure.target.is_empty() {
                        self.outage.failed(&failure.target, &failure.error);
                    }
                    if ctx.interrupted() || !ctx.sleep(self.s.conn.connect_retry_interval) {
                        self.put_slot(slot);
                        return Err(OutputError::retryable(format!(
                            "stopping with {} message(s) of the batch not confirmed by RabbitMQ: {}",
                            todo.len(),
                            failure.error
                        )));
                    }
                }
            }
        }
        self.put_slot(slot);
        Ok(())
    }

    fn close(&self) -> Result<(), OutputError> {
        let slots = std::mem::take(&mut *self.pool.lock().unwrap_or_else(|p| p.into_inner()));
        self.rt.block_on(async {
            drop(slots);
            if let Some(link) = self.link.lock().await.take() {
                link.close().await;
            }
        });
        Ok(())
    }
}

impl Drop for RabbitmqOutput {
    fn drop(&mut self) {
        let _in_runtime = self.rt.enter();
        self.pool
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        *self.link.get_mut() = None;
    }
}

impl RabbitmqOutput {
    /// Events that can never be published: to the dead letter queue when the pipeline has
    /// one, else logged with the event.
    fn refuse(&self, refused: &[(&Event, String)], ctx: &WriteContext) {
        if refused.is_empty() {
            return;
        }
        if ctx.dead_letter_queue_enabled() {
            // The DLQ logs and counts what it cannot take.
            let items: Vec<(&Event, &str)> =
                refused.iter().map(|(e, w)| (*e, w.as_str())).collect();
            ctx.dead_letter(&items);
            return;
        }
        for (e, why) in refused {
            let event = sluice_event::json::event_to_string(e);
            tracing::error!(event = %event, "rabbitmq output: cannot publish the event ({why}); dropped");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_read_as_ruby_to_i() {
        assert_eq!(ruby_to_i("7"), 7);
        assert_eq!(ruby_to_i(" 31abc"), 31);
        assert_eq!(ruby_to_i("%{[@metadata][priority]}"), 0);
        assert_eq!(ruby_to_i("-3"), -3);
        assert!(property_text(Property::Priority, "300").is_err());
        assert!(property_text(Property::Timestamp, "soon").is_err());
        assert!(property_text(Property::AppId, &"x".repeat(256)).is_err());
    }

    #[test]
    fn messages_carry_rendered_keys_and_properties() {
        let s = Settings {
            conn: test_conn(),
            exchange: "x".into(),
            exchange_type: "topic".into(),
            durable: true,
            key: Template::parse("logs.%{kind}"),
            persistent: true,
            properties: vec![
                (Property::AppId, PropertyValue::Constant("sluice".into())),
                (
                    Property::Priority,
                    PropertyValue::Template(Template::parse("%{p}")),
                ),
            ],
            headers: None,
        };
        let mut e = Event::with_message("m");
        e.set_field("kind", sluice_event::Value::String("web".into()));
        e.set_field("p", sluice_event::Value::String("4".into()));
        let m = s.message(&e, b"{}".to_vec()).unwrap();
        assert_eq!(m.routing_key, "logs.web");
        assert_eq!(m.properties.app_id().map(String::as_str), Some("sluice"));
        assert_eq!(m.properties.priority(), Some(4));
        assert_eq!(m.properties.delivery_mode(), Some(2));
        e.set_field("kind", sluice_event::Value::String("k".repeat(300).into()));
        let Err(why) = s.message(&e, Vec::new()) else {
            panic!("a 300-byte routing key was accepted")
        };
        assert!(why.contains("routing key"), "{why}");
    }

    fn test_conn() -> ConnSettings {
        let config =
            sluice_config::parse("test", "output { rabbitmq { host => \"localhost\" } }").unwrap();
        let sluice_config::Statement::Plugin(p) = &config.sections[0].body[0] else {
            panic!("not a plugin")
        };
        let registry = crate::registry();
        let mut opts = Options::new(
            "test",
            p,
            sluice_pipeline::options::PluginKind::Output,
            &registry,
        )
        .unwrap();
        ConnSettings::from_options(&mut opts, "output").unwrap()
    }
}

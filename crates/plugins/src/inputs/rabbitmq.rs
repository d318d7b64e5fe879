//! `rabbitmq` input: consumes a RabbitMQ queue, decoding each message with the codec (`json` by
//! default; a body that is not JSON becomes an event tagged `_jsonparsefailure`).
//!
//! Options, as Logstash's plugin: the connection's (see [`crate::rabbitmq_conn`]); `queue`
//! (default "": a fresh server-named queue at every connection), declared with `durable`,
//! `exclusive`, `auto_delete` (all false by default), `arguments` and `passive` (only check
//! that it exists); `exchange` to bind it to with routing key `key` (default "logstash"),
//! declared first when `exchange_type` is given (durable as `durable`); `prefetch_count`
//! (256), `ack` (true), `threads` (1: each thread is a consumer with its own connection),
//! `subscription_retry_interval_seconds` (5), `metadata_enabled`.
//!
//! Data flow: each consumer runs as a task on the input's runtime. Deliveries come from the
//! client's channel; the task takes what has arrived (up to the pipeline's batch size),
//! decodes it, queues it ([`crate::net::push`], which waits while the queue is full), and only
//! then acknowledges the broker, once for the whole batch (`basic.ack` with `multiple`). With
//! the persisted queue a message is on disk before the broker forgets it: the path broker →
//! sluice loses nothing. What was delivered but not yet acknowledged when the connection or
//! the process goes is delivered again (at-least-once: a batch queued just before the
//! connection was lost comes twice). At most `prefetch_count` messages are unacknowledged. With
//! `ack => false` the broker forgets a message as it sends it (and does not bound what it
//! sends), so whatever is in flight is lost in a crash, as in Logstash.
//!
//! `metadata_enabled`: `basic` (or the deprecated `true`) sets `[@metadata][rabbitmq_headers]`
//! (the message headers; `{}` when none) and `[@metadata][rabbitmq_properties]` (`app-id`,
//! `cluster-id`, `consumer-tag`, `content-encoding`, `content-type`, `correlation-id`,
//! `delivery-mode`, `exchange`, `expiration`, `message-id`, `priority`, `redeliver`,
//! `routing-key`, `timestamp` in whole seconds, `type`, `user-id`: those the message has, as
//! Logstash's plugin sets them, `redeliver` only when true); `extended` also sets
//! `[@metadata][rabbitmq_payload]`, the raw body. `none` (or `false`, the default) sets none.
//! The plugin adds no other fields, so `ecs_compatibility` (accepted) changes nothing.
//!
//! The broker going away: the warning once per outage, a new connection every
//! `connect_retry_interval` seconds (each host of the list in turn), everything declared and
//! subscribed again, one line when it is back. A consumer the broker cancels (its queue was
//! deleted) declares and subscribes again, where Logstash's plugin stops.

use std::sync::Arc;
use std::time::Duration;

use amqprs::channel::{
    BasicAckArguments, BasicConsumeArguments, BasicQosArguments, Channel, ConsumerMessage,
    ExchangeDeclareArguments, QueueBindArguments, QueueDeclareArguments,
};
use amqprs::{BasicProperties, Deliver};
use sluice_event::{Event, FieldRef, Map, Value};
use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::rabbitmq_conn::{short, table_value, ChannelState, ConnSettings, Link};
use crate::retry::Outage;

/// What to copy from a message into `@metadata`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metadata {
    None,
    /// Headers and properties.
    Basic,
    /// Headers, properties and the raw payload.
    Extended,
}

/// Everything the consumers share, read-only.
struct Settings {
    conn: ConnSettings,
    queue: String,
    durable: bool,
    exclusive: bool,
    auto_delete: bool,
    exchange: Option<String>,
    exchange_type: Option<String>,
    key: String,
    prefetch_count: u16,
    ack: bool,
    threads: usize,
    subscription_retry: Duration,
    metadata: Metadata,
    headers_field: FieldRef,
    properties_field: FieldRef,
    payload_field: FieldRef,
    outage: Outage,
}

pub struct RabbitmqInput {
    s: Arc<Settings>,
    codec: Box<dyn Codec>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let conn = ConnSettings::from_options(opts, "input")?;
    let queue = opts.string_or("queue", "")?;
    let durable = opts.boolean_or("durable", false)?;
    let exclusive = opts.boolean_or("exclusive", false)?;
    let auto_delete = opts.boolean_or("auto_delete", false)?;
    let exchange = opts.string("exchange")?;
    let exchange_type = opts.string("exchange_type")?;
    let key = opts.string_or("key", "logstash")?;
    for (name, v) in [
        ("queue", Some(&queue)),
        ("exchange", exchange.as_ref()),
        ("exchange_type", exchange_type.as_ref()),
        ("key", Some(&key)),
    ] {
        if let Some(v) = v {
            short(name, v).map_err(|e| opts.error(name, e))?;
        }
    }
    if exchange_type.is_some() && exchange.is_none() {
        return Err(opts.error(
            "exchange_type",
            "declares the exchange named by `exchange`, which is missing",
        ));
    }
    if exchange.as_deref() == Some("") {
        return Err(opts.error(
            "exchange",
            "must not be empty: every queue is bound to the default exchange already",
        ));
    }
    let prefetch_count = opts.int("prefetch_count")?.unwrap_or(256);
    let prefetch_count = u16::try_from(prefetch_count)
        .map_err(|_| opts.error("prefetch_count", "must be between 0 (no limit) and 65535"))?;
    let ack = opts.boolean_or("ack", true)?;
    let threads = opts.int("threads")?.unwrap_or(1);
    if !(1..=64).contains(&threads) {
        return Err(opts.error("threads", "must be between 1 and 64"));
    }
    let subscription_retry = opts.seconds("subscription_retry_interval_seconds", 5.0)?;
    let metadata = match opts
        .choice(
            "metadata_enabled",
            &["none", "basic", "extended", "false", "true"],
            "none",
        )?
        .as_str()
    {
        "basic" => Metadata::Basic,
        "extended" => Metadata::Extended,
        "true" => {
            tracing::warn!("rabbitmq input: metadata_enabled => true is deprecated; use \"basic\"");
            Metadata::Basic
        }
        "false" => {
            tracing::warn!("rabbitmq input: metadata_enabled => false is deprecated; use \"none\"");
            Metadata::None
        }
        _ => Metadata::None,
    };
    // Accepted as every Logstash plugin accepts it; this plugin adds no fields it would rename.
    crate::ecs::Ecs::from_options(opts)?;
    let codec = opts.codec("json")?;
    let f = |s: &str| FieldRef::parse(s).expect("a valid field reference");
    let outage = Outage::new(format!("rabbitmq input {}", conn.describe()), "RabbitMQ");
    Ok(Box::new(RabbitmqInput {
        s: Arc::new(Settings {
            conn,
            queue,
            durable,
            exclusive,
            auto_delete,
            exchange,
            exchange_type,
            key,
            prefetch_count,
            ack,
            threads: threads as usize,
            subscription_retry,
            metadata,
            headers_field: f("[@metadata][rabbitmq_headers]"),
            properties_field: f("[@metadata][rabbitmq_properties]"),
            payload_field: f("[@metadata][rabbitmq_payload]"),
            outage,
        }),
        codec,
    }))
}

impl Input for RabbitmqInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let rt = crate::net::runtime("rabbitmq", 1)?;
        let s = &self.s;
        tracing::info!(broker = %s.conn.describe(), queue = %s.queue, threads = s.threads, "rabbitmq input starting");
        let codecs: Vec<Box<dyn Codec>> = (0..s.threads).map(|_| self.codec.clone_box()).collect();
        rt.block_on(async {
            let consumers: Vec<_> = (codecs.into_iter())
                .map(|codec| tokio::spawn(consume(Arc::clone(s), codec, ctx.clone())))
                .collect();
            for c in consumers {
                if c.await.is_err() {
                    tracing::error!("rabbitmq input: a consumer task panicked");
                }
            }
        });
        rt.shutdown_timeout(Duration::from_secs(1));
        Ok(())
    }
}

/// How a session (one connection) ended.
enum Ended {
    /// The pipeline is stopping.
    Stopped,
    /// Something failed on `target`: try again after `wait`.
    Failed {
        target: String,
        error: String,
        wait: Duration,
    },
}

/// One consumer: sessions until the pipeline stops, waiting between failed ones.
async fn consume(s: Arc<Settings>, mut codec: Box<dyn Codec>, ctx: InputContext) {
    while !ctx.is_stopping() {
        match session(&s, &mut *codec, &ctx).await {
            Ended::Stopped => break,
            Ended::Failed {
                target,
                error,
                wait,
            } => {
                s.outage.failed(&target, &error);
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = ctx.stopped() => break,
                }
            }
        }
    }
}

/// Connects, declares, subscribes, then queues deliveries until the connection or the
/// subscription is lost, or the pipeline stops. The connection is closed on the way out:
/// whatever was delivered and not acknowledged goes back to the queue.
async fn session(s: &Settings, codec: &mut dyn Codec, ctx: &InputContext) -> Ended {
    let link = tokio::select! {
        r = s.conn.connect() => r,
        _ = ctx.stopped() => return Ended::Stopped,
    };
    let link = match link {
        Ok(l) => l,
        Err((target, error)) => {
            return Ended::Failed {
                target,
                error,
                wait: s.conn.connect_retry_interval,
            }
        }
    };
    // Nothing is in flight while subscribing: a stop may cut it short.
    let subscribed = tokio::select! {
        r = subscribe(s, &link) => r,
        _ = ctx.stopped() => Err(Ended::Stopped),
    };
    let ended = match subscribed {
        Ok(sub) => {
            s.outage.recovered(&link.target);
            tracing::info!(broker = %link.target, queue = %sub.queue, consumer_tag = %sub.tag, "rabbitmq input: consuming");
            deliver(s, &link, sub, codec, ctx).await
        }
        Err(ended) => ended,
    };
    link.close().await;
    ended
}

/// A subscription: its channel (kept open while it lasts) and its deliveries.
struct Subscription {
    channel: Channel,
    state: Arc<ChannelState>,
    queue: String,
    tag: String,
    deliveries: UnboundedReceiver<ConsumerMessage>,
}

/// Opens a channel, declares the queue (and the exchange, and binds them) and subscribes.
async fn subscribe(s: &Settings, link: &Link) -> Result<Subscription, Ended> {
    let failed = |error: String, wait: Duration| Ended::Failed {
        target: link.target.clone(),
        error,
        wait,
    };
    let retry = s.conn.connect_retry_interval;
    let (channel, state) = link.open_channel().await.map_err(|e| failed(e, retry))?;
    let why = |e: amqprs::error::Error| link.why(&state, e);
    (channel
        .basic_qos(BasicQosArguments::new(0, s.prefetch_count, false))
        .await)
        .map_err(|e| failed(why(e), retry))?;
    let mut declare = QueueDeclareArguments::new(&s.queue);
    declare
        .passive(s.conn.passive)
        .durable(s.durable)
        .exclusive(s.exclusive)
        .auto_delete(s.auto_delete)
        .arguments(s.conn.arguments.clone());
    let queue = match channel.queue_declare(declare).await {
        Ok(Some((name, _, _))) => name,
        Ok(None) => s.queue.clone(),
        Err(e) => {
            let e = format!("declaring queue {:?}: {}", s.queue, why(e));
            return Err(failed(e, retry));
        }
    };
    if let Some(exchange) = &s.exchange {
        if let Some(kind) = &s.exchange_type {
            let mut args = ExchangeDeclareArguments::new(exchange, kind);
            args.durable = s.durable;
            if let Err(e) = channel.exchange_declare(args).await {
                let e = format!("declaring exchange {exchange:?}: {}", why(e));
                return Err(failed(e, retry));
            }
        }
        let bind = QueueBindArguments::new(&queue, exchange, &s.key);
        if let Err(e) = channel.queue_bind(bind).await {
            let e = format!(
                "binding queue {queue:?} to exchange {exchange:?}: {}",
                why(e)
            );
            return Err(failed(e, retry));
        }
    }
    let mut args = BasicConsumeArguments::new(&queue, "");
    args.manual_ack(s.ack);
    match channel.basic_consume_rx(args).await {
        Ok((tag, deliveries)) => Ok(Subscription {
            channel,
            state,
            queue,
            tag,
            deliveries,
        }),
        Err(e) => {
            let e = format!("subscribing to queue {queue:?}: {}", why(e));
            Err(failed(e, s.subscription_retry))
        }
    }
}

/// Queues deliveries in batches, acknowledging each batch once it is queued, until the
/// subscription ends or the pipeline stops (a batch being queued is finished first, so that
/// what is queued is acknowledged).
async fn deliver(
    s: &Settings,
    link: &Link,
    mut sub: Subscription,
    codec: &mut dyn Codec,
    ctx: &InputContext,
) -> Ended {
    let failed = |error: String| Ended::Failed {
        target: link.target.clone(),
        error,
        wait: s.conn.connect_retry_interval,
    };
    let batch_size = ctx.batch_size().max(1);
    loop {
        let first = tokio::select! {
            m = sub.deliveries.recv() => m,
            _ = ctx.stopped() => return Ended::Stopped,
        };
        let Some(first) = first else {
            let queue = &sub.queue;
            let error = if sub.state.cancelled() {
                format!("the broker cancelled the consumer of queue {queue:?} (was it deleted?); declaring it again")
            } else if let Some(r) = sub.state.closed() {
                r
            } else {
                link.lost_reason()
            };
            return failed(error);
        };
        let mut messages = vec![first];
        while messages.len() < batch_size {
            match sub.deliveries.try_recv() {
                Ok(m) => messages.push(m),
                Err(_) => break,
            }
        }
        let mut events: Vec<Event> = Vec::with_capacity(messages.len());
        let mut last_tag = 0;
        for mut m in messages {
            let (Some(deliver), Some(props), Some(body)) = (
                m.deliver.take(),
                m.basic_properties.take(),
                m.content.take(),
            ) else {
                continue;
            };
            last_tag = deliver.delivery_tag();
            let start = events.len();
            codec.decode(&body, &mut events);
            if s.metadata != Metadata::None {
                decorate(s, &mut events[start..], &deliver, &props, &body);
            }
        }
        if crate::net::push(ctx, events).await.is_err() {
            // Stopping: not acknowledged, so the broker delivers them again.
            return Ended::Stopped;
        }
        if s.ack && last_tag > 0 {
            let ack = BasicAckArguments::new(last_tag, true);
            if let Err(e) = sub.channel.basic_ack(ack).await {
                let why = link.why(&sub.state, e);
                return failed(format!(
                    "acknowledging a queued batch (the broker will deliver it again): {why}"
                ));
            }
        }
    }
}

/// Sets `@metadata` from the message, on the events decoded from it.
fn decorate(
    s: &Settings,
    events: &mut [Event],
    deliver: &Deliver,
    props: &BasicProperties,
    body: &[u8],
) {
    if events.is_empty() {
        return;
    }
    let headers = props
        .headers()
        .map_or_else(|| Value::Object(Map::new()), table_value);
    let properties = properties(deliver, props);
    let payload = (s.metadata == Metadata::Extended)
        .then(|| Value::String(String::from_utf8_lossy(body).as_ref().into()));
    for e in events {
        e.set(&s.headers_field, headers.clone());
        e.set(&s.properties_field, properties.clone());
        if let Some(p) = &payload {
            e.set(&s.payload_field, p.clone());
        }
    }
}

/// `[@metadata][rabbitmq_properties]`: the properties the message has, with Logstash's names.
fn properties(deliver: &Deliver, p: &BasicProperties) -> Value {
    let mut m = Map::new();
    let mut text = |name: &str, v: Option<&String>| {
        if let Some(v) = v {
            m.insert(name.into(), Value::String(v.as_str().into()));
        }
    };
    text("app-id", p.app_id());
    text("cluster-id", p.cluster_id());
    text("consumer-tag", Some(deliver.consumer_tag()));
    text("content-encoding", p.content_encoding());
    text("content-type", p.content_type());
    text("correlation-id", p.correlation_id());
    text("exchange", Some(deliver.exchange()));
    text("expiration", p.expiration());
    text("message-id", p.message_id());
    text("routing-key", Some(deliver.routing_key()));
    text("type", p.message_type());
    text("user-id", p.user_id());
    if let Some(mode) = p.delivery_mode() {
        m.insert("delivery-mode".into(), Value::Int(mode.into()));
    }
    if let Some(priority) = p.priority() {
        m.insert("priority".into(), Value::Int(priority.into()));
    }
    if deliver.redelivered() {
        m.insert("redeliver".into(), Value::Bool(true));
    }
    if let Some(t) = p.timestamp() {
        m.insert(
            "timestamp".into(),
            Value::Int(i64::try_from(t).unwrap_or(i64::MAX)),
        );
    }
    Value::Object(m)
}

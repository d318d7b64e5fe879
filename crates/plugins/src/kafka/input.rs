//! `kafka` input: consumes `topics` (or `topics_pattern`) in consumer group `group_id`, on
//! `consumer_threads` consumers, decoding each record's value with the codec (`plain` by
//! default).
//!
//! Each thread takes up to `max_poll_records` records at a time (read in batches through
//! [`super::fetch`]), decodes them, queues them as one batch and only then stores their
//! offsets for commit: a record's offset is committed only once its
//! events are in sluice's queue (durable with the persisted queue), so a crash replays the
//! records of the last uncommitted interval and never loses one. Stored offsets are committed
//! every `auto_commit_interval_ms` (librdkafka's auto commit of stored offsets), at each
//! rebalance, and at the stop; with `enable_auto_commit => false` after every batch, as
//! Logstash commits synchronously. `decorate_events` adds `[@metadata][kafka]` (`basic`:
//! topic, consumer_group, partition, offset, key, timestamp; `extended`: and headers).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::{ClientConfig, ClientContext};
use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};

use super::fetch::{Batch, FetchQueue, Record};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decorate {
    None,
    Basic,
    Extended,
}

pub struct KafkaInput {
    settings: Settings,
    codec: Box<dyn Codec>,
}

/// What each consumer thread reads.
struct Settings {
    conf: ClientConfig,
    subscription: Vec<String>,
    group_id: String,
    threads: usize,
    max_poll_records: usize,
    poll_timeout: Duration,
    sync_commit: bool,
    decorate: Decorate,
    /// `[@metadata][kafka][topic]` ... `[timestamp]`, in the order `decorate_event` sets them.
    metadata: [FieldRef; 6],
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let mut conf = super::client_config(opts)?;
    let group_id = opts.string_or("group_id", "logstash")?;
    conf.set("group.id", &group_id);
    if let Some(id) = opts.string("group_instance_id")? {
        conf.set("group.instance.id", id);
    }
    let protocol = opts.choice("group_protocol", &["classic", "consumer"], "classic")?;
    conf.set("group.protocol", protocol);
    let auto_commit = opts.boolean_or("enable_auto_commit", true)?;
    // Offsets are stored by sluice once events are queued, never when librdkafka hands them out.
    conf.set("enable.auto.offset.store", "false");
    conf.set("enable.auto.commit", auto_commit.to_string());
    // librdkafka fetches ahead into a local queue and, once that queue holds its thresholds'
    // worth, waits this long before fetching again (1 s by default): a consumer that drains
    // the queue sooner then stalls. The Java client Logstash uses fetches again as soon as its
    // buffer is consumed; 10 ms comes close (measured in bench/kafka.sh: at 1 s the input
    // stood still for ~0.9 s twice in 1.5M records).
    conf.set("fetch.queue.backoff.ms", "10");
    super::number(
        opts,
        &mut conf,
        "auto_commit_interval_ms",
        "auto.commit.interval.ms",
        Some(5000),
    )?;
    if let Some(reset) = opts.string("auto_offset_reset")? {
        let value = match reset.as_str() {
            "earliest" | "latest" => reset.as_str(),
            "none" => "error",
            other => {
                return Err(opts.error(
                    "auto_offset_reset",
                    format!("expected one of earliest, latest, none, got {other:?}"),
                ))
            }
        };
        conf.set("auto.offset.reset", value);
    }
    conf.set(
        "check.crcs",
        opts.boolean_or("check_crcs", true)?.to_string(),
    );
    conf.set(
        "allow.auto.create.topics",
        opts.boolean_or("auto_create_topics", true)?.to_string(),
    );
    let isolation = opts.choice(
        "isolation_level",
        &["read_uncommitted", "read_committed"],
        "read_uncommitted",
    )?;
    conf.set("isolation.level", isolation);
    for (name, key, default) in [
        ("fetch_max_bytes", "fetch.max.bytes", Some(52_428_800)),
        ("fetch_max_wait_ms", "fetch.wait.max.ms", Some(500)),
        ("fetch_min_bytes", "fetch.min.bytes", None),
        ("heartbeat_interval_ms", "heartbeat.interval.ms", Some(3000)),
        (
            "max_poll_interval_ms",
            "max.poll.interval.ms",
            Some(300_000),
        ),
        (
            "max_partition_fetch_bytes",
            "max.partition.fetch.bytes",
            Some(1_048_576),
        ),
        ("session_timeout_ms", "session.timeout.ms", Some(10_000)),
    ] {
        super::number(opts, &mut conf, name, key, default)?;
    }
    if let Some(rack) = opts.string("client_rack")? {
        conf.set("client.rack", rack);
    }
    if let Some(strategy) = opts.string("partition_assignment_strategy")? {
        let value = match strategy.rsplit('.').next().unwrap_or(&strategy) {
            "range" | "RangeAssignor" => "range",
            "round_robin" | "RoundRobinAssignor" => "roundrobin",
            "cooperative_sticky" | "CooperativeStickyAssignor" => "cooperative-sticky",
            other => {
                return Err(opts.error(
                    "partition_assignment_strategy",
                    format!("{other:?} is not available in librdkafka (sluice's Kafka client); use range, round_robin or cooperative_sticky"),
                ))
            }
        };
        conf.set("partition.assignment.strategy", value);
    }
    for name in ["key_deserializer_class", "value_deserializer_class"] {
        if let Some(class) = opts.string(name)? {
            if !class.ends_with(".StringDeserializer") && !class.ends_with(".ByteArrayDeserializer")
            {
                return Err(opts.error(
                    name,
                    "only org.apache.kafka.common.serialization.StringDeserializer and ByteArrayDeserializer are supported (values are bytes for the codec)",
                ));
            }
        }
    }
    if opts.has("exclude_internal_topics") {
        return Err(opts.error(
            "exclude_internal_topics",
            "librdkafka (sluice's Kafka client) never subscribes to internal topics through a pattern; remove the option",
        ));
    }
    let pattern = opts.string("topics_pattern")?;
    let topics = opts.string_list("topics")?;
    let subscription = match (pattern, topics) {
        // As the Java client, a pattern must match a topic's whole name.
        (Some(p), _) => vec![format!("^(?:{p})$")],
        (None, Some(t)) if !t.is_empty() => t,
        (None, Some(_)) => return Err(opts.error("topics", "needs at least one topic")),
        (None, None) => vec!["logstash".to_owned()],
    };
    let threads = opts.int("consumer_threads")?.unwrap_or(1);
    if threads < 1 {
        return Err(opts.error("consumer_threads", "must be 1 or more"));
    }
    let max_poll_records = opts.int("max_poll_records")?.unwrap_or(500);
    if max_poll_records < 1 {
        return Err(opts.error("max_poll_records", "must be 1 or more"));
    }
    let poll_timeout = opts.int("poll_timeout_ms")?.unwrap_or(100);
    let decorate = match opts.string("decorate_events")?.as_deref() {
        None | Some("none") | Some("false") => Decorate::None,
        Some("basic") | Some("true") => Decorate::Basic,
        Some("extended") => Decorate::Extended,
        Some(other) => {
            return Err(opts.error(
                "decorate_events",
                format!("expected one of none, basic, extended, got {other:?}"),
            ))
        }
    };
    Ok(Box::new(KafkaInput {
        codec: opts.codec("plain")?,
        settings: Settings {
            conf,
            subscription,
            group_id,
            threads: threads as usize,
            max_poll_records: max_poll_records as usize,
            poll_timeout: Duration::from_millis(poll_timeout.max(1) as u64),
            sync_commit: !auto_commit,
            decorate,
            metadata: [
                "topic",
                "consumer_group",
                "partition",
                "offset",
                "key",
                "timestamp",
            ]
            .map(|name| kafka_metadata(&[name])),
        },
    }))
}

impl Input for KafkaInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let this = &self.settings;
        tracing::info!(topics = ?this.subscription, group = %this.group_id, threads = this.threads, "kafka input starting");
        std::thread::scope(|s| {
            let threads: Vec<_> = (0..this.threads)
                .map(|i| {
                    let codec = self.codec.clone_box();
                    s.spawn(move || this.consume(i, codec, ctx))
                })
                .collect();
            let mut result = Ok(());
            for t in threads {
                match t.join() {
                    Ok(Err(e)) => result = Err(e),
                    Err(_) => result = Err("a kafka consumer thread panicked".to_owned()),
                    Ok(Ok(())) => {}
                }
            }
            result
        })
    }
}

/// Forwards the partitions a consumer gets to its fetch queue, and logs them and those it
/// gives up at each rebalance.
struct Rebalances {
    group: String,
    /// Set once the consumer exists, taken before it is dropped.
    fetch: Mutex<Option<Arc<FetchQueue>>>,
}

impl ClientContext for Rebalances {}

impl ConsumerContext for Rebalances {
    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(tpl) = rebalance {
            if let Some(fetch) = &*self.fetch.lock().unwrap_or_else(|e| e.into_inner()) {
                fetch.forward(consumer.client(), tpl);
            }
        }
        let list = |tpl: &rdkafka::TopicPartitionList| {
            tpl.elements()
                .iter()
                .map(|e| format!("{}/{}", e.topic(), e.partition()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match rebalance {
            Rebalance::Assign(tpl) => {
                tracing::info!(group = %self.group, "kafka input: assigned partitions [{}]", list(tpl))
            }
            Rebalance::Revoke(tpl) => {
                tracing::info!(group = %self.group, "kafka input: revoked partitions [{}]", list(tpl))
            }
            Rebalance::Error(e) => {
                tracing::warn!(group = %self.group, "kafka input: rebalance: {e}")
            }
        }
    }
}

/// The last record read of a partition, stored once its events are queued.
struct Position {
    topic: String,
    partition: i32,
    /// Its offset: librdkafka's `rd_kafka_offset_store` commits the one after it.
    last: i64,
}

impl Settings {
    fn consume(
        &self,
        index: usize,
        mut codec: Box<dyn Codec>,
        ctx: &InputContext,
    ) -> Result<(), String> {
        let mut conf = self.conf.clone();
        if self.threads > 1 {
            let id = conf.get("client.id").unwrap_or("logstash").to_owned();
            conf.set("client.id", format!("{id}-{index}"));
        }
        let consumer: BaseConsumer<Rebalances> = conf
            .create_with_context(Rebalances {
                group: self.group_id.clone(),
                fetch: Mutex::new(None),
            })
            .map_err(|e| format!("kafka input: creating the consumer: {e}"))?;
        let fetch = Arc::new(FetchQueue::new(consumer.client()));
        *consumer
            .context()
            .fetch
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(fetch.clone());
        let topics: Vec<&str> = self.subscription.iter().map(String::as_str).collect();
        consumer
            .subscribe(&topics)
            .map_err(|e| format!("kafka input: subscribing to {topics:?}: {e}"))?;
        let mut batch = Batch::with_capacity(self.max_poll_records);
        let mut events = Vec::with_capacity(self.max_poll_records);
        let mut positions: Vec<Position> = Vec::new();
        while !ctx.is_stopping() {
            positions.clear();
            // Group events wait on the consumer queue; a record there (a partition not
            // forwarded) is taken as any other, at most a batch's worth per round.
            let mut taken = 0;
            while taken < self.max_poll_records {
                let Some(next) = consumer.poll(Duration::ZERO) else {
                    break;
                };
                match next {
                    Ok(m) => {
                        taken += 1;
                        self.take(Record::of(&m), &mut *codec, &mut events, &mut positions)
                    }
                    Err(e) => tracing::warn!("kafka input: {e}"),
                }
            }
            fetch.fill(self.poll_timeout, &mut batch);
            for record in batch.records() {
                self.take(record, &mut *codec, &mut events, &mut positions);
            }
            if positions.is_empty() {
                continue;
            }
            if ctx.push(std::mem::take(&mut events)).is_err() {
                // Not queued: not stored; the group hands these records out again.
                break;
            }
            events = Vec::with_capacity(self.max_poll_records);
            for p in &positions {
                if let Err(e) = consumer.store_offset(&p.topic, p.partition, p.last) {
                    // The partition moved to another consumer in a rebalance: that consumer
                    // reads these records again (at-least-once).
                    tracing::debug!(topic = %p.topic, partition = p.partition, "kafka input: offset not stored: {e}");
                }
            }
            if self.sync_commit {
                if let Err(e) = consumer.commit_consumer_state(CommitMode::Sync) {
                    tracing::warn!("kafka input: unable to commit offsets: {e}");
                }
            }
        }
        drop(batch);
        // What was stored is committed before the consumer leaves its group.
        match consumer.commit_consumer_state(CommitMode::Sync) {
            Ok(())
            | Err(rdkafka::error::KafkaError::ConsumerCommit(
                rdkafka::types::RDKafkaErrorCode::NoOffset,
            )) => {}
            Err(e) => tracing::warn!("kafka input: final commit: {e}"),
        }
        consumer.unsubscribe();
        // The fetch queue goes before the consumer.
        consumer
            .context()
            .fetch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(fetch);
        Ok(())
    }

    /// Decodes one record into `events` and notes its offset in `positions`.
    fn take(
        &self,
        record: Record<'_>,
        codec: &mut dyn Codec,
        events: &mut Vec<Event>,
        positions: &mut Vec<Position>,
    ) {
        if let Some(e) = record.error() {
            tracing::warn!("kafka input: {e}");
            return;
        }
        let first = events.len();
        codec.decode(record.payload(), events);
        if self.decorate != Decorate::None {
            for e in &mut events[first..] {
                self.decorate_event(e, record);
            }
        }
        let (topic, partition, offset) = (record.topic(), record.partition(), record.offset());
        match positions
            .iter_mut()
            .find(|p| p.partition == partition && p.topic == topic)
        {
            Some(p) => p.last = offset,
            None => positions.push(Position {
                topic: topic.to_owned(),
                partition,
                last: offset,
            }),
        }
    }

    fn decorate_event(&self, e: &mut Event, m: Record<'_>) {
        let [topic, group, partition, offset, key, timestamp] = &self.metadata;
        e.set(topic, Value::from(m.topic()));
        e.set(group, Value::from(self.group_id.as_str()));
        e.set(partition, Value::Int(m.partition() as i64));
        e.set(offset, Value::Int(m.offset()));
        let k = m.key().map_or(Value::Null, |k| {
            Value::from(String::from_utf8_lossy(k).as_ref())
        });
        e.set(key, k);
        let t = m.timestamp().map_or(Value::Null, Value::Int);
        e.set(timestamp, t);
        if self.decorate == Decorate::Extended {
            for (name, value) in m.headers() {
                let Some(v) = value else { continue };
                // As Logstash: headers whose value is not UTF-8 text are left out.
                let Ok(text) = std::str::from_utf8(v) else {
                    continue;
                };
                e.set(&kafka_metadata(&["headers", name]), Value::from(text));
            }
        }
    }
}

/// `[@metadata][kafka][names...]`.
fn kafka_metadata(names: &[&str]) -> FieldRef {
    let mut segments = vec!["@metadata".into(), "kafka".into()];
    segments.extend(names.iter().map(|n| (*n).into()));
    FieldRef::from_segments(segments)
}

//! `kafka` output: sends each event, encoded with the codec (`plain` by default), to
//! `topic_id` (sprintf) with `message_key` and `message_headers` (sprintf), through one
//! librdkafka producer shared by the workers.
//!
//! A batch is handed to the producer whole, then waited for: `write` returns once the broker
//! has confirmed every record (per `acks`), so a batch is acked only when Kafka has it.
//! Records that failed are sent again after `retry_backoff_ms`, until they succeed (or, with
//! `retries`, after that many rounds they are logged and dropped, as Logstash drops them);
//! a record Kafka can never take (larger than the broker allows) is logged and dropped at
//! once. At a stop, a batch still failing is given up unacked (a persisted queue replays it).

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;
use sluice_event::{Event, Template};
use sluice_pipeline::{Codec, ConfigError, Options, Output, OutputError, WriteContext};

/// What one batch waits for: records not yet confirmed, and those that failed.
struct Batch {
    state: Mutex<(usize, Vec<(usize, KafkaError)>)>,
    done: Condvar,
}

impl Batch {
    fn new(n: usize) -> Arc<Batch> {
        Arc::new(Batch {
            state: Mutex::new((n, Vec::new())),
            done: Condvar::new(),
        })
    }

    fn finish(&self, index: usize, error: Option<KafkaError>) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.0 -= 1;
        if let Some(e) = error {
            s.1.push((index, e));
        }
        if s.0 == 0 {
            self.done.notify_all();
        }
    }

    fn wait(&self) -> Vec<(usize, KafkaError)> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while s.0 > 0 {
            s = self.done.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        std::mem::take(&mut s.1)
    }
}

/// Delivery reports go to the batch each record belongs to.
struct Reports;

impl ClientContext for Reports {}

impl ProducerContext for Reports {
    type DeliveryOpaque = Box<(Arc<Batch>, usize)>;

    fn delivery(&self, result: &DeliveryResult<'_>, opaque: Self::DeliveryOpaque) {
        let (batch, index) = *opaque;
        batch.finish(index, result.as_ref().err().map(|(e, _)| e.clone()));
    }
}

pub struct KafkaOutput {
    producer: ThreadedProducer<Reports>,
    topic: Template,
    key: Option<Template>,
    headers: Vec<(String, Template)>,
    retries: Option<u64>,
    retry_backoff: Duration,
    codec: Mutex<Box<dyn Codec>>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let mut conf = super::client_config(opts)?;
    let topic = Template::parse(&opts.required_string("topic_id")?);
    let acks = opts.choice("acks", &["0", "1", "all"], "1")?;
    conf.set("acks", acks);
    super::number(opts, &mut conf, "batch_size", "batch.size", Some(16_384))?;
    super::number(opts, &mut conf, "linger_ms", "linger.ms", Some(5))?;
    super::number(
        opts,
        &mut conf,
        "max_request_size",
        "message.max.bytes",
        Some(1_048_576),
    )?;
    let memory = opts.int("buffer_memory")?.unwrap_or(33_554_432);
    if memory < 1024 {
        return Err(opts.error("buffer_memory", "must be at least 1024 bytes"));
    }
    conf.set("queue.buffering.max.kbytes", (memory / 1024).to_string());
    let compression = opts.choice(
        "compression_type",
        &["none", "gzip", "snappy", "lz4", "zstd"],
        "none",
    )?;
    conf.set("compression.type", compression);
    if let Some(p) = opts.string("partitioner")? {
        let value = match p.rsplit('.').next().unwrap_or(&p) {
            "default" | "DefaultPartitioner" | "uniform_sticky" | "UniformStickyPartitioner" => {
                "murmur2_random"
            }
            other => {
                return Err(opts.error(
                    "partitioner",
                    format!("{other:?} is not available in librdkafka (sluice's Kafka client); use default or uniform_sticky (records with a key go to the partition of its murmur2 hash, as Java's)"),
                ))
            }
        };
        conf.set("partitioner", value);
    } else {
        // Java's default: a key's partition is murmur2 of the key, as Logstash users expect.
        conf.set("partitioner", "murmur2_random");
    }
    for name in ["key_serializer", "value_serializer"] {
        if let Some(class) = opts.string(name)? {
            if !class.ends_with(".StringSerializer") && !class.ends_with(".ByteArraySerializer") {
                return Err(opts.error(
                    name,
                    "only org.apache.kafka.common.serialization.StringSerializer and ByteArraySerializer are supported",
                ));
            }
        }
    }
    if let Some(ms) = opts.int("metadata_fetch_timeout_ms")? {
        if ms != 60_000 {
            return Err(opts.error(
                "metadata_fetch_timeout_ms",
                "is a setting of Kafka's Java producer that librdkafka has no equivalent for",
            ));
        }
    }
    let retries = match opts.int("retries")? {
        Some(r) if r < 0 => return Err(opts.error("retries", "must be 0 or more")),
        r => r.map(|r| r as u64),
    };
    let retry_backoff = Duration::from_millis(
        conf.get("retry.backoff.ms")
            .and_then(|v| v.parse().ok())
            .unwrap_or(100),
    );
    let key = opts.string("message_key")?.map(|k| Template::parse(&k));
    let headers = opts
        .string_hash("message_headers")?
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, Template::parse(&v)))
        .collect();
    let codec = opts.codec("plain")?;
    let producer = conf
        .create_with_context(Reports)
        .map_err(|e| opts.plugin_error(format!("creating the Kafka producer: {e}")))?;
    Ok(Box::new(KafkaOutput {
        producer,
        topic,
        key,
        headers,
        retries,
        retry_backoff,
        codec: Mutex::new(codec),
    }))
}

/// A record as encoded once, sent as many times as it takes.
struct Record {
    topic: String,
    key: Option<String>,
    payload: Vec<u8>,
    headers: Option<OwnedHeaders>,
}

/// Errors Kafka will give again however often the record is sent.
fn is_permanent(e: &KafkaError) -> bool {
    matches!(
        e.rdkafka_error_code(),
        Some(RDKafkaErrorCode::MessageSizeTooLarge)
            | Some(RDKafkaErrorCode::InvalidMessageSize)
            | Some(RDKafkaErrorCode::InvalidMessage)
            | Some(RDKafkaErrorCode::InvalidRecord)
    )
}

impl KafkaOutput {
    fn encode(&self, events: &[&Event]) -> Vec<Record> {
        let mut codec = self.codec.lock().unwrap_or_else(|p| p.into_inner());
        events
            .iter()
            .map(|e| {
                let mut payload = Vec::new();
                codec.encode(e, &mut payload);
                let headers = (!self.headers.is_empty()).then(|| {
                    self.headers.iter().fold(OwnedHeaders::new(), |h, (k, v)| {
                        h.insert(Header {
                            key: k,
                            value: Some(v.render(e).as_bytes()),
                        })
                    })
                });
                Record {
                    topic: self.topic.render(e),
                    key: self.key.as_ref().map(|k| k.render(e)),
                    payload,
                    headers,
                }
            })
            .collect()
    }

    /// Hands `which` records to the producer and waits for their reports; returns the failed.
    fn send(&self, records: &[Record], which: &[usize]) -> Vec<(usize, KafkaError)> {
        let batch = Batch::new(which.len());
        for &i in which {
            let r = &records[i];
            let mut record =
                BaseRecord::with_opaque_to(&r.topic, Box::new((Arc::clone(&batch), i)))
                    .payload(&r.payload);
            if let Some(k) = &r.key {
                record = record.key(k);
            }
            if let Some(h) = &r.headers {
                record = record.headers(h.clone());
            }
            loop {
                match self.producer.send(record) {
                    Ok(()) => break,
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                        // The producer's queue is full: its thread is sending; wait a little.
                        record = back;
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Err((e, back)) => {
                        drop(back);
                        batch.finish(i, Some(e));
                        break;
                    }
                }
            }
        }
        batch.wait()
    }
}

impl Output for KafkaOutput {
    fn write(&self, events: &[&Event], ctx: &WriteContext) -> Result<(), OutputError> {
        if events.is_empty() {
            return Ok(());
        }
        let records = self.encode(events);
        let mut which: Vec<usize> = (0..records.len()).collect();
        let mut rounds = 0u64;
        loop {
            let mut failed = self.send(&records, &which);
            failed.retain(|(i, e)| {
                if is_permanent(e) {
                    tracing::error!(topic = %records[*i].topic, bytes = records[*i].payload.len(), "kafka output: record dropped: {e}");
                    return false;
                }
                true
            });
            if failed.is_empty() {
                return Ok(());
            }
            rounds += 1;
            let first = failed[0].1.to_string();
            if self.retries.is_some_and(|r| rounds > r) {
                tracing::error!(records = failed.len(), "kafka output: giving up on records after {rounds} attempts (retries), dropping them: {first}");
                return Ok(());
            }
            tracing::warn!(
                records = failed.len(),
                "kafka output: sending again: {first}"
            );
            if !ctx.sleep(self.retry_backoff) {
                return Err(OutputError::retryable(format!(
                    "kafka output: {} record(s) not confirmed at the stop: {first}",
                    failed.len()
                )));
            }
            which = failed.into_iter().map(|(i, _)| i).collect();
            which.sort_unstable();
        }
    }

    fn close(&self) -> Result<(), OutputError> {
        self.producer
            .flush(Duration::from_secs(30))
            .map_err(|e| OutputError::retryable(format!("kafka output: flush at close: {e}")))
    }
}

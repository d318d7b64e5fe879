//! `sqs` input: receives messages from an SQS queue (on AWS or a compatible server), as
//! logstash-input-sqs does.
//!
//! The queue's URL is looked up by name (`queue`, with `queue_owner_aws_account_id` for
//! another account's queue). Each of `threads` loops long-polls for up to 10 messages at a
//! time (`polling_frequency` seconds of waiting), decodes each body through the codec (`json`),
//! sets `id_field` (the message id), `md5_field` (the body's MD5) and `sent_timestamp_field`
//! (when it was sent) where asked, queues the events, and only then deletes the messages from
//! the queue: a crash before that leaves them to come back once their visibility timeout
//! ends (at least once). Errors (the server away, a bad answer) are logged and retried with
//! back-off, from 1 s doubling to 60 s. The SQS query API is used, signed by [`crate::aws`].

use std::sync::Arc;
use std::time::Duration;

use sluice_event::{Event, FieldRef, Timestamp, Value};
use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};

use crate::aws::{uri_encode, Aws};
use crate::s3::{xml_blocks, xml_text};

pub struct SqsInput {
    aws: Aws,
    queue: String,
    owner: Option<String>,
    wait: u32,
    threads: usize,
    codec: Box<dyn Codec>,
    fields: Arc<Fields>,
}

struct Fields {
    id: Option<FieldRef>,
    md5: Option<FieldRef>,
    sent: Option<FieldRef>,
}

/// A message received.
struct Message {
    id: String,
    receipt: String,
    md5: String,
    body: String,
    sent: Option<i64>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let queue = opts.required_string("queue")?;
    let aws = Aws::read(opts)?;
    let _ = crate::s3::read_additional_settings(opts)?;
    let owner = opts.string("queue_owner_aws_account_id")?;
    let wait = match opts.int("polling_frequency")?.unwrap_or(20) {
        w if (0..=20).contains(&w) => w as u32,
        _ => return Err(opts.error("polling_frequency", "must be between 0 and 20 seconds")),
    };
    let threads = opts.int("threads")?.unwrap_or(1).max(1) as usize;
    let field = |opts: &mut Options, name: &str| -> Result<Option<FieldRef>, ConfigError> {
        match opts.string(name)? {
            Some(f) => FieldRef::parse(&f)
                .map(Some)
                .map_err(|e| opts.error(name, e.to_string())),
            None => Ok(None),
        }
    };
    let fields = Fields {
        id: field(opts, "id_field")?,
        md5: field(opts, "md5_field")?,
        sent: field(opts, "sent_timestamp_field")?,
    };
    let codec = opts.codec("json")?;
    Ok(Box::new(SqsInput {
        aws,
        queue,
        owner,
        wait,
        threads,
        codec,
        fields: Arc::new(fields),
    }))
}

/// `application/x-www-form-urlencoded` of pairs.
fn form(pairs: &[(&str, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", uri_encode(k, false), uri_encode(v, false)))
        .collect::<Vec<_>>()
        .join("&")
}

impl SqsInput {
    fn endpoint(&self) -> String {
        self.aws
            .endpoint
            .clone()
            .unwrap_or_else(|| format!("https://sqs.{}.amazonaws.com", self.aws.region))
    }

    /// An SQS call: the answer's XML.
    fn call(aws: &Aws, url: &str, pairs: &[(&str, String)]) -> Result<String, String> {
        let body = form(pairs);
        let r = aws.send(
            "sqs",
            "POST",
            url,
            &[(
                "content-type",
                "application/x-www-form-urlencoded; charset=utf-8".to_owned(),
            )],
            body.as_bytes(),
        )?;
        let text = r.text();
        if (200..300).contains(&r.status) {
            Ok(text)
        } else {
            Err(format!(
                "status {}: {}",
                r.status,
                xml_text(&text, "Message").unwrap_or(text)
            ))
        }
    }

    fn queue_url(&self) -> Result<String, String> {
        let mut pairs = vec![
            ("Action", "GetQueueUrl".to_owned()),
            ("QueueName", self.queue.clone()),
            ("Version", "2012-11-05".to_owned()),
        ];
        if let Some(o) = &self.owner {
            pairs.push(("QueueOwnerAWSAccountId", o.clone()));
        }
        let xml = Self::call(&self.aws, &format!("{}/", self.endpoint()), &pairs)?;
        xml_text(&xml, "QueueUrl").ok_or_else(|| format!("no QueueUrl in {xml}"))
    }
}

fn receive(aws: &Aws, url: &str, wait: u32) -> Result<Vec<Message>, String> {
    let xml = SqsInput::call(
        aws,
        url,
        &[
            ("Action", "ReceiveMessage".to_owned()),
            ("MaxNumberOfMessages", "10".to_owned()),
            ("WaitTimeSeconds", wait.to_string()),
            ("AttributeName.1", "SentTimestamp".to_owned()),
            ("Version", "2012-11-05".to_owned()),
        ],
    )?;
    Ok(xml_blocks(&xml, "Message")
        .into_iter()
        .map(|m| {
            let sent = xml_blocks(m, "Attribute")
                .into_iter()
                .find(|a| xml_text(a, "Name").as_deref() == Some("SentTimestamp"))
                .and_then(|a| xml_text(a, "Value"))
                .and_then(|v| v.parse().ok());
            Message {
                id: xml_text(m, "MessageId").unwrap_or_default(),
                receipt: xml_text(m, "ReceiptHandle").unwrap_or_default(),
                md5: xml_text(m, "MD5OfBody").unwrap_or_default(),
                body: xml_text(m, "Body").unwrap_or_default(),
                sent,
            }
        })
        .collect())
}

fn delete(aws: &Aws, url: &str, messages: &[Message]) -> Result<(), String> {
    let mut pairs = vec![
        ("Action", "DeleteMessageBatch".to_owned()),
        ("Version", "2012-11-05".to_owned()),
    ];
    let keys: Vec<(String, String)> = (1..=messages.len())
        .map(|i| {
            (
                format!("DeleteMessageBatchRequestEntry.{i}.Id"),
                format!("DeleteMessageBatchRequestEntry.{i}.ReceiptHandle"),
            )
        })
        .collect();
    for (i, m) in messages.iter().enumerate() {
        pairs.push((keys[i].0.as_str(), format!("m{i}")));
        pairs.push((keys[i].1.as_str(), m.receipt.clone()));
    }
    let xml = SqsInput::call(aws, url, &pairs)?;
    if let Some(f) = xml_blocks(&xml, "BatchResultErrorEntry").first() {
        return Err(format!("deleting messages: {f}"));
    }
    Ok(())
}

/// One polling loop until the stop.
fn poll(
    aws: &Aws,
    url: &str,
    wait: u32,
    mut codec: Box<dyn Codec>,
    fields: &Fields,
    ctx: &InputContext,
) {
    let mut backoff = Duration::from_secs(1);
    while !ctx.is_stopping() {
        let messages = match receive(aws, url, wait) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, sleep = ?backoff, "sqs: error ... retrying with exponential backoff");
                if !sluice_pipeline::plugin::sleep_unless(backoff, || ctx.is_stopping()) {
                    return;
                }
                backoff = (backoff * 2).min(Duration::from_secs(60));
                continue;
            }
        };
        backoff = Duration::from_secs(1);
        if messages.is_empty() {
            continue;
        }
        let mut events = Vec::new();
        for m in &messages {
            let first = events.len();
            codec.decode(m.body.as_bytes(), &mut events);
            codec.flush(&mut events);
            for e in &mut events[first..] {
                set_fields(e, fields, m);
            }
        }
        if ctx.push(events).is_err() {
            return;
        }
        // Queued: now they may go from the queue.
        if let Err(e) = delete(aws, url, &messages) {
            tracing::warn!(error = %e, "sqs: could not delete received messages; they will be received again");
        }
    }
}

fn set_fields(e: &mut Event, fields: &Fields, m: &Message) {
    if let Some(f) = &fields.id {
        e.set(f, Value::from(m.id.as_str()));
    }
    if let Some(f) = &fields.md5 {
        e.set(f, Value::from(m.md5.as_str()));
    }
    if let (Some(f), Some(ms)) = (&fields.sent, m.sent) {
        // Logstash keeps whole seconds (`Timestamp.at(ms / 1000)`).
        e.set(
            f,
            Value::Timestamp(Timestamp::from_millis(ms / 1000 * 1000)),
        );
    }
}

impl Input for SqsInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let mut backoff = Duration::from_secs(1);
        let url = loop {
            match self.queue_url() {
                Ok(u) => break u,
                Err(e) => {
                    tracing::error!(queue = %self.queue, error = %e, "sqs: cannot find the queue; retrying");
                    if !sluice_pipeline::plugin::sleep_unless(backoff, || ctx.is_stopping()) {
                        return Ok(());
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(60));
                }
            }
        };
        let (aws, wait, fields) = (&self.aws, self.wait, &self.fields);
        let codecs: Vec<Box<dyn Codec>> =
            (0..self.threads).map(|_| self.codec.clone_box()).collect();
        std::thread::scope(|s| {
            for codec in codecs {
                let url = &url;
                s.spawn(move || poll(aws, url, wait, codec, fields, ctx));
            }
        });
        Ok(())
    }
}

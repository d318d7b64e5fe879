//! `data_type => channel | pattern_channel`: SUBSCRIBE / PSUBSCRIBE to `key`.
//!
//! A reader thread owns the subscription (waking every 0.25 s to notice shutdown, and
//! resubscribing with back-off when the connection is lost; messages published meanwhile are
//! gone, as pub/sub goes); it hands `(channel, payload)` pairs over a bounded channel to this
//! thread, which decodes them and queues them in batches of up to `batch_count`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::time::Duration;

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{Codec, InputContext};

use super::{DataType, Settings};
use crate::retry::{sleep_unless, Backoff, Outage};

type Message = (String, Vec<u8>);

pub fn run(cfg: &Settings, outage: &Outage, mut codec: Box<dyn Codec>, ctx: &InputContext) {
    let done = AtomicBool::new(false);
    let stop = || done.load(Ordering::Relaxed) || ctx.is_stopping();
    let (tx, rx) = sync_channel::<Message>(cfg.batch_count.clamp(64, 8192) * 2);
    let stop = &stop;
    std::thread::scope(|s| {
        s.spawn(move || read(cfg, outage, tx, stop));
        batch(cfg, &mut *codec, rx, ctx);
        done.store(true, Ordering::Relaxed);
    });
}

/// Decodes and queues what the reader receives, until shutdown.
fn batch(cfg: &Settings, codec: &mut dyn Codec, rx: Receiver<Message>, ctx: &InputContext) {
    let channel_field = FieldRef::parse("[@metadata][redis_channel]").expect("valid reference");
    let mut events: Vec<Event> = Vec::new();
    loop {
        let first = match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(m) => Some(m),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let stopping = ctx.is_stopping();
        let mut n = 0;
        let mut next = first;
        while let Some((channel, payload)) = next {
            let start = events.len();
            codec.decode(&payload, &mut events);
            for e in &mut events[start..] {
                e.set(&channel_field, Value::String(channel.as_str().into()));
            }
            n += 1;
            // At shutdown take everything already received.
            next = if n < cfg.batch_count || stopping {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        if !events.is_empty() && ctx.push(std::mem::take(&mut events)).is_err() {
            tracing::warn!("redis input: stopping; messages received but not queued are dropped");
            return;
        }
        if stopping {
            return;
        }
    }
}

/// Subscribes and forwards messages until `stop()`, reconnecting with back-off.
fn read(
    cfg: &Settings,
    outage: &Outage,
    tx: SyncSender<Message>,
    stop: &(dyn Fn() -> bool + Sync),
) {
    let target = cfg.target.to_string();
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    while !stop() {
        // In a cluster, messages published on any node reach every node: one will do.
        let mut con = match cfg.target.connect_one(&cfg.conn, Duration::ZERO) {
            Ok(c) => c,
            Err(e) => {
                outage.failed(&target, &e);
                sleep_unless(backoff.next_delay(), stop);
                continue;
            }
        };
        let mut pubsub = con.as_pubsub();
        let subscribed = match cfg.data_type {
            DataType::PatternChannel => pubsub.psubscribe(&cfg.key),
            _ => pubsub.subscribe(&cfg.key),
        }
        .and_then(|()| pubsub.set_read_timeout(Some(Duration::from_millis(250))));
        if let Err(e) = subscribed {
            outage.failed(&target, &e);
            sleep_unless(backoff.next_delay(), stop);
            continue;
        }
        outage.recovered(&target);
        backoff.reset();
        tracing::info!(key = %cfg.key, pattern = cfg.data_type == DataType::PatternChannel, "redis input: subscribed");
        while !stop() {
            match pubsub.get_message() {
                Ok(msg) => {
                    let m = (
                        msg.get_channel_name().to_owned(),
                        msg.get_payload_bytes().to_vec(),
                    );
                    if tx.send(m).is_err() {
                        return;
                    }
                }
                Err(e) if e.is_timeout() => {}
                Err(e) => {
                    outage.failed(&target, &e);
                    sleep_unless(backoff.next_delay(), stop);
                    break;
                }
            }
        }
    }
}

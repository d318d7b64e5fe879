//! `redis` output: `RPUSH`es each event (encoded with the codec, `json` by default) onto a list,
//! or `PUBLISH`es it to a channel; `key` may hold sprintf references (`logs-%{type}`).
//!
//! A batch goes out as one pipeline, one round trip: one `RPUSH` per event as Logstash sends
//! (same list contents), or with `batch => true` one `RPUSH` per `batch_events` values. Events
//! are never held back between batches (so `batch_timeout` has nothing to wait for): `write`
//! returns once Redis has accepted the whole batch, and only then is the batch acked.
//!
//! Several workers write at once, each on a connection of its own from a small pool. `host` is a
//! list (`host:port` allowed), shuffled at startup unless `shuffle_hosts => false`; a
//! connection that fails moves to the next host. While Redis cannot be reached the batch is
//! retried (`reconnect_interval`, doubling up to 10 s), with one warning when the outage starts
//! and one line when it ends; a command Redis refuses (`WRONGTYPE`, `OOM`...) is returned as a
//! retryable error, so the pipeline retries it with its own back-off. A retried batch may be
//! pushed twice if the connection broke after Redis applied it (at-least-once).
//!
//! `cluster => true` writes to a Redis Cluster (`host` lists seed nodes; a batch is one round
//! trip per master holding some of its keys); `sentinel_hosts` + `master_name` write to the
//! master a Sentinel group names. A failover's `READONLY`/`CLUSTERDOWN` replies count as a lost
//! connection: the batch is retried on the new master.
//!
//! Congestion control (`congestion_threshold` > 0, lists only): at most every
//! `congestion_interval` seconds per key, `LLEN` is checked, and while the list is longer than
//! the threshold the batch waits (one warning per wait), so Redis does not fill up when
//! consumers fall behind.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sluice_event::{Event, Template};
use sluice_pipeline::{Codec, ConfigError, Options, Output, OutputError, WriteContext};

use crate::redis_conn::{
    hint, is_connection_error, key_and_port, parse_hosts, targets, CommandMap, Con, ConnConfig,
    Target,
};
use crate::retry::{random_u64, Backoff, Outage};

pub struct RedisOutput {
    hosts: Vec<Target>,
    next_host: AtomicUsize,
    conn: ConnConfig,
    key: Template,
    channel: bool,
    /// Values per `RPUSH` (1 without `batch`).
    per_push: usize,
    congestion_threshold: u64,
    congestion_interval: Duration,
    reconnect_interval: Duration,
    commands: CommandMap,
    codec: Mutex<Box<dyn Codec>>,
    pool: Mutex<Vec<Slot>>,
    last_congestion_check: Mutex<HashMap<String, Instant>>,
    outage: Outage,
}

/// What one worker's write uses: a connection (to `hosts[host]`) and a codec.
struct Slot {
    con: Option<(Con, usize)>,
    codec: Box<dyn Codec>,
    buf: Vec<u8>,
    ends: Vec<usize>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let channel = match opts.string("data_type")?.as_deref() {
        Some("list") => false,
        Some("channel") => true,
        Some(other) => {
            return Err(opts.error(
                "data_type",
                format!("expected one of [\"list\", \"channel\"], got {other:?}"),
            ))
        }
        None => return Err(opts.plugin_error(
            "missing required setting \"data_type\" for output plugin \"redis\" (list or channel)",
        )),
    };
    let (key, port) = key_and_port(opts)?;
    let host_list = opts
        .string_list("host")?
        .unwrap_or_else(|| vec!["127.0.0.1".to_owned()]);
    if host_list.is_empty() {
        return Err(opts.error("host", "must name at least one host"));
    }
    let mut hosts = parse_hosts(opts, "host", &host_list, port)?;
    if opts.boolean_or("shuffle_hosts", true)? {
        let mut r = random_u64();
        for i in (1..hosts.len()).rev() {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            hosts.swap(i, (r % (i as u64 + 1)) as usize);
        }
    }
    let conn = ConnConfig::from_options(opts)?;
    let hosts = targets(opts, hosts, false, &conn)?;
    let batch = opts.boolean_or("batch", false)?;
    if batch && channel {
        return Err(opts.error("batch", "is not supported with data_type => channel"));
    }
    let batch_events = opts.int("batch_events")?.unwrap_or(50);
    if !(1..=1_000_000).contains(&batch_events) {
        return Err(opts.error("batch_events", "must be between 1 and 1000000"));
    }
    // Batches are never held back, so there is no timeout to wait for; accepted for configs
    // written for Logstash.
    opts.seconds("batch_timeout", 5.0)?;
    let congestion_threshold = opts.int("congestion_threshold")?.unwrap_or(0);
    if congestion_threshold < 0 {
        return Err(opts.error("congestion_threshold", "must be 0 (off) or more"));
    }
    let congestion_interval = opts.seconds("congestion_interval", 1.0)?;
    let reconnect_interval = opts.seconds("reconnect_interval", 1.0)?;
    let commands = CommandMap::from_options(opts, &["rpush", "publish", "llen"])?;
    let codec = opts.codec("json")?;
    let identity = format!(
        "redis output {} {}:{key}",
        match &hosts[..] {
            [one @ (Target::Cluster(_) | Target::Sentinel { .. })] => one.to_string(),
            _ => host_list.join(","),
        },
        if channel { "channel" } else { "list" }
    );
    Ok(Box::new(RedisOutput {
        hosts,
        next_host: AtomicUsize::new(0),
        conn,
        key: Template::parse(&key),
        channel,
        per_push: if batch { batch_events as usize } else { 1 },
        congestion_threshold: congestion_threshold as u64,
        congestion_interval,
        reconnect_interval,
        commands,
        codec: Mutex::new(codec),
        pool: Mutex::new(Vec::new()),
        last_congestion_check: Mutex::new(HashMap::new()),
        outage: Outage::new(identity, "Redis"),
    }))
}

/// Groups event indexes by rendered key, in order of first appearance.
fn group_by_key(key: &Template, events: &[&Event]) -> Vec<(String, Vec<usize>)> {
    if let Some(k) = key.constant() {
        return vec![(k.to_owned(), (0..events.len()).collect())];
    }
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let k = key.render(e);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(i),
            None => groups.push((k, vec![i])),
        }
    }
    groups
}

impl RedisOutput {
    fn take_slot(&self) -> Slot {
        if let Some(s) = self.pool.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return s;
        }
        Slot {
            con: None,
            codec: self
                .codec
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone_box(),
            buf: Vec::new(),
            ends: Vec::new(),
        }
    }

    fn put_slot(&self, slot: Slot) {
        self.pool
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(slot);
    }

    /// The slot's connection, opening one to the next host if it has none.
    fn connection<'s>(
        &self,
        slot: &'s mut Slot,
    ) -> Result<&'s mut Con, (String, redis::RedisError)> {
        if slot.con.is_none() {
            let i = self.next_host.fetch_add(1, Ordering::Relaxed) % self.hosts.len();
            let c = self.hosts[i]
                .connect(&self.conn, Duration::ZERO)
                .map_err(|e| (self.hosts[i].to_string(), e))?;
            slot.con = Some((c, i));
        }
        Ok(&mut slot.con.as_mut().expect("just set").0)
    }

    /// Waits while any of `keys` is longer than `congestion_threshold`.
    fn wait_for_congestion(&self, con: &mut Con, keys: &[&str]) -> redis::RedisResult<()> {
        for key in keys {
            let due = {
                let mut last = self
                    .last_congestion_check
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                let now = Instant::now();
                match last.get(*key) {
                    Some(t) if now.duration_since(*t) < self.congestion_interval => false,
                    _ => {
                        last.insert((*key).to_owned(), now);
                        true
                    }
                }
            };
            if !due {
                continue;
            }
            let mut warned = false;
            loop {
                let len: u64 = redis::cmd(self.commands.name("llen"))
                    .arg(*key)
                    .query(con)?;
                if len <= self.congestion_threshold {
                    break;
                }
                if !warned {
                    tracing::warn!(
                        key = %key,
                        length = len,
                        threshold = self.congestion_threshold,
                        "redis output: list is over its congestion threshold; waiting for consumers"
                    );
                    warned = true;
                }
                std::thread::sleep(self.congestion_interval.max(Duration::from_millis(100)));
            }
            if warned {
                tracing::info!(key = %key, "redis output: congestion cleared; resuming");
            }
        }
        Ok(())
    }

    /// Builds the batch's commands: RPUSH (per event, or per `per_push` values) or PUBLISH.
    fn pipeline(&self, slot: &Slot, groups: &[(String, Vec<usize>)]) -> redis::Pipeline {
        let value = |i: usize| {
            let start = if i == 0 { 0 } else { slot.ends[i - 1] };
            &slot.buf[start..slot.ends[i]]
        };
        let mut p = redis::Pipeline::with_capacity(groups.len());
        let verb = if self.channel {
            self.commands.name("publish")
        } else {
            self.commands.name("rpush")
        };
        let per = if self.channel { 1 } else { self.per_push };
        for (key, idx) in groups {
            for chunk in idx.chunks(per) {
                let cmd = p.cmd(verb).arg(key);
                for &i in chunk {
                    cmd.arg(value(i));
                }
                cmd.ignore();
            }
        }
        p
    }
}

impl Output for RedisOutput {
    fn write(&self, events: &[&Event], _ctx: &WriteContext) -> Result<(), OutputError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut slot = self.take_slot();
        slot.buf.clear();
        slot.ends.clear();
        for e in events {
            slot.codec.encode(e, &mut slot.buf);
            slot.ends.push(slot.buf.len());
        }
        let groups = group_by_key(&self.key, events);
        let pipeline = self.pipeline(&slot, &groups);
        let keys: Vec<&str> = groups.iter().map(|(k, _)| k.as_str()).collect();
        let mut backoff = Backoff::new(
            self.reconnect_interval.max(Duration::from_millis(10)),
            Duration::from_secs(10).max(self.reconnect_interval),
        );
        loop {
            let result = self.connection(&mut slot).and_then(|con| {
                let r = if !self.channel && self.congestion_threshold > 0 {
                    self.wait_for_congestion(con, &keys)
                } else {
                    Ok(())
                };
                r.and_then(|()| con.exec(&pipeline))
                    .map_err(|e| (String::new(), e))
            });
            let (target, e) = match result {
                Ok(()) => {
                    if let Some((_, i)) = &slot.con {
                        self.outage.recovered(&self.hosts[*i].to_string());
                    }
                    self.put_slot(slot);
                    return Ok(());
                }
                Err(err) => err,
            };
            let target = match &slot.con {
                Some((_, i)) => self.hosts[*i].to_string(),
                None => target,
            };
            if !is_connection_error(&e) {
                self.put_slot(slot);
                return Err(OutputError::retryable(format!(
                    "Redis at {target} refused the batch: {e}{}",
                    hint(&e)
                )));
            }
            slot.con = None;
            self.outage.failed(&target, &e);
            std::thread::sleep(backoff.next_delay());
        }
    }

    fn close(&self) -> Result<(), OutputError> {
        self.pool.lock().unwrap_or_else(|p| p.into_inner()).clear();
        Ok(())
    }
}

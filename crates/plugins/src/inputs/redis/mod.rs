//! `redis` input: reads events from a Redis list (`data_type => list`), or from channels
//! (`channel`: SUBSCRIBE, `pattern_channel`: PSUBSCRIBE), decoding each value with the codec
//! (`json` by default; a value that is not JSON becomes an event tagged `_jsonparsefailure`
//! with the text in `message`).
//!
//! Lists: each of `threads` threads takes up to `batch_count` values per round trip, atomically,
//! so several threads and several sluice processes on one list never get the same value:
//! `LPOP key count` on Redis ≥ 6.2, a Lua `LRANGE`+`LTRIM` script on older servers
//! (`batch_method` forces either). An empty list is waited on with `BLPOP` (a fraction of a
//! second at a time, so shutdown is noticed), so an idle input costs nothing.
//!
//! `reliable => true` (beyond Logstash): a batch is moved, atomically, from the list into a
//! processing list of this consumer's thread, and deleted from there only once it is in our
//! queue; a consumer that dies leaves its batch there, and live consumers put it back at the
//! head of the list once the dead one's lease has expired (see [`list`]). With the persisted
//! queue this makes the path Redis → sluice at-least-once.
//!
//! Channels: one subscription (threads above 1 would subscribe several times and receive
//! every message several times, as Logstash's does; we warn and subscribe once). Each event
//! gets the channel it came from in `[@metadata][redis_channel]`.
//!
//! Redis going away: one warning per outage, reconnection with back-off (0.1 s doubling to
//! 5 s), one line when it is back.

mod channel;
mod list;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};

use crate::redis_conn::{key_and_port, parse_host, CommandMap, ConnConfig, Endpoint};
use crate::retry::Outage;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataType {
    List,
    Channel,
    PatternChannel,
}

/// How a batch is taken from a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchMethod {
    /// `LPOP key count` when the server is 6.2 or newer, else the script.
    Auto,
    Lpop,
    Script,
}

/// Commands the input sends (for `command_map`).
const COMMANDS: &[&str] = &[
    "lpop", "blpop", "lrange", "ltrim", "rpush", "lpush", "del", "eval", "evalsha", "script",
    "info", "exists", "sadd", "srem", "smembers", "set", "blmove",
];

pub struct RedisInput {
    cfg: Arc<Settings>,
    codec: Box<dyn Codec>,
}

/// Everything the input's threads share, read-only.
pub struct Settings {
    pub endpoint: Endpoint,
    pub conn: ConnConfig,
    pub data_type: DataType,
    pub key: String,
    pub threads: usize,
    pub batch_count: usize,
    pub batch_method: BatchMethod,
    pub reliable: bool,
    pub commands: CommandMap,
    /// How long a reliable consumer's lease lives without being renewed.
    pub lease: Duration,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let data_type = match opts.string("data_type")?.as_deref() {
        Some("list") => DataType::List,
        Some("channel") => DataType::Channel,
        Some("pattern_channel") => DataType::PatternChannel,
        Some(other) => {
            return Err(opts.error(
                "data_type",
                format!("expected one of [\"list\", \"channel\", \"pattern_channel\"], got {other:?}"),
            ))
        }
        None => {
            return Err(opts.plugin_error(
                "missing required setting \"data_type\" for input plugin \"redis\" (list, channel or pattern_channel)",
            ))
        }
    };
    let (key, port) = key_and_port(opts)?;
    let host = opts.string_or("host", "127.0.0.1")?;
    let endpoint = match opts.string("path")? {
        Some(p) => {
            tracing::debug!("redis input: path is set; host and port are not used");
            Endpoint::Unix(p.into())
        }
        None => parse_host(&host, port).map_err(|e| opts.error("host", e))?,
    };
    let conn = ConnConfig::from_options(opts)?;
    let threads = opts.int("threads")?.unwrap_or(1);
    if !(1..=1024).contains(&threads) {
        return Err(opts.error("threads", "must be between 1 and 1024"));
    }
    let batch_count = opts.int("batch_count")?.unwrap_or(125);
    if !(1..=1_000_000).contains(&batch_count) {
        return Err(opts.error("batch_count", "must be between 1 and 1000000"));
    }
    let batch_method = match opts
        .choice("batch_method", &["auto", "lpop", "script"], "auto")?
        .as_str()
    {
        "lpop" => BatchMethod::Lpop,
        "script" => BatchMethod::Script,
        _ => BatchMethod::Auto,
    };
    let reliable = opts.boolean_or("reliable", false)?;
    if reliable && data_type != DataType::List {
        return Err(opts.error("reliable", "only applies to data_type => list"));
    }
    let lease = opts.float("reliable_lease")?.unwrap_or(10.0);
    if !(1.0..=3600.0).contains(&lease) {
        return Err(opts.error("reliable_lease", "must be between 1 and 3600 seconds"));
    }
    let commands = CommandMap::from_options(opts, COMMANDS)?;
    let codec = opts.codec("json")?;
    Ok(Box::new(RedisInput {
        cfg: Arc::new(Settings {
            endpoint,
            conn,
            data_type,
            key,
            threads: threads as usize,
            batch_count: batch_count as usize,
            batch_method,
            reliable,
            commands,
            lease: Duration::from_secs_f64(lease),
        }),
        codec,
    }))
}

impl Settings {
    fn identity(&self) -> String {
        let kind = match self.data_type {
            DataType::List => "list",
            DataType::Channel => "channel",
            DataType::PatternChannel => "pattern_channel",
        };
        format!(
            "redis://{}/{} {kind}:{}",
            self.endpoint, self.conn.db, self.key
        )
    }
}

impl Input for RedisInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let cfg = &*self.cfg;
        let outage = Outage::new(format!("redis input {}", cfg.identity()), "Redis");
        tracing::info!(identity = %cfg.identity(), threads = cfg.threads, batch_count = cfg.batch_count, reliable = cfg.reliable, "redis input starting");
        match cfg.data_type {
            DataType::List => {
                let consumer = cfg.reliable.then(|| list::Consumer::new(cfg));
                let done = AtomicBool::new(false);
                std::thread::scope(|s| {
                    let workers: Vec<_> = (0..cfg.threads)
                        .map(|i| {
                            let codec = self.codec.clone_box();
                            let (outage, consumer) = (&outage, consumer.as_ref());
                            s.spawn(move || {
                                list::ListThread::new(cfg, i, consumer, outage, codec).run(ctx)
                            })
                        })
                        .collect();
                    if let Some(c) = &consumer {
                        let done = &done;
                        s.spawn(move || c.heartbeat(cfg, || done.load(Ordering::SeqCst)));
                    }
                    for w in workers {
                        if w.join().is_err() {
                            tracing::error!("redis input: a list thread panicked");
                        }
                    }
                    done.store(true, Ordering::SeqCst);
                });
                if let Some(c) = &consumer {
                    c.leave(cfg);
                }
            }
            DataType::Channel | DataType::PatternChannel => {
                if cfg.threads > 1 {
                    tracing::warn!(
                        threads = cfg.threads,
                        "redis input: threads > 1 with a channel would receive every message several times; subscribing once"
                    );
                }
                channel::run(cfg, &outage, self.codec.clone_box(), ctx);
            }
        }
        Ok(())
    }
}

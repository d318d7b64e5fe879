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
//!
//! Beyond one server: `cluster => true` reads from a Redis Cluster (`host` lists seed nodes; the
//! list lives on its key's slot's master, and the cluster connection follows it there through
//! `MOVED`/`ASK` and failovers); `sentinel_hosts` + `master_name` read from the master a
//! Sentinel group names, asked again at each reconnection. With `reliable => true` a failover
//! loses nothing: the helper keys share the list's slot (see [`list`]), and whatever a dead
//! master had not replicated is still on the list of the promoted replica.

mod channel;
mod list;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};

use crate::redis_conn::{
    key_and_port, parse_hosts, slot_prefix, targets, CommandMap, ConnConfig, Endpoint, Target,
};
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
    "info", "exists", "sadd", "srem", "smembers", "set", "blmove", "llen",
];

pub struct RedisInput {
    cfg: Arc<Settings>,
    codec: Box<dyn Codec>,
}

/// Everything the input's threads share, read-only.
pub struct Settings {
    pub target: Target,
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
    /// Reliable mode: the prefix of its helper keys, in the list's cluster slot.
    pub helper_prefix: String,
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
    let host_list = opts
        .string_list("host")?
        .unwrap_or_else(|| vec!["127.0.0.1".to_owned()]);
    let path = opts.string("path")?;
    let hosts = match &path {
        Some(p) => {
            tracing::debug!("redis input: path is set; host and port are not used");
            vec![Endpoint::Unix(p.into())]
        }
        None => parse_hosts(opts, "host", &host_list, port)?,
    };
    if hosts.is_empty() {
        return Err(opts.error("host", "must name a host"));
    }
    let conn = ConnConfig::from_options(opts)?;
    let many_hosts = hosts.len() > 1;
    let mut target = targets(opts, hosts, path.is_some(), &conn)?;
    // Several plain hosts would be several targets: only a cluster takes a list.
    if many_hosts && !matches!(target[0], Target::Cluster(_)) {
        return Err(opts.error(
            "host",
            "takes one host, unless cluster => true (then it lists seed nodes of the cluster)",
        ));
    }
    let target = target.remove(0);
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
    let helper_prefix = match slot_prefix(&key) {
        Some(p) => p,
        None if reliable && matches!(target, Target::Cluster(_)) => {
            return Err(opts.error(
                "key",
                format!("{key:?} has a '}}' but no hash tag, so reliable mode's helper keys cannot share its cluster slot; give it a hash tag, like \"{{name}}\""),
            ))
        }
        None => key.clone(),
    };
    let commands = CommandMap::from_options(opts, COMMANDS)?;
    let codec = opts.codec("json")?;
    Ok(Box::new(RedisInput {
        cfg: Arc::new(Settings {
            target,
            conn,
            data_type,
            key,
            threads: threads as usize,
            batch_count: batch_count as usize,
            batch_method,
            reliable,
            commands,
            lease: Duration::from_secs_f64(lease),
            helper_prefix,
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
            self.target, self.conn.db, self.key
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

//! `data_type => list`: one [`ListThread`] per `threads`, each with its own connection.
//!
//! A round trip takes a whole batch atomically: `LPOP key count` (Redis ≥ 6.2) or the
//! `LRANGE`+`LTRIM` script. When the list is empty the thread blocks in `BLPOP` for a fraction
//! of a second (so it notices shutdown), then fills the rest of the batch.
//!
//! With `LPOP`, a full batch means the list has more: the thread sends the next `LPOP` before
//! decoding the batch it holds, so Redis and the network work while we decode. The reply is
//! read at the next round; at shutdown it goes back to the list with the batch not queued.
//!
//! Reliable mode. Keys, for list `K` and consumer id `C` (host:pid:random, new per process),
//! with `P` = `{K}` (or `K` itself when it has a hash tag), so that in a Redis Cluster they all
//! hash to `K`'s slot and one script may touch them:
//! - `P:sluice:processing:C:T`: thread T's batch in flight. The pop script moves a batch from
//!   `K` to it atomically; it is deleted once the batch is in our queue. While it holds values
//!   the script takes no more and returns them again: a pop retried after its reply was lost
//!   (a cluster connection retries by itself) gets the same batch, never a second one.
//! - `P:sluice:consumers`: a set naming every processing list in use.
//! - `P:sluice:lease:C`: exists while consumer C lives (`reliable_lease` seconds, renewed by a
//!   heartbeat thread every fifth of that).
//!
//! On a cluster connection scripts go as `EVAL` (a `SCRIPT LOAD` would reach one random node)
//! and no `LPOP` is sent ahead (the connection has no such call).
//!
//! Every heartbeat also looks for processing lists whose consumer's lease is gone and puts their
//! values back at the head of `K`, in order (one script, so two live consumers cannot both do
//! it). A thread that reconnects first deals with its own processing list: deletes it when its
//! batch was already queued, queues it otherwise. At shutdown, a batch that could not be queued
//! goes back to the head of `K` (in both modes).

use std::time::Duration;

use redis::{RedisError, RedisResult, Value};
use sluice_event::Event;
use sluice_pipeline::{Codec, InputContext};

use super::{BatchMethod, Settings};
use crate::redis_conn::{hint, server_version, Con};
use crate::retry::{random_u64, sleep_unless, Backoff, Outage};

/// How long one `BLPOP` waits on an empty list (servers ≥ 6.0 take fractions of a second).
const BLOCK_SECS: &str = "0.25";
const BLOCK_SECS_OLD: &str = "1";

/// A Lua script, sent with `EVALSHA` once loaded.
struct Script {
    body: String,
}

/// The scripts, with `command_map`'s names in them.
struct Scripts {
    pop: Script,
    pop_move: Script,
    requeue: Script,
}

impl Scripts {
    fn new(cfg: &Settings) -> Scripts {
        let c = |n: &str| cfg.commands.name(n).to_owned();
        let (lrange, ltrim, rpush, lpush, del, exists, srem, llen) = (
            c("lrange"),
            c("ltrim"),
            c("rpush"),
            c("lpush"),
            c("del"),
            c("exists"),
            c("srem"),
            c("llen"),
        );
        Scripts {
            // KEYS[1] list; ARGV[1] count → the values taken from the head.
            pop: Script {
                body: format!(
                    "local items = redis.call('{lrange}', KEYS[1], 0, tonumber(ARGV[1]) - 1)\n\
                     if #items > 0 then redis.call('{ltrim}', KEYS[1], #items, -1) end\n\
                     return items"
                ),
            },
            // KEYS[1] list, KEYS[2] processing list; ARGV[1] count → the processing list,
            // filled up to count from the list.
            pop_move: Script {
                body: format!(
                    "local have = redis.call('{llen}', KEYS[2])\n\
                     local want = tonumber(ARGV[1]) - have\n\
                     if want > 0 then\n\
                       local items = redis.call('{lrange}', KEYS[1], 0, want - 1)\n\
                       if #items > 0 then\n\
                         redis.call('{ltrim}', KEYS[1], #items, -1)\n\
                         for i = 1, #items, 1000 do\n\
                           redis.call('{rpush}', KEYS[2], unpack(items, i, math.min(i + 999, #items)))\n\
                         end\n\
                       end\n\
                       if have == 0 then return items end\n\
                     end\n\
                     return redis.call('{lrange}', KEYS[2], 0, -1)"
                ),
            },
            // KEYS[1] list, KEYS[2] processing list, KEYS[3] its consumer's lease, KEYS[4] the
            // consumers set; ARGV[1] the set member, ARGV[2] "force" to skip the lease check and
            // keep the member → -1 if the consumer lives, else the number of values put back.
            requeue: Script {
                body: format!(
                    "if ARGV[2] ~= 'force' and redis.call('{exists}', KEYS[3]) == 1 then return -1 end\n\
                     local items = redis.call('{lrange}', KEYS[2], 0, -1)\n\
                     for i = #items, 1, -1 do redis.call('{lpush}', KEYS[1], items[i]) end\n\
                     redis.call('{del}', KEYS[2])\n\
                     if ARGV[2] ~= 'force' then redis.call('{srem}', KEYS[4], ARGV[1]) end\n\
                     return #items"
                ),
            },
        }
    }
}

/// A connection and what we learned about its server.
pub struct Conn {
    con: Con,
    lpop_count: bool,
    blmove: bool,
    block_secs: &'static str,
    /// Loaded scripts: (body pointer identity by index, sha).
    shas: [Option<String>; 3],
}

impl Conn {
    pub fn open(cfg: &Settings) -> RedisResult<Conn> {
        let mut con = cfg.target.connect(&cfg.conn, Duration::from_secs(1))?;
        let version = server_version(&mut con, cfg.commands.name("info"))?;
        let at_least = |want: (u32, u32, u32)| version.is_some_and(|v| v >= want);
        let lpop_count = match cfg.batch_method {
            BatchMethod::Auto => at_least((6, 2, 0)),
            BatchMethod::Lpop => true,
            BatchMethod::Script => false,
        };
        tracing::debug!(?version, lpop_count, "redis input connected");
        Ok(Conn {
            con,
            lpop_count,
            blmove: at_least((6, 2, 0)),
            block_secs: if at_least((6, 0, 0)) {
                BLOCK_SECS
            } else {
                BLOCK_SECS_OLD
            },
            shas: [None, None, None],
        })
    }

    /// Runs script number `which` of `scripts` with EVALSHA, loading it first (or again after
    /// a `NOSCRIPT`, when the server lost its script cache).
    fn eval(
        &mut self,
        cfg: &Settings,
        scripts: &Scripts,
        which: usize,
        keys: &[&str],
        args: &[&str],
    ) -> RedisResult<Value> {
        let script = [&scripts.pop, &scripts.pop_move, &scripts.requeue][which];
        if self.con.is_cluster() {
            return redis::cmd(cfg.commands.name("eval"))
                .arg(&script.body)
                .arg(keys.len())
                .arg(keys)
                .arg(args)
                .query(&mut self.con);
        }
        for _ in 0..2 {
            let sha = match &self.shas[which] {
                Some(s) => s.clone(),
                None => {
                    let sha: String = redis::cmd(cfg.commands.name("script"))
                        .arg("LOAD")
                        .arg(&script.body)
                        .query(&mut self.con)?;
                    self.shas[which] = Some(sha.clone());
                    sha
                }
            };
            let mut cmd = redis::cmd(cfg.commands.name("evalsha"));
            cmd.arg(&sha).arg(keys.len()).arg(keys).arg(args);
            match cmd.query::<Value>(&mut self.con) {
                Err(e) if e.code() == Some("NOSCRIPT") => self.shas[which] = None,
                other => return other,
            }
        }
        Err(RedisError::from((
            redis::ErrorKind::Server(redis::ServerErrorKind::NoScript),
            "script vanished from the server right after loading",
        )))
    }
}

/// `LPOP key n` (with `command_map`'s name): up to `n` values at once, Redis ≥ 6.2.
fn lpop(cfg: &Settings, n: usize) -> redis::Cmd {
    let mut cmd = redis::cmd(cfg.commands.name("lpop"));
    cmd.arg(&cfg.key).arg(n);
    cmd
}

/// The bulk strings of a reply (`nil` → none; `BLPOP`'s `[key, value]` is the caller's job).
fn bulks(v: Value) -> Vec<Vec<u8>> {
    match v {
        Value::Array(items) | Value::Set(items) => items
            .into_iter()
            .filter_map(|i| match i {
                Value::BulkString(b) => Some(b),
                Value::SimpleString(s) => Some(s.into_bytes()),
                _ => None,
            })
            .collect(),
        Value::BulkString(b) => vec![b],
        _ => Vec::new(),
    }
}

/// A reliable consumer: this process's id and lease, shared by its list threads.
pub struct Consumer {
    id: String,
    lease_key: String,
    set_key: String,
    prefix: String,
    members: Vec<String>,
    scripts: Scripts,
}

impl Consumer {
    pub fn new(cfg: &Settings) -> Consumer {
        let id = format!(
            "{}:{}:{:08x}",
            sluice_pipeline::hostname(),
            std::process::id(),
            random_u64() as u32
        );
        let prefix = format!("{}:sluice:processing:", cfg.helper_prefix);
        let members = (0..cfg.threads)
            .map(|t| format!("{prefix}{id}:{t}"))
            .collect();
        tracing::info!(consumer = %id, "redis input: reliable consumer");
        Consumer {
            lease_key: format!("{}:sluice:lease:{id}", cfg.helper_prefix),
            set_key: format!("{}:sluice:consumers", cfg.helper_prefix),
            prefix,
            members,
            scripts: Scripts::new(cfg),
            id,
        }
    }

    fn lease_ms(cfg: &Settings) -> u64 {
        cfg.lease.as_millis() as u64
    }

    /// Renews the lease and (re)names `members` in the consumers set: before its first pop on
    /// a connection, a thread makes sure its processing list can be found if we die.
    fn register(&self, con: &mut Con, cfg: &Settings, members: &[String]) -> RedisResult<()> {
        let mut p = redis::pipe();
        p.cmd(cfg.commands.name("set"))
            .arg(&self.lease_key)
            .arg(1)
            .arg("PX")
            .arg(Self::lease_ms(cfg))
            .ignore();
        p.cmd(cfg.commands.name("sadd"))
            .arg(&self.set_key)
            .arg(members)
            .ignore();
        con.exec(&p)
    }

    /// Puts the values of every processing list whose consumer is gone back on the list.
    fn recover_dead(&self, conn: &mut Conn, cfg: &Settings) -> RedisResult<()> {
        let members: Vec<String> = redis::cmd(cfg.commands.name("smembers"))
            .arg(&self.set_key)
            .query(&mut conn.con)?;
        for m in members {
            if self.members.contains(&m) {
                continue;
            }
            let Some((cid, _thread)) = m
                .strip_prefix(&self.prefix)
                .and_then(|r| r.rsplit_once(':'))
            else {
                continue;
            };
            let lease = format!("{}:sluice:lease:{cid}", cfg.helper_prefix);
            let n = conn.eval(
                cfg,
                &self.scripts,
                2,
                &[&cfg.key, &m, &lease, &self.set_key],
                &[&m, ""],
            )?;
            if let Value::Int(n) = n {
                if n > 0 {
                    tracing::warn!(
                        consumer = %cid,
                        events = n,
                        "redis input: put back on the list the batch of a consumer that stopped without finishing it"
                    );
                }
            }
        }
        Ok(())
    }

    /// Renews the lease and recovers dead consumers' batches until `done()`.
    pub fn heartbeat(&self, cfg: &Settings, done: impl Fn() -> bool) {
        let every = cfg.lease / 5;
        let mut conn: Option<Conn> = None;
        while !done() {
            if conn.is_none() {
                match Conn::open(cfg) {
                    Ok(c) => conn = Some(c),
                    Err(e) => tracing::debug!(error = %e, "redis input heartbeat: cannot connect"),
                }
            }
            if let Some(c) = conn.as_mut() {
                let r = self
                    .register(&mut c.con, cfg, &self.members)
                    .and_then(|()| self.recover_dead(c, cfg));
                if let Err(e) = r {
                    tracing::debug!(error = %e, "redis input heartbeat failed");
                    conn = None;
                }
            }
            sleep_unless(every, &done);
        }
    }

    /// At shutdown, after the threads have finished: puts back whatever is still in our
    /// processing lists (nothing, normally), leaves the set and drops the lease.
    pub fn leave(&self, cfg: &Settings) {
        let r = Conn::open(cfg).and_then(|mut c| {
            for m in &self.members {
                let n = c.eval(
                    cfg,
                    &self.scripts,
                    2,
                    &[&cfg.key, m, &self.lease_key, &self.set_key],
                    &[m, "force"],
                )?;
                if matches!(n, Value::Int(n) if n > 0) {
                    tracing::warn!(list = %m, "redis input: put back on the list what was left in a processing list");
                }
            }
            let mut p = redis::pipe();
            p.cmd(cfg.commands.name("srem"))
                .arg(&self.set_key)
                .arg(&self.members)
                .ignore();
            p.cmd(cfg.commands.name("del")).arg(&self.lease_key).ignore();
            c.con.exec(&p)
        });
        if let Err(e) = r {
            tracing::warn!(
                consumer = %self.id,
                error = %e,
                "redis input: could not leave cleanly; live consumers will put back anything left once the lease expires"
            );
        }
    }
}

/// One thread popping batches from the list.
pub struct ListThread<'a> {
    cfg: &'a Settings,
    consumer: Option<&'a Consumer>,
    outage: &'a Outage,
    codec: Box<dyn Codec>,
    scripts: Scripts,
    conn: Option<Conn>,
    /// Reliable mode: this thread's processing list.
    processing: String,
    /// Reliable mode: the processing list holds a batch that is already in our queue.
    pushed: bool,
    /// An `LPOP` was sent ahead and its reply is still to be read.
    ahead: bool,
    /// The server, for log lines.
    target: String,
}

enum Step {
    Continue,
    Stop,
}

impl<'a> ListThread<'a> {
    pub fn new(
        cfg: &'a Settings,
        thread: usize,
        consumer: Option<&'a Consumer>,
        outage: &'a Outage,
        codec: Box<dyn Codec>,
    ) -> ListThread<'a> {
        ListThread {
            cfg,
            processing: consumer.map_or_else(String::new, |c| c.members[thread].clone()),
            consumer,
            outage,
            codec,
            scripts: Scripts::new(cfg),
            conn: None,
            pushed: false,
            ahead: false,
            target: cfg.target.to_string(),
        }
    }

    pub fn run(mut self, ctx: &InputContext) {
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
        while !ctx.is_stopping() {
            let step = if self.conn.is_none() {
                self.open(ctx)
            } else {
                self.round(ctx)
            };
            match step {
                Ok(Step::Continue) => {}
                Ok(Step::Stop) => break,
                Err(e) => {
                    self.conn = None;
                    self.ahead = false;
                    self.outage
                        .failed(&self.target, &format_args!("{e}{}", hint(&e)));
                    if !sleep_unless(backoff.next_delay(), || ctx.is_stopping()) {
                        break;
                    }
                    continue;
                }
            }
            if self.conn.is_some() {
                backoff.reset();
            }
        }
        let ahead = self.take_ahead_at_stop();
        if !ahead.is_empty() {
            self.give_back(ahead);
        }
        if self.pushed {
            if let Some(c) = self.conn.as_mut() {
                let _ = redis::cmd(self.cfg.commands.name("del"))
                    .arg(&self.processing)
                    .query::<()>(&mut c.con);
            }
        }
    }

    /// Connects; in reliable mode registers and settles this thread's processing list.
    fn open(&mut self, ctx: &InputContext) -> RedisResult<Step> {
        let mut conn = Conn::open(self.cfg)?;
        let Some(consumer) = self.consumer else {
            self.conn = Some(conn);
            return Ok(Step::Continue);
        };
        consumer.register(
            &mut conn.con,
            self.cfg,
            std::slice::from_ref(&self.processing),
        )?;
        if self.pushed {
            // Our batch is queued; only its copy here remained.
            redis::cmd(self.cfg.commands.name("del"))
                .arg(&self.processing)
                .query::<()>(&mut conn.con)?;
            self.pushed = false;
            self.conn = Some(conn);
            return Ok(Step::Continue);
        }
        let left = bulks(
            redis::cmd(self.cfg.commands.name("lrange"))
                .arg(&self.processing)
                .arg(0)
                .arg(-1)
                .query(&mut conn.con)?,
        );
        self.conn = Some(conn);
        if left.is_empty() {
            return Ok(Step::Continue);
        }
        tracing::info!(
            events = left.len(),
            "redis input: queueing the batch that was in flight when the connection was lost"
        );
        self.deliver(ctx, left)
    }

    /// One batch: pop (or read the reply to the `LPOP` sent ahead), send the next `LPOP` if the
    /// batch was full, decode, queue.
    fn round(&mut self, ctx: &InputContext) -> RedisResult<Step> {
        let items = match self.take_ahead()? {
            Some(items) => items,
            None => self.pop(ctx)?,
        };
        self.outage.recovered(&self.target);
        if items.is_empty() {
            return Ok(Step::Continue);
        }
        let mut sent = Ok(());
        if items.len() >= self.cfg.batch_count && !ctx.is_stopping() {
            sent = self.send_ahead();
        }
        let step = self.deliver(ctx, items)?;
        // A failed send leaves the connection unusable: reconnect once the batch is queued.
        sent.map(|()| step)
    }

    /// Sends the next `LPOP` without waiting for its reply (plain `LPOP key count` only).
    fn send_ahead(&mut self) -> RedisResult<()> {
        let conn = self.conn.as_mut().expect("connected");
        if self.consumer.is_some() || !conn.lpop_count {
            return Ok(());
        }
        let Some(con) = conn.con.plain() else {
            return Ok(());
        };
        con.send_packed_command(&lpop(self.cfg, self.cfg.batch_count).get_packed_command())?;
        self.ahead = true;
        Ok(())
    }

    /// At shutdown: the values of the `LPOP` sent ahead (none if none was pending, or if its
    /// reply went with the connection, which is logged).
    fn take_ahead_at_stop(&mut self) -> Vec<Vec<u8>> {
        self.take_ahead().unwrap_or_else(|e| {
            tracing::warn!(
                error = %e,
                "redis input: stopping; the reply to the last LPOP was lost with the connection (its events, if any, are lost)"
            );
            None
        })
        .unwrap_or_default()
    }

    /// The values of the `LPOP` sent ahead, if one is pending.
    fn take_ahead(&mut self) -> RedisResult<Option<Vec<Vec<u8>>>> {
        if !self.ahead {
            return Ok(None);
        }
        self.ahead = false;
        let conn = self
            .conn
            .as_mut()
            .expect("an LPOP is only sent ahead on a connection");
        let con = conn.con.plain().expect("sent ahead on a plain connection");
        Ok(Some(bulks(con.recv_response()?)))
    }

    /// Decodes and queues a batch; then (reliable) deletes its copy from the processing list.
    /// At shutdown, puts what could not be queued back at the head of the list.
    fn deliver(&mut self, ctx: &InputContext, items: Vec<Vec<u8>>) -> RedisResult<Step> {
        let mut events: Vec<Event> = Vec::with_capacity(items.len());
        for item in &items {
            self.codec.decode(item, &mut events);
        }
        if ctx.push(events).is_err() {
            // The values of an LPOP sent ahead follow these in the list's order.
            let mut items = items;
            items.extend(self.take_ahead_at_stop());
            self.give_back(items);
            return Ok(Step::Stop);
        }
        if self.consumer.is_some() {
            self.pushed = true;
            let conn = self.conn.as_mut().expect("connected");
            redis::cmd(self.cfg.commands.name("del"))
                .arg(&self.processing)
                .query::<()>(&mut conn.con)?;
            self.pushed = false;
        }
        Ok(Step::Continue)
    }

    /// Takes up to `batch_count` values: at once if the list has some, else after waiting
    /// (briefly) for the first one.
    fn pop(&mut self, ctx: &InputContext) -> RedisResult<Vec<Vec<u8>>> {
        let n = self.cfg.batch_count;
        let items = self.pop_now(n)?;
        if !items.is_empty() {
            return Ok(items);
        }
        let Some(first) = self.pop_blocking(ctx)? else {
            return Ok(Vec::new());
        };
        if self.consumer.is_some() {
            // The processing list holds `first`: the script fills it up and returns all of it.
            // On an error the thread queues what it holds after reconnecting.
            return self.pop_now(n);
        }
        let mut items = vec![first];
        if n > 1 {
            match self.pop_now(n - 1) {
                Ok(more) => items.extend(more),
                // Keep the value we hold; the error comes back on the next round.
                Err(e) => tracing::debug!(error = %e, "redis input: filling a batch failed"),
            }
        }
        Ok(items)
    }

    fn pop_now(&mut self, n: usize) -> RedisResult<Vec<Vec<u8>>> {
        let cfg = self.cfg;
        let conn = self.conn.as_mut().expect("connected");
        let count = n.to_string();
        if self.consumer.is_some() {
            let v = conn.eval(
                cfg,
                &self.scripts,
                1,
                &[&cfg.key, &self.processing],
                &[&count],
            )?;
            return Ok(bulks(v));
        }
        if conn.lpop_count {
            let v: Value = lpop(cfg, n).query(&mut conn.con)?;
            return Ok(bulks(v));
        }
        let v = conn.eval(cfg, &self.scripts, 0, &[&cfg.key], &[&count])?;
        Ok(bulks(v))
    }

    /// Waits up to a fraction of a second for one value.
    fn pop_blocking(&mut self, ctx: &InputContext) -> RedisResult<Option<Vec<u8>>> {
        let cfg = self.cfg;
        let conn = self.conn.as_mut().expect("connected");
        if self.consumer.is_some() {
            if !conn.blmove {
                // No atomic blocking move before 6.2: poll, as Logstash's batch mode does.
                sleep_unless(Duration::from_millis(250), || ctx.is_stopping());
                return Ok(None);
            }
            let v: Value = redis::cmd(cfg.commands.name("blmove"))
                .arg(&cfg.key)
                .arg(&self.processing)
                .arg("LEFT")
                .arg("RIGHT")
                .arg(conn.block_secs)
                .query(&mut conn.con)?;
            return Ok(bulks(v).pop());
        }
        let v: Value = redis::cmd(cfg.commands.name("blpop"))
            .arg(&cfg.key)
            .arg(conn.block_secs)
            .query(&mut conn.con)?;
        // [key, value]
        let mut kv = bulks(v);
        Ok(if kv.len() == 2 { kv.pop() } else { None })
    }

    /// Shutdown came while a batch was popped but not queued: back to the head of the list.
    fn give_back(&mut self, items: Vec<Vec<u8>>) {
        let cfg = self.cfg;
        let n = items.len();
        let mut attempt = || -> RedisResult<()> {
            if self.conn.is_none() {
                self.conn = Some(Conn::open(cfg)?);
            }
            let conn = self.conn.as_mut().expect("connected");
            match self.consumer {
                Some(c) => {
                    conn.eval(
                        cfg,
                        &self.scripts,
                        2,
                        &[&cfg.key, &self.processing, &c.lease_key, &c.set_key],
                        &[&self.processing, "force"],
                    )?;
                }
                None => {
                    let mut cmd = redis::cmd(cfg.commands.name("lpush"));
                    cmd.arg(&cfg.key);
                    for it in items.iter().rev() {
                        cmd.arg(it.as_slice());
                    }
                    cmd.query::<()>(&mut conn.con)?;
                }
            }
            Ok(())
        };
        match attempt() {
            Ok(()) => tracing::info!(
                events = n,
                "redis input: stopping; put the batch it could not queue back on the list"
            ),
            Err(e) if self.consumer.is_some() => tracing::warn!(
                events = n,
                error = %e,
                "redis input: stopping; the unqueued batch stays in the processing list until a consumer recovers it"
            ),
            Err(e) => tracing::error!(
                events = n,
                error = %e,
                "redis input: stopping; a popped batch could neither be queued nor put back on the list (lost)"
            ),
        }
    }
}

//! What the `rabbitmq` input and output share (Logstash's `RabbitMQConnection` mixin): where
//! the broker is (`host`, one or a list, `host:port` allowed; `port`, default 5672), how to log
//! in (`vhost` "/", `user` and `password` "guest"), TLS (`ssl`/`ssl_enabled` and the other
//! `ssl_*` options of [`crate::tls`]), `heartbeat`, `connection_timeout`,
//! `connect_retry_interval`, `automatic_recovery`, and the declaration options both plugins
//! take (`passive`, `arguments`); then opening a connection ([`Link`]) and a channel whose
//! broker-sent events (channel closed, consumer cancelled, publisher confirms) land in a
//! [`ChannelState`] that the plugin's task reads.
//!
//! The client is `amqprs` on tokio: each plugin owns a small runtime (see the input and output
//! modules), and everything here runs inside it. A connection is one host of the list at a
//! time, the next one at each new attempt (starting from a random one, as Logstash picks one at
//! random). Losing it is noticed through the client (a closed socket, two missed heartbeats,
//! the broker's `connection.close`); recovering is the plugin's loop: a new connection after
//! `connect_retry_interval`, everything declared again, consumers subscribed again, unconfirmed
//! messages published again. That loop is Logstash's `automatic_recovery => true`, the only
//! mode offered.
//!
//! What differs from Logstash's plugin, on purpose, and is said at startup rather than ignored:
//! - TLS verifies the broker's certificate unless `ssl_verification_mode => none` (Logstash's
//!   plugin trusts any certificate unless given a PKCS#12 file); the authorities are PEM files
//!   (`ssl_certificate_authorities`), a client certificate is `ssl_certificate` + `ssl_key`.
//!   `ssl_certificate_path`/`ssl_certificate_password` (PKCS#12) are refused with that advice,
//!   and `ssl_version` takes `TLSv1.2` only (rustls offers TLS 1.2 and 1.3).
//! - `heartbeat` unset or 0 asks for 60 s (the broker may lower it); the client cannot run
//!   without heartbeats, nor with a 1-second one (it would send them in a busy loop).
//! - `automatic_recovery => false` is refused: a plugin that stopped for good after the first
//!   lost connection would stall the pipeline.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use amqprs::callbacks::{ChannelCallback, ConnectionCallback};
use amqprs::channel::Channel;
use amqprs::connection::{Connection, OpenConnectionArguments};
use amqprs::{
    Ack, BasicProperties, Cancel, Close, CloseChannel, FieldArray, FieldTable, FieldValue, Nack,
    Return,
};
use sluice_config::{Number, Value as Ast};
use sluice_event::{Map, Value};
use sluice_pipeline::{ConfigError, Options};

use crate::redis_conn::{parse_host, Endpoint};

type AmqpResult<T> = Result<T, amqprs::error::Error>;

/// The longest AMQP "short string": names, routing keys, most message properties.
pub const SHORT_MAX: usize = 255;

/// Checks an AMQP short string (`what` names it in the error).
pub fn short(what: &str, s: &str) -> Result<(), String> {
    if s.len() > SHORT_MAX {
        return Err(format!(
            "{what} is {} bytes long; AMQP allows at most {SHORT_MAX}",
            s.len()
        ));
    }
    Ok(())
}

/// The options of the connection mixin, read once.
pub struct ConnSettings {
    /// `(host as given, without brackets; port)`.
    hosts: Vec<(String, u16)>,
    next_host: AtomicUsize,
    pub vhost: String,
    user: String,
    password: String,
    tls: Option<Arc<rustls::ClientConfig>>,
    heartbeat: u16,
    pub connect_retry_interval: Duration,
    connection_timeout: Option<Duration>,
    /// `passive`: declare only what exists (the input's queue, the output's exchange).
    pub passive: bool,
    /// `arguments`: the input's queue arguments, the output's exchange arguments.
    pub arguments: FieldTable,
    /// The client name the broker shows for our connections.
    name: String,
}

impl ConnSettings {
    /// Reads the mixin's options; `plugin` ("rabbitmq input") names our connections.
    pub fn from_options(opts: &mut Options, plugin: &str) -> Result<ConnSettings, ConfigError> {
        let Some(host_list) = opts.string_list("host")? else {
            return Err(opts.plugin_error(format!(
                "missing required setting \"host\" for {plugin} plugin \"rabbitmq\""
            )));
        };
        if host_list.is_empty() {
            return Err(opts.error("host", "must name at least one host"));
        }
        let port = crate::net::port(opts, "port", Some(5672))?;
        let mut hosts = Vec::with_capacity(host_list.len());
        for h in &host_list {
            match parse_host(h, port) {
                Ok(Endpoint::Tcp { host, port }) => hosts.push((host, port)),
                Ok(Endpoint::Unix(_)) => unreachable!("parse_host gives TCP endpoints"),
                Err(e) => return Err(opts.error("host", e)),
            }
        }
        let vhost = opts.string_or("vhost", "/")?;
        let user = opts.string_or("user", "guest")?;
        let password = opts.string_or("password", "guest")?;
        for (name, v) in [("vhost", &vhost), ("user", &user)] {
            short(name, v).map_err(|e| opts.error(name, e))?;
        }
        let tls = read_tls(opts)?;
        let heartbeat = match opts.int("heartbeat")? {
            None | Some(0) => 60,
            Some(h) if (2..=65535).contains(&h) => h as u16,
            Some(h) => {
                return Err(opts.error(
                    "heartbeat",
                    format!("{h} is not supported: give 2 to 65535 seconds, or 0 (or nothing) for 60 s or the broker's lower value"),
                ))
            }
        };
        let retry = opts.float("connect_retry_interval")?.unwrap_or(1.0);
        if !(retry > 0.0 && retry <= 3600.0) {
            return Err(opts.error(
                "connect_retry_interval",
                "must be a number of seconds above 0 (at most 3600)",
            ));
        }
        let connection_timeout = match opts.float("connection_timeout")? {
            None => None,
            Some(0.0) => None,
            Some(ms) if ms > 0.0 && ms <= 86_400_000.0 => {
                Some(Duration::from_secs_f64(ms / 1000.0))
            }
            Some(_) => {
                return Err(opts.error(
                    "connection_timeout",
                    "must be a number of milliseconds, 0 (or nothing) for no limit",
                ))
            }
        };
        if !opts.boolean_or("automatic_recovery", true)? {
            return Err(opts.error(
                "automatic_recovery",
                "false is not supported: sluice always reconnects (every connect_retry_interval) and declares, subscribes and publishes again; without that the plugin would stop for good at the first lost connection",
            ));
        }
        let passive = opts.boolean_or("passive", false)?;
        let arguments = match opts.hash("arguments")? {
            None => FieldTable::new(),
            Some(entries) => table(&entries).map_err(|e| opts.error("arguments", e))?,
        };
        let start = crate::retry::random_u64() as usize % hosts.len();
        Ok(ConnSettings {
            hosts,
            next_host: AtomicUsize::new(start),
            vhost,
            user,
            password,
            tls,
            heartbeat,
            connect_retry_interval: Duration::from_secs_f64(retry),
            connection_timeout,
            passive,
            arguments,
            name: format!("sluice {plugin} (pid {})", std::process::id()),
        })
    }

    /// `amqp://user@host:port/vhost` for log lines (no password; every host of the list).
    pub fn describe(&self) -> String {
        let scheme = if self.tls.is_some() { "amqps" } else { "amqp" };
        let hosts: Vec<String> = (self.hosts.iter())
            .map(|(h, p)| crate::net::address(h, *p))
            .collect();
        let vhost = self.vhost.strip_prefix('/').unwrap_or(&self.vhost);
        format!("{scheme}://{}@{}/{vhost}", self.user, hosts.join(","))
    }

    /// Opens a connection to the next host of the list (within `connection_timeout`, if
    /// set). The error says which host and why.
    pub async fn connect(&self) -> Result<Link, (String, String)> {
        let i = self.next_host.fetch_add(1, Ordering::Relaxed) % self.hosts.len();
        let (host, port) = &self.hosts[i];
        let target = crate::net::address(host, *port);
        let fail = |e: String| (target.clone(), e);
        // The client joins host and port with a colon: an IPv6 address goes in brackets.
        let dial = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.clone()
        };
        let mut args = OpenConnectionArguments::new(&dial, *port, &self.user, &self.password);
        args.virtual_host(&self.vhost)
            .heartbeat(self.heartbeat)
            .connection_name(&self.name);
        if let Some(config) = &self.tls {
            let connector = tokio_rustls::TlsConnector::from(Arc::clone(config));
            args.tls_adaptor(amqprs::tls::TlsAdaptor::new(connector, host.clone()));
        }
        let open = Connection::open(&args);
        let conn = match self.connection_timeout {
            Some(limit) => tokio::time::timeout(limit, open).await.map_err(|_| {
                fail(format!(
                    "no connection within {} ms (connection_timeout)",
                    limit.as_millis()
                ))
            })?,
            None => open.await,
        }
        .map_err(|e| {
            let e = refusal(&e.to_string());
            // The broker closes the socket on a refused login (this client does not ask it
            // to say why first).
            let hint = if e.contains("reset by peer") || e.contains("eof") {
                " (if this goes on while the broker is up, check user, password and vhost: RabbitMQ drops the connection of a refused login)"
            } else {
                ""
            };
            fail(format!("{e}{hint}"))
        })?;
        let state = Arc::new(ConnState::default());
        conn.register_callback(ConnEvents {
            state: Arc::clone(&state),
            target: target.clone(),
        })
        .await
        .map_err(|e| fail(e.to_string()))?;
        Ok(Link {
            conn,
            state,
            target,
        })
    }
}

/// The broker's reason, when the client's error carries its `connection.close` (a vhost that
/// does not exist, a user without access to it), else the error as it is.
fn refusal(error: &str) -> String {
    let code = error.split_once("reply_code: ").and_then(|(_, rest)| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        (!digits.is_empty()).then_some(digits)
    });
    let text = (error.split_once("reply_text: ShortStr("))
        .and_then(|(_, rest)| rest.split_once('"'))
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(text, _)| text);
    match (code, text) {
        (Some(code), Some(text)) => format!("the broker refused the connection: {code} {text}"),
        _ => error.to_owned(),
    }
}

/// `ssl`/`ssl_enabled` and the `ssl_*` options, into a rustls client configuration.
fn read_tls(opts: &mut Options) -> Result<Option<Arc<rustls::ClientConfig>>, ConfigError> {
    for pkcs12 in ["ssl_certificate_path", "ssl_certificate_password"] {
        if opts.has(pkcs12) {
            opts.take(pkcs12);
            return Err(opts.error(
                pkcs12,
                "is not supported (PKCS#12): give the broker's authority as PEM in ssl_certificate_authorities, and a client certificate and key as PEM in ssl_certificate and ssl_key",
            ));
        }
    }
    let version = opts.string_or("ssl_version", "TLSv1.2")?;
    if version != "TLSv1.2" {
        return Err(opts.error(
            "ssl_version",
            format!("{version:?} is not supported: only \"TLSv1.2\" (rustls offers TLS 1.2 and 1.3, and nothing older)"),
        ));
    }
    let Some(tls) = crate::tls::read(opts, crate::tls::Names::Redis, false)? else {
        return Ok(None);
    };
    crate::tls::install_crypto_provider();
    crate::tls::client_config(&tls)
        .map(Some)
        .map_err(|e| opts.plugin_error(format!("invalid TLS settings: {e}")))
}

/// An open connection and what the broker told about it.
pub struct Link {
    pub conn: Connection,
    pub state: Arc<ConnState>,
    /// `host:port`, for log lines.
    pub target: String,
}

impl Link {
    pub fn is_open(&self) -> bool {
        self.conn.is_open()
    }

    /// Why the connection is gone: the broker's reason when it gave one.
    pub fn lost_reason(&self) -> String {
        (self
            .state
            .closed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone())
        .unwrap_or_else(|| "connection lost".to_owned())
    }

    /// Opens a channel whose broker-sent events go to the returned state.
    pub async fn open_channel(&self) -> Result<(Channel, Arc<ChannelState>), String> {
        let channel = (self.conn.open_channel(None).await)
            .map_err(|e| format!("cannot open a channel: {e}"))?;
        let state = Arc::new(ChannelState::default());
        channel
            .register_callback(ChannelEvents {
                state: Arc::clone(&state),
            })
            .await
            .map_err(|e| format!("cannot open a channel: {e}"))?;
        Ok((channel, state))
    }

    /// Why a request on `channel` failed: the broker's reason for closing the channel or
    /// the connection when it gave one, else the client's error.
    pub fn why(&self, state: &ChannelState, e: impl std::fmt::Display) -> String {
        if let Some(r) = state.closed() {
            return r;
        }
        if !self.is_open() {
            return self.lost_reason();
        }
        e.to_string()
    }

    /// Closes the connection, waiting at most a second for the broker to agree.
    pub async fn close(&self) {
        let conn = self.conn.clone();
        let _ = tokio::time::timeout(Duration::from_secs(1), conn.close()).await;
    }
}

/// What the broker says about a connection.
#[derive(Default)]
pub struct ConnState {
    /// `connection.blocked` (a resource alarm): publishing waits, and that is not a failure.
    pub blocked: AtomicBool,
    /// The broker's reason for closing the connection.
    closed: Mutex<Option<String>>,
}

struct ConnEvents {
    state: Arc<ConnState>,
    target: String,
}

#[async_trait::async_trait]
impl ConnectionCallback for ConnEvents {
    async fn close(&mut self, _: &Connection, close: Close) -> AmqpResult<()> {
        let reason = format!(
            "the broker closed the connection: {} {}",
            close.reply_code(),
            close.reply_text()
        );
        *self.state.closed.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason);
        Ok(())
    }

    async fn blocked(&mut self, _: &Connection, reason: String) {
        self.state.blocked.store(true, Ordering::SeqCst);
        tracing::warn!(broker = %self.target, reason = %reason, "rabbitmq: the broker blocked publishing on this connection (a resource alarm); publishing waits until it unblocks");
    }

    async fn unblocked(&mut self, _: &Connection) {
        self.state.blocked.store(false, Ordering::SeqCst);
        tracing::warn!(broker = %self.target, "rabbitmq: the broker unblocked publishing");
    }

    async fn secret_updated(&mut self, _: &Connection) {}
}

/// What the broker says about a channel: closed (and why), consumer cancelled, and the
/// publisher confirms of the messages published on it.
#[derive(Default)]
pub struct ChannelState {
    inner: Mutex<ChannelInner>,
    /// Woken at every change.
    pub changed: tokio::sync::Notify,
}

#[derive(Default)]
struct ChannelInner {
    closed: Option<String>,
    cancelled: bool,
    /// Delivery tags published and not yet confirmed.
    unconfirmed: BTreeSet<u64>,
    /// Delivery tags the broker refused (`basic.nack`).
    nacked: BTreeSet<u64>,
}

impl ChannelState {
    fn lock(&self) -> std::sync::MutexGuard<'_, ChannelInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The broker's reason for closing the channel, once it did.
    pub fn closed(&self) -> Option<String> {
        self.lock().closed.clone()
    }

    /// Whether the broker cancelled the channel's consumer (its queue was deleted).
    pub fn cancelled(&self) -> bool {
        self.lock().cancelled
    }

    /// A message with delivery tag `tag` is about to be published.
    pub fn expect(&self, tag: u64) {
        self.lock().unconfirmed.insert(tag);
    }

    /// How many messages wait for their confirm, and how many were refused.
    pub fn pending(&self) -> (usize, usize) {
        let g = self.lock();
        (g.unconfirmed.len(), g.nacked.len())
    }

    /// The tags not confirmed (never answered, or refused), forgetting them.
    pub fn take_unconfirmed(&self) -> BTreeSet<u64> {
        let mut g = self.lock();
        let mut all = std::mem::take(&mut g.unconfirmed);
        all.append(&mut g.nacked);
        all
    }

    fn settle(&self, tag: u64, multiple: bool, ok: bool) {
        {
            let mut g = self.lock();
            let done = if multiple {
                let rest = g.unconfirmed.split_off(&(tag + 1));
                std::mem::replace(&mut g.unconfirmed, rest)
            } else if g.unconfirmed.remove(&tag) {
                BTreeSet::from([tag])
            } else {
                BTreeSet::new()
            };
            if !ok {
                g.nacked.extend(done);
            }
        }
        self.changed.notify_waiters();
    }
}

struct ChannelEvents {
    state: Arc<ChannelState>,
}

#[async_trait::async_trait]
impl ChannelCallback for ChannelEvents {
    async fn close(&mut self, _: &Channel, close: CloseChannel) -> AmqpResult<()> {
        self.state.lock().closed = Some(format!(
            "the broker closed the channel: {} {}",
            close.reply_code(),
            close.reply_text()
        ));
        self.state.changed.notify_waiters();
        Ok(())
    }

    async fn cancel(&mut self, _: &Channel, _: Cancel) -> AmqpResult<()> {
        self.state.lock().cancelled = true;
        self.state.changed.notify_waiters();
        Ok(())
    }

    async fn flow(&mut self, _: &Channel, active: bool) -> AmqpResult<bool> {
        Ok(active)
    }

    async fn publish_ack(&mut self, _: &Channel, ack: Ack) {
        self.state.settle(ack.delivery_tag(), ack.mutiple(), true);
    }

    async fn publish_nack(&mut self, _: &Channel, nack: Nack) {
        self.state
            .settle(nack.delivery_tag(), nack.multiple(), false);
    }

    async fn publish_return(&mut self, _: &Channel, _: Return, _: BasicProperties, _: Vec<u8>) {
        // Messages are published without `mandatory`: the broker never returns them.
    }
}

/// A config hash (`arguments`, the `headers` message property) as an AMQP table: whole
/// numbers are signed 64-bit, `true`/`false` barewords booleans, strings long strings,
/// arrays and hashes nested. A key given twice keeps its last value.
pub fn table(entries: &[(String, Ast)]) -> Result<FieldTable, String> {
    let mut last: Vec<(&str, &Ast)> = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        last.retain(|(seen, _)| *seen != k.as_str());
        last.push((k, v));
    }
    let mut t = FieldTable::new();
    for (k, v) in last {
        short(&format!("key {k:?}"), k)?;
        let name = k.try_into().map_err(|_| format!("invalid key {k:?}"))?;
        t.insert(name, field(v)?);
    }
    Ok(t)
}

fn field(v: &Ast) -> Result<FieldValue, String> {
    let long = |s: &str| {
        (s.try_into())
            .map(FieldValue::S)
            .map_err(|_| "a string is too long".to_owned())
    };
    Ok(match v {
        Ast::Bareword(b) if b == "true" => FieldValue::t(true),
        Ast::Bareword(b) if b == "false" => FieldValue::t(false),
        Ast::String(s) | Ast::Bareword(s) => long(s)?,
        Ast::Number(Number::Int(i)) => FieldValue::l(*i),
        Ast::Number(Number::Float(f)) => FieldValue::d(*f),
        Ast::Array(items) => {
            let values = items.iter().map(field).collect::<Result<Vec<_>, _>>()?;
            FieldValue::A(FieldArray::try_from(values).map_err(|_| "an array is too long")?)
        }
        Ast::Hash(h) => {
            let entries: Vec<(String, Ast)> =
                h.iter().map(|e| (e.key.clone(), e.value.clone())).collect();
            FieldValue::F(table(&entries)?)
        }
        Ast::Plugin(p) => return Err(format!("{:?} is not a value", p.name)),
    })
}

/// An AMQP table as an event value (message headers, for `[@metadata][rabbitmq_headers]`):
/// numbers stay numbers, timestamps are whole seconds, byte arrays text.
pub fn table_value(t: &FieldTable) -> Value {
    let mut m = Map::new();
    for (k, v) in t.as_ref() {
        let k: &String = k.as_ref();
        m.insert(k.as_str().into(), field_value(v));
    }
    Value::Object(m)
}

fn field_value(v: &FieldValue) -> Value {
    match v {
        FieldValue::t(b) => Value::Bool(*b),
        FieldValue::b(i) => Value::Int((*i).into()),
        FieldValue::B(i) => Value::Int((*i).into()),
        FieldValue::s(i) => Value::Int((*i).into()),
        FieldValue::u(i) => Value::Int((*i).into()),
        FieldValue::I(i) => Value::Int((*i).into()),
        FieldValue::i(i) => Value::Int((*i).into()),
        FieldValue::l(i) => Value::Int(*i),
        FieldValue::f(f) => Value::Float((*f).into()),
        FieldValue::d(f) => Value::Float(*f),
        FieldValue::D(d) => decimal(&d.to_string()),
        FieldValue::S(s) => {
            let s: &String = s.as_ref();
            Value::String(s.as_str().into())
        }
        FieldValue::A(a) => Value::Array(Vec::from(a.clone()).iter().map(field_value).collect()),
        FieldValue::T(t) => Value::Int(i64::try_from(*t).unwrap_or(i64::MAX)),
        FieldValue::F(t) => table_value(t),
        FieldValue::V => Value::Null,
        FieldValue::x(b) => Value::String(
            String::from_utf8_lossy(&Vec::from(b.clone()))
                .as_ref()
                .into(),
        ),
    }
}

/// A decimal from the client's `Decimal(scale, value)` text: value / 10^scale.
fn decimal(text: &str) -> Value {
    let inner = text
        .strip_prefix("Decimal(")
        .and_then(|t| t.strip_suffix(')'));
    let parsed = inner.and_then(|t| {
        let (scale, value) = t.split_once(',')?;
        let scale: i32 = scale.trim().parse().ok()?;
        let value: f64 = value.trim().parse().ok()?;
        Some(value / 10f64.powi(scale))
    });
    match parsed {
        Some(f) => Value::Float(f),
        None => Value::String(text.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ast(text: &str) -> Vec<(String, Ast)> {
        let src = format!("input {{ x {{ h => {text} }} }}");
        let config = sluice_config::parse("test", &src).unwrap();
        let sluice_config::Statement::Plugin(plugin) = &config.sections[0].body[0] else {
            panic!("not a plugin")
        };
        match &plugin.attributes[0].value {
            Ast::Hash(h) => h.iter().map(|e| (e.key.clone(), e.value.clone())).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn config_hashes_become_tables_and_tables_values() {
        let t = table(&ast(
            r#"{ "x-max-length" => 10 "x-queue-type" => "quorum" "flag" => true "ratio" => 0.5 "list" => [1, "a"] "nested" => { "k" => "v" } "x-max-length" => 20 }"#,
        ))
        .unwrap();
        let v = table_value(&t);
        let o = v.as_object().unwrap();
        assert_eq!(o.get("x-max-length"), Some(&Value::Int(20)));
        assert_eq!(o.get("x-queue-type"), Some(&Value::String("quorum".into())));
        assert_eq!(o.get("flag"), Some(&Value::Bool(true)));
        assert_eq!(o.get("ratio"), Some(&Value::Float(0.5)));
        assert_eq!(
            o.get("list"),
            Some(&Value::Array(vec![
                Value::Int(1),
                Value::String("a".into())
            ]))
        );
        assert_eq!(
            o.get("nested")
                .and_then(|n| n.as_object())
                .unwrap()
                .get("k"),
            Some(&Value::String("v".into()))
        );
        assert_eq!(o.len(), 6);
        assert!(table(&ast(&format!("{{ \"{}\" => 1 }}", "k".repeat(256)))).is_err());
    }

    #[test]
    fn refusals_read_the_brokers_reason() {
        let e = r#"AMQP connection open error: failed to open connection, reason: Close(MethodHeader { class_id: 10, method_id: 50 }, Close { reply_code: 530, reply_text: ShortStr(37, "NOT_ALLOWED - vhost novhost not found"), class_id: 10, method_id: 40 })"#;
        assert_eq!(
            refusal(e),
            "the broker refused the connection: 530 NOT_ALLOWED - vhost novhost not found"
        );
        assert_eq!(refusal("network io error"), "network io error");
    }

    #[test]
    fn decimals_and_short_strings() {
        assert_eq!(decimal("Decimal(2, 12345)"), Value::Float(123.45));
        assert!(short("routing key", &"a".repeat(255)).is_ok());
        assert!(short("routing key", &"a".repeat(256))
            .unwrap_err()
            .contains("at most 255"));
    }

    #[test]
    fn confirms_settle_singly_and_in_bulk() {
        let s = ChannelState::default();
        for tag in 1..=5 {
            s.expect(tag);
        }
        s.settle(2, false, true);
        assert_eq!(s.pending(), (4, 0));
        s.settle(3, true, true);
        assert_eq!(s.pending(), (2, 0));
        s.settle(4, false, false);
        assert_eq!(s.pending(), (1, 1));
        assert_eq!(s.take_unconfirmed(), BTreeSet::from([4, 5]));
        assert_eq!(s.pending(), (0, 0));
    }
}

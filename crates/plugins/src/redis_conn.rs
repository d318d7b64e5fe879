//! What the `redis` input and output share: where to connect (`host`/`port`/`path`, a
//! `host:port` list for the output), how (`password`, `db`, `timeout`, TLS), Logstash's
//! `command_map` renames, the server-version probe, and reconnection with back-off that logs one
//! line when Redis goes away and one when it is back.
//!
//! Connections are the `redis` crate's synchronous ones: inputs and outputs here are plain
//! threads, and a batch is one round trip (`LPOP key 125`, a pipeline of `RPUSH`es).
//!
//! Beyond one server, a [`Target`] is a **Redis Cluster** (`cluster => true`; `host` lists seed
//! nodes; the crate's cluster connection routes each command to its key's slot, follows
//! `MOVED`/`ASK` and reloads the slot map after a failover) or the master a **Sentinel** group
//! names (`sentinel_hosts`, `master_name`; asked again at every reconnection, so a failover is
//! followed once Sentinel has promoted a replica). [`Con`] is either kind of connection.

use std::path::PathBuf;
use std::time::Duration;

use redis::cluster::{ClusterClientBuilder, ClusterConfig, ClusterConnection};
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::sentinel::{SentinelClientBuilder, SentinelServerType};
use redis::{
    Cmd, Connection, ConnectionAddr, ConnectionLike, IntoConnectionInfo, Pipeline,
    RedisConnectionInfo, RedisResult, Value,
};
use sluice_pipeline::{ConfigError, Options};

use crate::tls::{install_crypto_provider, Tls};

/// Where a Redis server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Tcp { host: String, port: u16 },
    Unix(PathBuf),
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Tcp { host, port } if host.contains(':') => write!(f, "[{host}]:{port}"),
            Endpoint::Tcp { host, port } => write!(f, "{host}:{port}"),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// Parses `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address; `default_port`
/// when none is given.
pub fn parse_host(s: &str, default_port: u16) -> Result<Endpoint, String> {
    let s = s.trim();
    let bad_port = |p: &str| format!("invalid port {p:?} in host {s:?}");
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("unclosed '[' in host {s:?}"))?;
        match after.strip_prefix(':') {
            Some(p) => (h, p.parse().map_err(|_| bad_port(p))?),
            None if after.is_empty() => (h, default_port),
            None => return Err(format!("unexpected {after:?} after ']' in host {s:?}")),
        }
    } else {
        match s.split_once(':') {
            Some((h, p)) if !p.contains(':') => (h, p.parse().map_err(|_| bad_port(p))?),
            _ => (s, default_port),
        }
    };
    if host.is_empty() {
        return Err(format!("empty host name in {s:?}"));
    }
    Ok(Endpoint::Tcp {
        host: host.to_owned(),
        port,
    })
}

/// [`parse_host`] over each of `list`, the values of option `option`.
pub fn parse_hosts(
    opts: &Options,
    option: &str,
    list: &[String],
    default_port: u16,
) -> Result<Vec<Endpoint>, ConfigError> {
    list.iter()
        .map(|h| parse_host(h, default_port).map_err(|e| opts.error(option, e)))
        .collect()
}

/// How to connect and talk to a server, whichever endpoint.
#[derive(Clone)]
pub struct ConnConfig {
    pub password: Option<String>,
    pub db: i64,
    pub tls: Option<Tls>,
    /// Connect timeout, and the longest a reply may take.
    pub timeout: Duration,
}

/// Reads `key` (required, not empty) and `port` (default 6379), common to input and output.
pub fn key_and_port(opts: &mut Options) -> Result<(String, u16), ConfigError> {
    let key = opts.required_string("key")?;
    if key.is_empty() {
        return Err(opts.error("key", "must not be empty"));
    }
    let port = opts.int("port")?.unwrap_or(6379);
    let port = u16::try_from(port)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| opts.error("port", format!("{port} is not a TCP port")))?;
    Ok((key, port))
}

impl ConnConfig {
    /// Reads `password`, `db`, `timeout` and the TLS options.
    pub fn from_options(opts: &mut Options) -> Result<ConnConfig, ConfigError> {
        let password = opts.string("password")?;
        let db = opts.int("db")?.unwrap_or(0);
        if db < 0 {
            return Err(opts.error("db", "must be 0 or more"));
        }
        let timeout = opts.float("timeout")?.unwrap_or(5.0);
        if !(timeout > 0.0 && timeout <= 86_400.0) {
            return Err(opts.error("timeout", "must be a number of seconds above 0"));
        }
        let tls = crate::tls::read(opts, crate::tls::Names::Redis, false)?;
        Ok(ConnConfig {
            password,
            db,
            tls,
            timeout: Duration::from_secs_f64(timeout),
        })
    }
}

/// Which servers a plugin talks to.
#[derive(Debug, Clone)]
pub enum Target {
    /// One server.
    Single(Endpoint),
    /// A Redis Cluster, found through these seed nodes.
    Cluster(Vec<Endpoint>),
    /// Whichever server the Sentinels name master of `master`.
    Sentinel {
        sentinels: Vec<Endpoint>,
        master: String,
        password: Option<String>,
    },
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |eps: &[Endpoint]| {
            eps.iter()
                .map(Endpoint::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            Target::Single(ep) => write!(f, "{ep}"),
            Target::Cluster(seeds) => write!(f, "cluster {}", list(seeds)),
            Target::Sentinel {
                sentinels, master, ..
            } => write!(f, "master {master:?} of sentinels {}", list(sentinels)),
        }
    }
}

/// Reads what `hosts` (parsed from `host`) are: `cluster => true` makes them seeds of one
/// Redis Cluster; `sentinel_hosts` + `master_name` (+ `sentinel_password`) replace them with
/// the master a Sentinel group names. Plain hosts are one target each.
pub fn targets(
    opts: &mut Options,
    hosts: Vec<Endpoint>,
    path_set: bool,
    conn: &ConnConfig,
) -> Result<Vec<Target>, ConfigError> {
    let cluster = opts.boolean_or("cluster", false)?;
    let sentinels = opts.string_list("sentinel_hosts")?;
    let master = opts.string("master_name")?;
    let sentinel_password = opts.string("sentinel_password")?;
    if cluster && sentinels.is_some() {
        return Err(opts.error(
            "sentinel_hosts",
            "cannot be used with cluster => true (Sentinel watches servers outside a cluster)",
        ));
    }
    if (cluster || sentinels.is_some()) && path_set {
        return Err(opts.error(
            "path",
            "is for one server on a unix socket; it cannot be used with cluster or sentinel_hosts",
        ));
    }
    if cluster {
        if conn.db != 0 {
            return Err(opts.error(
                "db",
                "must be 0 with cluster => true: a Redis Cluster has only database 0",
            ));
        }
        return Ok(vec![Target::Cluster(hosts)]);
    }
    match (sentinels, master) {
        (None, None) => {
            if sentinel_password.is_some() {
                return Err(opts.error("sentinel_password", "needs sentinel_hosts"));
            }
            Ok(hosts.into_iter().map(Target::Single).collect())
        }
        (Some(_), None) => Err(opts.error(
            "master_name",
            "is required with sentinel_hosts: the name the Sentinels monitor the master under",
        )),
        (None, Some(_)) => Err(opts.error(
            "sentinel_hosts",
            "is required with master_name: the Sentinels to ask for the master (host or host:port, port 26379 by default)",
        )),
        (Some(list), Some(master)) => {
            if list.is_empty() {
                return Err(opts.error("sentinel_hosts", "must name at least one Sentinel"));
            }
            Ok(vec![Target::Sentinel {
                sentinels: parse_hosts(opts, "sentinel_hosts", &list, 26379)?,
                master,
                password: sentinel_password,
            }])
        }
    }
}

fn address(ep: &Endpoint, tls: &Option<Tls>) -> ConnectionAddr {
    match (ep, tls) {
        (Endpoint::Unix(p), _) => ConnectionAddr::Unix(p.clone()),
        (Endpoint::Tcp { host, port }, None) => ConnectionAddr::Tcp(host.clone(), *port),
        (Endpoint::Tcp { host, port }, Some(tls)) => ConnectionAddr::TcpTls {
            host: host.clone(),
            port: *port,
            insecure: !tls.verify,
            tls_params: None,
        },
    }
}

/// Our own certificates, when TLS uses any (else the system's roots).
fn certificates(tls: &Tls) -> Option<redis::TlsCertificates> {
    install_crypto_provider();
    if tls.ca.is_none() && tls.client.is_none() {
        return None;
    }
    Some(redis::TlsCertificates {
        client_tls: tls.client.as_ref().map(|(c, k)| redis::ClientTlsConfig {
            client_cert: c.clone(),
            client_key: k.clone(),
        }),
        root_cert: tls.ca.clone(),
    })
}

fn tls_mode(tls: &Tls) -> redis::TlsMode {
    if tls.verify {
        redis::TlsMode::Secure
    } else {
        redis::TlsMode::Insecure
    }
}

fn tcp_settings() -> redis::io::tcp::TcpSettings {
    redis::io::tcp::TcpSettings::default().set_nodelay(true)
}

impl Target {
    /// Opens a connection: to the server, to the cluster (through the first seed that
    /// answers), or to the master the Sentinels name now; then AUTH and SELECT as configured.
    /// Replies must come within `timeout` (plus `extra_read` for blocking commands).
    pub fn connect(&self, cfg: &ConnConfig, extra_read: Duration) -> RedisResult<Con> {
        match self {
            Target::Single(ep) => connect(ep, cfg, extra_read).map(Con::Plain),
            Target::Cluster(seeds) => {
                let mut b = ClusterClientBuilder::new(
                    seeds
                        .iter()
                        .map(|ep| address(ep, &cfg.tls))
                        .collect::<Vec<_>>(),
                )
                // Redirects and a moment of CLUSTERDOWN are retried here; longer outages come
                // back to the plugin's own reconnection loop.
                .retries(3)
                .min_retry_wait(10)
                .max_retry_wait(200)
                .tcp_settings(tcp_settings());
                if let Some(p) = &cfg.password {
                    b = b.password(p);
                }
                if let Some(tls) = &cfg.tls {
                    b = b.tls(tls_mode(tls));
                    if let Some(certs) = certificates(tls) {
                        b = b.certs(certs);
                    }
                }
                let con = b.build()?.get_connection_with_config(
                    ClusterConfig::new()
                        .set_connection_timeout(cfg.timeout)
                        .set_response_timeout(cfg.timeout + extra_read),
                )?;
                Ok(Con::Cluster(Box::new(con)))
            }
            Target::Sentinel {
                sentinels,
                master,
                password,
            } => {
                let mut b = SentinelClientBuilder::new(
                    sentinels.iter().map(|ep| address(ep, &cfg.tls)),
                    master,
                    SentinelServerType::Master,
                )?
                .set_client_to_redis_db(cfg.db)
                .set_client_to_redis_tcp_settings(tcp_settings())
                .set_client_to_sentinel_tcp_settings(tcp_settings());
                if let Some(p) = &cfg.password {
                    b = b.set_client_to_redis_password(p);
                }
                if let Some(p) = password {
                    b = b.set_client_to_sentinel_password(p);
                }
                if let Some(tls) = &cfg.tls {
                    b = b
                        .set_client_to_redis_tls_mode(tls_mode(tls))
                        .set_client_to_sentinel_tls_mode(tls_mode(tls));
                    if let Some(certs) = certificates(tls) {
                        b = b
                            .set_client_to_redis_certificates(certs.clone())
                            .set_client_to_sentinel_certificates(certs);
                    }
                }
                let client = b.build()?.get_client()?;
                let con = client.get_connection_with_timeout(cfg.timeout)?;
                con.set_read_timeout(Some(cfg.timeout + extra_read))?;
                con.set_write_timeout(Some(cfg.timeout))?;
                Ok(Con::Plain(con))
            }
        }
    }

    /// A connection to one server, for what a cluster connection cannot do (`SUBSCRIBE`:
    /// messages published anywhere in a cluster reach every node): the first seed that
    /// answers, for a cluster.
    pub fn connect_one(&self, cfg: &ConnConfig, extra_read: Duration) -> RedisResult<Connection> {
        match self {
            Target::Cluster(seeds) => {
                let mut last = None;
                for ep in seeds {
                    match connect(ep, cfg, extra_read) {
                        Ok(c) => return Ok(c),
                        Err(e) => last = Some(e),
                    }
                }
                Err(last.expect("a cluster has at least one seed"))
            }
            _ => match self.connect(cfg, extra_read)? {
                Con::Plain(c) => Ok(c),
                Con::Cluster(_) => unreachable!("only a cluster target gives a cluster connection"),
            },
        }
    }
}

/// A connection to one server or to a cluster.
pub enum Con {
    Plain(Connection),
    Cluster(Box<ClusterConnection>),
}

impl Con {
    /// The plain connection, for sending a command ahead of reading its reply.
    pub fn plain(&mut self) -> Option<&mut Connection> {
        match self {
            Con::Plain(c) => Some(c),
            Con::Cluster(_) => None,
        }
    }

    pub fn is_cluster(&self) -> bool {
        matches!(self, Con::Cluster(_))
    }

    /// Runs `p` (its replies ignored): one round trip on a server; on a cluster, one per node
    /// that holds some of its keys.
    pub fn exec(&mut self, p: &Pipeline) -> RedisResult<()> {
        match self {
            Con::Plain(c) => p.query::<()>(c),
            Con::Cluster(c) => {
                let mut cp = redis::cluster::cluster_pipe();
                for cmd in p.cmd_iter() {
                    cp.add_command(cmd.clone()).ignore();
                }
                cp.query::<()>(c)
            }
        }
    }

    /// `INFO server` (named `info` by `command_map`): of the server, or of one cluster master.
    fn info_server(&mut self, info: &str) -> RedisResult<String> {
        let mut cmd = redis::cmd(info);
        cmd.arg("server");
        match self {
            Con::Plain(c) => cmd.query(c),
            Con::Cluster(c) => {
                let v = c.route_command(
                    &cmd,
                    RoutingInfo::SingleNode(SingleNodeRoutingInfo::RandomPrimary),
                )?;
                Ok(redis::from_redis_value(v)?)
            }
        }
    }
}

impl ConnectionLike for Con {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        match self {
            Con::Plain(c) => c.req_packed_command(cmd),
            Con::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        match self {
            Con::Plain(c) => c.req_packed_commands(cmd, offset, count),
            Con::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn req_command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        match self {
            Con::Plain(c) => c.req_command(cmd),
            Con::Cluster(c) => c.req_command(cmd),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Con::Plain(c) => c.get_db(),
            Con::Cluster(c) => c.get_db(),
        }
    }

    fn supports_pipelining(&self) -> bool {
        !self.is_cluster()
    }

    fn check_connection(&mut self) -> bool {
        match self {
            Con::Plain(c) => c.check_connection(),
            Con::Cluster(c) => c.check_connection(),
        }
    }

    fn is_open(&self) -> bool {
        match self {
            Con::Plain(c) => c.is_open(),
            Con::Cluster(c) => c.is_open(),
        }
    }
}

/// Opens a connection to one server: TCP (or TLS) or a unix socket, then AUTH and SELECT as
/// configured. Replies must come within `timeout` (plus `extra_read` for blocking commands).
pub fn connect(ep: &Endpoint, cfg: &ConnConfig, extra_read: Duration) -> RedisResult<Connection> {
    let mut settings = RedisConnectionInfo::default()
        .set_db(cfg.db)
        .set_skip_set_lib_name();
    if let Some(p) = &cfg.password {
        settings = settings.set_password(p);
    }
    let info = address(ep, &cfg.tls)
        .into_connection_info()?
        .set_redis_settings(settings)
        .set_tcp_settings(tcp_settings());
    let client = match cfg.tls.as_ref().and_then(certificates) {
        None => redis::Client::open(info)?,
        Some(certs) => redis::Client::build_with_tls(info, certs)?,
    };
    let con = client.get_connection_with_timeout(cfg.timeout)?;
    con.set_read_timeout(Some(cfg.timeout + extra_read))?;
    con.set_write_timeout(Some(cfg.timeout))?;
    Ok(con)
}

/// The server's `redis_version` from `INFO server`, as (major, minor, patch); `None` when the
/// server does not say (a proxy, say).
pub fn server_version(con: &mut Con, info_cmd: &str) -> RedisResult<Option<(u32, u32, u32)>> {
    Ok(parse_version(&con.info_server(info_cmd)?))
}

pub fn parse_version(info: &str) -> Option<(u32, u32, u32)> {
    let line = info
        .lines()
        .find_map(|l| l.trim().strip_prefix("redis_version:"))?;
    let mut parts = line.trim().split('.').map(|p| {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u32>()
            .unwrap_or(0)
    });
    Some((
        parts.next()?,
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    ))
}

/// Logstash's `command_map`: commands renamed on the server (`rename-command`). Names are
/// looked up lowercase and sent as given.
#[derive(Debug, Clone, Default)]
pub struct CommandMap {
    renames: Vec<(String, String)>,
}

impl CommandMap {
    /// Reads `command_map`; `allowed` are the commands this plugin sends.
    pub fn from_options(opts: &mut Options, allowed: &[&str]) -> Result<CommandMap, ConfigError> {
        let mut renames = Vec::new();
        for (from, to) in opts.string_hash("command_map")?.unwrap_or_default() {
            let from = from.to_ascii_lowercase();
            if !allowed.contains(&from.as_str()) {
                return Err(opts.error(
                    "command_map",
                    format!(
                        "cannot rename {from:?}: this plugin only sends {}",
                        allowed.join(", ")
                    ),
                ));
            }
            if to.is_empty() || to.contains(|c: char| c.is_whitespace() || c == '\'') {
                return Err(opts.error("command_map", format!("invalid command name {to:?}")));
            }
            renames.push((from, to));
        }
        Ok(CommandMap { renames })
    }

    /// The name to send for `command` (lowercase).
    pub fn name<'a>(&'a self, command: &'a str) -> &'a str {
        self.renames
            .iter()
            .find(|(f, _)| f == command)
            .map_or(command, |(_, t)| t.as_str())
    }
}

/// Whether an error means the connection is no good any more (and should be reopened), as
/// opposed to the server refusing one command.
/// Errors a failover answers with (a master turned replica, a cluster or master briefly
/// without a quorum, a server loading its data) also mean: reconnect, to the new master.
pub fn is_connection_error(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_unrecoverable_error()
        || e.code().is_none()
        || matches!(
            e.code(),
            Some("READONLY" | "MASTERDOWN" | "CLUSTERDOWN" | "TRYAGAIN" | "LOADING")
        )
}

/// What to add to an error's log line when its cause is the configuration: a `MOVED` reply
/// means the server is a cluster node and `cluster => true` is missing.
pub fn hint(e: &redis::RedisError) -> &'static str {
    match e.code() {
        Some("MOVED" | "ASK") => {
            " (this server is a Redis Cluster node: set cluster => true, with host listing some of its nodes)"
        }
        _ => "",
    }
}

/// The prefix of helper keys that must live in `key`'s cluster slot (so one script may touch
/// them all): `key` when it has a hash tag (`{...}`), else `{key}`, which hashes as `key`
/// does. `None` when `key` has a `}` but no hash tag: then no prefix shares its slot.
pub fn slot_prefix(key: &str) -> Option<String> {
    if let Some(open) = key.find('{') {
        if let Some(len) = key[open + 1..].find('}') {
            if len > 0 {
                return Some(key.to_owned());
            }
        }
    }
    (!key.contains('}')).then(|| format!("{{{key}}}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_with_and_without_ports() {
        let tcp = |h: &str, p| Endpoint::Tcp {
            host: h.to_owned(),
            port: p,
        };
        assert_eq!(parse_host("127.0.0.1", 6379), Ok(tcp("127.0.0.1", 6379)));
        assert_eq!(parse_host("redis:6380", 6379), Ok(tcp("redis", 6380)));
        assert_eq!(parse_host("[::1]:7000", 6379), Ok(tcp("::1", 7000)));
        assert_eq!(parse_host("[::1]", 6379), Ok(tcp("::1", 6379)));
        assert_eq!(parse_host("::1", 6379), Ok(tcp("::1", 6379)));
        assert!(parse_host("redis:port", 6379).is_err());
        assert!(parse_host(":6379", 6379).is_err());
        assert_eq!(tcp("::1", 1).to_string(), "[::1]:1");
    }

    #[test]
    fn versions_from_info() {
        let info = "# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:0\r\n";
        assert_eq!(parse_version(info), Some((7, 0, 15)));
        assert_eq!(parse_version("redis_version:6.2\r\n"), Some((6, 2, 0)));
        assert_eq!(parse_version("redis_version:5.0.14-rc1"), Some((5, 0, 14)));
        assert_eq!(parse_version("# Server\r\n"), None);
    }

    /// Redis Cluster's key hash slot (CRC16-XMODEM of the hash tag or the key, mod 16384),
    /// to check that helper keys land where their list does.
    fn slot(key: &str) -> u16 {
        let b = key.as_bytes();
        let hashed = match b.iter().position(|&c| c == b'{') {
            Some(o) => match b[o + 1..].iter().position(|&c| c == b'}') {
                Some(l) if l > 0 => &b[o + 1..o + 1 + l],
                _ => b,
            },
            None => b,
        };
        let mut crc: u16 = 0;
        for &byte in hashed {
            crc ^= u16::from(byte) << 8;
            for _ in 0..8 {
                crc = if crc & 0x8000 != 0 {
                    (crc << 1) ^ 0x1021
                } else {
                    crc << 1
                };
            }
        }
        crc % 16384
    }

    #[test]
    fn helper_keys_share_the_list_slot() {
        // Known slots, from CLUSTER KEYSLOT.
        assert_eq!(slot("foo"), 12182);
        assert_eq!(slot("{user1000}.following"), slot("user1000"));
        for key in ["logs", "a{b", "{x}y", "p{q}r{s}", "é-ü"] {
            let p = slot_prefix(key).unwrap();
            assert_eq!(
                slot(&format!("{p}:sluice:lease:x")),
                slot(key),
                "{key:?} → {p:?}"
            );
        }
        assert_eq!(slot_prefix("logs").as_deref(), Some("{logs}"));
        assert_eq!(slot_prefix("{x}y").as_deref(), Some("{x}y"));
        for key in ["a}b", "a{}b", "{}"] {
            assert_eq!(slot_prefix(key), None, "{key:?}");
        }
    }
}

//! What the `redis` input and output share: where to connect (`host`/`port`/`path`, a
//! `host:port` list for the output), how (`password`, `db`, `timeout`, TLS), Logstash's
//! `command_map` renames, the server-version probe, and reconnection with back-off that logs one
//! line when Redis goes away and one when it is back.
//!
//! Connections are the `redis` crate's synchronous ones: inputs and outputs here are plain
//! threads, and a batch is one round trip (`LPOP key 125`, a pipeline of `RPUSH`es).

use std::path::PathBuf;
use std::time::Duration;

use redis::{Connection, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo, RedisResult};
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

/// Opens a connection: TCP (or TLS) or a unix socket, then AUTH and SELECT as configured.
/// Replies must come within `timeout` (plus `extra_read` for blocking commands).
pub fn connect(ep: &Endpoint, cfg: &ConnConfig, extra_read: Duration) -> RedisResult<Connection> {
    let addr = match (ep, &cfg.tls) {
        (Endpoint::Unix(p), _) => ConnectionAddr::Unix(p.clone()),
        (Endpoint::Tcp { host, port }, None) => ConnectionAddr::Tcp(host.clone(), *port),
        (Endpoint::Tcp { host, port }, Some(tls)) => ConnectionAddr::TcpTls {
            host: host.clone(),
            port: *port,
            insecure: !tls.verify,
            tls_params: None,
        },
    };
    let mut settings = RedisConnectionInfo::default()
        .set_db(cfg.db)
        .set_skip_set_lib_name();
    if let Some(p) = &cfg.password {
        settings = settings.set_password(p);
    }
    let info = addr
        .into_connection_info()?
        .set_redis_settings(settings)
        .set_tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(true));
    let client = match &cfg.tls {
        None => redis::Client::open(info)?,
        Some(tls) => {
            install_crypto_provider();
            if tls.ca.is_none() && tls.client.is_none() {
                redis::Client::open(info)?
            } else {
                redis::Client::build_with_tls(
                    info,
                    redis::TlsCertificates {
                        client_tls: tls.client.as_ref().map(|(c, k)| redis::ClientTlsConfig {
                            client_cert: c.clone(),
                            client_key: k.clone(),
                        }),
                        root_cert: tls.ca.clone(),
                    },
                )?
            }
        }
    };
    let con = client.get_connection_with_timeout(cfg.timeout)?;
    con.set_read_timeout(Some(cfg.timeout + extra_read))?;
    con.set_write_timeout(Some(cfg.timeout))?;
    Ok(con)
}

/// The server's `redis_version` from `INFO server`, as (major, minor, patch); `None` when the
/// server does not say (a proxy, say).
pub fn server_version(
    con: &mut Connection,
    info_cmd: &str,
) -> RedisResult<Option<(u32, u32, u32)>> {
    let text: String = redis::cmd(info_cmd).arg("server").query(con)?;
    Ok(parse_version(&text))
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
pub fn is_connection_error(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_unrecoverable_error()
        || e.code().is_none()
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
}

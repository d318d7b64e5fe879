//! `logstash`: events to another Logstash (or sluice) `logstash` input over HTTP, as the
//! Logstash integration's output sends them (Logstash-to-Logstash, bundled since 8.x).
//!
//! Each batch is one `POST /`: the events' JSON in one array, gzip-compressed, with
//! `Content-Type: application/x-ndjson`. `hosts` (`host` or `host:port`, port 9800 by
//! default; `[::1]:9801` for IPv6) share the batches: each goes to the live host with the
//! fewest requests in flight; a host that does not answer is marked dead and checked again
//! later. The receiving input answers once the events are in its queue, so a batch is
//! acknowledged here (and leaves this pipeline's queue) only once the receiver has them.
//! Answers 429, 500, 502, 503 and 504, and hosts that cannot be reached, get the batch again
//! (with back-off, until it goes or the pipeline stops); any other answer is logged and the
//! batch dropped, as Logstash does.
//!
//! `ssl_enabled` (true by default) with the HTTP client's `ssl_*` options
//! (`ssl_certificate_authorities`, `ssl_verification_mode`, `ssl_certificate`/`ssl_key`);
//! `username`/`password` (HTTP basic); `request_timeout`, `connect_timeout`.

use std::time::Duration;

use sluice_event::Event;
use sluice_pipeline::{ConfigError, Options, Output, OutputError, WriteContext};

use crate::http::{HttpError, Pool, PoolConfig};
use crate::retry::Backoff;

pub struct LogstashOutput {
    pool: Pool,
}

const DEFAULT_PORT: u16 = 9800;
const RETRYABLE: [u16; 5] = [429, 500, 502, 503, 504];
const BODY_HEADERS: &[(&str, &str)] = &[
    ("Content-Type", "application/x-ndjson"),
    ("Content-Encoding", "gzip"),
];

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    if opts.has("codec") {
        opts.take("codec");
        return Err(opts.error(
            "codec",
            "The `logstash` output does not have an externally-configurable `codec`",
        ));
    }
    let hosts = opts
        .string_list("hosts")?
        .filter(|h| !h.is_empty())
        .ok_or_else(|| {
            opts.plugin_error("missing required setting \"hosts\" for output plugin \"logstash\"")
        })?;
    let ssl = opts.boolean_or("ssl_enabled", true)?;
    let tls = if ssl {
        crate::tls::read(opts, crate::tls::Names::Elasticsearch, true)?
    } else {
        if let Some(name) = [
            "ssl_certificate_authorities",
            "ssl_verification_mode",
            "ssl_certificate",
            "ssl_key",
        ]
        .into_iter()
        .find(|n| opts.has(n))
        {
            opts.take(name);
            return Err(opts.error(
                name,
                "Explicit SSL-related settings not supported because `ssl_enabled => false`",
            ));
        }
        None
    };
    let scheme = if ssl { "https" } else { "http" };
    let mut urls = Vec::with_capacity(hosts.len());
    for h in &hosts {
        urls.push(format!(
            "{scheme}://{}",
            host_port(h).map_err(|e| opts.error("hosts", e))?
        ));
    }
    let username = match (opts.string("username")?, opts.string("user")?) {
        (Some(u), _) | (None, Some(u)) => Some(u),
        (None, None) => None,
    };
    let password = opts.string("password")?;
    // Sent with every request, the health checks too (the body's headers go with the
    // batches only: an empty HEAD "in gzip" is not one).
    let mut headers = Vec::new();
    match (username, password) {
        (Some(u), Some(p)) => {
            use base64::Engine;
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
            headers.push(("Authorization".to_owned(), format!("Basic {token}")));
            if !ssl {
                tracing::warn!("logstash output: credentials go over a connection without TLS");
            }
        }
        (Some(_), None) => return Err(opts.error("username", "requires password as well")),
        (None, Some(_)) => return Err(opts.error("password", "is not allowed without username")),
        (None, None) => {}
    }
    let secs = |opts: &mut Options, name: &str, default: f64| -> Result<Duration, ConfigError> {
        let v = opts.float(name)?.unwrap_or(default);
        if !(v > 0.0 && v.is_finite()) {
            return Err(opts.error(name, "must be a positive number of seconds"));
        }
        Ok(Duration::from_secs_f64(v))
    };
    let timeout = secs(opts, "request_timeout", 60.0)?;
    let _connect = secs(opts, "connect_timeout", 10.0)?;
    let pool = Pool::new(PoolConfig {
        urls,
        tls,
        headers,
        timeout,
        resurrect_delay: Duration::from_secs(5),
        healthcheck_path: "/".to_owned(),
        max_idle_per_host: 4,
        proxy: None,
    })
    .map_err(|e| opts.plugin_error(format!("logstash output: {e}")))?;
    Ok(Box::new(LogstashOutput { pool }))
}

/// `host` or `host:port` (IPv6 in brackets) as `host:port`, with the default port.
fn host_port(h: &str) -> Result<String, String> {
    let h = h.trim();
    let (host, port) = if let Some(rest) = h.strip_prefix('[') {
        let (ip, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("{h:?}: an IPv6 address without its closing bracket"))?;
        (format!("[{ip}]"), after.strip_prefix(':'))
    } else {
        match h.rsplit_once(':') {
            Some((host, port)) if !host.contains(':') => (host.to_owned(), Some(port)),
            Some(_) => return Err(format!("{h:?}: an IPv6 address goes in brackets")),
            None => (h.to_owned(), None),
        }
    };
    if host.is_empty() || host.contains('/') {
        return Err(format!("{h:?} is not a host (host or host:port)"));
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("{h:?}: {p:?} is not a port"))?,
    };
    Ok(format!("{host}:{port}"))
}

impl Output for LogstashOutput {
    fn write(&self, events: &[&Event], ctx: &WriteContext) -> Result<(), OutputError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut json = Vec::with_capacity(events.len() * 256 + 2);
        json.push(b'[');
        for (i, e) in events.iter().enumerate() {
            if i > 0 {
                json.push(b',');
            }
            sluice_event::json::write_event(e, &mut json);
        }
        json.push(b']');
        let body = crate::http::gzip(&json, 1);
        let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(30));
        loop {
            let why = match self.pool.request("POST", "/", BODY_HEADERS, Some(&body)) {
                Ok(r) if (200..300).contains(&r.status) => return Ok(()),
                Ok(r) if RETRYABLE.contains(&r.status) => {
                    if r.status != 429 {
                        tracing::warn!(
                            url = %r.url,
                            status = r.status,
                            body = %String::from_utf8_lossy(&r.body),
                            "logstash output: a retryable error; sending the batch again"
                        );
                    }
                    format!("{} answered {}", r.url, r.status)
                }
                Ok(r) => {
                    tracing::error!(
                        url = %r.url,
                        status = r.status,
                        events = events.len(),
                        body = %String::from_utf8_lossy(&r.body),
                        "logstash output: the batch was refused; dropped"
                    );
                    return Ok(());
                }
                Err(e @ (HttpError::Unreachable { .. } | HttpError::NoneAlive { .. })) => {
                    tracing::warn!("logstash output: could not send the batch: {e}");
                    e.to_string()
                }
            };
            if !ctx.sleep(backoff.next_delay()) {
                return Err(OutputError::retryable(format!("logstash output: {why}")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::host_port;

    #[test]
    fn hosts_read_as_the_integration_reads_them() {
        assert_eq!(host_port("10.0.0.1").unwrap(), "10.0.0.1:9800");
        assert_eq!(host_port("ls.example:9801").unwrap(), "ls.example:9801");
        assert_eq!(host_port("[::1]").unwrap(), "[::1]:9800");
        assert_eq!(host_port("[::1]:9000").unwrap(), "[::1]:9000");
        assert!(host_port("::1").is_err());
        assert!(host_port("h:0").is_err());
        assert!(host_port("h:x").is_err());
        assert!(host_port("").is_err());
    }
}

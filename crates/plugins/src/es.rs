//! Where an Elasticsearch (or OpenSearch) plugin connects and how it authenticates: the
//! options the elasticsearch output, input and filter share (`hosts` or `cloud_id`, `user` and
//! `password`, `cloud_auth` or `api_key`, the `ssl_*` options, `custom_headers`), read once
//! into a [`Connection`] that becomes the [`crate::http::Pool`] the plugin sends through.

use std::time::Duration;

use sluice_pipeline::{ConfigError, Options};

use crate::tls::{self, Tls};

/// The hosts and what every request carries.
#[derive(Debug, Clone)]
pub struct Connection {
    /// Base URLs, without a trailing slash (path prefix included).
    pub hosts: Vec<String>,
    pub tls: Option<Tls>,
    /// Sent with every request: authorization and `custom_headers`.
    pub headers: Vec<(String, String)>,
}

impl Connection {
    /// Reads the connection options; `opensearch` takes the opensearch output's names (no
    /// `cloud_id`, `cloud_auth`, `api_key`; the older TLS names).
    pub fn read(opts: &mut Options, opensearch: bool) -> Result<Connection, ConfigError> {
        let cloud_id = if !opensearch {
            opts.string("cloud_id")?
        } else {
            None
        };
        let cloud_auth = if !opensearch {
            opts.string("cloud_auth")?
        } else {
            None
        };
        let api_key = if !opensearch {
            opts.string("api_key")?
        } else {
            None
        };
        let host_list = opts.string_list("hosts")?;
        let any_https = host_list
            .iter()
            .flatten()
            .any(|h| h.trim().to_ascii_lowercase().starts_with("https://"))
            || cloud_id.is_some();
        let tls = if !opensearch {
            tls::read(opts, tls::Names::Elasticsearch, any_https)?
        } else {
            tls::read_opensearch(opts, any_https)?
        };
        let https = tls.is_some();
        let mut hosts = match (&cloud_id, host_list) {
            (Some(_), Some(_)) => {
                return Err(opts.error(
                    "cloud_id",
                    "and hosts are both set; use one (cloud_id names the hosts)",
                ))
            }
            (Some(id), None) => vec![parse_cloud_id(id).map_err(|e| opts.error("cloud_id", e))?],
            (None, Some(list)) => {
                if list.is_empty() {
                    return Err(opts.error("hosts", "must name at least one host"));
                }
                let mut out = Vec::new();
                for h in &list {
                    out.push(host_url(h, https).map_err(|e| opts.error("hosts", e))?);
                }
                out
            }
            (None, None) => vec![host_url("//127.0.0.1", https).unwrap_or_default()],
        };
        if let Some(path) = opts.string("path")? {
            let path = format!("/{}", path.trim_matches('/'));
            if path != "/" {
                for h in &mut hosts {
                    h.push_str(&path);
                }
            }
        }
        let user = opts.string("user")?;
        let password = opts.string("password")?;
        let mut headers = Vec::new();
        match (&user, &password, &cloud_auth, &api_key) {
            (_, _, Some(_), _) if user.is_some() || password.is_some() => {
                return Err(opts.error("cloud_auth", "and user/password are both set; use one"))
            }
            (_, _, _, Some(_)) if user.is_some() || password.is_some() || cloud_auth.is_some() => {
                return Err(opts.error(
                    "api_key",
                    "cannot be combined with user/password or cloud_auth",
                ))
            }
            (Some(u), Some(p), None, None) => headers.push(("Authorization".into(), basic(u, p))),
            (Some(_), None, _, _) => return Err(opts.error("user", "requires password as well")),
            (None, Some(_), _, _) => return Err(opts.error("password", "requires user as well")),
            (None, None, Some(auth), None) => {
                let Some((u, p)) = auth.split_once(':') else {
                    return Err(opts.error("cloud_auth", "must be \"username:password\""));
                };
                headers.push(("Authorization".into(), basic(u, p)));
            }
            (None, None, None, Some(key)) => {
                if !https {
                    return Err(opts.error(
                        "api_key",
                        "requires TLS (ssl_enabled => true or https:// hosts)",
                    ));
                }
                if !key.contains(':') {
                    return Err(opts.error("api_key", "must be \"id:api_key\""));
                }
                use base64::Engine;
                headers.push((
                    "Authorization".into(),
                    format!(
                        "ApiKey {}",
                        base64::engine::general_purpose::STANDARD.encode(key.as_bytes())
                    ),
                ));
            }
            _ => {}
        }
        for (k, v) in opts.string_hash("custom_headers")?.unwrap_or_default() {
            headers.push((k, v));
        }
        Ok(Connection {
            hosts,
            tls,
            headers,
        })
    }
}

/// `cloud_id`: `[label:]base64(host[:port]$es_uuid$kibana_uuid)` → `https://es_uuid.host:port`.
pub fn parse_cloud_id(cloud_id: &str) -> Result<String, String> {
    use base64::Engine;
    let encoded = match cloud_id.split_once(':') {
        Some((_, rest)) => rest,
        None => cloud_id,
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(encoded.trim()))
        .map_err(|e| format!("is not valid base64 after the label: {e}"))?;
    let text = String::from_utf8(decoded).map_err(|_| "does not decode to text".to_owned())?;
    let parts: Vec<&str> = text.split('$').collect();
    if parts.len() < 2 || parts[0].is_empty() || parts[1].is_empty() {
        return Err(format!(
            "decodes to {text:?}, expected \"host$elasticsearch_id$kibana_id\""
        ));
    }
    let (host, port) = match parts[0].rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => (h, p),
        _ => (parts[0], "443"),
    };
    // The Elasticsearch id may carry its own port (`id:9243`).
    let (es_id, port) = match parts[1].split_once(':') {
        Some((id, p)) if p.parse::<u16>().is_ok() => (id, p),
        _ => (parts[1], port),
    };
    Ok(format!("https://{es_id}.{host}:{port}"))
}

pub fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

/// One `hosts` entry → a base URL: `http://` (or `https://` with TLS on) and port 9200 unless
/// given. A host given as `https://` turns TLS on.
pub fn host_url(raw: &str, https: bool) -> Result<String, String> {
    let raw = raw.trim();
    let (scheme, rest) = match raw.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        None => (
            if https { "https" } else { "http" }.to_owned(),
            raw.trim_start_matches("//"),
        ),
    };
    if scheme != "http" && scheme != "https" {
        return Err(format!("{raw:?}: only http and https are supported"));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    if authority.contains('@') {
        return Err(format!(
            "{raw:?}: put credentials in user and password, not in the URL"
        ));
    }
    if authority.is_empty() {
        return Err(format!("{raw:?}: no host"));
    }
    // An IPv6 literal is bracketed; its colons are not a port.
    let has_port = match authority.rfind(']') {
        Some(end) => authority[end..].contains(':'),
        None => authority.contains(':'),
    };
    let port = if has_port { "" } else { ":9200" };
    Ok(format!("{scheme}://{authority}{port}{path}"))
}

/// The connection pool of an elasticsearch input or filter: [`Connection::read`], `proxy` (a
/// URL, or empty for none), `request_timeout_seconds`/`timeout` (the whole request), and the
/// pool's health checking as the output has it.
pub fn pool(
    opts: &mut Options,
    default_timeout: Duration,
) -> Result<crate::http::Pool, ConfigError> {
    let conn = Connection::read(opts, false)?;
    let proxy = opts.string("proxy")?.filter(|p| !p.trim().is_empty());
    let timeout = if opts.has("request_timeout_seconds") {
        opts.seconds("request_timeout_seconds", default_timeout.as_secs_f64())?
    } else {
        opts.seconds("timeout", default_timeout.as_secs_f64())?
    };
    crate::http::Pool::new(crate::http::PoolConfig {
        urls: conn.hosts,
        tls: conn.tls,
        headers: conn.headers,
        timeout,
        resurrect_delay: Duration::from_secs(5),
        healthcheck_path: "/".to_owned(),
        max_idle_per_host: 8,
        proxy,
    })
    .map_err(|e| opts.plugin_error(e))
}

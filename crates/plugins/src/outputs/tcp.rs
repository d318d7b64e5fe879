//! `tcp`: writes encoded events to a TCP connection, as Logstash's tcp output in client mode
//! (its default): to `host:port`, connecting again `reconnect_interval` seconds after a failure
//! (server mode is not supported yet, and refused), over TLS with `ssl_enabled`
//! (`ssl_certificate_authorities` or the system's, `ssl_certificate`/`ssl_key`,
//! `ssl_verification_mode`). The codec is `json` by default
//! (events back to back, as Logstash writes them; `json_lines` puts one per line). A batch is
//! encoded into one buffer and written with one call; when the write fails, the connection is
//! dropped and the batch retried, so events go out at least once.

use std::io::Write;
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sluice_event::Event;
use sluice_pipeline::{Codec, ConfigError, Options, Output, OutputError, WriteContext};

/// A connection, plain or TLS.
type Stream = Box<dyn Write + Send>;

pub struct TcpOutput {
    target: String,
    codec: Mutex<Box<dyn Codec>>,
    reconnect: Duration,
    /// The connection, and when the last attempt failed.
    conn: Mutex<(Option<Stream>, Option<Instant>)>,
    tls: Option<(
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let host = opts.required_string("host")?;
    let port = opts.int("port")?.ok_or_else(|| {
        opts.plugin_error("missing required setting \"port\" for output plugin \"tcp\"")
    })?;
    let port = u16::try_from(port)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| opts.error("port", format!("{port} is not a port (1-65535)")))?;
    if opts.choice("mode", &["client", "server"], "client")? == "server" {
        return Err(opts.error("mode", "server mode is not supported yet (client mode is)"));
    }
    let reconnect = opts.int("reconnect_interval")?.unwrap_or(10);
    if reconnect < 0 {
        return Err(opts.error("reconnect_interval", "must be 0 or more seconds"));
    }
    for (old, new) in [
        ("ssl_enable", "ssl_enabled"),
        ("ssl_cacert", "ssl_certificate_authorities"),
        ("ssl_cert", "ssl_certificate"),
        ("ssl_verify", "ssl_verification_mode"),
    ] {
        if opts.has(old) {
            opts.take(old);
            return Err(opts.error(old, format!("is obsolete; use {new}")));
        }
    }
    let tls = match crate::tls::read(opts, crate::tls::Names::Elasticsearch, false)? {
        None => None,
        Some(t) => {
            let config = crate::tls::client_config(&t).map_err(|e| opts.plugin_error(e))?;
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|e| opts.error("host", format!("not a TLS server name: {e}")))?;
            Some((config, name))
        }
    };
    let codec = opts.codec("json")?;
    let target = format!("{host}:{port}");
    Ok(Box::new(TcpOutput {
        target,
        codec: Mutex::new(codec),
        reconnect: Duration::from_secs(reconnect as u64),
        conn: Mutex::new((None, None)),
        tls,
    }))
}

impl Output for TcpOutput {
    fn write(&self, events: &[&Event], _ctx: &WriteContext) -> Result<(), OutputError> {
        let mut buf = Vec::with_capacity(events.len() * 256);
        {
            let mut codec = self.codec.lock().unwrap_or_else(|e| e.into_inner());
            for e in events {
                codec.encode(e, &mut buf);
            }
        }
        let mut c = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if c.0.is_none() {
            if let Some(failed) = c.1 {
                let wait = self.reconnect.saturating_sub(failed.elapsed());
                if !wait.is_zero() {
                    return Err(OutputError::retryable(format!(
                        "tcp output: {} unreachable; next attempt in {} s",
                        self.target,
                        wait.as_secs()
                    )));
                }
            }
            match TcpStream::connect(&self.target) {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    let w: Stream = match &self.tls {
                        None => Box::new(s),
                        Some((config, name)) => {
                            match rustls::ClientConnection::new(Arc::clone(config), name.clone()) {
                                Ok(session) => Box::new(rustls::StreamOwned::new(session, s)),
                                Err(e) => {
                                    c.1 = Some(Instant::now());
                                    return Err(OutputError::retryable(format!(
                                        "tcp output: TLS with {}: {e}",
                                        self.target
                                    )));
                                }
                            }
                        }
                    };
                    *c = (Some(w), None);
                }
                Err(e) => {
                    c.1 = Some(Instant::now());
                    return Err(OutputError::retryable(format!(
                        "tcp output: cannot connect to {}: {e}",
                        self.target
                    )));
                }
            }
        }
        let stream = c.0.as_mut().expect("connected above");
        if let Err(e) = stream.write_all(&buf).and_then(|()| stream.flush()) {
            *c = (None, Some(Instant::now()));
            return Err(OutputError::retryable(format!(
                "tcp output: writing to {}: {e}",
                self.target
            )));
        }
        Ok(())
    }
}

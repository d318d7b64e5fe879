//! `tcp`: writes encoded events to a TCP connection, as Logstash's tcp output in client mode
//! (its default): to `host:port`, connecting again `reconnect_interval` seconds after a failure
//! (server mode is not supported yet, and refused). The codec is `json` by default
//! (events back to back, as Logstash writes them; `json_lines` puts one per line). A batch is
//! encoded into one buffer and written with one call; when the write fails, the connection is
//! dropped and the batch retried, so events go out at least once.

use std::io::Write;
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sluice_event::Event;
use sluice_pipeline::{Codec, ConfigError, Options, Output, OutputError, WriteContext};

pub struct TcpOutput {
    target: String,
    codec: Mutex<Box<dyn Codec>>,
    reconnect: Duration,
    /// The connection, and when the last attempt failed.
    conn: Mutex<(Option<TcpStream>, Option<Instant>)>,
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
    if opts.boolean("ssl_enabled")? == Some(true) || opts.boolean("ssl_enable")? == Some(true) {
        return Err(opts.error("ssl_enabled", "TLS is not supported by the tcp output yet"));
    }
    let codec = opts.codec("json")?;
    let target = format!("{host}:{port}");
    Ok(Box::new(TcpOutput {
        target,
        codec: Mutex::new(codec),
        reconnect: Duration::from_secs(reconnect as u64),
        conn: Mutex::new((None, None)),
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
                    *c = (Some(s), None);
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
        if let Err(e) = stream.write_all(&buf) {
            *c = (None, Some(Instant::now()));
            return Err(OutputError::retryable(format!(
                "tcp output: writing to {}: {e}",
                self.target
            )));
        }
        Ok(())
    }
}

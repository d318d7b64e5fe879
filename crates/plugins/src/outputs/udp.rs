//! `udp`: one datagram per event (the codec's encoding, `json` by default), as Logstash's udp
//! output. A send that fails is tried `retry_count` more times, `retry_backoff_ms` apart, then
//! the event is logged and dropped (UDP promises no delivery; the pipeline is not held up).

use std::net::UdpSocket;
use std::sync::Mutex;
use std::time::Duration;

use sluice_event::Event;
use sluice_pipeline::{Codec, ConfigError, Options, Output, OutputError, WriteContext};

pub struct UdpOutput {
    /// Resolved once, when the output is built.
    target: std::net::SocketAddr,
    socket: UdpSocket,
    codec: Mutex<Box<dyn Codec>>,
    retries: u32,
    backoff: Duration,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let host = opts.required_string("host")?;
    let port = crate::net::port(opts, "port", None)?;
    let retries = opts.int("retry_count")?.unwrap_or(0);
    let backoff = opts.int("retry_backoff_ms")?.unwrap_or(10);
    if retries < 0 || backoff < 0 {
        return Err(
            opts.plugin_error("udp output: retry_count and retry_backoff_ms must be 0 or more")
        );
    }
    let codec = opts.codec("json")?;
    let (target, socket) = socket_to(opts, &host, port)?;
    Ok(Box::new(UdpOutput {
        target,
        socket,
        codec: Mutex::new(codec),
        retries: retries as u32,
        backoff: Duration::from_millis(backoff as u64),
    }))
}

/// `host:port` resolved once, and a socket to send to it from.
pub fn socket_to(
    opts: &Options,
    host: &str,
    port: u16,
) -> Result<(std::net::SocketAddr, UdpSocket), ConfigError> {
    use std::net::ToSocketAddrs;
    let target = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| opts.error("host", format!("cannot resolve {host:?}")))?;
    let bind = if target.is_ipv6() {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    };
    let socket = UdpSocket::bind(bind).map_err(|e| {
        opts.plugin_error(format!(
            "{} output: cannot open a socket: {e}",
            opts.plugin_name()
        ))
    })?;
    Ok((target, socket))
}

/// One datagram per event as `codec` encodes it, to `host:port`, nothing tried again: what the
/// syslog output sends over UDP with.
pub fn with_codec(
    opts: &Options,
    host: &str,
    port: u16,
    codec: Box<dyn Codec>,
) -> Result<UdpOutput, ConfigError> {
    let (target, socket) = socket_to(opts, host, port)?;
    Ok(UdpOutput {
        target,
        socket,
        codec: Mutex::new(codec),
        retries: 0,
        backoff: Duration::ZERO,
    })
}

impl Output for UdpOutput {
    fn write(&self, events: &[&Event], ctx: &WriteContext) -> Result<(), OutputError> {
        let mut codec = self.codec.lock().unwrap_or_else(|e| e.into_inner());
        let mut buf = Vec::with_capacity(512);
        for e in events {
            buf.clear();
            codec.encode(e, &mut buf);
            let mut attempt = 0;
            loop {
                match self.socket.send_to(&buf, self.target) {
                    Ok(_) => break,
                    Err(err) if attempt < self.retries => {
                        attempt += 1;
                        tracing::debug!(
                            "udp output: sending to {} failed: {err}; retrying",
                            self.target
                        );
                        if !ctx.sleep(self.backoff) {
                            break;
                        }
                    }
                    Err(err) => {
                        tracing::warn!(
                            "udp output: event dropped, sending to {} failed: {err}",
                            self.target
                        );
                        break;
                    }
                }
            }
        }
        Ok(())
    }
}

//! `lumberjack`: events to a Lumberjack server (Logstash's or sluice's `beats` input) over TLS,
//! as Logstash's lumberjack output sends them: each event encoded by the codec (`plain` by
//! default) goes as a protocol-1 data frame `{"line": <encoding>}`, which the receiving input
//! makes into `message`.
//!
//! A batch goes in windows of at most `flush_size` events: a window frame, then the window's
//! data frames (sequence 1 to n) zlib-compressed in one frame; the window is done when the
//! server acknowledges sequence n (ACKs with a lower sequence are its keep-alives while its
//! queue is full). The batch is acknowledged to the pipeline only once every window is, so an
//! event leaves this pipeline's queue only once the receiver has queued it. A connection that
//! fails is made again (to another of `hosts`, in turn) and the window that was not
//! acknowledged is sent again; the windows already acknowledged are not.
//!
//! `idle_flush_time` is read and has nothing left to do: the pipeline's batch delay already
//! sends what waits.
//!
//! TLS is always on: `ssl_certificate` is the certificate (or authority) the server's
//! certificate must chain to, and the server's name is the host connected to.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_event::Event;
use sluice_pipeline::{Codec, ConfigError, Options, Output, OutputError, WriteContext};

use crate::retry::Backoff;

type Stream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

pub struct LumberjackOutput {
    hosts: Vec<String>,
    port: u16,
    tls: Arc<rustls::ClientConfig>,
    window: usize,
    state: Mutex<State>,
}

struct State {
    codec: Box<dyn Codec>,
    conn: Option<Stream>,
    /// The host to try next.
    next: usize,
}

/// How long the server may stay silent (no ACK, no keep-alive) before the connection is
/// given up.
const ACK_TIMEOUT: Duration = Duration::from_secs(60);

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let hosts = opts
        .string_list("hosts")?
        .filter(|h| !h.is_empty())
        .ok_or_else(|| {
            opts.plugin_error("missing required setting \"hosts\" for output plugin \"lumberjack\"")
        })?;
    let port = crate::net::port(opts, "port", None)?;
    let cert = opts.string("ssl_certificate")?.ok_or_else(|| {
        opts.plugin_error(
            "missing required setting \"ssl_certificate\" for output plugin \"lumberjack\"",
        )
    })?;
    let pem = std::fs::read(&cert)
        .map_err(|e| opts.error("ssl_certificate", format!("cannot read {cert:?}: {e}")))?;
    let tls = crate::tls::client_config(&crate::tls::Tls {
        ca: Some(pem),
        client: None,
        verify: true,
    })
    .map_err(|e| opts.error("ssl_certificate", e))?;
    let window = opts.int("flush_size")?.unwrap_or(1024);
    if window < 1 {
        return Err(opts.error("flush_size", "must be at least 1"));
    }
    let idle = opts.float("idle_flush_time")?.unwrap_or(1.0);
    if idle.is_nan() || idle < 0.0 {
        return Err(opts.error("idle_flush_time", "must be 0 or more seconds"));
    }
    let codec = opts.codec("plain")?;
    Ok(Box::new(LumberjackOutput {
        hosts,
        port,
        tls,
        window: window as usize,
        state: Mutex::new(State {
            codec,
            conn: None,
            next: 0,
        }),
    }))
}

impl Output for LumberjackOutput {
    fn write(&self, events: &[&Event], ctx: &WriteContext) -> Result<(), OutputError> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let st = &mut *st;
        let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(10));
        for window in events.chunks(self.window) {
            let frames = encode_window(window, st.codec.as_mut());
            loop {
                match self.send_window(st, &frames, window.len() as u32) {
                    Ok(()) => {
                        backoff.reset();
                        break;
                    }
                    Err(e) => {
                        st.conn = None;
                        tracing::warn!("lumberjack output: {e}; sending the window again");
                        if !ctx.sleep(backoff.next_delay()) {
                            return Err(OutputError::retryable(format!("lumberjack output: {e}")));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl LumberjackOutput {
    /// Sends one window (connecting first when needed) and waits for its ACK.
    fn send_window(&self, st: &mut State, frames: &[u8], count: u32) -> Result<(), String> {
        if st.conn.is_none() {
            let host = &self.hosts[st.next % self.hosts.len()];
            st.next += 1;
            st.conn = Some(self.connect(host)?);
        }
        let conn = st.conn.as_mut().expect("connected above");
        let mut head = Vec::with_capacity(6);
        head.extend_from_slice(b"1W");
        head.extend_from_slice(&count.to_be_bytes());
        conn.write_all(&head)
            .and_then(|()| conn.write_all(frames))
            .and_then(|()| conn.flush())
            .map_err(|e| format!("sending a window: {e}"))?;
        loop {
            let mut ack = [0u8; 6];
            conn.read_exact(&mut ack)
                .map_err(|e| format!("waiting for the ACK: {e}"))?;
            if ack[1] != b'A' {
                return Err(format!("the server sent {:?}, not an ACK", &ack[..2]));
            }
            let seq = u32::from_be_bytes([ack[2], ack[3], ack[4], ack[5]]);
            if seq == count {
                return Ok(());
            }
            if seq > count {
                return Err(format!(
                    "the server acknowledged {seq} events of a window of {count}"
                ));
            }
            // A keep-alive: the server is still queueing the window.
        }
    }

    fn connect(&self, host: &str) -> Result<Stream, String> {
        let target = crate::net::address(host, self.port);
        let tcp =
            super::tcp::connect(&target).map_err(|e| format!("cannot connect to {target}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        tcp.set_read_timeout(Some(ACK_TIMEOUT))
            .and_then(|()| tcp.set_write_timeout(Some(ACK_TIMEOUT)))
            .map_err(|e| format!("{target}: {e}"))?;
        let name = rustls::pki_types::ServerName::try_from(host.to_owned())
            .map_err(|e| format!("{host:?} is not a TLS server name: {e}"))?;
        let session = rustls::ClientConnection::new(Arc::clone(&self.tls), name)
            .map_err(|e| format!("TLS with {target}: {e}"))?;
        Ok(rustls::StreamOwned::new(session, tcp))
    }
}

/// A window's data frames, sequence 1 to n, zlib-compressed in one compressed frame.
fn encode_window(events: &[&Event], codec: &mut dyn Codec) -> Vec<u8> {
    let mut plain = Vec::with_capacity(events.len() * 256);
    let mut line = Vec::new();
    for (i, e) in events.iter().enumerate() {
        line.clear();
        codec.encode(e, &mut line);
        plain.extend_from_slice(b"1D");
        plain.extend_from_slice(&(i as u32 + 1).to_be_bytes());
        plain.extend_from_slice(&1u32.to_be_bytes());
        plain.extend_from_slice(&4u32.to_be_bytes());
        plain.extend_from_slice(b"line");
        plain.extend_from_slice(&(line.len() as u32).to_be_bytes());
        plain.extend_from_slice(&line);
    }
    let packed = crate::http::zlib(&plain, 3);
    let mut out = Vec::with_capacity(packed.len() + 6);
    out.extend_from_slice(b"1C");
    out.extend_from_slice(&(packed.len() as u32).to_be_bytes());
    out.extend_from_slice(&packed);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::beats::protocol::{self, Frame};

    /// What the output writes is what the beats input's parser reads back.
    #[test]
    fn windows_read_back_as_the_beats_input_reads_them() {
        let mut codec: Box<dyn Codec> =
            Box::new(crate::codecs::plain::Plain::new(crate::ecs::Ecs::Disabled));
        let events: Vec<Event> = (0..3)
            .map(|i| Event::with_message(format!("m{i}")))
            .collect();
        let refs: Vec<&Event> = events.iter().collect();
        let bytes = encode_window(&refs, codec.as_mut());
        let (frame, used) = protocol::parse(&bytes, 1 << 20).unwrap().unwrap();
        assert_eq!(used, bytes.len());
        let Frame::Compressed { data, .. } = frame else {
            panic!("{frame:?}")
        };
        let inner = protocol::inflate(data, 1 << 20).unwrap();
        let frames = protocol::parse_all(&inner, 1 << 20).unwrap();
        assert_eq!(frames.len(), 3);
        for (i, f) in frames.iter().enumerate() {
            let Frame::Data { seq, pairs, .. } = f else {
                panic!("{f:?}")
            };
            assert_eq!(*seq, i as u32 + 1);
            assert_eq!(pairs.len(), 1);
            assert_eq!(pairs[0].0, "line");
            assert!(pairs[0].1.ends_with(&format!("m{i}")), "{:?}", pairs[0].1);
        }
    }
}

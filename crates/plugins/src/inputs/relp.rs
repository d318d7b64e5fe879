//! `relp`: syslog messages over RELP (rsyslog's Reliable Event Logging Protocol), as Logstash's
//! relp input takes them, acknowledged only once queued.
//!
//! A RELP frame is `txnr SP command SP datalen [SP data] LF`. A client opens a session with
//! `open` (its offer must include `relp_version` and the `syslog` command; the answer is
//! `200 OK` with ours), sends `syslog` frames, and ends with `close` (answered, then
//! `serverclose`). What one read brings is parsed into frames; their messages go through the
//! codec (`plain`), become one batch with `host` set to the client's `ip:port` (as Logstash's
//! input sets it), and only once that batch is in the pipeline's queue is each frame answered
//! `rsp 200 OK`. A frame not answered (the pipeline stopped, the connection or the process
//! died) is sent again by the client: nothing acknowledged is lost with a persisted queue, and
//! nothing unacknowledged is lost at all. A malformed frame or an unexpected command ends the
//! session with `serverclose`.

use std::sync::Arc;

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::net::{self, Conn, Peer};

pub struct RelpInput {
    listen: net::Listen,
    shared: Arc<Shared>,
}

struct Shared {
    codec: std::sync::Mutex<Box<dyn Codec>>,
    host: FieldRef,
    counters: Arc<NamedCounters>,
}

/// The largest frame taken (librelp's own default is 128 KiB of data).
const MAX_FRAME: usize = 16 << 20;

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let host = opts.string_or("host", "0.0.0.0")?;
    let port = net::port(opts, "port", None)?;
    if opts.boolean_or("ssl_enable", false)? {
        return Err(opts.error(
            "ssl_enable",
            "TLS for RELP is not supported yet (put the connection behind stunnel, or use the beats or tcp input with TLS)",
        ));
    }
    for unused in [
        "ssl_verify",
        "ssl_cacert",
        "ssl_cert",
        "ssl_key",
        "ssl_key_passphrase",
    ] {
        if opts.has(unused) {
            opts.take(unused);
            tracing::warn!("relp input: {unused} has no effect without ssl_enable");
        }
    }
    let codec = opts.codec("plain")?;
    Ok(Box::new(RelpInput {
        listen: net::Listen {
            input: "relp",
            host,
            port,
            tls: None,
            keep_alive: true,
            threads: 1,
        },
        shared: Arc::new(Shared {
            codec: std::sync::Mutex::new(codec),
            host: FieldRef::top_level("host"),
            counters: Arc::new(NamedCounters::with_paths(&[
                "current_connections",
                "malformed_frames",
            ])),
        }),
    }))
}

impl Input for RelpInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let shared = Arc::clone(&self.shared);
        self.listen.run(ctx, move |conn, peer, ctx| {
            let shared = Arc::clone(&shared);
            async move {
                shared.counters.add("current_connections", 1);
                if let Err(e) = session(conn, &peer, &shared, &ctx).await {
                    tracing::warn!(client = %peer.addr, "relp input: session ended: {e}");
                }
                shared.counters.sub("current_connections", 1);
            }
        })
    }

    fn counters(&self) -> Option<Arc<NamedCounters>> {
        Some(Arc::clone(&self.shared.counters))
    }
}

/// One frame, borrowed from the read buffer.
#[derive(Debug, PartialEq, Eq)]
struct Frame<'a> {
    txnr: u64,
    command: &'a str,
    data: &'a [u8],
}

/// The frame at the start of `buf` and its length, `None` while incomplete.
fn parse(buf: &[u8]) -> Result<Option<(Frame<'_>, usize)>, String> {
    fn field(buf: &[u8], from: usize, what: &str) -> Result<Option<(usize, usize)>, String> {
        match buf[from..].iter().position(|b| *b == b' ' || *b == b'\n') {
            Some(0) => Err(format!("an empty {what}")),
            Some(n) => Ok(Some((from, from + n))),
            None if buf.len() - from > 32 => Err(format!("a {what} longer than 32 bytes")),
            None => Ok(None),
        }
    }
    let Some((a, b)) = field(buf, 0, "transaction number")? else {
        return Ok(None);
    };
    let txnr: u64 = std::str::from_utf8(&buf[a..b])
        .ok()
        .filter(|t| t.bytes().all(|c| c.is_ascii_digit()))
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| {
            format!(
                "{:?} is not a transaction number",
                String::from_utf8_lossy(&buf[a..b])
            )
        })?;
    if buf[b] != b' ' {
        return Err("a frame without a command".into());
    }
    let Some((c, d)) = field(buf, b + 1, "command")? else {
        return Ok(None);
    };
    let command = std::str::from_utf8(&buf[c..d])
        .ok()
        .filter(|t| t.bytes().all(|c| c.is_ascii_alphabetic()))
        .ok_or_else(|| "a command that is not a word".to_owned())?;
    if buf[d] != b' ' {
        return Err(format!("a {command} frame without its data length"));
    }
    let Some((e, f)) = field(buf, d + 1, "data length")? else {
        return Ok(None);
    };
    let len: usize = std::str::from_utf8(&buf[e..f])
        .ok()
        .filter(|t| t.bytes().all(|c| c.is_ascii_digit()))
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| "a data length that is not a number".to_owned())?;
    if len > MAX_FRAME {
        return Err(format!("a frame of {len} bytes (more than {MAX_FRAME})"));
    }
    let (data, end) = if len == 0 {
        // "0" then the trailer (some senders put a space before it).
        let at = if buf[f] == b' ' { f + 1 } else { f };
        if at >= buf.len() {
            return Ok(None);
        }
        (&buf[0..0], at)
    } else {
        if buf[f] != b' ' {
            return Err("no space between the data length and the data".into());
        }
        let start = f + 1;
        if buf.len() < start + len + 1 {
            return Ok(None);
        }
        (&buf[start..start + len], start + len)
    };
    if buf[end] != b'\n' {
        return Err("a frame that does not end with a line feed".into());
    }
    Ok(Some((
        Frame {
            txnr,
            command,
            data,
        },
        end + 1,
    )))
}

fn frame(txnr: u64, command: &str, data: &[u8]) -> Vec<u8> {
    let mut out = format!("{txnr} {command} {}", data.len()).into_bytes();
    if !data.is_empty() {
        out.push(b' ');
        out.extend_from_slice(data);
    }
    out.push(b'\n');
    out
}

async fn session(
    mut conn: Box<dyn Conn>,
    peer: &Peer,
    shared: &Shared,
    ctx: &InputContext,
) -> Result<(), String> {
    let mut codec = (shared.codec.lock())
        .unwrap_or_else(|e| e.into_inner())
        .clone_box();
    let client = Value::String(peer.addr.to_string().into());
    let mut stop = std::pin::pin!(ctx.stopped());
    let mut buf: Vec<u8> = Vec::new();
    let mut read = net::ReadBuffer::default();
    let mut opened = false;
    loop {
        let n = tokio::select! {
            r = conn.read(read.space()) => r.map_err(|e| format!("reading: {e}"))?,
            _ = &mut stop => return Ok(()),
        };
        if n == 0 {
            return Ok(());
        }
        read.filled(n);
        buf.extend_from_slice(read.get(n));
        let mut events: Vec<Event> = Vec::new();
        let mut acks: Vec<Ack> = Vec::new();
        let mut answers: Vec<u8> = Vec::new();
        let mut used = 0;
        let mut close = false;
        loop {
            let f = match parse(&buf[used..]) {
                Ok(Some((f, len))) => {
                    used += len;
                    f
                }
                Ok(None) => break,
                Err(why) => {
                    shared.counters.add("malformed_frames", 1);
                    // What came before is queued and answered; then the session ends.
                    flush(&mut conn, ctx, std::mem::take(&mut events), &acks, &answers).await?;
                    let _ = conn.write_all(&frame(0, "serverclose", b"")).await;
                    return Err(format!("malformed frame: {why}"));
                }
            };
            match (opened, f.command) {
                (false, "open") => {
                    let offer = String::from_utf8_lossy(f.data);
                    let mut version = false;
                    let mut syslog = false;
                    for line in offer.lines() {
                        if let Some((k, v)) = line.split_once('=') {
                            match k.trim() {
                                "relp_version" => version = true,
                                "commands" => syslog = v.split(',').any(|c| c.trim() == "syslog"),
                                _ => {}
                            }
                        }
                    }
                    if !version || !syslog {
                        let why = if version {
                            "500 Required command(s) syslog not offered"
                        } else {
                            "500 No relp_version specified"
                        };
                        answers.extend(frame(f.txnr, "rsp", why.as_bytes()));
                        answers.extend(frame(0, "serverclose", b""));
                        let _ = conn.write_all(&answers).await;
                        return Err(why[4..].to_owned());
                    }
                    opened = true;
                    answers.extend(frame(
                        f.txnr,
                        "rsp",
                        concat!(
                            "200 OK\nrelp_version=0\nrelp_software=sluice,",
                            env!("CARGO_PKG_VERSION"),
                            "\ncommands=syslog"
                        )
                        .as_bytes(),
                    ));
                }
                (true, "syslog") => {
                    let first = events.len();
                    codec.decode(f.data, &mut events);
                    codec.flush(&mut events);
                    for e in &mut events[first..] {
                        e.set(&shared.host, client.clone());
                    }
                    acks.push(Ack::Syslog(f.txnr));
                }
                (true, "close") => {
                    close = true;
                    // Answered after what came before it is queued and answered.
                    acks.push(Ack::Close(f.txnr));
                    break;
                }
                (_, other) => {
                    flush(&mut conn, ctx, std::mem::take(&mut events), &acks, &answers).await?;
                    let _ = conn.write_all(&frame(0, "serverclose", b"")).await;
                    return Err(format!(
                        "{other:?} {}",
                        if opened {
                            "where syslog or close was expected"
                        } else {
                            "before open"
                        }
                    ));
                }
            }
        }
        buf.drain(..used);
        if buf.len() > MAX_FRAME + 64 {
            return Err("a frame too long".into());
        }
        flush(&mut conn, ctx, events, &acks, &answers).await?;
        if close {
            let _ = conn.write_all(&frame(0, "serverclose", b"")).await;
            return Ok(());
        }
    }
}

/// A frame to answer once what came with it is queued.
enum Ack {
    /// `200 OK`.
    Syslog(u64),
    /// An empty `rsp`.
    Close(u64),
}

/// Queues `events`, then writes `answers` and the answer of each of `acks`. Not queued (the
/// pipeline stopping): nothing is answered, the client sends again.
async fn flush(
    conn: &mut Box<dyn Conn>,
    ctx: &InputContext,
    events: Vec<Event>,
    acks: &[Ack],
    answers: &[u8],
) -> Result<(), String> {
    let mut out = answers.to_vec();
    if !acks.is_empty() {
        if net::push(ctx, events).await.is_err() {
            return Err("the pipeline is stopping; the frames are not acknowledged".into());
        }
        for a in acks {
            match a {
                Ack::Syslog(txnr) => out.extend(frame(*txnr, "rsp", b"200 OK")),
                Ack::Close(txnr) => out.extend(frame(*txnr, "rsp", b"")),
            }
        }
    }
    if out.is_empty() {
        return Ok(());
    }
    conn.write_all(&out)
        .await
        .map_err(|e| format!("answering: {e}"))?;
    conn.flush().await.map_err(|e| format!("answering: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_as_librelp_writes_them() {
        let wire = b"1 open 86 relp_version=0\nrelp_software=librelp,1.11.0,http://librelp.adiscon.com\ncommands=syslog\n2 syslog 5 hello\n3 close 0\n";
        let (f, n) = parse(wire).unwrap().unwrap();
        assert_eq!((f.txnr, f.command), (1, "open"));
        assert!(f.data.ends_with(b"commands=syslog"));
        let (g, m) = parse(&wire[n..]).unwrap().unwrap();
        assert_eq!(
            g,
            Frame {
                txnr: 2,
                command: "syslog",
                data: b"hello"
            }
        );
        let (h, k) = parse(&wire[n + m..]).unwrap().unwrap();
        assert_eq!(
            h,
            Frame {
                txnr: 3,
                command: "close",
                data: b""
            }
        );
        assert_eq!(n + m + k, wire.len());
        // Cut anywhere: incomplete, never an error.
        for cut in 0..wire.len() {
            let mut at = 0;
            while let Some((_, len)) = parse(&wire[at..cut]).unwrap() {
                at += len;
            }
        }
        assert_eq!(frame(7, "rsp", b"200 OK"), b"7 rsp 6 200 OK\n");
        assert_eq!(frame(0, "serverclose", b""), b"0 serverclose 0\n");
    }

    #[test]
    fn malformed_frames_are_errors() {
        for bad in [
            &b"x open 0\n"[..],
            b"1 op3n 0\n",
            b"1 syslog five hello\n",
            b"1 syslog 2 hello\n",
            b"1 syslog 99999999999 x",
            b"12345678901234567890123456789012345 ",
        ] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}

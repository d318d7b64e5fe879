//! `udp`: events from datagrams, as Logstash's udp input. `workers` threads read the one
//! socket; each decodes every datagram on its own with its codec (`plain` by default: decode,
//! then flush) and gives events the sender's address (`host` without ECS, `[host][ip]` with
//! it, or `source_ip_fieldname`), unless they have it. What one wake-up finds waiting (up to
//! `queue_size` datagrams) becomes one batch.
//!
//! UDP cannot push back: while the pipeline's queue is full the socket is not read, the
//! kernel's buffer (`receive_buffer_bytes`) fills, and the kernel drops what does not fit. Those
//! drops are read from `/proc/net/udp` and shown as `kernel_drops` in `/_node/stats`.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::metrics::NamedCounters;
use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};

use crate::ecs::Ecs;

pub struct UdpInput {
    host: String,
    port: u16,
    buffer_size: usize,
    receive_buffer_bytes: Option<usize>,
    workers: usize,
    batch: usize,
    /// Each worker decodes with its own copy.
    codec: std::sync::Mutex<Box<dyn Codec>>,
    source: FieldRef,
    counters: Arc<NamedCounters>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let host = opts.string_or("host", "0.0.0.0")?;
    let port = crate::net::port(opts, "port", None)?;
    let buffer_size = opts.int("buffer_size")?.unwrap_or(65536);
    if buffer_size < 1 {
        return Err(opts.error("buffer_size", "must be at least 1"));
    }
    // As Logstash, any size is taken; a datagram is never larger than 65,535 bytes.
    let buffer_size = buffer_size.min(65536);
    let receive_buffer_bytes = match opts.int("receive_buffer_bytes")? {
        Some(n) if n < 1 => return Err(opts.error("receive_buffer_bytes", "must be at least 1")),
        n => n.map(|n| n as usize),
    };
    let workers = opts.int("workers")?.unwrap_or(2);
    if workers < 1 {
        return Err(opts.error("workers", "must be at least 1"));
    }
    let queue_size = opts.int("queue_size")?.unwrap_or(2000);
    if queue_size < 1 {
        return Err(opts.error("queue_size", "must be at least 1"));
    }
    let ecs = Ecs::from_options(opts)?;
    let source = match opts.string("source_ip_fieldname")? {
        Some(f) => {
            if ecs.enabled() {
                tracing::warn!("udp input: source_ip_fieldname is set while ECS compatibility is on; the address goes to {f}");
            }
            FieldRef::parse(&f).map_err(|e| opts.error("source_ip_fieldname", e.to_string()))?
        }
        None if ecs.enabled() => FieldRef::parse("[host][ip]").expect("a valid reference"),
        None => FieldRef::top_level("host"),
    };
    let codec = opts.codec("plain")?;
    // A codec's own counters (netflow's templates) show with the input's.
    let counters = codec
        .counters()
        .unwrap_or_else(|| Arc::new(NamedCounters::with_paths(&[])));
    counters.add("kernel_drops", 0);
    Ok(Box::new(UdpInput {
        host,
        port,
        buffer_size: buffer_size as usize,
        receive_buffer_bytes,
        workers: workers as usize,
        batch: queue_size as usize,
        codec: std::sync::Mutex::new(codec),
        source,
        counters,
    }))
}

impl Input for UdpInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let addr = crate::net::address(&self.host, self.port);
        let socket = listen("udp", &addr)?;
        if let Some(size) = self.receive_buffer_bytes {
            set_receive_buffer(&socket, size);
        }
        let inode = socket_inode(&socket);
        std::thread::scope(|scope| {
            for w in 0..self.workers {
                let socket = socket.try_clone().map_err(|e| format!("udp input: {e}"))?;
                let codec = (self.codec.lock())
                    .unwrap_or_else(|e| e.into_inner())
                    .clone_box();
                let this = &*self;
                std::thread::Builder::new()
                    .name(format!("udp-{w}"))
                    .spawn_scoped(scope, move || this.read(socket, codec, ctx, w == 0, inode))
                    .map_err(|e| format!("udp input: {e}"))?;
            }
            Ok::<(), String>(())
        })
    }

    fn counters(&self) -> Option<Arc<NamedCounters>> {
        Some(Arc::clone(&self.counters))
    }
}

impl UdpInput {
    /// One worker: waits for datagrams, takes what is there, queues it as one batch.
    fn read(
        &self,
        socket: UdpSocket,
        mut codec: Box<dyn Codec>,
        ctx: &InputContext,
        counts_drops: bool,
        inode: Option<u64>,
    ) {
        let mut buf = vec![0u8; self.buffer_size];
        let mut events: Vec<Event> = Vec::new();
        let mut last_drops_check = Instant::now();
        while !ctx.is_stopping() {
            if counts_drops && last_drops_check.elapsed() >= Duration::from_secs(1) {
                last_drops_check = Instant::now();
                if let Some(drops) = inode.and_then(kernel_drops) {
                    let now = self.counters.get("kernel_drops");
                    if drops > now {
                        self.counters.add("kernel_drops", drops - now);
                    }
                }
            }
            if !wait_readable(&socket, 200) {
                continue;
            }
            drain(&socket, &mut buf, self.batch, "udp", |data, from| {
                if data.is_empty() {
                    return;
                }
                let first = events.len();
                codec.decode(data, &mut events);
                codec.flush(&mut events);
                let ip = Value::String(from.ip().to_string().into());
                for e in &mut events[first..] {
                    if e.get(&self.source).is_none() {
                        e.set(&self.source, ip.clone());
                    }
                }
            });
            if !events.is_empty() && ctx.push(std::mem::take(&mut events)).is_err() {
                return;
            }
        }
    }
}

/// Waits up to `ms` for a datagram.
/// A non-blocking UDP socket bound to `addr` for `input` (its address logged), for a read
/// loop of [`wait_readable`] and [`drain`].
pub(crate) fn listen(input: &str, addr: &str) -> Result<UdpSocket, String> {
    let socket = UdpSocket::bind(addr)
        .map_err(|e| format!("{input} input: cannot listen on {addr} (udp): {e}"))?;
    socket
        .set_nonblocking(true)
        .map_err(|e| format!("{input} input: {e}"))?;
    tracing::info!(address = %addr, "{input} input listening (udp)");
    Ok(socket)
}

/// Reads the datagrams waiting on a non-blocking socket, at most `max`, handing each (its
/// bytes and sender) to `each`. A read error other than "nothing more" is logged for `input`
/// and ends the round.
pub(crate) fn drain(
    socket: &UdpSocket,
    buf: &mut [u8],
    max: usize,
    input: &str,
    mut each: impl FnMut(&[u8], std::net::SocketAddr),
) {
    let mut taken = 0;
    while taken < max {
        match socket.recv_from(buf) {
            Ok((n, from)) => {
                taken += 1;
                each(&buf[..n], from);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::warn!("{input} input: reading failed: {e}");
                return;
            }
        }
    }
}

pub(crate) fn wait_readable(socket: &UdpSocket, ms: i32) -> bool {
    let mut fd = libc::pollfd {
        fd: socket.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut fd, 1, ms) > 0 }
}

fn set_receive_buffer(socket: &UdpSocket, size: usize) {
    let v = size.min(i32::MAX as usize) as libc::c_int;
    // SAFETY: a valid socket and a c_int option of the size given.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            &v as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    let mut got: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: as above, reading the option back.
    unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            &mut got as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    // Linux reports double what was asked (bookkeeping included).
    if rc != 0 || (got as usize) < size {
        tracing::warn!(
            asked = size,
            got,
            "udp input: the kernel did not grant receive_buffer_bytes (see net.core.rmem_max)"
        );
    }
}

fn socket_inode(socket: &UdpSocket) -> Option<u64> {
    // SAFETY: fstat on a valid descriptor into a zeroed stat.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(socket.as_raw_fd(), &mut st) == 0).then_some(st.st_ino)
    }
}

/// The kernel's drop count for the socket of this inode, from `/proc/net/udp` and `udp6`.
fn kernel_drops(inode: u64) -> Option<u64> {
    for table in ["/proc/net/udp", "/proc/net/udp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() >= 13 && cols[9].parse::<u64>().ok() == Some(inode) {
                return cols[12].parse().ok();
            }
        }
    }
    None
}

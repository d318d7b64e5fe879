//! What the network inputs (`beats`, `tcp`, `http`...) share: a tokio runtime of their own, an
//! accept loop that ends when the pipeline stops its inputs, TLS on accepted connections, and
//! a way for a connection to queue a batch without holding up the runtime.
//!
//! Back-pressure: a connection queues a batch with [`push`], which waits (on tokio's blocking
//! pool) while the pipeline's queue is full. Meanwhile that connection reads nothing more, so
//! its client's sends stall in the kernel's buffers and then in the client: nothing is dropped,
//! and the other connections go on.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use sluice_event::Event;
use sluice_pipeline::{ConfigError, InputContext, Options, Stopped};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};

/// A connection, plain or TLS.
pub trait Conn: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Conn for T {}

/// What is known of an accepted connection.
#[derive(Debug, Clone)]
pub struct Peer {
    pub addr: SocketAddr,
    /// The client certificate (DER), when TLS asked for one and got it.
    pub certificate: Option<Vec<u8>>,
    /// The TLS version and cipher suite, as Java names them (`TLSv1.3`,
    /// `TLS_AES_256_GCM_SHA384`), for a TLS connection.
    pub tls: Option<(String, String)>,
}

/// A port option (1-65535): `default` when absent, or an error when there is none.
pub fn port(opts: &mut Options, name: &str, default: Option<u16>) -> Result<u16, ConfigError> {
    let Some(p) = opts.int(name)? else {
        return default.ok_or_else(|| {
            opts.plugin_error(format!(
                "missing required setting {name:?} for {} plugin {:?}",
                opts.kind().as_str(),
                opts.plugin_name()
            ))
        });
    };
    u16::try_from(p)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| opts.error(name, format!("{p} is not a port (1-65535)")))
}

/// Where and how a network input listens; [`Listen::run`] serves it until the pipeline stops.
pub struct Listen {
    pub input: &'static str,
    pub host: String,
    pub port: u16,
    pub tls: Option<crate::tls::ServerTls>,
    pub keep_alive: bool,
    /// The runtime's worker threads.
    pub threads: usize,
}

impl Listen {
    /// Starts the input's runtime, listens, and runs `handle` for each connection (see
    /// [`serve`]) until the pipeline stops its inputs.
    pub fn run<F, Fut>(&self, ctx: &InputContext, handle: F) -> Result<(), String>
    where
        F: Fn(Box<dyn Conn>, Peer, InputContext) -> Fut + Clone + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let rt = runtime(self.input, self.threads)?;
        let result = rt.block_on(async {
            let listener = bind(self.input, &self.host, self.port).await?;
            tracing::info!(address = %format!("{}:{}", self.host, self.port), tls = self.tls.is_some(), "{} input listening", self.input);
            serve(
                self.input,
                listener,
                self.tls.clone(),
                self.keep_alive,
                ctx,
                handle,
            )
            .await;
            Ok(())
        });
        rt.shutdown_timeout(Duration::from_secs(1));
        result
    }

    /// As [`Listen::run`], for an input with a second listener (`other`, another port and
    /// protocol) on the same runtime: both are bound before either serves, so that a port in
    /// use fails the input at once; each connection of `other` runs `other_handle`.
    pub fn run_with<F, Fut, G, Gut>(
        &self,
        other: &Listen,
        ctx: &InputContext,
        handle: F,
        other_handle: G,
    ) -> Result<(), String>
    where
        F: Fn(Box<dyn Conn>, Peer, InputContext) -> Fut + Clone + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
        G: Fn(Box<dyn Conn>, Peer, InputContext) -> Gut + Clone + Send + 'static,
        Gut: Future<Output = ()> + Send + 'static,
    {
        let rt = runtime(self.input, self.threads)?;
        let result = rt.block_on(async {
            let first = bind(self.input, &self.host, self.port).await?;
            let second = bind(other.input, &other.host, other.port).await?;
            for l in [self, other] {
                tracing::info!(address = %format!("{}:{}", l.host, l.port), tls = l.tls.is_some(), "{} input listening", l.input);
            }
            tokio::join!(
                serve(self.input, first, self.tls.clone(), self.keep_alive, ctx, handle),
                serve(
                    other.input,
                    second,
                    other.tls.clone(),
                    other.keep_alive,
                    ctx,
                    other_handle
                ),
            );
            Ok(())
        });
        rt.shutdown_timeout(Duration::from_secs(1));
        result
    }
}

/// A multi-threaded runtime for one input's connections (`threads` workers).
pub fn runtime(input: &str, threads: usize) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .thread_name(format!("{input}-io"))
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the {input} input's threads: {e}"))
}

/// Queues a batch from a connection task; waits while the queue is full (see the module docs).
pub async fn push(ctx: &InputContext, batch: Vec<Event>) -> Result<(), Stopped> {
    if batch.is_empty() {
        return Ok(());
    }
    // Events go back to the thread that made them (this one) to be freed: an allocator
    // frees another thread's memory through a slow path. This thread frees its finished
    // ones now, before it makes more.
    ctx.free_spent();
    let origin = sluice_pipeline::queue::thread_origin();
    let ctx = ctx.clone();
    tokio::task::spawn_blocking(move || ctx.push_for(origin, batch))
        .await
        .unwrap_or(Err(Stopped))
}

/// `host:port`, with an IPv6 host in brackets.
pub fn address(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Listens on `host:port`.
pub async fn bind(input: &str, host: &str, port: u16) -> Result<TcpListener, String> {
    let addr = address(host, port);
    TcpListener::bind(&addr)
        .await
        .map_err(|e| format!("{input} input: cannot listen on {addr}: {e}"))
}

/// Accepts connections until the pipeline stops its inputs; each one (after the TLS handshake,
/// when `tls` is set, bounded by its `ssl_handshake_timeout`) runs `handle`, with its own
/// handle on the pipeline, in a task of its own. A failed handshake is logged and closes only
/// that connection. At the stop it waits (at most 10 s) for the connections to end: `handle`
/// must return once the pipeline is stopping and what it holds is queued or refused.
pub async fn serve<F, Fut>(
    input: &'static str,
    listener: TcpListener,
    tls: Option<crate::tls::ServerTls>,
    keep_alive: bool,
    ctx: &InputContext,
    handle: F,
) where
    F: Fn(Box<dyn Conn>, Peer, InputContext) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let acceptor = tls.map(|t| {
        (
            tokio_rustls::TlsAcceptor::from(t.config),
            t.handshake_timeout,
        )
    });
    let mut stop = std::pin::pin!(ctx.stopped());
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (stream, addr) = tokio::select! {
            // Finished connections are reaped as they end.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little, go on.
                    tracing::warn!("{input} input: accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut stop => break,
        };
        let _ = stream.set_nodelay(true);
        if keep_alive {
            set_keep_alive(&stream);
        }
        let handle = handle.clone();
        let acceptor = acceptor.clone();
        let ctx = ctx.clone();
        connections.spawn(async move {
            match acceptor {
                None => {
                    let peer = Peer {
                        addr,
                        certificate: None,
                        tls: None,
                    };
                    handle(Box::new(stream), peer, ctx).await
                }
                Some((acceptor, handshake_timeout)) => {
                    match tokio::time::timeout(handshake_timeout, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let session = tls.get_ref().1;
                            let certificate = (session.peer_certificates())
                                .and_then(|c| c.first())
                                .map(|c| c.as_ref().to_vec());
                            let version = match session.protocol_version() {
                                Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3",
                                Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2",
                                _ => "",
                            };
                            let cipher = (session.negotiated_cipher_suite())
                                .map(|c| format!("{:?}", c.suite()).replacen("TLS13_", "TLS_", 1))
                                .unwrap_or_default();
                            let peer = Peer {
                                addr,
                                certificate,
                                tls: Some((version.to_owned(), cipher)),
                            };
                            handle(Box::new(tls), peer, ctx).await
                        }
                        Ok(Err(e)) => {
                            tracing::warn!("{input} input: TLS handshake with {addr} failed: {e}")
                        }
                        Err(_) => tracing::warn!(
                            "{input} input: TLS handshake with {addr} timed out after {handshake_timeout:?}"
                        ),
                    }
                }
            }
        });
    }
    // Each connection sees the stop and finishes what it holds: a batch being queued is
    // acknowledged (or refused, when the queue closes) before the connection closes, so that
    // a client does not send again what was queued. Bounded, for a client that stops reading.
    let drained = tokio::time::timeout(DRAIN, async {
        while connections.join_next().await.is_some() {}
    });
    if drained.await.is_err() {
        tracing::warn!(
            "{input} input: {} connection(s) still busy {} s after the stop; closing them",
            connections.len(),
            DRAIN.as_secs()
        );
    }
}

/// How long [`serve`] waits at the stop for its connections to finish.
const DRAIN: Duration = Duration::from_secs(10);

/// SO_KEEPALIVE with the system's timings (`tcp_keep_alive`).
pub fn set_keep_alive(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor and a c_int option of the size given.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_KEEPALIVE,
            &on as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        tracing::warn!(
            "cannot set SO_KEEPALIVE: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// A connection's read buffer: small while the connection is idle or slow (thousands of idle
/// connections cost little), doubled up to 64 KiB while reads fill it.
pub struct ReadBuffer {
    buf: Vec<u8>,
}

impl Default for ReadBuffer {
    fn default() -> Self {
        ReadBuffer { buf: vec![0; 4096] }
    }
}

impl ReadBuffer {
    /// Where to read into.
    pub fn space(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// `n` bytes were read: grows the buffer when they filled it.
    pub fn filled(&mut self, n: usize) {
        if n == self.buf.len() && self.buf.len() < 64 * 1024 {
            self.buf.resize(self.buf.len() * 2, 0);
        }
    }

    pub fn get(&self, n: usize) -> &[u8] {
        &self.buf[..n]
    }
}

/// Connects to `host:port` (the tcp input's client mode).
pub async fn connect(host: &str, port: u16) -> std::io::Result<TcpStream> {
    let s = TcpStream::connect((host, port)).await?;
    let _ = s.set_nodelay(true);
    Ok(s)
}

//! `unix`: events from a UNIX stream socket, as Logstash's unix input. In `server` mode (the
//! default) it listens on `path` (taking over a stale socket file with `force_unlink`) and
//! reads each connection; in `client` mode it connects to `path`, and again when the
//! connection ends, waiting `socket_not_present_retry_interval_seconds` while there is no
//! socket there.
//!
//! What each read brings goes through the codec (`line` by default) and is queued at once; the
//! connection reads nothing more while the queue is full. Events get the host's name
//! (`[host][name]`, `host` without ECS) and the socket's path (`[file][path]`, `path`)
//! unless they have them. `data_timeout` (seconds, -1 for none) closes a connection idle that
//! long. At a stop the server's socket file is removed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sluice_event::{FieldRef, Value};
use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};
use tokio::io::AsyncReadExt;
use tokio::net::{UnixListener, UnixStream};

use crate::net;

pub struct UnixInput {
    path: PathBuf,
    server: bool,
    force_unlink: bool,
    retry: Duration,
    shared: Arc<Shared>,
}

struct Shared {
    codec: std::sync::Mutex<Box<dyn Codec>>,
    timeout: Option<Duration>,
    host_field: FieldRef,
    path_field: FieldRef,
    host: Value,
    path: Value,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let path = opts.required_string("path")?;
    let server = opts.choice("mode", &["server", "client"], "server")? == "server";
    let force_unlink = opts.boolean_or("force_unlink", false)?;
    let timeout = match opts.float("data_timeout")?.unwrap_or(-1.0) {
        -1.0 => None,
        t if t > 0.0 && t.is_finite() => Some(Duration::from_secs_f64(t)),
        _ => {
            return Err(opts.error(
                "data_timeout",
                "must be a positive number of seconds, or -1",
            ))
        }
    };
    let retry = match opts.float("socket_not_present_retry_interval_seconds")? {
        None => 5.0,
        Some(r) if r >= 0.0 && r.is_finite() => r,
        Some(r) => {
            tracing::warn!("unix input: socket_not_present_retry_interval_seconds {r} is not valid, using 5 instead");
            5.0
        }
    };
    let ecs = crate::ecs::Ecs::from_options(opts)?;
    let (host_field, path_field) = if ecs.enabled() {
        ("[host][name]", "[file][path]")
    } else {
        ("host", "path")
    };
    let codec = opts.codec("line")?;
    let host = sluice_pipeline::hostname();
    Ok(Box::new(UnixInput {
        path: PathBuf::from(&path),
        server,
        force_unlink,
        retry: Duration::from_secs_f64(retry),
        shared: Arc::new(Shared {
            codec: std::sync::Mutex::new(codec),
            timeout,
            host_field: FieldRef::parse(host_field).expect("a valid reference"),
            path_field: FieldRef::parse(path_field).expect("a valid reference"),
            host: Value::String(host.into()),
            path: Value::String(path.into()),
        }),
    }))
}

impl Input for UnixInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let rt = net::runtime("unix", 1)?;
        let result = rt.block_on(async {
            if self.server {
                self.serve(ctx).await
            } else {
                self.connect(ctx).await;
                Ok(())
            }
        });
        rt.shutdown_timeout(Duration::from_secs(1));
        result
    }
}

impl UnixInput {
    fn bind(&self) -> Result<UnixListener, String> {
        match UnixListener::bind(&self.path) {
            Ok(l) => Ok(l),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && self.force_unlink => {
                let _ = std::fs::remove_file(&self.path);
                UnixListener::bind(&self.path).map_err(|e| {
                    format!("unix input: cannot listen on {}: {e}", self.path.display())
                })
            }
            Err(e) => Err(format!(
                "unix input: cannot listen on {}: {e}{}",
                self.path.display(),
                if e.kind() == std::io::ErrorKind::AddrInUse {
                    " (force_unlink => true takes over a stale socket file)"
                } else {
                    ""
                }
            )),
        }
    }

    async fn serve(&self, ctx: &InputContext) -> Result<(), String> {
        let listener = self.bind()?;
        tracing::info!(path = %self.path.display(), "unix input listening");
        let mut stop = std::pin::pin!(ctx.stopped());
        let mut connections = tokio::task::JoinSet::new();
        loop {
            let stream = tokio::select! {
                Some(_) = connections.join_next(), if !connections.is_empty() => continue,
                r = listener.accept() => match r {
                    Ok((s, _)) => s,
                    Err(e) => {
                        tracing::warn!("unix input: accepting a connection failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                _ = &mut stop => break,
            };
            let shared = Arc::clone(&self.shared);
            let ctx = ctx.clone();
            connections.spawn(async move { read(stream, &shared, &ctx).await });
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        let _ = std::fs::remove_file(&self.path);
        Ok(())
    }

    async fn connect(&self, ctx: &InputContext) {
        use std::os::unix::fs::FileTypeExt;
        while !ctx.is_stopping() {
            let is_socket = std::fs::metadata(&self.path).is_ok_and(|m| m.file_type().is_socket());
            if is_socket {
                match UnixStream::connect(&self.path).await {
                    Ok(s) => {
                        tracing::debug!(path = %self.path.display(), "unix input: connected");
                        read(s, &self.shared, ctx).await;
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(path = %self.path.display(), "unix input: cannot connect: {e}")
                    }
                }
            } else {
                tracing::warn!(
                    path = %self.path.display(),
                    "unix input: no socket there; trying again in {:?}",
                    self.retry
                );
            }
            tokio::select! {
                _ = tokio::time::sleep(self.retry) => {}
                _ = ctx.stopped() => return,
            }
        }
    }
}

/// Reads one connection until it ends, idles past `data_timeout`, or the pipeline stops.
async fn read(mut stream: UnixStream, shared: &Shared, ctx: &InputContext) {
    let mut codec = (shared.codec.lock())
        .unwrap_or_else(|e| e.into_inner())
        .clone_box();
    let mut buf = net::ReadBuffer::default();
    let mut stop = std::pin::pin!(ctx.stopped());
    loop {
        let read = async {
            match shared.timeout {
                None => stream.read(buf.space()).await,
                Some(t) => match tokio::time::timeout(t, stream.read(buf.space())).await {
                    Ok(r) => r,
                    Err(_) => Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "idle past data_timeout",
                    )),
                },
            }
        };
        let n = tokio::select! {
            r = read => match r {
                Ok(n) => n,
                Err(e) => {
                    tracing::debug!("unix input: closing a connection: {e}");
                    0
                }
            },
            _ = &mut stop => 0,
        };
        buf.filled(n);
        let mut events = Vec::new();
        if n == 0 {
            codec.flush(&mut events);
        } else {
            codec.decode(buf.get(n), &mut events);
        }
        for e in &mut events {
            if e.get(&shared.host_field).is_none() {
                e.set(&shared.host_field, shared.host.clone());
            }
            if e.get(&shared.path_field).is_none() {
                e.set(&shared.path_field, shared.path.clone());
            }
        }
        if net::push(ctx, events).await.is_err() || n == 0 {
            return;
        }
    }
}

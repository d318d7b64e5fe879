//! The pipeline runtime: turns a parsed config into running inputs, a queue, workers,
//! filters and outputs, and shuts it all down without losing what was queued.
//!
//! Data flow: [`registry::Registry`] builds each plugin from its typed [`options::Options`];
//! [`graph::compile`] arranges filters and outputs into trees with compiled
//! [`condition::Condition`]s; [`runtime::start`] spawns one thread per input (pushing batches
//! into an [`queue::EventQueue`]) and `pipeline.workers` threads that read batches, run them
//! through a [`graph::FilterChain`], route them to outputs and ack them. Knows no particular
//! plugin: those live in `sluice-plugins`.

pub mod batch_metrics;
pub mod bus;
pub mod condition;
pub mod dead_letter;
pub mod graph;
pub mod lane;
pub mod lineage;
pub mod lir;
pub mod metrics;
pub mod options;
pub mod plugin;
pub mod queue;
pub mod registry;
pub mod runtime;
pub mod tap;

pub use dead_letter::DeadLetterQueue;
pub use options::{ConfigError, Options, PluginKind};
pub use plugin::{
    Codec, Failure, Filter, Input, InputContext, Output, OutputError, Stopped, WriteContext,
};
pub use registry::Registry;
pub use runtime::{PipelineSettings, Recoverable, RunningPipeline};

/// This machine's host name: for inputs that record where an event was read, and for the
/// monitoring API's node info.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// Fills `buf` with random bytes from `/dev/urandom`; without it, from the time, the process id
/// and the standard library's randomly seeded hasher, mixed.
pub fn random_bytes(buf: &mut [u8]) {
    use std::io::Read;
    let ok = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .is_ok();
    if !ok {
        use std::hash::{BuildHasher, Hasher};
        for (i, chunk) in buf.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            h.write_u32(std::process::id());
            h.write_usize(i);
            let bytes = h.finish().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// 64 random bits (see [`random_bytes`]).
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    random_bytes(&mut b);
    u64::from_le_bytes(b)
}

/// Replaces the file at `path` with `bytes` so that a crash or power loss leaves the old
/// content or the new, never a torn or empty file: written to `<path>.tmp`, synced, renamed
/// over `path`, and the directory synced. Creates the directory when missing.
pub fn replace_file(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let mut f = std::fs::File::create(&tmp)?;
    std::io::Write::write_all(&mut f, bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

//! The node (this process): its identity, and what the OS tells about it (`/proc`, `statvfs`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

/// Who this node is, fixed at start.
#[derive(Debug, Clone)]
pub struct NodeIdentity {
    pub host: String,
    pub name: String,
    /// Kept in `<path.data>/uuid` when that directory exists (as Logstash does), so it stays
    /// the same across restarts; otherwise new for each process.
    pub id: String,
    pub ephemeral_id: String,
    pub version: String,
    pub started: Instant,
    pub started_at: SystemTime,
}

impl NodeIdentity {
    pub fn new(name: Option<String>, path_data: Option<&Path>) -> NodeIdentity {
        let host = sluice_pipeline::hostname();
        NodeIdentity {
            name: name.unwrap_or_else(|| host.clone()),
            host,
            id: path_data.map_or_else(random_uuid, persistent_id),
            ephemeral_id: random_uuid(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            started: Instant::now(),
            started_at: SystemTime::now(),
        }
    }
}

/// A random (version 4) UUID.
pub fn random_uuid() -> String {
    let mut b = [0u8; 16];
    sluice_pipeline::random_bytes(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The node id kept in `<dir>/uuid`, created when missing; a fresh one when the directory
/// does not exist or cannot be written.
fn persistent_id(dir: &Path) -> String {
    let file = dir.join("uuid");
    if let Ok(s) = std::fs::read_to_string(&file) {
        let s = s.trim();
        if !s.is_empty() {
            return s.to_owned();
        }
    }
    let id = random_uuid();
    if dir.is_dir() {
        let _ = std::fs::write(&file, &id);
    }
    id
}

/// Process figures from `/proc/self`.
#[derive(Debug, Clone, Default)]
pub struct ProcessFigures {
    pub open_file_descriptors: u64,
    pub max_file_descriptors: u64,
    pub total_virtual_in_bytes: u64,
    pub resident_in_bytes: u64,
    pub cpu_total_millis: u64,
    pub load_average: [f64; 3],
}

pub fn process_figures() -> ProcessFigures {
    let mut p = ProcessFigures {
        open_file_descriptors: std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64),
        ..ProcessFigures::default()
    };
    // SAFETY: getrlimit writes into the struct we pass.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 {
            p.max_file_descriptors = r.rlim_cur;
        }
    }
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        for line in status.lines() {
            let kb = |l: &str| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
                    * 1024
            };
            if line.starts_with("VmSize:") {
                p.total_virtual_in_bytes = kb(line);
            } else if line.starts_with("VmRSS:") {
                p.resident_in_bytes = kb(line);
            }
        }
    }
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        // Fields after the command (which may contain spaces) start after the last ')'.
        if let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) {
            let f: Vec<&str> = rest.split_whitespace().collect();
            // utime and stime are fields 14 and 15 of the whole line: 12 and 13 here.
            let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            // SAFETY: sysconf has no preconditions.
            let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
            p.cpu_total_millis = (ticks(11) + ticks(12)) * 1000 / hz;
        }
    }
    if let Ok(l) = std::fs::read_to_string("/proc/loadavg") {
        for (i, v) in l.split_whitespace().take(3).enumerate() {
            p.load_average[i] = v.parse().unwrap_or(0.0);
        }
    }
    p
}

pub fn available_processors() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Tracks what `/_node/stats/process` reports over time: the peak of open descriptors and
/// the CPU percentage between two samples (taken by the sampler once a second).
#[derive(Default)]
pub struct ProcessTracker {
    state: Mutex<TrackerState>,
}

#[derive(Default)]
struct TrackerState {
    peak_fds: u64,
    last: Option<(Instant, u64)>,
    percent: u64,
}

impl ProcessTracker {
    pub fn sample(&self) {
        let p = process_figures();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.peak_fds = s.peak_fds.max(p.open_file_descriptors);
        let now = Instant::now();
        if let Some((at, cpu)) = s.last {
            let wall = now.duration_since(at).as_millis() as f64;
            if wall > 0.0 {
                let share = p.cpu_total_millis.saturating_sub(cpu) as f64
                    / (wall * available_processors() as f64);
                s.percent = (share * 100.0).round() as u64;
            }
        }
        s.last = Some((now, p.cpu_total_millis));
    }

    /// (peak open descriptors, CPU percent of all cores), folding in `now`.
    pub fn read(&self, now: &ProcessFigures) -> (u64, u64) {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (s.peak_fds.max(now.open_file_descriptors), s.percent)
    }
}

/// The filesystem holding a path: (free bytes available to us, filesystem type).
pub fn filesystem(path: &Path) -> (u64, String) {
    let free = free_space(path).unwrap_or(0);
    let kind = fs_type(path).unwrap_or_else(|| "unknown".to_owned());
    (free, kind)
}

fn free_space(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path and `st` is written by statvfs.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return None;
        }
        #[allow(clippy::unnecessary_cast)]
        Some(st.f_bavail as u64 * st.f_frsize as u64)
    }
}

/// The type of the filesystem mounted at the longest mount point containing `path`.
fn fs_type(path: &Path) -> Option<String> {
    let path: PathBuf = std::fs::canonicalize(path).ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let mut best: Option<(usize, String)> = None;
    for line in mounts.lines() {
        let mut f = line.split(' ');
        let (_dev, Some(point), Some(kind)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let point = unescape_mount(point);
        if path.starts_with(&point) && best.as_ref().is_none_or(|(len, _)| point.len() >= *len) {
            best = Some((point.len(), kind.to_owned()));
        }
    }
    best.map(|(_, k)| k)
}

/// `/proc/mounts` writes space, tab, newline and backslash as `\ooo` octal escapes.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let digits = &b[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let v = digits.iter().fold(0u32, |a, d| a * 8 + u32::from(d - b'0'));
                out.push(v as u8);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_shape() {
        let u = random_uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_ne!(u, random_uuid());
    }

    #[test]
    fn mount_escapes() {
        assert_eq!(unescape_mount("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape_mount("/plain"), "/plain");
    }

    #[test]
    fn process_and_fs() {
        let p = process_figures();
        assert!(p.open_file_descriptors > 0);
        assert!(p.max_file_descriptors > 0);
        assert!(p.total_virtual_in_bytes > 0);
        let (free, kind) = filesystem(Path::new("/"));
        assert!(free > 0);
        assert_ne!(kind, "unknown");
    }

    #[test]
    fn persistent_node_id() {
        let dir = std::env::temp_dir().join(format!("sluice-api-node-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let a = persistent_id(&dir);
        assert_eq!(a, persistent_id(&dir));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

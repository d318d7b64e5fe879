//! What wakes the file input between its stat passes: inotify on the directories that hold
//! the watched files (and the fixed part of each glob), so that a written line is read at
//! once and a new or renamed file is found at once. One inotify descriptor and one watch per
//! directory, however many files (10,000 files in a few directories: a few watches). Where
//! inotify is not available (or a directory cannot be watched) the input polls, as
//! Logstash's does, every `stat_interval`.

use std::collections::HashSet;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use inotify::{EventMask, Inotify, WatchMask};

/// Why a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The time was up (or the input is stopping).
    Timeout,
    /// A watched file was written to.
    Data,
    /// Names changed in a watched directory (created, renamed, deleted).
    Names,
}

pub struct Wakeups {
    inotify: Option<Inotify>,
    dirs: HashSet<PathBuf>,
    /// Watch descriptor → directory.
    by_wd: std::collections::HashMap<i32, PathBuf>,
    buf: Vec<u8>,
    /// Files written to, from the last wait (deduplicated).
    pub written: Vec<PathBuf>,
}

/// The directory part of a glob before its first wildcard (`/var/log/**/*.log` → `/var/log`).
pub fn fixed_dir(pattern: &str) -> PathBuf {
    let mut dir = PathBuf::from("/");
    let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
    for (i, part) in parts.iter().enumerate() {
        if part.contains(['*', '?', '[', '{']) || i + 1 == parts.len() {
            break;
        }
        dir.push(part);
    }
    dir
}

impl Wakeups {
    pub fn new() -> Wakeups {
        let inotify = match Inotify::init() {
            Ok(i) => Some(i),
            Err(e) => {
                tracing::info!(error = %e, "file input: no inotify; polling every stat_interval");
                None
            }
        };
        Wakeups {
            inotify,
            dirs: HashSet::new(),
            by_wd: std::collections::HashMap::new(),
            buf: vec![0; 64 * 1024],
            written: Vec::new(),
        }
    }

    /// Whether changes wake the input (else it polls).
    pub fn active(&self) -> bool {
        self.inotify.is_some()
    }

    /// Watches `dir` (once).
    pub fn watch(&mut self, dir: &Path) {
        let Some(inotify) = &mut self.inotify else {
            return;
        };
        if self.dirs.contains(dir) || !dir.is_dir() {
            return;
        }
        let mask = WatchMask::MODIFY
            | WatchMask::CREATE
            | WatchMask::MOVED_TO
            | WatchMask::MOVED_FROM
            | WatchMask::DELETE;
        match inotify.watches().add(dir, mask) {
            Ok(wd) => {
                self.dirs.insert(dir.to_owned());
                self.by_wd
                    .insert(wd.get_watch_descriptor_id(), dir.to_owned());
            }
            Err(e) => {
                tracing::debug!(dir = %dir.display(), error = %e, "file input: cannot watch directory; it is polled");
            }
        }
    }

    /// Waits at most `timeout` for a change, returning early when `stop()` says so.
    pub fn wait(&mut self, timeout: Duration, stop: impl Fn() -> bool) -> Wake {
        let Some(inotify) = &mut self.inotify else {
            sluice_pipeline::plugin::sleep_unless(timeout, stop);
            return Wake::Timeout;
        };
        self.written.clear();
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || stop() {
                return Wake::Timeout;
            }
            let mut fd = libc::pollfd {
                fd: inotify.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // Slices of at most 100 ms, so that a stop is seen.
            let ms = left.min(Duration::from_millis(100)).as_millis().max(1) as i32;
            // SAFETY: one valid pollfd for the duration of the call.
            if unsafe { libc::poll(&mut fd, 1, ms) } <= 0 {
                continue;
            }
            let mut wake = None;
            while let Ok(events) = inotify.read_events(&mut self.buf) {
                let mut any = false;
                for e in events {
                    any = true;
                    let names = EventMask::CREATE
                        | EventMask::MOVED_TO
                        | EventMask::MOVED_FROM
                        | EventMask::DELETE
                        | EventMask::Q_OVERFLOW;
                    if e.mask.intersects(names) {
                        wake = Some(Wake::Names);
                    } else {
                        if let (Some(dir), Some(name)) =
                            (self.by_wd.get(&e.wd.get_watch_descriptor_id()), e.name)
                        {
                            let path = dir.join(name);
                            if !self.written.contains(&path) {
                                self.written.push(path);
                            }
                        }
                        wake.get_or_insert(Wake::Data);
                    }
                }
                if !any {
                    break;
                }
            }
            if let Some(w) = wake {
                return w;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_part_of_globs() {
        assert_eq!(fixed_dir("/var/log/*.log"), PathBuf::from("/var/log"));
        assert_eq!(fixed_dir("/var/log/**/x.log"), PathBuf::from("/var/log"));
        assert_eq!(fixed_dir("/var/log/app.log"), PathBuf::from("/var/log"));
        assert_eq!(fixed_dir("/srv/{a,b}/x.log"), PathBuf::from("/srv"));
    }

    #[test]
    fn a_write_and_a_new_name_wake_the_wait() {
        let dir = std::env::temp_dir().join(format!("sluice-wakeups-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.log"), "x\n").unwrap();
        let mut w = Wakeups::new();
        if !w.active() {
            return;
        }
        w.watch(&dir);
        assert_eq!(w.wait(Duration::from_millis(50), || false), Wake::Timeout);
        std::fs::write(dir.join("a.log"), "y\n").unwrap();
        let wake = w.wait(Duration::from_secs(5), || false);
        assert!(matches!(wake, Wake::Data | Wake::Names), "{wake:?}");
        std::fs::write(dir.join("b.log"), "z\n").unwrap();
        assert_eq!(w.wait(Duration::from_secs(5), || false), Wake::Names);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

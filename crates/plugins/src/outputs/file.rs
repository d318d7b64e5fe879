//! `file`: appends encoded events (`json_lines` by default) to a file whose `path` may hold
//! sprintf references (`/var/log/%{type}-%{+yyyy.MM.dd}.log`).
//!
//! A batch is grouped by rendered path and each group is written with one `write` call, so a
//! batch is in the operating system's hands before it is acked. A batch is written whole or
//! not at all: when a write fails part-way (a full disk), every file the batch went to is cut
//! back to where it stood before, so the retried batch is written once and no line is left
//! torn. Open files are kept in a map; every `stale_cleanup_interval` (10 s) the files no
//! batch wrote to since the last cleanup are closed, so a dated path does not keep one handle
//! per day open. A file deleted from under us is recreated (`create_if_deleted`). There is no
//! write buffer: each batch is handed to the operating system before it is acked, which meets
//! any `flush_interval` (Logstash's bound on how long written events may wait in its buffer). Events whose path renders
//! with unresolved references or `..` go to `filename_failure` in the same directory as
//! Logstash does.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sluice_event::{Event, Template};
use sluice_pipeline::{Codec, ConfigError, Options, Output, OutputError, WriteContext};

pub struct FileOutput {
    path: Template,
    /// The part of `path` before its first reference: rendered paths must stay below it.
    static_dir: PathBuf,
    filename_failure: String,
    overwrite: bool,
    create_if_deleted: bool,
    stale_cleanup: Duration,
    state: Mutex<State>,
}

struct State {
    codec: Box<dyn Codec>,
    files: HashMap<PathBuf, File>,
    /// Files written since the last stale cleanup.
    active: HashSet<PathBuf>,
    last_cleanup: Instant,
}

impl State {
    /// Closes the files that no batch wrote to since the previous cleanup, once every
    /// `interval`.
    fn close_stale(&mut self, interval: Duration) {
        if self.last_cleanup.elapsed() < interval {
            return;
        }
        let active = std::mem::take(&mut self.active);
        self.files.retain(|path, _| {
            let keep = active.contains(path);
            if !keep {
                tracing::info!(path = %path.display(), "closing file: no events written for {interval:?}");
            }
            keep
        });
        self.last_cleanup = Instant::now();
    }
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let codec = opts.codec("json_lines")?;
    build_with(opts, codec)
}

/// The file output's options read from `opts`, each event written with `codec` (the csv
/// output is this output with its own encoder).
pub fn build_with(
    opts: &mut Options,
    codec: Box<dyn Codec>,
) -> Result<Box<dyn Output>, ConfigError> {
    let path = opts.required_string("path")?;
    if opts.boolean_or("gzip", false)? {
        return Err(opts.error("gzip", "gzip output is not supported yet"));
    }
    let write_behavior = opts.choice("write_behavior", &["append", "overwrite"], "append")?;
    if opts.int("flush_interval")?.is_some_and(|i| i < 0) {
        return Err(opts.error("flush_interval", "must be 0 or more seconds"));
    }
    let stale_cleanup = match opts.int("stale_cleanup_interval")? {
        Some(i) if i <= 0 => {
            return Err(opts.error("stale_cleanup_interval", "must be 1 or more seconds"))
        }
        Some(i) => Duration::from_secs(i as u64),
        None => Duration::from_secs(10),
    };
    for mode in ["dir_mode", "file_mode"] {
        if let Some(m) = opts.int(mode)? {
            if m != -1 {
                return Err(opts.error(mode, "only -1 (the default permissions) is supported"));
            }
        }
    }
    let static_dir = {
        let before = path.split("%{").next().unwrap_or("");
        Path::new(before)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    };
    Ok(Box::new(FileOutput {
        path: Template::parse(&path),
        static_dir,
        filename_failure: opts.string_or("filename_failure", "_filepath_failures")?,
        overwrite: write_behavior == "overwrite",
        create_if_deleted: opts.boolean_or("create_if_deleted", true)?,
        stale_cleanup,
        state: Mutex::new(State {
            codec,
            files: HashMap::new(),
            active: HashSet::new(),
            last_cleanup: Instant::now(),
        }),
    }))
}

impl FileOutput {
    fn path_for(&self, e: &Event) -> PathBuf {
        if let Some(p) = self.path.constant() {
            return PathBuf::from(p);
        }
        let rendered = self.path.render(e);
        let p = PathBuf::from(&rendered);
        let bad = rendered.contains("%{")
            || p.components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
            || !p.starts_with(&self.static_dir);
        if bad {
            self.static_dir.join(&self.filename_failure)
        } else {
            p
        }
    }

    fn open(&self, path: &Path) -> std::io::Result<File> {
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir)?;
            }
        }
        let mut o = OpenOptions::new();
        if self.overwrite {
            o.write(true).create(true).truncate(true);
        } else {
            o.append(true).create(true);
        }
        o.open(path)
    }
}

impl Output for FileOutput {
    fn write(&self, events: &[&Event], _ctx: &WriteContext) -> Result<(), OutputError> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let st = &mut *st;
        st.close_stale(self.stale_cleanup);
        // Group by path, keeping the batch's order within each file.
        let mut groups: Vec<(PathBuf, Vec<u8>)> = Vec::new();
        for e in events {
            let path = self.path_for(e);
            let i = match groups.iter().position(|(p, _)| *p == path) {
                Some(i) => i,
                None => {
                    groups.push((path, Vec::with_capacity(events.len() * 256)));
                    groups.len() - 1
                }
            };
            st.codec.encode(e, &mut groups[i].1);
        }
        // Each file's length before this batch and the bytes the batch added, to take them
        // back if a later write fails.
        let mut written: Vec<Written> = Vec::with_capacity(groups.len());
        for (path, buf) in groups {
            let deleted = self.create_if_deleted && st.files.contains_key(&path) && !path.exists();
            if deleted || (self.overwrite && st.files.contains_key(&path)) {
                st.files.remove(&path);
            }
            let file = match st.files.entry(path.clone()) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => match self.open(&path) {
                    Ok(f) => v.insert(f),
                    Err(e) => {
                        roll_back(st, &written);
                        return Err(OutputError::retryable(format!(
                            "opening {}: {e}",
                            path.display()
                        )));
                    }
                },
            };
            let before = match file.metadata() {
                Ok(m) => m.len(),
                Err(e) => {
                    roll_back(st, &written);
                    st.files.remove(&path);
                    return Err(OutputError::retryable(format!(
                        "reading the length of {}: {e}",
                        path.display()
                    )));
                }
            };
            let (added, result) = write_counted(file, &buf);
            st.active.insert(path.clone());
            written.push(Written {
                path: path.clone(),
                before,
                added,
            });
            if let Err(e) = result {
                roll_back(st, &written);
                // Drop the handle so the retry reopens the file.
                st.files.remove(&path);
                return Err(OutputError::retryable(format!(
                    "writing {}: {e}",
                    path.display()
                )));
            }
        }
        Ok(())
    }

    fn close(&self) -> Result<(), OutputError> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        for (path, f) in st.files.drain() {
            f.sync_data()
                .map_err(|e| OutputError::retryable(format!("syncing {}: {e}", path.display())))?;
        }
        Ok(())
    }
}

/// Writes `buf`, returning how many of its bytes reached the file (all of them, or fewer when
/// an error cut the write short).
fn write_counted(file: &mut File, buf: &[u8]) -> (u64, std::io::Result<()>) {
    let mut done = 0;
    while done < buf.len() {
        match file.write(&buf[done..]) {
            Ok(0) => return (done as u64, Err(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (done as u64, Err(e)),
        }
    }
    (done as u64, Ok(()))
}

/// What one batch appended to one file.
struct Written {
    path: PathBuf,
    /// The file's length before.
    before: u64,
    added: u64,
}

/// Cuts each file back to its length before the batch (no disk space needed). A file that
/// grew by more than the batch wrote (another writer appended meanwhile) is left alone: cutting
/// it would take the other writer's lines.
fn roll_back(st: &mut State, written: &[Written]) {
    for w in written.iter().filter(|w| w.added > 0) {
        let cut = match st.files.get(&w.path) {
            Some(f) => f.metadata().and_then(|m| {
                if m.len() == w.before + w.added {
                    f.set_len(w.before)
                } else {
                    Err(std::io::Error::other(format!(
                        "it grew by {} bytes where this batch wrote {}: another writer appended",
                        m.len().saturating_sub(w.before),
                        w.added
                    )))
                }
            }),
            None => Err(std::io::Error::other("the file is no longer open")),
        };
        if let Err(e) = cut {
            tracing::error!(
                path = %w.path.display(),
                bytes = w.added,
                "cannot take back the part of a failed batch already written ({e}); the retry may repeat those lines"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codecs::plain::Plain;
    use crate::ecs::Ecs;
    use sluice_event::Value;

    /// A dated path opens a new file each day: the stale cleanup closes the ones no batch
    /// wrote to since the previous cleanup, and a later event for one reopens it.
    #[test]
    fn stale_files_are_closed() {
        let dir = std::env::temp_dir().join(format!("sluice-file-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = FileOutput {
            path: Template::parse(&format!("{}/%{{day}}.log", dir.display())),
            static_dir: dir.clone(),
            filename_failure: "_filepath_failures".into(),
            overwrite: false,
            create_if_deleted: true,
            stale_cleanup: Duration::from_millis(50),
            state: Mutex::new(State {
                codec: Box::new(Plain::new(Ecs::Disabled)),
                files: HashMap::new(),
                active: HashSet::new(),
                last_cleanup: Instant::now(),
            }),
        };
        let interrupted = std::sync::atomic::AtomicBool::new(false);
        let write = |day: &str| {
            let mut e = Event::with_message("x");
            e.set_field("day", Value::from(day));
            out.write(&[&e], &WriteContext::new(&interrupted)).unwrap();
        };
        let open = || {
            let st = out.state.lock().unwrap();
            let mut names: Vec<String> = st
                .files
                .keys()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        write("d1");
        write("d2");
        assert_eq!(open(), ["d1.log", "d2.log"]);
        std::thread::sleep(Duration::from_millis(60));
        // The cleanup runs first: both were written in the last interval, both stay.
        write("d3");
        assert_eq!(open(), ["d1.log", "d2.log", "d3.log"]);
        std::thread::sleep(Duration::from_millis(60));
        write("d3");
        assert_eq!(open(), ["d3.log"]);
        write("d1");
        assert_eq!(open(), ["d1.log", "d3.log"]);
        // Reopened for appending: both writes are there.
        let text = std::fs::read_to_string(dir.join("d1.log")).unwrap();
        assert_eq!(text.matches(" x").count(), 2, "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

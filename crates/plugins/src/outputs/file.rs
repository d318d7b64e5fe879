//! `file`: appends encoded events (`json_lines` by default) to a file whose `path` may hold
//! sprintf references (`/var/log/%{type}-%{+yyyy.MM.dd}.log`).
//!
//! A batch is grouped by rendered path and each group is written with one `write` call, so a
//! batch is in the operating system's hands before it is acked. A batch is written whole or
//! not at all: when a write fails part-way (a full disk), every file the batch went to is cut
//! back to where it stood before, so the retried batch is written once and no line is left
//! torn. Open files are kept in a map;
//! a file deleted from under us is recreated (`create_if_deleted`). Events whose path renders
//! with unresolved references or `..` go to `filename_failure` in the same directory as
//! Logstash does.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sluice_event::{Event, Template};
use sluice_pipeline::{Codec, ConfigError, Options, Output, OutputError, WriteContext};

pub struct FileOutput {
    path: Template,
    /// The part of `path` before its first reference: rendered paths must stay below it.
    static_dir: PathBuf,
    filename_failure: String,
    overwrite: bool,
    create_if_deleted: bool,
    state: Mutex<State>,
}

struct State {
    codec: Box<dyn Codec>,
    files: HashMap<PathBuf, File>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let path = opts.required_string("path")?;
    if opts.boolean_or("gzip", false)? {
        return Err(opts.error("gzip", "gzip output is not supported yet"));
    }
    let write_behavior = opts.choice("write_behavior", &["append", "overwrite"], "append")?;
    opts.int("flush_interval")?;
    opts.int("stale_cleanup_interval")?;
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
        state: Mutex::new(State {
            codec: opts.codec("json_lines")?,
            files: HashMap::new(),
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

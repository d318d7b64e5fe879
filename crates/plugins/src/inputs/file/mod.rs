//! `file`: reads files line by line, tailing them (`mode => tail`, the default) or reading
//! each once to its end (`mode => read`), as logstash-input-file does.
//!
//! Data flow, on one thread however many files are watched:
//!
//! 1. **Discovery** (at start, then every `discover_interval` loops): the `path` globs are
//!    expanded (Ruby's `Dir.glob`: `*`, `**`, `?`, `[…]`, `{a,b}`), `exclude` patterns
//!    matched against base names, and each file known by its identity (inode and device,
//!    [`sincedb::Key`]): a file renamed within the globs is the same file, read on from
//!    where it was; a new file starts where the sincedb says, else at its end
//!    (`start_position => end`, files present at the first discovery only) or its start.
//! 2. **Stat pass** (every `stat_interval`): each file's path is checked. A file that
//!    shrank (copytruncate) is read again from the start (an open file is also checked at
//!    every read, so that a writer going on cannot grow it past the old position before the
//!    truncation is seen); one whose path now names another
//!    file (rename rotation) or nothing (deleted) is read to its end through the descriptor
//!    still open, its last unfinished line and the codec's held record given out, and then
//!    dropped; the new file at the path is discovered at once and read from its start.
//!    `close_older` closes files nothing was written to for that long (reopened when they
//!    grow); at most `max_open_files` are open at once.
//! 3. **Read pass**: each open file is read from where it was, at most `file_chunk_count`
//!    chunks of `file_chunk_size` bytes per turn, split at `delimiter` (multi-byte
//!    delimiters too, across chunks), and each line handed to the file's own codec
//!    ([`Codec::decode_line`]; one codec per file, so multiline records never mix files).
//!    Events get `[log][file][path]` and `[host][name]` (`path` and `host` with
//!    `ecs_compatibility => disabled`) unless they have them, and `[@metadata][path]` /
//!    `[@metadata][host]`.
//! 4. **Push, then record**: events are pushed to the queue in batches, and only once a push
//!    returned are the files' positions advanced in the sincedb — to the end of the last line
//!    whose event was pushed, or to the start of a record the codec still holds. A crash at
//!    any moment therefore loses no line (what was read but not yet queued is read again).
//!    The sincedb is written every `sincedb_write_interval` and at the end; with a persisted
//!    queue also after every push (unsynced: what a push queued survives a kill, so a killed
//!    process reads again only lines it had not queued).
//!
//! In read mode a file's last line needs no delimiter, `.gz`/`.gzip` files are decompressed
//! (their lines split at `\n`, `\r\n` or `\r`), and once every event of a file is queued the
//! `file_completed_action` runs (`delete`, the default; `log` appends the path to
//! `file_completed_log_path`; `log_and_delete`). `exit_after_read` ends the input when every
//! file found at start is done.

mod options;
pub mod sincedb;
mod wakeups;

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant, SystemTime};

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};

use crate::codecs::find;
use crate::ecs::Ecs;
use crate::filters::grok::patterns::expand_glob;
use options::{Completed, Mode, Settings, SortBy};
use sincedb::{Key, Sincedb};
use wakeups::{Wake, Wakeups};

pub use options::friendly_duration;

pub struct FileInput {
    s: Settings,
    codec: Box<dyn Codec>,
    /// This machine's name, as the value events get.
    host: Value,
    path_field: FieldRef,
    host_field: FieldRef,
    meta_path: FieldRef,
    meta_host: FieldRef,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let s = options::read(opts)?;
    let codec = opts.codec("plain")?;
    let ecs = Ecs::from_options(opts)?;
    let (path_field, host_field) = if ecs.enabled() {
        ("[log][file][path]", "[host][name]")
    } else {
        ("path", "host")
    };
    let parse = |r: &str| FieldRef::parse(r).expect("valid reference");
    Ok(Box::new(FileInput {
        s,
        codec,
        host: Value::String(sluice_pipeline::hostname().into()),
        path_field: parse(path_field),
        host_field: parse(host_field),
        meta_path: parse("[@metadata][path]"),
        meta_host: parse("[@metadata][host]"),
    }))
}

/// One file being watched.
struct Watched {
    key: Key,
    path: String,
    file: Option<File>,
    /// Bytes handed to the codec: the end of the last complete line.
    consumed: u64,
    /// Bytes read after `consumed` that hold no complete line yet.
    buf: Vec<u8>,
    /// Every line before this is in an event given out.
    safe: u64,
    /// Where the record the codec holds began.
    hold_start: u64,
    codec: Box<dyn Codec>,
    /// Size at the last stat.
    size: u64,
    mtime: SystemTime,
    last_read: Instant,
    /// Read mode: read to the end; its completion action runs once its events are queued.
    complete: bool,
    /// Its path is gone or names another file: drop it once its events are queued.
    gone: bool,
    /// Nothing more to do with it (read mode: done or unreadable), until it changes.
    idle: bool,
}

impl Watched {
    fn read_from(&self) -> u64 {
        self.consumed + self.buf.len() as u64
    }
}

struct State<'a> {
    input: &'a FileInput,
    ctx: &'a InputContext,
    sincedb: Sincedb,
    files: Vec<Watched>,
    events: Vec<Event>,
    /// Positions to record once `events` are pushed.
    pending: HashMap<Key, (u64, String)>,
    open: usize,
    first_discovery: bool,
    last_sincedb_write: Instant,
    /// The queue keeps what a push gave it through a kill (a persisted queue): positions
    /// are written (unsynced) after every push, so a killed process reads again only what
    /// it had not queued; the synced write stays every `sincedb_write_interval`.
    record_every_push: bool,
    last_open_limit_warning: Option<Instant>,
    wakeups: Wakeups,
}

impl FileInput {
    fn stamp(&self, path: &str, events: &mut [Event]) {
        let path = Value::String(path.into());
        for e in events {
            e.set(&self.meta_path, path.clone());
            e.set(&self.meta_host, self.host.clone());
            e.set_if_absent(&self.path_field, path.clone());
            e.set_if_absent(&self.host_field, self.host.clone());
        }
    }
}

impl State<'_> {
    fn s(&self) -> &Settings {
        &self.input.s
    }

    /// Finds files; new ones join the watch list.
    fn discover(&mut self) {
        let mut found: Vec<(String, std::fs::Metadata)> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        for pattern in &self.input.s.paths {
            for p in expand_glob(pattern) {
                let Some(text) = p.to_str() else { continue };
                let base = p.file_name().and_then(|b| b.to_str()).unwrap_or("");
                if self.input.s.exclude.iter().any(|x| x.is_match(base)) {
                    continue;
                }
                if let Ok(meta) = std::fs::metadata(&p) {
                    if meta.is_file() && seen.insert(text.to_owned()) {
                        found.push((text.to_owned(), meta));
                    }
                }
            }
        }
        let now = SystemTime::now();
        let mut known: HashMap<Key, usize> = self
            .files
            .iter()
            .enumerate()
            .map(|(i, w)| (w.key, i))
            .collect();
        for (path, meta) in found {
            let key = Key::of(&meta);
            if let Some(w) = known.get(&key).map(|&i| &mut self.files[i]) {
                if w.path != path && w.gone {
                    // Renamed within the globs: the same file, read on.
                    w.path = path;
                    w.gone = false;
                }
                continue;
            }
            let size = meta.len();
            let mtime = meta.modified().unwrap_or(now);
            // A known identity continues where it was, even under another name (renamed
            // while sluice was not running: Logstash reads it again, sluice does not). A
            // file smaller than the position is another file with a reused inode: from 0.
            let mut start = match self.sincedb.get(&key) {
                Some(r) if r.position <= size => Some(r.position),
                Some(_) => {
                    self.sincedb.remove(&key);
                    Some(0)
                }
                None => None,
            };
            let old = self
                .s()
                .ignore_older
                .is_some_and(|limit| now.duration_since(mtime).unwrap_or_default() > limit);
            if old && start.is_none() {
                start = Some(size);
            }
            let start = start.unwrap_or(match self.s().mode {
                Mode::Tail if self.first_discovery && !self.s().from_beginning => size,
                _ => 0,
            });
            let done = self.s().mode == Mode::Read && start >= size && size > 0;
            if done {
                continue;
            }
            known.insert(key, self.files.len());
            self.files.push(Watched {
                key,
                path,
                file: None,
                consumed: start,
                buf: Vec::new(),
                safe: start,
                hold_start: start,
                codec: self.input.codec.clone_box(),
                size,
                mtime,
                last_read: Instant::now(),
                complete: false,
                gone: false,
                idle: false,
            });
        }
        self.first_discovery = false;
        self.sort();
        for pattern in &self.input.s.paths {
            self.wakeups.watch(&wakeups::fixed_dir(pattern));
        }
        for w in &self.files {
            if let Some(dir) = std::path::Path::new(&w.path).parent() {
                self.wakeups.watch(dir);
            }
        }
    }

    fn sort(&mut self) {
        match self.s().sort_by {
            SortBy::LastModified => self
                .files
                .sort_by(|a, b| a.mtime.cmp(&b.mtime).then_with(|| a.path.cmp(&b.path))),
            SortBy::Path => self.files.sort_by(|a, b| a.path.cmp(&b.path)),
        }
        if self.s().sort_descending {
            self.files.reverse();
        }
    }

    /// Checks every file's path: growth, shrinking, rotation, deletion, idleness.
    /// True when a path now names a new file (to be discovered at once).
    fn stat_pass(&mut self) -> bool {
        let mut rediscover = false;
        let close_older = self.s().close_older.filter(|_| self.s().mode == Mode::Tail);
        for i in 0..self.files.len() {
            if self.files[i].gone {
                continue;
            }
            let meta = std::fs::metadata(&self.files[i].path);
            let w = &mut self.files[i];
            match meta {
                Ok(meta) if Key::of(&meta) == w.key => {
                    let size = meta.len();
                    if size != w.size || meta.modified().ok() != Some(w.mtime) {
                        w.idle = false;
                    }
                    if size < w.consumed {
                        self.read_again_from_start(i, size);
                    }
                    let w = &mut self.files[i];
                    w.size = size;
                    w.mtime = meta.modified().unwrap_or(w.mtime);
                }
                other => {
                    // Deleted, or the path names another file now (rotation).
                    rediscover |= other.is_ok();
                    self.finish_gone(i);
                }
            }
            let w = &mut self.files[i];
            if let (Some(limit), Some(_)) = (close_older, &w.file) {
                if w.last_read.elapsed() > limit && w.read_from() >= w.size && !w.gone {
                    w.file = None;
                    self.open -= 1;
                    let first = self.events.len();
                    self.files[i].codec.flush(&mut self.events);
                    self.codec_emptied(i, first);
                }
            }
        }
        rediscover
    }

    /// Files inotify says were written to: their sizes now, so that closed ones open.
    fn refresh_written(&mut self) {
        let written = std::mem::take(&mut self.wakeups.written);
        for path in &written {
            let Some(text) = path.to_str() else { continue };
            let Some(w) = self.files.iter_mut().find(|w| w.path == text && !w.gone) else {
                continue;
            };
            if let Ok(meta) = std::fs::metadata(path) {
                if Key::of(&meta) == w.key && meta.len() >= w.consumed {
                    w.size = meta.len();
                    w.idle = false;
                }
            }
        }
        self.wakeups.written = written;
    }

    /// A file whose path is gone: read what its descriptor still has, give out the rest.
    fn finish_gone(&mut self, i: usize) {
        self.files[i].gone = true;
        if self.files[i].file.is_some() {
            // A stopping pipeline leaves the rest for the next start.
            let _ = self.read_file(i, u64::MAX);
        }
        self.end_of_file(i);
    }

    /// Gives out what a file holds at its end: an unfinished last line, the codec's record.
    fn end_of_file(&mut self, i: usize) {
        let w = &mut self.files[i];
        let first = self.events.len();
        if !w.buf.is_empty() {
            let line = std::mem::take(&mut w.buf);
            w.codec.decode_line(&line, &mut self.events);
            w.consumed += line.len() as u64;
        }
        w.codec.flush(&mut self.events);
        self.codec_emptied(i, first);
    }

    /// File `i`'s codec gave out what it held (the events from `first` on): they get the
    /// file's fields, and its position moves to everything handed to the codec.
    fn codec_emptied(&mut self, i: usize, first: usize) {
        let w = &mut self.files[i];
        self.input.stamp(&w.path, &mut self.events[first..]);
        w.safe = w.consumed;
        w.hold_start = w.consumed;
        self.pending.insert(w.key, (w.safe, w.path.clone()));
    }

    /// File `i` shrank below what was read of it (copytruncate): it is read again from its
    /// start. What it held past its new size before is gone from it (logrotate copied it).
    fn read_again_from_start(&mut self, i: usize, size: u64) {
        let w = &mut self.files[i];
        tracing::warn!(path = %w.path, size, position = w.read_from(), "file input: file shrank (truncated): reading it again from the start");
        w.consumed = 0;
        w.buf.clear();
        w.safe = 0;
        w.hold_start = 0;
        w.size = size;
        self.pending.insert(w.key, (0, w.path.clone()));
    }

    /// Reads up to `chunks` chunks from file `i`, pushing a batch whenever one is full;
    /// returns the bytes read (`None` when the pipeline stopped taking events).
    fn read_file(&mut self, i: usize, chunks: u64) -> Option<u64> {
        // A truncation is seen at the first read after it (one fstat per read turn), not at
        // the next stat pass: a writer that goes on writing would otherwise have grown the
        // file past the old position by then, and the read would go on from there, mid-line,
        // losing everything before it (copytruncate under a fast writer).
        let w = &self.files[i];
        if let (Some(file), false) = (&w.file, w.gone) {
            if let Ok(meta) = file.metadata() {
                if meta.len() < w.read_from() {
                    self.read_again_from_start(i, meta.len());
                }
            }
        }
        let chunk_size = self.input.s.chunk_size;
        let delimiter = self.input.s.delimiter.clone();
        let mut chunk = vec![0u8; chunk_size];
        let mut total = 0u64;
        for _ in 0..chunks {
            let w = &mut self.files[i];
            let Some(file) = &w.file else { break };
            let n = match file.read_at(&mut chunk, w.read_from()) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::warn!(path = %w.path, error = %e, "file input: read failed");
                    break;
                }
            };
            total += n as u64;
            let first = self.events.len();
            w.buf.extend_from_slice(&chunk[..n]);
            let mut start = 0;
            while let Some(at) = find(&w.buf[start..], &delimiter) {
                let line_start = w.consumed + start as u64;
                let end = start + at + delimiter.len();
                let held_before = w.codec.pending_bytes() > 0;
                let before = self.events.len();
                w.codec
                    .decode_line(&w.buf[start..start + at], &mut self.events);
                if w.codec.pending_bytes() > 0 {
                    if self.events.len() > before || !held_before {
                        w.hold_start = line_start;
                    }
                    w.safe = w.hold_start;
                } else {
                    w.safe = w.consumed + end as u64;
                }
                start = end;
            }
            w.buf.drain(..start);
            w.consumed += start as u64;
            w.last_read = Instant::now();
            w.size = w.size.max(w.read_from());
            self.input.stamp(&w.path, &mut self.events[first..]);
            let (key, pos, path) = (w.key, w.safe, w.path.clone());
            self.pending.insert(key, (pos, path));
            if self.events.len() >= self.ctx.batch_size() && !self.push_events() {
                return None;
            }
            if n < chunk.len() {
                break;
            }
        }
        Some(total)
    }

    /// Opens file `i` if it has something to read and the limit allows.
    fn ensure_open(&mut self, i: usize) -> bool {
        let w = &self.files[i];
        if w.file.is_some() {
            return true;
        }
        if w.gone || w.idle || w.complete || w.read_from() >= w.size {
            return false;
        }
        if self.open >= self.s().max_open_files {
            let due = self
                .last_open_limit_warning
                .is_none_or(|t| t.elapsed() > Duration::from_secs(20));
            if due {
                let waiting = self.files.iter().filter(|w| w.file.is_none()).count();
                tracing::warn!(
                    limit = self.s().max_open_files,
                    waiting,
                    "file input: reached the open files limit (max_open_files); files yet to open wait"
                );
                self.last_open_limit_warning = Some(Instant::now());
            }
            return false;
        }
        let w = &mut self.files[i];
        match File::open(&w.path) {
            Ok(f) => {
                // The path may name another file since the last stat: checked at the next.
                w.file = Some(f);
                w.last_read = Instant::now();
                self.open += 1;
                true
            }
            Err(e) => {
                tracing::warn!(path = %w.path, error = %e, "file input: cannot open file");
                false
            }
        }
    }

    /// Pushes the events made so far, then records the positions they cover.
    fn push_events(&mut self) -> bool {
        if !self.events.is_empty() && self.ctx.push(std::mem::take(&mut self.events)).is_err() {
            return false;
        }
        let moved = !self.pending.is_empty();
        for (key, (pos, path)) in self.pending.drain() {
            self.sincedb.set(key, pos, &path);
        }
        if moved && self.record_every_push {
            if let Err(e) = self.sincedb.write_with(false) {
                tracing::warn!(error = %e, "file input: cannot write the sincedb");
            }
        }
        true
    }

    /// [`State::push_events`], then completed and gone files are dealt with.
    fn push(&mut self) -> bool {
        if !self.push_events() {
            return false;
        }
        // Completed and gone files are done with once their events are queued.
        let mut i = 0;
        while i < self.files.len() {
            let w = &self.files[i];
            if w.complete {
                self.complete(i);
            }
            let w = &self.files[i];
            if w.gone {
                if w.file.is_some() {
                    self.open -= 1;
                }
                self.files.remove(i);
            } else {
                i += 1;
            }
        }
        true
    }

    /// Read mode: a file's events are all queued; run `file_completed_action`.
    fn complete(&mut self, i: usize) {
        let s = &self.input.s;
        let w = &mut self.files[i];
        w.complete = false;
        w.idle = true;
        if w.file.take().is_some() {
            self.open -= 1;
        }
        if matches!(s.completed, Completed::Log | Completed::LogAndDelete) {
            if let Some(log) = &s.completed_log {
                let line = format!("{}\n", w.path);
                let written = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(log)
                    .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
                if let Err(e) = written {
                    tracing::warn!(path = %log.display(), error = %e, "file input: cannot write file_completed_log_path");
                }
            }
        }
        if matches!(s.completed, Completed::Delete | Completed::LogAndDelete) {
            if let Err(e) = std::fs::remove_file(&w.path) {
                tracing::warn!(path = %w.path, error = %e, "file input: cannot delete a completed file");
            }
            w.gone = true;
        }
    }

    /// Read mode, a `.gz`/`.gzip` file: all of it, decompressed.
    fn read_gzip(&mut self, i: usize) {
        let w = &mut self.files[i];
        let path = w.path.clone();
        let check = self.input.s.check_archive_validity;
        if check {
            let valid = File::open(&path).and_then(|f| {
                std::io::copy(
                    &mut flate2::read::MultiGzDecoder::new(f),
                    &mut std::io::sink(),
                )
            });
            if let Err(e) = valid {
                tracing::error!(path = %path, error = %e, "file input: invalid gzip archive: skipped");
                w.idle = true;
                return;
            }
        }
        let result = (|| -> std::io::Result<()> {
            let f = File::open(&path)?;
            let mut reader = std::io::BufReader::new(flate2::read::MultiGzDecoder::new(f));
            let mut line = Vec::new();
            loop {
                line.clear();
                let n = read_text_line(&mut reader, &mut line)?;
                if n == 0 {
                    break;
                }
                let w = &mut self.files[i];
                let first = self.events.len();
                w.codec.decode_line(&line, &mut self.events);
                self.input.stamp(&path, &mut self.events[first..]);
                if self.events.len() >= self.ctx.batch_size() {
                    // Positions of a gzip file are recorded at its end only.
                    if self.ctx.push(std::mem::take(&mut self.events)).is_err() {
                        return Err(std::io::Error::other("pipeline stopping"));
                    }
                }
            }
            Ok(())
        })();
        let w = &mut self.files[i];
        match result {
            Ok(()) => {
                let first = self.events.len();
                w.codec.flush(&mut self.events);
                self.input.stamp(&path, &mut self.events[first..]);
                w.consumed = w.size;
                w.safe = w.size;
                w.complete = true;
                self.pending.insert(w.key, (w.size, path));
            }
            Err(e) => {
                if !self.ctx.is_stopping() {
                    tracing::error!(path = %path, error = %e, "file input: cannot decompress gzip file; it is not read again unless it changes");
                }
                w.idle = true;
            }
        }
    }
}

/// One line of decompressed text, split at `\n`, `\r\n` or `\r` (Java's `readLine`), without
/// its end; returns the bytes consumed (0 at the end).
fn read_text_line(r: &mut impl std::io::BufRead, line: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(consumed);
        }
        match buf.iter().position(|&b| b == b'\n' || b == b'\r') {
            Some(at) => {
                line.extend_from_slice(&buf[..at]);
                let cr = buf[at] == b'\r';
                r.consume(at + 1);
                consumed += at + 1;
                if cr {
                    let next = r.fill_buf()?;
                    if next.first() == Some(&b'\n') {
                        r.consume(1);
                        consumed += 1;
                    }
                }
                return Ok(consumed);
            }
            None => {
                let n = buf.len();
                line.extend_from_slice(buf);
                r.consume(n);
                consumed += n;
            }
        }
    }
}

fn is_gzip(path: &str) -> bool {
    path.ends_with(".gz") || path.ends_with(".gzip")
}

impl Input for FileInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let sincedb =
            Sincedb::open(&self.s.sincedb_path, self.s.sincedb_clean_after).map_err(|e| {
                format!(
                    "file input: cannot open sincedb {}: {e}",
                    self.s.sincedb_path.display()
                )
            })?;
        let mut st = State {
            input: self,
            ctx,
            sincedb,
            files: Vec::new(),
            events: Vec::new(),
            pending: HashMap::new(),
            open: 0,
            first_discovery: true,
            last_sincedb_write: Instant::now(),
            record_every_push: ctx.pushes_survive_a_kill(),
            last_open_limit_warning: None,
            wakeups: Wakeups::new(),
        };
        st.discover();
        let s = &self.s;
        let mut loops: u64 = 0;
        let mut next_stat = Instant::now() + s.stat_interval;
        let idle_flush = self.codec.idle_flush_interval();
        'run: while !ctx.is_stopping() {
            // Read pass.
            let mut read = 0u64;
            for i in 0..st.files.len() {
                let w = &st.files[i];
                if w.complete || w.gone || (w.idle && s.mode == Mode::Read) {
                    continue;
                }
                if s.mode == Mode::Read && is_gzip(&w.path) {
                    st.read_gzip(i);
                    read += 1;
                } else {
                    if st.ensure_open(i) {
                        match st.read_file(i, s.chunk_count) {
                            Some(n) => read += n,
                            None => break 'run,
                        }
                    }
                    let w = &st.files[i];
                    if s.mode == Mode::Read && w.read_from() >= w.size {
                        st.end_of_file(i);
                        st.files[i].complete = true;
                    }
                }
                if st.events.len() >= ctx.batch_size() && !st.push() {
                    break 'run;
                }
            }
            if idle_flush.is_some() {
                let now = Instant::now();
                for i in 0..st.files.len() {
                    let first = st.events.len();
                    st.files[i].codec.flush_idle(now, &mut st.events);
                    if st.events.len() > first && st.files[i].codec.pending_bytes() == 0 {
                        st.codec_emptied(i, first);
                    }
                }
            }
            if !st.push() {
                break;
            }
            if s.mode == Mode::Read && s.exit_after_read && st.files.iter().all(|w| w.idle) {
                break;
            }
            if st.last_sincedb_write.elapsed() >= s.sincedb_write_interval {
                if let Err(e) = st.sincedb.write() {
                    tracing::warn!(error = %e, "file input: cannot write the sincedb");
                }
                st.last_sincedb_write = Instant::now();
            }
            // No wait while files give whole chunks. Else until a change in a watched
            // directory (inotify), the next stat pass or the codecs' idle flush; without
            // inotify, 50 ms at most while files trickle.
            let mut names_changed = false;
            if read < s.chunk_size as u64 {
                let mut wait = next_stat.saturating_duration_since(Instant::now());
                if read > 0 && !st.wakeups.active() {
                    wait = wait.min(Duration::from_millis(50));
                }
                if let Some(i) = idle_flush {
                    wait = wait.min(i / 2);
                }
                match st.wakeups.wait(wait, || ctx.is_stopping()) {
                    Wake::Names => names_changed = true,
                    Wake::Data => st.refresh_written(),
                    Wake::Timeout => {}
                }
            }
            if names_changed || Instant::now() >= next_stat {
                next_stat = Instant::now() + s.stat_interval;
                loops += 1;
                let rediscover = st.stat_pass();
                // exit_after_read reads what was there at start only, as Logstash's.
                let discovering = !(s.mode == Mode::Read && s.exit_after_read);
                let due = loops.is_multiple_of(s.discover_interval) || names_changed;
                if rediscover || (discovering && due) {
                    st.discover();
                }
                if !st.push() {
                    break;
                }
            }
        }
        // Stopping: what the codecs hold is given out (Logstash's exit flush), pushed if the
        // queue still takes it, and the positions written.
        for i in 0..st.files.len() {
            let first = st.events.len();
            st.files[i].codec.flush(&mut st.events);
            if st.events.len() > first {
                st.codec_emptied(i, first);
            }
        }
        st.push();
        st.sincedb
            .write()
            .map_err(|e| format!("file input: cannot write the sincedb: {e}"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclude_matches_base_names() {
        let m = |p: &str, name: &str| options::fnmatch(p).unwrap().is_match(name);
        assert!(m("*.gz", "app.log.gz"));
        assert!(!m("*.gz", "app.log"));
        assert!(m("app-?.log", "app-1.log"));
        assert!(m("[ab].log", "b.log"));
        assert!(!m("/var/log/*.gz", "x.gz"));
        assert!(options::fnmatch("[a").is_none());
    }

    #[test]
    fn text_lines_of_decompressed_files() {
        let mut r = std::io::BufReader::with_capacity(4, &b"a\r\nbb\rccc\n\nlast"[..]);
        let mut lines = Vec::new();
        loop {
            let mut l = Vec::new();
            if read_text_line(&mut r, &mut l).unwrap() == 0 {
                break;
            }
            lines.push(String::from_utf8(l).unwrap());
        }
        assert_eq!(lines, ["a", "bb", "ccc", "", "last"]);
    }
}

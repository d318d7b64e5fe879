//! A simulated storage for tests: a directory in memory that remembers what was synced, so a
//! test can "pull the plug" and see what would survive, make syncs fail, or fill the disk.
//!
//! Model: each file keeps its durable bytes and the operations (writes, length changes) since
//! its last sync; the directory keeps its durable entries and the creates, removes and renames
//! since its last `sync_dir`. [`SimStorage::power_loss`] keeps a prefix of each list (the last
//! write kept possibly torn to a prefix of its bytes) and drops the rest: a torn
//! `checkpoint.tmp`, a lost rename, a page whose directory entry never reached the disk.
//! Space: with a limit set, growing a file takes space (a write past the end is cut where the
//! space ends, then fails with "no space"), removing or shrinking one gives it back, and
//! overwriting bytes within a file takes none.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::storage::{QueueFile, Storage};

#[derive(Clone)]
enum FileOp {
    Write(u64, Vec<u8>),
    SetLen(u64),
}

#[derive(Default)]
struct Content {
    durable: Vec<u8>,
    pending: Vec<FileOp>,
    /// durable + pending, what reads see.
    current: Vec<u8>,
}

fn apply(buf: &mut Vec<u8>, op: &FileOp) {
    match op {
        FileOp::Write(offset, data) => {
            let end = *offset as usize + data.len();
            if buf.len() < end {
                buf.resize(end, 0);
            }
            buf[*offset as usize..end].copy_from_slice(data);
        }
        FileOp::SetLen(len) => buf.resize(*len as usize, 0),
    }
}

#[derive(Default)]
struct Faults {
    /// Bytes files may still grow by (None: unlimited).
    space_left: Mutex<Option<u64>>,
    fail_sync: AtomicBool,
    fail_dir_sync: AtomicBool,
    /// How many of the next renames fail.
    fail_renames: AtomicU64,
    /// How long a file sync takes, in microseconds (a disk's fsync latency).
    sync_micros: AtomicU64,
    writes: AtomicU64,
    file_syncs: AtomicU64,
    dir_syncs: AtomicU64,
    /// Each [`QueueFile::start_writeback`]: offset, length, and the file's length then.
    writebacks: Mutex<Vec<(u64, u64, u64)>>,
}

impl Faults {
    /// Takes space for growing a file from `from` to `to` bytes; returns how many of the
    /// wanted bytes fit.
    fn grow(&self, from: u64, to: u64) -> u64 {
        let mut space = self.space_left.lock().unwrap();
        let want = to.saturating_sub(from);
        match space.as_mut() {
            None => want,
            Some(left) => {
                let got = want.min(*left);
                *left -= got;
                got
            }
        }
    }

    fn give_back(&self, bytes: u64) {
        if let Some(left) = self.space_left.lock().unwrap().as_mut() {
            *left += bytes;
        }
    }
}

fn no_space() -> io::Error {
    io::Error::new(
        io::ErrorKind::StorageFull,
        "No space left on device (simulated)",
    )
}

struct SimFile {
    content: Mutex<Content>,
    faults: Arc<Faults>,
}

impl QueueFile for SimFile {
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut c = self.content.lock().unwrap();
        let len = c.current.len() as u64;
        let end = offset + data.len() as u64;
        let grown = self.faults.grow(len, end);
        let n = (len + grown).min(end).saturating_sub(offset) as usize;
        if n > 0 {
            let op = FileOp::Write(offset, data[..n].to_vec());
            apply(&mut c.current, &op);
            c.pending.push(op);
        }
        self.faults.writes.fetch_add(1, Ordering::SeqCst);
        if n < data.len() {
            return Err(no_space());
        }
        Ok(())
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let c = self.content.lock().unwrap();
        let start = (offset as usize).min(c.current.len());
        let n = buf.len().min(c.current.len() - start);
        buf[..n].copy_from_slice(&c.current[start..start + n]);
        Ok(n)
    }

    fn sync(&self) -> io::Result<()> {
        self.faults.file_syncs.fetch_add(1, Ordering::SeqCst);
        let micros = self.faults.sync_micros.load(Ordering::Relaxed);
        if micros > 0 {
            std::thread::sleep(std::time::Duration::from_micros(micros));
        }
        if self.faults.fail_sync.load(Ordering::SeqCst) {
            return Err(io::Error::other("fsync failed (simulated)"));
        }
        let mut c = self.content.lock().unwrap();
        c.durable = c.current.clone();
        c.pending.clear();
        Ok(())
    }

    fn start_writeback(&self, offset: u64, len: u64) {
        let file_len = self.content.lock().unwrap().current.len() as u64;
        let hint = (offset, len, file_len);
        self.faults.writebacks.lock().unwrap().push(hint);
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.content.lock().unwrap().current.len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut c = self.content.lock().unwrap();
        let cur = c.current.len() as u64;
        if len > cur && self.faults.grow(cur, len) < len - cur {
            return Err(no_space());
        }
        if len < cur {
            self.faults.give_back(cur - len);
        }
        let op = FileOp::SetLen(len);
        apply(&mut c.current, &op);
        c.pending.push(op);
        Ok(())
    }
}

#[derive(Clone)]
enum DirOp {
    Create(String, Arc<SimFile>),
    Remove(String),
    Rename(String, String),
}

type Entries = BTreeMap<String, Arc<SimFile>>;

fn apply_dir(entries: &mut Entries, op: &DirOp) {
    match op {
        DirOp::Create(name, f) => {
            entries.insert(name.clone(), Arc::clone(f));
        }
        DirOp::Remove(name) => {
            entries.remove(name);
        }
        DirOp::Rename(from, to) => {
            if let Some(f) = entries.remove(from) {
                entries.insert(to.clone(), f);
            }
        }
    }
}

#[derive(Default)]
struct Dir {
    durable: Entries,
    pending: Vec<DirOp>,
    current: Entries,
}

#[derive(Clone, Default)]
pub struct SimStorage {
    dir: Arc<Mutex<Dir>>,
    faults: Arc<Faults>,
}

/// How much of what was not synced survives a simulated power loss.
#[derive(Debug, Clone, Copy)]
pub struct Survival {
    /// Fraction (0..=1) of each file's unsynced operations kept, in order, and of the
    /// directory's unsynced changes.
    pub keep_fraction: f64,
    /// Bytes of the next unsynced write kept after those (a torn write).
    pub torn_bytes: usize,
}

impl SimStorage {
    pub fn new() -> Self {
        SimStorage::default()
    }

    /// From now on files can grow by `bytes` more in all (None: unlimited).
    pub fn set_space_left(&self, bytes: Option<u64>) {
        *self.faults.space_left.lock().unwrap() = bytes;
    }

    /// Makes every file sync take this long, as a disk's fsync does.
    pub fn set_sync_latency(&self, latency: std::time::Duration) {
        self.faults
            .sync_micros
            .store(latency.as_micros() as u64, Ordering::Relaxed);
    }

    /// From now on directory syncs fail (or succeed again).
    pub fn set_fail_dir_sync(&self, fail: bool) {
        self.faults.fail_dir_sync.store(fail, Ordering::SeqCst);
    }

    /// Makes the next `count` renames fail (as Windows' ATOMIC_MOVE does while another
    /// process holds the file).
    pub fn fail_next_renames(&self, count: u64) {
        self.faults.fail_renames.store(count, Ordering::SeqCst);
    }

    pub fn set_fail_sync(&self, fail: bool) {
        self.faults.fail_sync.store(fail, Ordering::SeqCst);
    }

    /// Number of file writes so far.
    pub fn writes(&self) -> u64 {
        self.faults.writes.load(Ordering::SeqCst)
    }

    /// Number of file syncs so far (the page and checkpoint fsyncs).
    pub fn file_syncs(&self) -> u64 {
        self.faults.file_syncs.load(Ordering::SeqCst)
    }

    /// The writeback hints so far (offset, length, the file's length then), of every file.
    pub fn writebacks(&self) -> Vec<(u64, u64, u64)> {
        self.faults.writebacks.lock().unwrap().clone()
    }

    /// Number of directory syncs so far.
    pub fn dir_syncs(&self) -> u64 {
        self.faults.dir_syncs.load(Ordering::SeqCst)
    }

    /// The storage as a killed process leaves it: every write kept (the page cache survives).
    pub fn after_kill(&self) -> SimStorage {
        self.power_loss(Survival {
            keep_fraction: 1.0,
            torn_bytes: 0,
        })
    }

    /// The storage as a power loss leaves it: what was synced, plus part of the rest.
    pub fn power_loss(&self, s: Survival) -> SimStorage {
        let keep = |n: usize| ((n as f64) * s.keep_fraction).floor() as usize;
        let dir = self.dir.lock().unwrap();
        let mut entries = dir.durable.clone();
        for op in &dir.pending[..keep(dir.pending.len())] {
            apply_dir(&mut entries, op);
        }
        let faults = Arc::new(Faults::default());
        // One new file per old one, even where two names led to it.
        let mut made: Vec<(*const SimFile, Arc<SimFile>)> = Vec::new();
        let mut out = Entries::new();
        for (name, old) in entries {
            let ptr = Arc::as_ptr(&old);
            let file = match made.iter().find(|(p, _)| *p == ptr) {
                Some((_, f)) => Arc::clone(f),
                None => {
                    let c = old.content.lock().unwrap();
                    let mut data = c.durable.clone();
                    let kept = keep(c.pending.len());
                    for op in &c.pending[..kept] {
                        apply(&mut data, op);
                    }
                    if let Some(FileOp::Write(off, bytes)) = c.pending.get(kept) {
                        let n = s.torn_bytes.min(bytes.len());
                        if n > 0 {
                            apply(&mut data, &FileOp::Write(*off, bytes[..n].to_vec()));
                        }
                    }
                    let f = Arc::new(SimFile {
                        content: Mutex::new(Content {
                            durable: data.clone(),
                            pending: Vec::new(),
                            current: data,
                        }),
                        faults: Arc::clone(&faults),
                    });
                    made.push((ptr, Arc::clone(&f)));
                    f
                }
            };
            out.insert(name, file);
        }
        SimStorage {
            dir: Arc::new(Mutex::new(Dir {
                durable: out.clone(),
                pending: Vec::new(),
                current: out,
            })),
            faults,
        }
    }

    /// The names of the files present.
    pub fn names(&self) -> Vec<String> {
        self.dir.lock().unwrap().current.keys().cloned().collect()
    }

    fn file(&self, name: &str) -> Option<Arc<SimFile>> {
        self.dir.lock().unwrap().current.get(name).cloned()
    }

    /// A file's current bytes (corruption tests).
    pub fn file_bytes(&self, name: &str) -> Option<Vec<u8>> {
        self.file(name)
            .map(|f| f.content.lock().unwrap().current.clone())
    }

    /// Overwrites bytes of a file, durably (corruption tests).
    pub fn corrupt(&self, name: &str, offset: u64, data: &[u8]) {
        self.replace_bytes(name, |b| {
            apply(b, &FileOp::Write(offset, data.to_vec()));
        });
    }

    /// Cuts a file to `len` bytes, durably (corruption tests).
    pub fn cut(&self, name: &str, len: u64) {
        self.replace_bytes(name, |b| b.truncate(len as usize));
    }

    fn replace_bytes(&self, name: &str, f: impl FnOnce(&mut Vec<u8>)) {
        let file = self.file(name).unwrap_or_else(|| panic!("no file {name}"));
        let mut c = file.content.lock().unwrap();
        f(&mut c.current);
        c.durable = c.current.clone();
        c.pending.clear();
    }

    /// Removes a file, durably (corruption tests).
    pub fn delete(&self, name: &str) {
        let mut d = self.dir.lock().unwrap();
        d.current.remove(name);
        d.durable.remove(name);
    }

    /// Creates (or replaces) a file with these bytes, durably (corruption tests).
    pub fn put(&self, name: &str, bytes: &[u8]) {
        let file = Arc::new(SimFile {
            content: Mutex::new(Content {
                durable: bytes.to_vec(),
                pending: Vec::new(),
                current: bytes.to_vec(),
            }),
            faults: Arc::clone(&self.faults),
        });
        let mut d = self.dir.lock().unwrap();
        d.current.insert(name.to_owned(), Arc::clone(&file));
        d.durable.insert(name.to_owned(), file);
    }
}

impl Storage for SimStorage {
    fn list(&self) -> io::Result<Vec<String>> {
        Ok(self.names())
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn QueueFile>> {
        match self.file(name) {
            Some(f) => Ok(f as Arc<dyn QueueFile>),
            None => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{name} not found (simulated)"),
            )),
        }
    }

    fn create(&self, name: &str) -> io::Result<Arc<dyn QueueFile>> {
        let mut d = self.dir.lock().unwrap();
        if d.current.contains_key(name) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{name} exists (simulated)"),
            ));
        }
        let file = Arc::new(SimFile {
            content: Mutex::new(Content::default()),
            faults: Arc::clone(&self.faults),
        });
        let op = DirOp::Create(name.to_owned(), Arc::clone(&file));
        apply_dir(&mut d.current, &op);
        d.pending.push(op);
        Ok(file)
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        let mut d = self.dir.lock().unwrap();
        if let Some(f) = d.current.get(name) {
            self.faults
                .give_back(f.content.lock().unwrap().current.len() as u64);
            let op = DirOp::Remove(name.to_owned());
            apply_dir(&mut d.current, &op);
            d.pending.push(op);
        }
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let failing = self.faults.fail_renames.load(Ordering::SeqCst);
        if failing > 0 {
            self.faults
                .fail_renames
                .store(failing - 1, Ordering::SeqCst);
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "rename refused (simulated)",
            ));
        }
        let mut d = self.dir.lock().unwrap();
        if !d.current.contains_key(from) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{from} not found (simulated)"),
            ));
        }
        if let Some(replaced) = d.current.get(to) {
            self.faults
                .give_back(replaced.content.lock().unwrap().current.len() as u64);
        }
        let op = DirOp::Rename(from.to_owned(), to.to_owned());
        apply_dir(&mut d.current, &op);
        d.pending.push(op);
        Ok(())
    }

    fn sync_dir(&self) -> io::Result<()> {
        self.faults.dir_syncs.fetch_add(1, Ordering::SeqCst);
        if self.faults.fail_dir_sync.load(Ordering::SeqCst) {
            return Err(io::Error::other("directory fsync failed (simulated)"));
        }
        let mut d = self.dir.lock().unwrap();
        d.durable = d.current.clone();
        d.pending.clear();
        Ok(())
    }

    fn describe(&self) -> String {
        "simulated storage".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsynced_directory_changes_and_writes_can_be_lost() {
        let s = SimStorage::new();
        let a = s.create("a").unwrap();
        a.write_at(0, b"hello").unwrap();
        a.sync().unwrap();
        s.sync_dir().unwrap();
        a.write_at(5, b" world").unwrap();
        s.rename("a", "b").unwrap();
        let none = s.power_loss(Survival {
            keep_fraction: 0.0,
            torn_bytes: 3,
        });
        assert_eq!(none.names(), ["a"]);
        assert_eq!(none.file_bytes("a").unwrap(), b"hello wo");
        let all = s.after_kill();
        assert_eq!(all.names(), ["b"]);
        assert_eq!(all.file_bytes("b").unwrap(), b"hello world");
    }

    #[test]
    fn a_full_disk_cuts_growing_writes_but_not_overwrites() {
        let s = SimStorage::new();
        let f = s.create("f").unwrap();
        f.write_at(0, &[1; 10]).unwrap();
        s.set_space_left(Some(4));
        let e = f.write_at(10, &[2; 10]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(f.len().unwrap(), 14);
        f.write_at(0, &[3; 14]).unwrap();
        s.remove("f").unwrap();
        let g = s.create("g").unwrap();
        g.write_at(0, &[4; 14]).unwrap();
    }
}

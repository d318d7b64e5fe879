//! A simulated storage for tests: files in memory that remember which writes were synced, so
//! a test can "pull the plug" and see what would survive, tear the last write, make syncs
//! fail or the disk fill up.
//!
//! Model: each page keeps its durable bytes and the list of writes since its last sync.
//! [`SimStorage::power_loss`] keeps, per page, a prefix of those writes (the last one kept
//! possibly torn to a prefix of its bytes) and drops the rest. Page creation, checkpoint
//! replacement and removal are durable when they return, as `FsStorage` guarantees.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::storage::{PageFile, Storage};

#[derive(Default)]
struct SimFile {
    durable: Vec<u8>,
    pending: Vec<(u64, Vec<u8>)>,
    /// durable + pending, what reads see.
    current: Vec<u8>,
}

fn apply(buf: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let end = offset as usize + data.len();
    if buf.len() < end {
        buf.resize(end, 0);
    }
    buf[offset as usize..end].copy_from_slice(data);
}

#[derive(Default)]
struct Faults {
    /// Bytes of page writes allowed before writes fail with "no space" (None: unlimited).
    space_left: Mutex<Option<u64>>,
    fail_sync: AtomicBool,
    writes: AtomicU64,
}

struct SimPage {
    file: Mutex<SimFile>,
    faults: Arc<Faults>,
}

impl PageFile for SimPage {
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        {
            let mut space = self.faults.space_left.lock().unwrap();
            if let Some(left) = space.as_mut() {
                if (data.len() as u64) > *left {
                    return Err(io::Error::new(
                        io::ErrorKind::StorageFull,
                        "No space left on device (simulated)",
                    ));
                }
                *left -= data.len() as u64;
            }
        }
        self.faults.writes.fetch_add(1, Ordering::SeqCst);
        let mut f = self.file.lock().unwrap();
        f.pending.push((offset, data.to_vec()));
        apply(&mut f.current, offset, data);
        Ok(())
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let f = self.file.lock().unwrap();
        let start = (offset as usize).min(f.current.len());
        let n = buf.len().min(f.current.len() - start);
        buf[..n].copy_from_slice(&f.current[start..start + n]);
        Ok(n)
    }

    fn sync(&self) -> io::Result<()> {
        if self.faults.fail_sync.load(Ordering::SeqCst) {
            return Err(io::Error::other("fsync failed (simulated)"));
        }
        let mut f = self.file.lock().unwrap();
        f.durable = f.current.clone();
        f.pending.clear();
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.lock().unwrap().current.len() as u64)
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        let mut f = self.file.lock().unwrap();
        f.current.truncate(len as usize);
        f.durable = f.current.clone();
        f.pending.clear();
        Ok(())
    }
}

#[derive(Clone, Default)]
pub struct SimStorage {
    pages: Arc<Mutex<BTreeMap<u64, Arc<SimPage>>>>,
    checkpoint: Arc<Mutex<Option<Vec<u8>>>>,
    faults: Arc<Faults>,
}

/// How much of the unsynced writes survive a simulated power loss, per page.
#[derive(Debug, Clone, Copy)]
pub struct Survival {
    /// Fraction (0..=1) of each page's pending writes kept, in order.
    pub keep_fraction: f64,
    /// Bytes of the next pending write kept after those (a torn write).
    pub torn_bytes: usize,
}

impl SimStorage {
    pub fn new() -> Self {
        SimStorage::default()
    }

    /// From now on page writes fail with "no space" once `bytes` more have been written.
    pub fn set_space_left(&self, bytes: Option<u64>) {
        *self.faults.space_left.lock().unwrap() = bytes;
    }

    pub fn set_fail_sync(&self, fail: bool) {
        self.faults.fail_sync.store(fail, Ordering::SeqCst);
    }

    /// Number of page writes so far.
    pub fn writes(&self) -> u64 {
        self.faults.writes.load(Ordering::SeqCst)
    }

    /// The storage as a killed process leaves it: every write kept (the page cache survives).
    pub fn after_kill(&self) -> SimStorage {
        self.power_loss(Survival {
            keep_fraction: 1.0,
            torn_bytes: 0,
        })
    }

    /// The storage as a power loss leaves it: synced data, plus part of the rest.
    pub fn power_loss(&self, s: Survival) -> SimStorage {
        let pages = self.pages.lock().unwrap();
        let mut out = BTreeMap::new();
        let faults = Arc::new(Faults::default());
        for (&num, page) in pages.iter() {
            let f = page.file.lock().unwrap();
            let mut data = f.durable.clone();
            let keep = ((f.pending.len() as f64) * s.keep_fraction).floor() as usize;
            for (off, bytes) in &f.pending[..keep] {
                apply(&mut data, *off, bytes);
            }
            if let Some((off, bytes)) = f.pending.get(keep) {
                let n = s.torn_bytes.min(bytes.len());
                apply(&mut data, *off, &bytes[..n]);
            }
            let file = SimFile {
                durable: data.clone(),
                pending: Vec::new(),
                current: data,
            };
            out.insert(
                num,
                Arc::new(SimPage {
                    file: Mutex::new(file),
                    faults: Arc::clone(&faults),
                }),
            );
        }
        SimStorage {
            pages: Arc::new(Mutex::new(out)),
            checkpoint: Arc::new(Mutex::new(self.checkpoint.lock().unwrap().clone())),
            faults,
        }
    }

    /// Number of page files.
    pub fn list_pages_for_test(&self) -> usize {
        self.pages.lock().unwrap().len()
    }

    /// Raw access for corruption tests: the page's current bytes.
    pub fn page_bytes(&self, num: u64) -> Option<Vec<u8>> {
        self.pages
            .lock()
            .unwrap()
            .get(&num)
            .map(|p| p.file.lock().unwrap().current.clone())
    }

    /// Overwrites bytes of a page, durably (corruption tests).
    pub fn corrupt(&self, num: u64, offset: u64, data: &[u8]) {
        let pages = self.pages.lock().unwrap();
        let mut f = pages[&num].file.lock().unwrap();
        apply(&mut f.current, offset, data);
        f.durable = f.current.clone();
    }
}

impl Storage for SimStorage {
    fn list_pages(&self) -> io::Result<Vec<u64>> {
        Ok(self.pages.lock().unwrap().keys().copied().collect())
    }

    fn create_page(&self, num: u64, header: &[u8]) -> io::Result<Arc<dyn PageFile>> {
        let mut pages = self.pages.lock().unwrap();
        if pages.contains_key(&num) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("page {num} exists"),
            ));
        }
        let file = SimFile {
            durable: header.to_vec(),
            pending: Vec::new(),
            current: header.to_vec(),
        };
        let page = Arc::new(SimPage {
            file: Mutex::new(file),
            faults: Arc::clone(&self.faults),
        });
        pages.insert(num, Arc::clone(&page));
        Ok(page)
    }

    fn open_page(&self, num: u64) -> io::Result<Arc<dyn PageFile>> {
        match self.pages.lock().unwrap().get(&num) {
            Some(p) => Ok(Arc::clone(p) as Arc<dyn PageFile>),
            None => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("page {num} not found"),
            )),
        }
    }

    fn remove_page(&self, num: u64) -> io::Result<()> {
        self.pages.lock().unwrap().remove(&num);
        Ok(())
    }

    fn read_checkpoint(&self) -> io::Result<Option<Vec<u8>>> {
        Ok(self.checkpoint.lock().unwrap().clone())
    }

    fn write_checkpoint(&self, data: &[u8]) -> io::Result<()> {
        *self.checkpoint.lock().unwrap() = Some(data.to_vec());
        Ok(())
    }

    fn describe(&self) -> String {
        "simulated storage".to_owned()
    }
}

//! All file I/O of the persisted queue goes through [`Storage`] and [`PageFile`], so tests can
//! swap the real file system ([`FsStorage`]) for a simulated one that tears writes, fails
//! fsyncs, runs out of space or "loses power" at any write (`crate::sim`).
//!
//! The contract the queue relies on:
//! - `write_at` puts bytes in the file (for the real file system: in the kernel's page cache,
//!   so they survive the process being killed) but not necessarily on disk;
//! - `sync` makes everything written to that file so far durable;
//! - `create_page` returns a file whose creation is durable (file and directory synced);
//! - `write_checkpoint` replaces the checkpoint atomically and durably: after a crash the
//!   checkpoint is either the old one or the new one, never empty or half-written.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub trait PageFile: Send + Sync {
    /// Writes all of `data` at `offset`.
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Reads exactly `buf.len()` bytes at `offset` (short only at end of file).
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
    /// Makes every byte written so far durable.
    fn sync(&self) -> io::Result<()>;
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Cuts the file to `len` bytes (and makes that durable).
    fn truncate(&self, len: u64) -> io::Result<()>;
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
}

pub trait Storage: Send + Sync {
    /// Numbers of the page files present, ascending.
    fn list_pages(&self) -> io::Result<Vec<u64>>;
    /// Creates page `num` with `header` as its first bytes; durable on return.
    fn create_page(&self, num: u64, header: &[u8]) -> io::Result<Arc<dyn PageFile>>;
    fn open_page(&self, num: u64) -> io::Result<Arc<dyn PageFile>>;
    fn remove_page(&self, num: u64) -> io::Result<()>;
    /// The checkpoint's bytes, or `None` if there is none yet.
    fn read_checkpoint(&self) -> io::Result<Option<Vec<u8>>>;
    /// Replaces the checkpoint atomically and durably.
    fn write_checkpoint(&self, data: &[u8]) -> io::Result<()>;
    /// A human-readable location for messages.
    fn describe(&self) -> String;
}

/// Page files `page.<N>` and a `checkpoint` file in one directory.
pub struct FsStorage {
    dir: PathBuf,
}

pub const CHECKPOINT_FILE: &str = "checkpoint";
const CHECKPOINT_TMP: &str = "checkpoint.tmp";
const PAGE_PREFIX: &str = "page.";

impl FsStorage {
    /// Uses (and creates) `dir`.
    pub fn new(dir: &Path) -> io::Result<FsStorage> {
        std::fs::create_dir_all(dir)?;
        Ok(FsStorage {
            dir: dir.to_path_buf(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn page_path(&self, num: u64) -> PathBuf {
        self.dir.join(format!("{PAGE_PREFIX}{num}"))
    }

    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }
}

struct FsPage {
    file: File,
}

impl PageFile for FsPage {
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(&self.file, data, offset)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match std::os::unix::fs::FileExt::read_at(
                &self.file,
                &mut buf[done..],
                offset + done as u64,
            ) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)?;
        self.file.sync_all()
    }
}

impl Storage for FsStorage {
    fn list_pages(&self) -> io::Result<Vec<u64>> {
        let mut pages = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let name = entry?.file_name();
            if let Some(n) = name.to_str().and_then(|n| n.strip_prefix(PAGE_PREFIX)) {
                if let Ok(num) = n.parse() {
                    pages.push(num);
                }
            }
        }
        pages.sort_unstable();
        Ok(pages)
    }

    fn create_page(&self, num: u64, header: &[u8]) -> io::Result<Arc<dyn PageFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(self.page_path(num))?;
        std::os::unix::fs::FileExt::write_all_at(&file, header, 0)?;
        // The header and the file's existence must be durable before any record relies on
        // them (Logstash #12040: a page whose header never reached the disk).
        file.sync_all()?;
        self.sync_dir()?;
        Ok(Arc::new(FsPage { file }))
    }

    fn open_page(&self, num: u64) -> io::Result<Arc<dyn PageFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(self.page_path(num))?;
        Ok(Arc::new(FsPage { file }))
    }

    fn remove_page(&self, num: u64) -> io::Result<()> {
        match std::fs::remove_file(self.page_path(num)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    fn read_checkpoint(&self) -> io::Result<Option<Vec<u8>>> {
        match std::fs::read(self.dir.join(CHECKPOINT_FILE)) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn write_checkpoint(&self, data: &[u8]) -> io::Result<()> {
        // tmp + fsync + rename + fsync(dir): never a 0-byte or half-written checkpoint
        // after a crash (Logstash #8218).
        let tmp = self.dir.join(CHECKPOINT_TMP);
        {
            let mut f = File::create(&tmp)?;
            io::Write::write_all(&mut f, data)?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, self.dir.join(CHECKPOINT_FILE))?;
        self.sync_dir()
    }

    fn describe(&self) -> String {
        self.dir.display().to_string()
    }
}

/// Takes the queue directory's lock file (`<dir>/.lock`), so that two processes never open
/// the same queue. The lock lasts as long as the returned file is open.
pub fn lock_dir(dir: &Path) -> io::Result<File> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(".lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!(
                "queue directory {} is in use by another process (lock file {})",
                dir.display(),
                path.display()
            ),
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

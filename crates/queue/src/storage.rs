//! The storage seam: the few byte-level operations the persisted queue performs on its
//! directory. Everything above raw bytes — how a page is created durably, how a checkpoint is
//! replaced atomically — is written against these traits, so that the crash simulator
//! ([`crate::sim`]) runs it too and can tear any write, lose any unsynced directory change,
//! fail a sync or run out of space between any two calls.
//!
//! The contract (what the real file system, [`FsStorage`], gives):
//! - [`QueueFile::write_at`] puts bytes in the file (for a real file system: in the kernel's
//!   page cache, so they survive the process being killed, not a power loss);
//! - [`QueueFile::sync`] makes the file's bytes and length durable;
//! - [`QueueFile::start_writeback`] is a hint that may do nothing and makes nothing durable
//!   (the real file system starts writing the range to the device without waiting);
//! - [`Storage::create`], [`Storage::remove`] and [`Storage::rename`] change the directory at
//!   once for every reader, and durably only after [`Storage::sync_dir`];
//! - overwriting bytes inside a file's current length needs no new disk space (true of ext4,
//!   xfs and tmpfs; not of copy-on-write file systems).

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One open file of the queue directory.
pub trait QueueFile: Send + Sync {
    /// Writes all of `data` at `offset`.
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Reads `buf.len()` bytes at `offset`; fewer only at the end of the file.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
    /// Makes every byte written so far, and the file's length, durable.
    fn sync(&self) -> io::Result<()>;
    /// Starts writing `len` bytes from `offset` to the device without waiting for them, so
    /// that a later [`QueueFile::sync`] has less to write. Only a hint: nothing is durable
    /// until `sync`. None by default.
    fn start_writeback(&self, _offset: u64, _len: u64) {}
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Cuts (or extends with zeros) the file to `len` bytes; durable after [`QueueFile::sync`].
    fn set_len(&self, len: u64) -> io::Result<()>;
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// The queue's directory.
pub trait Storage: Send + Sync {
    /// Names of the files in the directory, sorted.
    fn list(&self) -> io::Result<Vec<String>>;
    /// Opens an existing file for reading and writing.
    fn open(&self, name: &str) -> io::Result<Arc<dyn QueueFile>>;
    /// Creates a new, empty file; fails with `AlreadyExists` if there is one.
    fn create(&self, name: &str) -> io::Result<Arc<dyn QueueFile>>;
    /// Removes a file; a missing file is not an error.
    fn remove(&self, name: &str) -> io::Result<()>;
    /// Renames `from` to `to`, replacing `to` atomically.
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// Makes every create, remove and rename so far durable.
    fn sync_dir(&self) -> io::Result<()>;
    /// A human-readable location for messages.
    fn describe(&self) -> String;
    /// The directory on the real file system, where there is one: the in-flight journal
    /// ([`crate::inflight`]) maps a file there.
    fn local_dir(&self) -> Option<&Path> {
        None
    }
}

/// Files in one directory of the real file system.
pub struct FsStorage {
    dir: PathBuf,
}

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
}

struct FsFile {
    file: File,
}

impl QueueFile for FsFile {
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
        // fdatasync also writes the length when it changed: what reading the data back needs.
        self.file.sync_data()
    }

    fn start_writeback(&self, offset: u64, len: u64) {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain system call on a descriptor this file owns; no memory is passed.
        let r = unsafe {
            libc::sync_file_range(
                self.file.as_raw_fd(),
                offset as libc::off64_t,
                len as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            )
        };
        if r != 0 {
            // A hint: the sync writes the bytes anyway.
            tracing::trace!(error = %io::Error::last_os_error(), "sync_file_range failed");
        }
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }
}

impl Storage for FsStorage {
    fn list(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            if let Ok(name) = entry?.file_name().into_string() {
                names.push(name);
            }
        }
        names.sort_unstable();
        Ok(names)
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn QueueFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(self.dir.join(name))?;
        Ok(Arc::new(FsFile { file }))
    }

    fn create(&self, name: &str) -> io::Result<Arc<dyn QueueFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(self.dir.join(name))?;
        Ok(Arc::new(FsFile { file }))
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        match std::fs::remove_file(self.dir.join(name)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        std::fs::rename(self.dir.join(from), self.dir.join(to))
    }

    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }

    fn describe(&self) -> String {
        self.dir.display().to_string()
    }

    fn local_dir(&self) -> Option<&Path> {
        Some(&self.dir)
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

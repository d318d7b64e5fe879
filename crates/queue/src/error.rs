//! The queue's errors, layered: a [`StorageError`] is one failed call on the storage seam
//! with what it was doing; a [`FormatError`] is bytes that are not what the format says;
//! [`QueueError`] is what the queue's operations return, wrapping both.

use std::io;

/// A failed I/O call, with the action it was part of ("writing queue page 7").
#[derive(Debug, thiserror::Error)]
#[error("{action}: {source}")]
pub struct StorageError {
    pub action: String,
    #[source]
    pub source: io::Error,
}

impl StorageError {
    pub fn new(action: impl Into<String>, source: io::Error) -> Self {
        StorageError {
            action: action.into(),
            source,
        }
    }

    /// Whether the disk is full (the call may succeed once space is freed).
    pub fn is_disk_full(&self) -> bool {
        is_disk_full(&self.source)
    }
}

/// ENOSPC or EDQUOT: retrying can succeed once space is freed.
pub fn is_disk_full(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    )
}

/// Adds the action to an I/O result.
pub trait Context<T> {
    fn context(self, action: impl FnOnce() -> String) -> Result<T, StorageError>;
}

impl<T> Context<T> for io::Result<T> {
    fn context(self, action: impl FnOnce() -> String) -> Result<T, StorageError> {
        self.map_err(|e| StorageError::new(action(), e))
    }
}

/// Bytes that do not follow the on-disk format ([`crate::format`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    #[error("{what} is {len} bytes long, expected at least {need}")]
    TooShort {
        what: &'static str,
        len: usize,
        need: usize,
    },
    #[error("not a {what} (magic {found:02x?})")]
    BadMagic { what: &'static str, found: [u8; 4] },
    #[error("{what} format version {found}; this build reads version {supported}")]
    UnsupportedVersion {
        what: &'static str,
        found: u32,
        supported: u32,
    },
    #[error("{what} checksum mismatch")]
    Checksum { what: &'static str },
    #[error("{what} is inconsistent: {detail}")]
    Inconsistent { what: &'static str, detail: String },
}

impl FormatError {
    /// Whether the bytes come from a newer build (never "repair" those).
    pub fn is_newer_version(&self) -> bool {
        matches!(self, FormatError::UnsupportedVersion { found, supported, .. } if found > supported)
    }
}

/// Why the bytes at a record's position are not the expected record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    #[error("record checksum mismatch (sequence field {seq}, length {len})")]
    Checksum { seq: u64, len: u32 },
    #[error("record sequence {found}, expected {expected}")]
    Sequence { found: u64, expected: u64 },
    #[error("record of {len} bytes runs past the end of the valid data")]
    RunsPastEnd { len: u32 },
    #[error("a partial record header")]
    PartialHeader,
    #[error("zeros where a record should be")]
    Zeros,
    #[error("the page file ends before the records it is known to hold")]
    FileTooShort,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    #[error("the queue is closed")]
    Closed,
    #[error("an event of {size} bytes is over the 4 GiB a queue record can hold")]
    TooLarge { size: usize },
    #[error("invalid queue settings: {0}")]
    Config(String),
    #[error("queue at {location}: {source}")]
    Storage {
        location: String,
        #[source]
        source: StorageError,
    },
    #[error("queue at {location} cannot be read by this build: {source}")]
    Format {
        location: String,
        #[source]
        source: FormatError,
    },
    #[error("the queue failed earlier and accepts no more writes: {0}")]
    Failed(String),
}

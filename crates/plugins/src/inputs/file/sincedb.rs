//! The file input's sincedb: how far each file has been read, keyed by the file's identity
//! (inode and device major/minor, as Logstash's), so that a restart continues where the
//! last run stopped and a renamed file is not read again.
//!
//! The file is Logstash's v2 text format, one record per line:
//! `inode major minor position last_active_epoch_seconds path` (the path optional; a v1
//! line has only the first four columns). It is written whole to a temporary file then
//! renamed over the old one, so a crash leaves the old or the new version, never half of
//! one; `/dev/null` (or any non-regular file) keeps nothing. Records not touched for
//! `sincedb_clean_after` are dropped.
//!
//! Positions recorded here only ever cover lines already in the pipeline's queue: the input
//! sets them after its push returns (see the module above).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A file's identity: inode, device major, device minor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub inode: u64,
    pub major: u32,
    pub minor: u32,
}

impl Key {
    /// The identity of a file from its metadata.
    pub fn of(meta: &std::fs::Metadata) -> Key {
        use std::os::unix::fs::MetadataExt;
        let dev = meta.dev();
        Key {
            inode: meta.ino(),
            // glibc's gnu_dev_major / gnu_dev_minor.
            major: (((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)) as u32,
            minor: ((dev & 0xff) | ((dev >> 12) & !0xff)) as u32,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub position: u64,
    /// Seconds since the epoch when the record last changed.
    pub last_active: f64,
    pub path: Option<String>,
}

#[derive(Debug)]
pub struct Sincedb {
    /// Where it is kept; `None` for `/dev/null` and other non-files (nothing is kept).
    file: Option<PathBuf>,
    pub records: HashMap<Key, Record>,
    clean_after: Duration,
    dirty: bool,
    /// The file on disk was written without a sync since the last synced write.
    unsynced: bool,
}

pub fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Reads the records of a sincedb file's text; lines that are not records are skipped.
pub fn parse(text: &str, now: f64) -> HashMap<Key, Record> {
    let mut records = HashMap::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split(' ').filter(|p| !p.is_empty()).collect();
        if parts.len() < 4 {
            continue;
        }
        let (Ok(inode), Ok(major), Ok(minor), Ok(position)) = (
            parts[0].parse::<u64>(),
            parts[1].parse::<u32>(),
            parts[2].parse::<u32>(),
            parts[3].parse::<u64>(),
        ) else {
            continue;
        };
        let (last_active, path) = if parts.len() >= 5 {
            let Ok(t) = parts[4].parse::<f64>() else {
                continue;
            };
            let path = (parts.len() > 5).then(|| parts[5..].join(" "));
            (t, path)
        } else {
            (now, None)
        };
        records.insert(
            Key {
                inode,
                major,
                minor,
            },
            Record {
                position,
                last_active,
                path,
            },
        );
    }
    records
}

/// The text of a sincedb file, records sorted by identity.
pub fn render(records: &HashMap<Key, Record>) -> String {
    let mut keys: Vec<&Key> = records.keys().collect();
    keys.sort();
    let mut out = String::new();
    for k in keys {
        let r = &records[k];
        out.push_str(&format!(
            "{} {} {} {} {:.6}",
            k.inode, k.major, k.minor, r.position, r.last_active
        ));
        if let Some(p) = &r.path {
            out.push(' ');
            out.push_str(p);
        }
        out.push('\n');
    }
    out
}

impl Sincedb {
    /// Opens the sincedb at `path` (created, with its directory, when missing), dropping
    /// expired records.
    pub fn open(path: &Path, clean_after: Duration) -> std::io::Result<Sincedb> {
        let keeps = match std::fs::metadata(path) {
            Ok(m) => m.is_file(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(e),
        };
        if !keeps {
            return Ok(Sincedb {
                file: None,
                records: HashMap::new(),
                clean_after,
                dirty: false,
                unsynced: false,
            });
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::write(path, "")?;
                String::new()
            }
            Err(e) => return Err(e),
        };
        let now = now_secs();
        let mut db = Sincedb {
            file: Some(path.to_owned()),
            records: parse(&text, now),
            clean_after,
            dirty: false,
            unsynced: false,
        };
        db.expire(now);
        Ok(db)
    }

    fn expire(&mut self, now: f64) {
        let limit = self.clean_after.as_secs_f64();
        let before = self.records.len();
        self.records.retain(|_, r| now - r.last_active <= limit);
        self.dirty |= self.records.len() != before;
    }

    pub fn get(&self, key: &Key) -> Option<&Record> {
        self.records.get(key)
    }

    /// Records that `key` (at `path`) is read up to `position`.
    pub fn set(&mut self, key: Key, position: u64, path: &str) {
        let now = now_secs();
        let r = self.records.entry(key).or_insert_with(|| Record {
            position,
            last_active: now,
            path: None,
        });
        r.position = position;
        r.last_active = now;
        if r.path.as_deref() != Some(path) {
            r.path = Some(path.to_owned());
        }
        self.dirty = true;
    }

    pub fn remove(&mut self, key: &Key) {
        self.dirty |= self.records.remove(key).is_some();
    }

    /// Writes the records (when changed), atomically and synced.
    pub fn write(&mut self) -> std::io::Result<()> {
        self.write_with(true)
    }

    /// Writes the records (when changed), atomically; `sync`: and durably against a power
    /// loss (without it, the file survives the process being killed, not the machine).
    pub fn write_with(&mut self, sync: bool) -> std::io::Result<()> {
        self.expire(now_secs());
        let Some(path) = &self.file else {
            return Ok(());
        };
        // A synced write is due for changes, and for an unsynced write of them before.
        if !(self.dirty || sync && self.unsynced) {
            return Ok(());
        }
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(render(&self.records).as_bytes())?;
        if sync {
            f.sync_data()?;
        }
        drop(f);
        std::fs::rename(&tmp, path)?;
        self.dirty = false;
        self.unsynced = !sync;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_and_v2_lines_round_trip() {
        let text = "1234 8 1 500 1700000000.5 /var/log/a b.log\n99 0 2 7\nnot a record\n";
        let records = parse(text, 42.0);
        let k = |inode, major, minor| Key {
            inode,
            major,
            minor,
        };
        let a = &records[&k(1234, 8, 1)];
        assert_eq!(a.position, 500);
        assert_eq!(a.last_active, 1700000000.5);
        assert_eq!(a.path.as_deref(), Some("/var/log/a b.log"));
        // v1: no time (now) and no path.
        assert_eq!(
            records[&k(99, 0, 2)],
            Record {
                position: 7,
                last_active: 42.0,
                path: None
            }
        );
        assert_eq!(records.len(), 2);
        assert_eq!(parse(&render(&records), 0.0), records);
    }

    #[test]
    fn expired_records_go_and_dev_null_keeps_nothing() {
        let dir = std::env::temp_dir().join(format!("sluice-sincedb-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("sub/.sincedb_x");
        let mut db = Sincedb::open(&path, Duration::from_secs(3600)).unwrap();
        let key = Key {
            inode: 1,
            major: 2,
            minor: 3,
        };
        db.set(key, 10, "/a");
        db.records.insert(
            Key { inode: 5, ..key },
            Record {
                position: 1,
                last_active: now_secs() - 7200.0,
                path: None,
            },
        );
        db.write().unwrap();
        let again = Sincedb::open(&path, Duration::from_secs(3600)).unwrap();
        assert_eq!(again.records.len(), 1);
        assert_eq!(again.get(&key).unwrap().position, 10);

        let mut null = Sincedb::open(Path::new("/dev/null"), Duration::from_secs(1)).unwrap();
        null.set(key, 1, "/a");
        null.write().unwrap();
        assert!(null.file.is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

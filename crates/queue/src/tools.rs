//! `sluice queue inspect | verify | repair PATH`: looking into a queue directory offline.
//!
//! - inspect: what the checkpoint says (pages, sequence ranges, acked counts, bytes), plus
//!   records found after it in the head page. Reads headers and the head page only.
//! - verify: reads every record of every page and reports each problem (checksum, sequence,
//!   truncation). A torn tail on the newest page is normal after a crash and only noted.
//! - repair: keeps every intact unacked record: reads them all (resynchronising past damaged
//!   bytes), moves the old files into `repair-backup-<time>/` inside the directory, and writes
//!   a fresh queue holding exactly those records. It reports what it dropped and why.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use crate::format::{
    scan_record, u32_at, u64_at, Checkpoint, PageHeader, RecordBatch, Scan, PAGE_HEADER_LEN,
    RECORD_HEADER_LEN,
};
use crate::persisted::{PersistedQueue, QueueConfig, QueueError};
use crate::storage::{FsStorage, PageFile, Storage};

/// One problem found in a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub page: u64,
    pub offset: u64,
    pub message: String,
}

/// What reading a page found.
#[derive(Debug, Clone, Default)]
pub struct PageReport {
    pub num: u64,
    pub first_seq: u64,
    pub records: u64,
    pub bytes: u64,
    pub first_unacked_seq: Option<u64>,
    pub problems: Vec<Problem>,
    /// Intact records (sequence, payload) when collected for repair.
    pub kept: Vec<(u64, Vec<u8>)>,
}

fn read_all(file: &dyn PageFile) -> std::io::Result<Vec<u8>> {
    let len = file.len()? as usize;
    let mut buf = vec![0u8; len];
    let got = file.read_at(0, &mut buf)?;
    buf.truncate(got);
    Ok(buf)
}

/// Reads every record of a page. With `resync`, looks past damage for the next intact record.
fn read_page(num: u64, data: &[u8], keep_from: Option<u64>, resync: bool) -> PageReport {
    let mut rep = PageReport {
        num,
        bytes: data.len() as u64,
        ..PageReport::default()
    };
    let header = match PageHeader::decode(data) {
        Ok(h) => h,
        Err(e) => {
            rep.problems.push(Problem {
                page: num,
                offset: 0,
                message: e,
            });
            return rep;
        }
    };
    rep.first_seq = header.first_seq;
    let mut at = PAGE_HEADER_LEN;
    let mut seq = header.first_seq;
    while at < data.len() {
        match scan_record(&data[at..], seq) {
            Scan::Record { payload, size, .. } => {
                if keep_from.is_some_and(|k| seq >= k) {
                    rep.kept.push((seq, payload.to_vec()));
                }
                rep.records += 1;
                at += size;
                seq += 1;
            }
            Scan::Incomplete => {
                if data[at..].iter().any(|&b| b != 0) {
                    rep.problems.push(Problem {
                        page: num,
                        offset: at as u64,
                        message: format!(
                            "{} byte(s) of incomplete record at the end (a torn write)",
                            data.len() - at
                        ),
                    });
                }
                break;
            }
            Scan::Invalid(why) => {
                rep.problems.push(Problem {
                    page: num,
                    offset: at as u64,
                    message: why,
                });
                if !resync {
                    break;
                }
                // Look for the next offset holding an intact record with a later sequence.
                let next = (at + 1..data.len().saturating_sub(RECORD_HEADER_LEN)).find(|&o| {
                    let s = u64_at(data, o + 8);
                    s > seq
                        && s < seq + (data.len() as u64)
                        && (u32_at(data, o + 4) as usize) <= data.len() - o - RECORD_HEADER_LEN
                        && matches!(scan_record(&data[o..], s), Scan::Record { .. })
                });
                match next {
                    Some(o) => {
                        let s = u64_at(data, o + 8);
                        rep.problems.push(Problem {
                            page: num,
                            offset: o as u64,
                            message: format!("resumed at sequence {s}; records {seq}..{s} lost ({} bytes skipped)", o - at),
                        });
                        at = o;
                        seq = s;
                    }
                    None => break,
                }
            }
        }
    }
    rep
}

fn storage(dir: &Path) -> Result<FsStorage, QueueError> {
    if !dir.is_dir() {
        return Err(QueueError::Config(format!(
            "{} is not a queue directory",
            dir.display()
        )));
    }
    Ok(FsStorage::new(dir)?)
}

fn checkpoint(s: &FsStorage) -> Result<Option<Checkpoint>, QueueError> {
    match s.read_checkpoint()? {
        Some(b) => Checkpoint::decode(&b)
            .map(Some)
            .map_err(|e| QueueError::Corrupt {
                location: s.describe(),
                message: format!("checkpoint: {e}"),
            }),
        None => Ok(None),
    }
}

/// A human-readable summary of a queue directory.
pub fn inspect(dir: &Path) -> Result<String, QueueError> {
    let s = storage(dir)?;
    let cp = checkpoint(&s)?;
    let mut out = String::new();
    let files = s.list_pages()?;
    let _ = writeln!(out, "queue: {}", dir.display());
    match &cp {
        None => {
            let _ = writeln!(out, "checkpoint: none (new or never checkpointed)");
        }
        Some(cp) => {
            let _ = writeln!(
                out,
                "checkpoint: next sequence {}, {} page(s)",
                cp.next_seq,
                cp.pages.len()
            );
        }
    }
    let _ = writeln!(
        out,
        "{:>8} {:>14} {:>14} {:>10} {:>10} {:>12}",
        "page", "first seq", "last seq", "events", "acked", "bytes"
    );
    let (mut total_unacked, mut total_bytes) = (0u64, 0u64);
    let listed: Vec<_> = cp.as_ref().map(|c| c.pages.clone()).unwrap_or_default();
    for &num in &files {
        let file = s.open_page(num)?;
        let bytes = file.len()?;
        total_bytes += bytes;
        let entry = listed.iter().find(|p| p.num == num);
        let (first, count, acked) = match entry {
            Some(p) if Some(num) != files.last().copied() => {
                (p.first_seq, p.count, p.first_unacked_seq - p.first_seq)
            }
            _ => {
                // The head page (or one the checkpoint does not know): count its records.
                let rep = read_page(num, &read_all(file.as_ref())?, None, false);
                let acked = entry.map_or(0, |p| p.first_unacked_seq.saturating_sub(rep.first_seq));
                (rep.first_seq, rep.records, acked)
            }
        };
        total_unacked += count.saturating_sub(acked);
        let last = if count == 0 {
            "-".to_owned()
        } else {
            (first + count - 1).to_string()
        };
        let _ = writeln!(
            out,
            "{num:>8} {first:>14} {last:>14} {count:>10} {acked:>10} {bytes:>12}"
        );
    }
    let _ = writeln!(out, "unacked events: {total_unacked}");
    let _ = writeln!(out, "bytes on disk: {total_bytes}");
    Ok(out)
}

/// Reads every record. Returns the report text and whether the queue is healthy (a torn
/// tail on the newest page counts as healthy: recovery cuts it).
pub fn verify(dir: &Path) -> Result<(String, bool), QueueError> {
    let s = storage(dir)?;
    let cp = checkpoint(&s)?;
    let files = s.list_pages()?;
    let mut out = String::new();
    let mut healthy = true;
    let mut records = 0;
    for cp_page in cp.iter().flat_map(|c| c.pages.iter()) {
        let acked = cp_page.first_unacked_seq >= cp_page.first_seq + cp_page.count;
        if !files.contains(&cp_page.num) && !acked {
            healthy = false;
            let _ = writeln!(
                out,
                "page {}: listed in the checkpoint with unacked events, but missing",
                cp_page.num
            );
        }
    }
    for &num in &files {
        let file = s.open_page(num)?;
        let rep = read_page(num, &read_all(file.as_ref())?, None, true);
        records += rep.records;
        let newest = Some(num) == files.last().copied();
        if let Some(p) = cp
            .as_ref()
            .and_then(|c| c.pages.iter().find(|p| p.num == num))
        {
            if rep.records < p.count {
                healthy = false;
                let _ = writeln!(
                    out,
                    "page {num}: checkpoint records {} events, {} found",
                    p.count, rep.records
                );
            }
        }
        for p in &rep.problems {
            let torn_tail = newest && p.message.contains("torn write");
            if !torn_tail {
                healthy = false;
            }
            let _ = writeln!(
                out,
                "page {num} offset {}: {}{}",
                p.offset,
                p.message,
                if torn_tail { " (recovery cuts it)" } else { "" }
            );
        }
    }
    let _ = writeln!(
        out,
        "{} page(s), {records} record(s): {}",
        files.len(),
        if healthy { "OK" } else { "PROBLEMS FOUND" }
    );
    Ok((out, healthy))
}

/// Rewrites the queue with every intact unacked record. `page_capacity` sizes the new pages.
pub fn repair(dir: &Path, page_capacity: u64) -> Result<String, QueueError> {
    let _lock = crate::storage::lock_dir(dir)?;
    let s = storage(dir)?;
    let cp = checkpoint(&s).unwrap_or(None);
    let files = s.list_pages()?;
    let mut out = String::new();
    let mut kept: Vec<Vec<u8>> = Vec::new();
    let mut dropped = 0usize;
    for &num in &files {
        let file = s.open_page(num)?;
        let keep_from = cp
            .as_ref()
            .and_then(|c| c.pages.iter().find(|p| p.num == num))
            .map_or(0, |p| p.first_unacked_seq);
        let rep = read_page(num, &read_all(file.as_ref())?, Some(keep_from), true);
        for p in &rep.problems {
            dropped += 1;
            let _ = writeln!(out, "page {num} offset {}: {}", p.offset, p.message);
        }
        kept.extend(rep.kept.into_iter().map(|(_, payload)| payload));
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let backup = dir.join(format!("repair-backup-{stamp}"));
    std::fs::create_dir_all(&backup)?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let n = name.to_string_lossy();
        if n.starts_with("page.") || n.starts_with("checkpoint") {
            std::fs::rename(entry.path(), backup.join(&name))?;
        }
    }
    let cfg = QueueConfig {
        page_capacity,
        max_bytes: u64::MAX,
        max_events: 0,
        ..QueueConfig::default()
    };
    let q = PersistedQueue::open(Arc::new(FsStorage::new(dir)?), cfg)?;
    let mut batch = RecordBatch::new();
    for chunk in kept.chunks(1024) {
        batch.clear();
        for payload in chunk {
            batch.push(payload);
        }
        q.push(&mut batch)?;
    }
    q.shutdown();
    let _ = writeln!(
        out,
        "kept {} unacked record(s); {} problem(s) listed above; old files moved to {}",
        kept.len(),
        dropped,
        backup.display()
    );
    Ok(out)
}

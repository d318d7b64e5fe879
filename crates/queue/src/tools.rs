//! `sluice queue inspect | verify | repair PATH`: looking into a queue directory offline,
//! with the same [`survey`] that start-up uses, so that the three never disagree.
//!
//! - inspect: what start-up would find: pages, sequence ranges, acked counts, bytes, and the
//!   findings about the newest data (from the checkpoint, the head page and newer pages); then
//!   how the unacked records are stored: how many are compressed (`queue.compression`) and
//!   the ratio, from every record's length and, for a compressed one, its frame header.
//! - verify: reads every record of every page and lists every finding; exits 1 (through the
//!   caller) when events or ack state are lost. What a crash normally leaves (a torn tail, a
//!   page whose creation never completed, a leftover `checkpoint.tmp`) is noted only.
//! - repair: keeps every intact unacked record: moves the old files into
//!   `repair-backup-<time>/` inside the directory and writes a fresh queue holding exactly
//!   those records, reporting every gap, every dropped record and every lost piece of ack state.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use crate::checkpoint::CHECKPOINT_FILE;
use crate::compression;
use crate::error::{Context, QueueError};
use crate::format::RecordBatch;
use crate::page::page_num;
use crate::persisted::{PersistedQueue, QueueConfig};
use crate::storage::{FsStorage, Storage};
use crate::survey::{survey, Depth, Survey};

fn storage(dir: &Path) -> Result<FsStorage, QueueError> {
    if !dir.is_dir() {
        return Err(QueueError::Config(format!(
            "{} is not a queue directory",
            dir.display()
        )));
    }
    FsStorage::new(dir)
        .context(|| format!("opening {}", dir.display()))
        .map_err(|source| QueueError::Storage {
            location: dir.display().to_string(),
            source,
        })
}

fn findings(out: &mut String, s: &Survey) {
    for f in &s.findings {
        let _ = writeln!(
            out,
            "{}{f}",
            if f.is_problem() {
                "PROBLEM: "
            } else {
                "note: "
            }
        );
    }
}

fn checkpoint_line(out: &mut String, s: &Survey) {
    let _ = match (&s.checkpoint.current, s.checkpoint.legacy) {
        (None, _) => writeln!(out, "checkpoint: none usable"),
        (Some((_, cp)), true) => writeln!(
            out,
            "checkpoint: version 1, next sequence {}, {} page(s)",
            cp.next_seq,
            cp.pages.len()
        ),
        (Some((generation, cp)), false) => writeln!(
            out,
            "checkpoint: generation {generation}, next sequence {}, {} page(s)",
            cp.next_seq,
            cp.pages.len()
        ),
    };
}

/// A human-readable summary of a queue directory.
pub fn inspect(dir: &Path) -> Result<String, QueueError> {
    let storage = storage(dir)?;
    let s = survey(&storage, Depth::Open, None)?;
    let mut out = String::new();
    let _ = writeln!(out, "queue: {}", dir.display());
    checkpoint_line(&mut out, &s);
    let _ = writeln!(
        out,
        "{:>8} {:>14} {:>14} {:>10} {:>10} {:>12}",
        "page", "first seq", "last seq", "events", "acked", "bytes"
    );
    for p in &s.pages {
        let e = &p.entry;
        let last = if e.count == 0 {
            "-".to_owned()
        } else {
            (e.end_seq() - 1).to_string()
        };
        let _ = writeln!(
            out,
            "{:>8} {:>14} {last:>14} {:>10} {:>10} {:>12}",
            e.num,
            e.first_seq,
            e.count,
            e.count - e.unacked(),
            p.file_len
        );
    }
    findings(&mut out, &s);
    let _ = writeln!(
        out,
        "unacked events: {}",
        s.unacked() - (s.lost() - s.lost_before_reading())
    );
    let _ = writeln!(
        out,
        "bytes on disk: {}",
        s.pages.iter().map(|p| p.file_len).sum::<u64>()
    );
    compression_line(&mut out, &storage)?;
    Ok(out)
}

/// How the unacked records are stored (`queue.compression`): reads every record, but only
/// the frame header of a compressed one.
fn compression_line(out: &mut String, storage: &FsStorage) -> Result<(), QueueError> {
    let (mut records, mut packed, mut stored, mut plain, mut unreadable) = (0u64, 0u64, 0, 0, 0);
    survey(
        storage,
        Depth::Full,
        Some(&mut |_, payload: &[u8]| {
            records += 1;
            stored += payload.len() as u64;
            packed += u64::from(compression::is_compressed(payload));
            match compression::plain_len(payload) {
                Some(n) => plain += n,
                None => unreadable += 1,
            }
        }),
    )?;
    if records == 0 {
        return Ok(());
    }
    let _ = write!(
        out,
        "compression: {packed} of {records} record(s) compressed (zstd); payloads {stored} bytes stored, {plain} uncompressed, ratio {:.2}",
        plain as f64 / stored.max(1) as f64
    );
    if unreadable > 0 {
        let _ = write!(
            out,
            "; {unreadable} compressed record(s) with an unreadable frame header"
        );
    }
    let _ = writeln!(out);
    Ok(())
}

/// Reads every record. Returns the report and whether the queue is healthy (nothing lost:
/// what a crash normally leaves behind counts as healthy).
pub fn verify(dir: &Path) -> Result<(String, bool), QueueError> {
    let s = survey(&storage(dir)?, Depth::Full, None)?;
    let mut out = String::new();
    checkpoint_line(&mut out, &s);
    findings(&mut out, &s);
    let healthy = s.is_healthy();
    let _ = writeln!(
        out,
        "{} page(s), {} intact unacked record(s), {} event(s) lost: {}",
        s.pages.len(),
        s.records,
        s.lost(),
        if healthy { "OK" } else { "PROBLEMS FOUND" }
    );
    Ok((out, healthy))
}

/// Rewrites the queue with every intact unacked record. `page_capacity` sizes the new pages.
pub fn repair(dir: &Path, page_capacity: u64) -> Result<String, QueueError> {
    let fail = |action: String| {
        let location = dir.display().to_string();
        move |source| QueueError::Storage {
            location,
            source: crate::error::StorageError::new(action, source),
        }
    };
    let _lock =
        crate::storage::lock_dir(dir).map_err(fail("locking the queue directory".into()))?;
    let s = storage(dir)?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let backup_name = format!("repair-backup-{stamp}");
    let backup = dir.join(&backup_name);
    std::fs::create_dir_all(&backup).map_err(fail(format!("creating {}", backup.display())))?;
    let moved: Vec<String> = s
        .list()
        .map_err(fail("listing the queue directory".into()))?
        .into_iter()
        .filter(|n| page_num(n).is_some() || n.starts_with(CHECKPOINT_FILE))
        .collect();
    for name in &moved {
        std::fs::rename(dir.join(name), backup.join(name))
            .map_err(fail(format!("moving {name} into {backup_name}")))?;
    }
    let restore = || {
        for name in &moved {
            let _ = std::fs::rename(backup.join(name), dir.join(name));
        }
    };
    let cfg = QueueConfig {
        page_capacity,
        max_bytes: u64::MAX,
        max_events: 0,
        ..QueueConfig::default()
    };
    // The kept records are numbered on from every sequence the old queue gave out: a
    // sequence names one event for good (replay-safe ids are made of it; Elasticsearch
    // would overwrite a delivered document with another event carrying its id).
    let numbered = match survey(&storage(&backup)?, Depth::Open, None) {
        Ok(s) => s.next_seq,
        Err(e) => {
            restore();
            return Err(e);
        }
    };
    let q = match PersistedQueue::open_numbering_from(
        Arc::new(FsStorage::new(dir).map_err(fail(format!("opening {}", dir.display())))?),
        cfg,
        numbered,
    ) {
        Ok(q) => q,
        Err(e) => {
            restore();
            return Err(e);
        }
    };
    // The old files are read from the backup and their intact unacked records pushed as
    // they are found, a batch at a time.
    let mut batch = RecordBatch::new();
    let mut push_error: Option<QueueError> = None;
    let mut kept = 0u64;
    let push = |batch: &mut RecordBatch, err: &mut Option<QueueError>| {
        if err.is_none() && !batch.is_empty() {
            if let Err(e) = q.push(batch) {
                *err = Some(e);
            }
        }
        batch.clear();
    };
    let found = survey(
        &storage(&backup)?,
        Depth::Full,
        Some(&mut |_seq, payload| {
            batch.push(payload);
            kept += 1;
            if batch.len() >= 1024 {
                push(&mut batch, &mut push_error);
            }
        }),
    );
    push(&mut batch, &mut push_error);
    q.shutdown();
    let found = match (found, push_error) {
        (Ok(f), None) => f,
        (Err(e), _) | (Ok(_), Some(e)) => {
            drop(q);
            // The partial new queue goes; the old files come back.
            for name in FsStorage::new(dir)
                .and_then(|s| s.list())
                .unwrap_or_default()
                .into_iter()
                .filter(|n| page_num(n).is_some() || n.starts_with(CHECKPOINT_FILE))
            {
                let _ = std::fs::remove_file(dir.join(name));
            }
            restore();
            return Err(e);
        }
    };
    let mut out = String::new();
    findings(&mut out, &found);
    let problems = found.findings.iter().filter(|f| f.is_problem()).count();
    let _ = writeln!(
        out,
        "kept {kept} unacked record(s); {} event(s) lost; {problems} problem(s) listed above; kept records numbered from {numbered} on (no sequence is given twice); old files moved to {}",
        found.lost(),
        backup.display()
    );
    Ok(out)
}

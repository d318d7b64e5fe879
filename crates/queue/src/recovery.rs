//! Opening a queue directory after a stop or a crash.
//!
//! The checkpoint lists the pages and their ack state. Tail pages are trusted as listed and
//! not read (a large backlog opens in milliseconds; their records are checked when read).
//! The head page as of the checkpoint, and any page created after it, are scanned from their
//! last durable position to the first record that is incomplete, fails its checksum or breaks
//! the sequence; the file is cut there (a torn write). Page files no checkpoint mentions below
//! the listed ones were fully acked and pending deletion: they are deleted.

use crate::format::{scan_record, Checkpoint, PageCheckpoint, PageHeader, Scan, PAGE_HEADER_LEN};
use crate::persisted::QueueError;
use crate::storage::{PageFile, Storage};

pub struct Recovered {
    pub pages: Vec<PageCheckpoint>,
    pub next_seq: u64,
    pub last_page_num: Option<u64>,
    pub stale_pages: Vec<u64>,
    /// What recovery did, for the log.
    pub notes: Vec<String>,
}

const SCAN_CHUNK: usize = 4 << 20;

/// The result of scanning a page from some position.
pub struct ScanResult {
    pub count: u64,
    pub end_offset: u64,
    /// Why the scan stopped before the end of the file, if it did.
    pub stopped: Option<String>,
    pub file_len: u64,
}

/// Scans records from `offset` (expecting `seq` first) to the end of valid data.
pub fn scan_page(
    file: &dyn PageFile,
    mut offset: u64,
    mut seq: u64,
) -> std::io::Result<ScanResult> {
    let file_len = file.len()?;
    let mut count = 0;
    let mut buf = vec![0u8; 0];
    let mut buf_offset = offset;
    loop {
        let at = (offset - buf_offset) as usize;
        match scan_record(&buf[at.min(buf.len())..], seq) {
            Scan::Record { size, .. } => {
                offset += size as u64;
                seq += 1;
                count += 1;
            }
            Scan::Incomplete => {
                let have = buf.len().saturating_sub(at);
                if offset + have as u64 >= file_len {
                    let stopped = (offset < file_len).then(|| {
                        if have >= 16 && buf[at..].iter().take(16).all(|&b| b == 0) {
                            "zeroed space".to_owned()
                        } else {
                            "incomplete record".to_owned()
                        }
                    });
                    return Ok(ScanResult {
                        count,
                        end_offset: offset,
                        stopped,
                        file_len,
                    });
                }
                // Refill from `offset`, at least one chunk and at least the record's length.
                let need = if have >= 16 {
                    16 + crate::format::u32_at(&buf[at..], 4) as usize
                } else {
                    16
                };
                let len = need.max(SCAN_CHUNK).min((file_len - offset) as usize);
                buf.resize(len, 0);
                let got = file.read_at(offset, &mut buf)?;
                buf.truncate(got);
                buf_offset = offset;
                if got < need.min(len) {
                    return Ok(ScanResult {
                        count,
                        end_offset: offset,
                        stopped: Some("incomplete record".into()),
                        file_len,
                    });
                }
            }
            Scan::Invalid(why) => {
                return Ok(ScanResult {
                    count,
                    end_offset: offset,
                    stopped: Some(why),
                    file_len,
                })
            }
        }
    }
}

pub fn recover(storage: &dyn Storage) -> Result<Recovered, QueueError> {
    let corrupt = |message: String| QueueError::Corrupt {
        location: storage.describe(),
        message,
    };
    let checkpoint = match storage.read_checkpoint()? {
        Some(bytes) => {
            Checkpoint::decode(&bytes).map_err(|e| corrupt(format!("checkpoint: {e}")))?
        }
        None => Checkpoint::default(),
    };
    let files = storage.list_pages()?;
    let mut notes = Vec::new();
    let mut pages: Vec<PageCheckpoint> = Vec::new();
    let mut stale = Vec::new();

    // Tail pages as the checkpoint lists them (all but the last).
    let (tails, head) = match checkpoint.pages.split_last() {
        Some((h, t)) => (t, Some(*h)),
        None => (&[][..], None),
    };
    for p in tails {
        let fully_acked = p.first_unacked_seq >= p.first_seq + p.count;
        if !files.contains(&p.num) {
            if fully_acked {
                continue;
            }
            return Err(corrupt(format!(
                "page {} holds {} unacked events but its file is missing",
                p.num,
                p.first_seq + p.count - p.first_unacked_seq
            )));
        }
        pages.push(*p);
    }
    let listed: Vec<u64> = checkpoint.pages.iter().map(|p| p.num).collect();
    let head_num = head.map(|h| h.num);
    for &f in &files {
        if !listed.contains(&f) && head_num.is_some_and(|h| f < h) {
            stale.push(f);
        }
    }
    if !stale.is_empty() {
        notes.push(format!(
            "{} fully acked page(s) left over, deleting",
            stale.len()
        ));
    }

    // Pages to scan: the checkpoint's head, then every newer file.
    let mut to_scan: Vec<(u64, Option<PageCheckpoint>)> = Vec::new();
    if let Some(h) = head {
        if files.contains(&h.num) {
            to_scan.push((h.num, Some(h)));
        } else if h.first_unacked_seq < h.first_seq + h.count {
            return Err(corrupt(format!("head page {} is missing", h.num)));
        }
    }
    for &f in &files {
        if head_num.is_none_or(|h| f > h) {
            to_scan.push((f, None));
        }
    }
    let last_file = files.last().copied();
    for (num, known) in to_scan {
        let file = storage.open_page(num)?;
        let (mut entry, start) = match known {
            Some(k) => (k, k.bytes),
            None => {
                let mut hdr = [0u8; PAGE_HEADER_LEN];
                let got = file.read_at(0, &mut hdr)?;
                match PageHeader::decode(&hdr[..got]) {
                    Ok(h) if h.num == num => (
                        PageCheckpoint {
                            num,
                            first_seq: h.first_seq,
                            count: 0,
                            bytes: PAGE_HEADER_LEN as u64,
                            first_unacked_seq: h.first_seq,
                            first_unacked_offset: PAGE_HEADER_LEN as u64,
                        },
                        PAGE_HEADER_LEN as u64,
                    ),
                    Ok(h) => {
                        return Err(corrupt(format!(
                            "page file {num} says it is page {}",
                            h.num
                        )))
                    }
                    Err(e) if Some(num) == last_file => {
                        // A page whose creation never completed: nothing can be in it.
                        notes.push(format!("page {num} has no valid header ({e}); removed"));
                        drop(file);
                        storage.remove_page(num)?;
                        continue;
                    }
                    Err(e) => return Err(corrupt(format!("page {num}: {e}"))),
                }
            }
        };
        let scan = scan_page(file.as_ref(), start, entry.first_seq + entry.count)?;
        if scan.count > 0 {
            notes.push(format!(
                "page {num}: recovered {} event(s) written after the last checkpoint",
                scan.count
            ));
        }
        if scan.count > 0 {
            // Records found by scanning may exist only in the page cache (the previous process
            // was killed before syncing them). The next checkpoint will vouch for them, so
            // they must be on disk first.
            file.sync()?;
        }
        entry.count += scan.count;
        entry.bytes = scan.end_offset;
        if scan.file_len > scan.end_offset {
            if let Some(why) = &scan.stopped {
                if why != "zeroed space" {
                    notes.push(format!(
                        "page {num}: cut {} byte(s) of torn tail at offset {} ({why})",
                        scan.file_len - scan.end_offset,
                        scan.end_offset
                    ));
                }
            }
            file.truncate(scan.end_offset)?;
        }
        pages.push(entry);
    }
    let next_seq = pages
        .last()
        .map_or(checkpoint.next_seq, |p| p.first_seq + p.count)
        .max(if pages.is_empty() {
            checkpoint.next_seq
        } else {
            0
        });
    Ok(Recovered {
        pages,
        next_seq,
        last_page_num: last_file.or(head_num),
        stale_pages: stale,
        notes,
    })
}

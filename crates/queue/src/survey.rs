//! Reading a queue directory: the one routine behind start-up ([`crate::recovery`]),
//! `queue inspect`, `queue verify` and `queue repair` ([`crate::tools`]), so that all four
//! see the same pages, the same records and the same damage.
//!
//! What it reads, by [`Depth`]:
//! - [`Depth::Open`] (start-up, inspect): the checkpoint; tail pages as it lists them, not read
//!   (a large backlog opens in milliseconds; the reader checks their records as it goes); the
//!   checkpoint's head page from its durable prefix on, and every newer page, record by record.
//! - [`Depth::Full`] (verify, repair): every record of every page.
//!
//! What it concludes is a list of [`Finding`]s. Some are what a crash normally leaves and cost
//! nothing (a torn tail, a page whose creation never completed, a leftover `checkpoint.tmp`);
//! the others lose events (damaged records, a missing page, a gap between pages) or ack state
//! (events that will be delivered again), and each says how many and which sequences.

use std::fmt;
use std::io;
use std::ops::Range;

use crate::checkpoint::{self, CheckpointRead, CHECKPOINT_TMP};
use crate::error::{Context, FormatError, QueueError, RecordError, StorageError};
use crate::format::{PageCheckpoint, PageHeader, PAGE_HEADER_LEN};
use crate::page::{list_pages, page_name};
use crate::scan::{Damage, End, RecordCursor, Step};
use crate::storage::Storage;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    Open,
    Full,
}

/// Something a survey found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Finding {
    /// Bytes after the last intact record of the newest data (a write cut by a crash, or
    /// zeros); start-up cuts them off.
    TornTail {
        page: u64,
        offset: u64,
        bytes: u64,
        reason: Option<RecordError>,
    },
    /// The newest page file holds no header and no record: its creation never completed.
    IncompletePage { page: u64, bytes: u64 },
    /// A `checkpoint.tmp` left by a crash while the checkpoint file was being replaced.
    LeftoverTemp,
    /// Fully acked pages whose deletion a crash interrupted.
    StalePages { pages: Vec<u64> },
    /// Records written after the last checkpoint, found by scanning.
    RecordsAfterCheckpoint { page: u64, count: u64 },
    /// A checkpoint slot that cannot be read; the other slot's generation is in force. When
    /// the damaged slot may be the newer one (`fell_back`), acks recorded after that
    /// generation are lost and their events may be delivered again (normal after a crash in
    /// the middle of a checkpoint write, a problem otherwise: `queue verify` reports it).
    CheckpointSlotDamaged {
        slot: usize,
        reason: FormatError,
        using: u64,
        fell_back: bool,
    },
    /// No usable checkpoint: which events were acked is unknown, so every record found will
    /// be delivered (again).
    AckStateLost { events: u64, reason: String },
    /// A page the checkpoint in force lists as unacked is missing, below every page present,
    /// while a newer checkpoint slot is unreadable: most likely acked and deleted after the
    /// newer checkpoint.
    PageGoneAfterDamagedCheckpoint { page: u64, seqs: Range<u64> },
    /// A page's header cannot be read; its records are found by their own headers.
    PageHeaderDamaged { page: u64, reason: String },
    /// Bytes inside a page that hold no intact record, with intact records after them.
    Damaged {
        page: u64,
        damage: Damage,
        /// How many of the lost sequences were acked already (no loss for those).
        acked: u64,
    },
    /// A page ends before the records it is known to hold (truncated, or damaged up to its
    /// end).
    LostTail {
        page: u64,
        offset: u64,
        lost: Range<u64>,
        acked: u64,
        reason: RecordError,
    },
    /// A page file that holds unacked records is missing.
    MissingPage { page: u64, lost: Range<u64> },
    /// Sequences missing between two pages (with the page files missing there, if any).
    Gap {
        before_page: u64,
        missing_pages: Range<u64>,
        lost: Range<u64>,
    },
}

fn range(r: &Range<u64>) -> String {
    match r.end - r.start {
        0 => "none".to_owned(),
        1 => format!("sequence {}", r.start),
        _ => format!("sequences {}..={}", r.start, r.end - 1),
    }
}

impl Finding {
    /// Unacked events this finding loses.
    pub fn lost(&self) -> u64 {
        match self {
            Finding::Damaged { damage, acked, .. } => damage.lost.end - damage.lost.start - acked,
            Finding::LostTail { lost, acked, .. } => lost.end - lost.start - acked,
            Finding::MissingPage { lost, .. } | Finding::Gap { lost, .. } => lost.end - lost.start,
            _ => 0,
        }
    }

    /// Whether `queue verify` calls the queue damaged: events lost, or ack state lost.
    pub fn is_problem(&self) -> bool {
        self.lost() > 0
            || matches!(self, Finding::AckStateLost { events, .. } if *events > 0)
            || matches!(
                self,
                Finding::CheckpointSlotDamaged {
                    fell_back: true,
                    ..
                }
            )
    }

    /// Losses inside bytes the reader will meet again (it counts those when it skips them).
    fn met_by_reader(&self) -> bool {
        matches!(self, Finding::Damaged { .. })
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::TornTail {
                page,
                offset,
                bytes,
                reason,
            } => match reason {
                Some(r) => write!(f, "page {page}: {bytes} byte(s) of torn tail at offset {offset} ({r}); start-up cuts them (normal after a crash)"),
                None => write!(f, "page {page}: {bytes} zero byte(s) at the end (offset {offset}); start-up cuts them (normal after a crash)"),
            },
            Finding::IncompletePage { page, bytes } => write!(
                f,
                "page {page}: {bytes} byte(s), no header and no record: its creation never completed; start-up removes it (normal after a crash)"
            ),
            Finding::LeftoverTemp => write!(
                f,
                "{CHECKPOINT_TMP} left by a crash during a checkpoint replacement; ignored and removed at start-up"
            ),
            Finding::StalePages { pages } => write!(
                f,
                "{} fully acked page(s) left by a crash before their deletion ({pages:?}); deleted after the next checkpoint",
                pages.len()
            ),
            Finding::RecordsAfterCheckpoint { page, count } => {
                write!(f, "page {page}: {count} record(s) written after the last checkpoint")
            }
            Finding::CheckpointSlotDamaged {
                slot,
                reason,
                using,
                fell_back: true,
            } => write!(
                f,
                "checkpoint slot {slot} cannot be read ({reason}) and may be the newest; fell back to generation {using} from the other slot: acks recorded after it may be lost, and their events delivered again (normal after a crash during a checkpoint write, damage otherwise)"
            ),
            Finding::CheckpointSlotDamaged {
                slot,
                reason,
                using,
                fell_back: false,
            } => write!(
                f,
                "checkpoint slot {slot} cannot be read ({reason}); it is older than generation {using} in the other slot, which is in force: nothing lost"
            ),
            Finding::AckStateLost { events, reason } => write!(
                f,
                "ack state lost ({reason}): up to {events} event(s) may be delivered again"
            ),
            Finding::PageGoneAfterDamagedCheckpoint { page, seqs } => write!(
                f,
                "page {page} ({}) is missing; the newer checkpoint slot is unreadable, so it was most likely acked and deleted after it (not counted as lost)",
                range(seqs)
            ),
            Finding::PageHeaderDamaged { page, reason } => write!(
                f,
                "page {page}: header cannot be read ({reason}); records recovered from their own headers"
            ),
            Finding::Damaged {
                page,
                damage,
                acked,
            } => {
                write!(
                    f,
                    "page {page} offset {}: {} damaged byte(s) ({}): {} lost",
                    damage.offset,
                    damage.bytes,
                    damage.reason,
                    range(&damage.lost)
                )?;
                if *acked > 0 {
                    write!(f, " ({acked} of them acked already)")?;
                }
                Ok(())
            }
            Finding::LostTail {
                page,
                offset,
                lost,
                acked,
                reason,
            } => {
                write!(
                    f,
                    "page {page} offset {offset}: no intact record to the end of the page ({reason}): {} lost",
                    range(lost)
                )?;
                if *acked > 0 {
                    write!(f, " ({acked} of them acked already)")?;
                }
                Ok(())
            }
            Finding::MissingPage { page, lost } => {
                write!(f, "page {page} is missing: {} lost", range(lost))
            }
            Finding::Gap {
                before_page,
                missing_pages,
                lost,
            } => match missing_pages.end - missing_pages.start {
                0 => write!(f, "{} missing before page {before_page}: lost", range(lost)),
                1 => write!(
                    f,
                    "page {} is missing: {} lost",
                    missing_pages.start,
                    range(lost)
                ),
                _ => write!(
                    f,
                    "pages {}..={} are missing: {} lost",
                    missing_pages.start,
                    missing_pages.end - 1,
                    range(lost)
                ),
            },
        }
    }
}

/// One page as the queue will use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageInfo {
    /// Count and bytes run to the last intact record (damaged records inside included).
    pub entry: PageCheckpoint,
    pub file_len: u64,
    /// Records found by scanning beyond the checkpoint (they must be synced before a
    /// checkpoint vouches for them).
    pub found_after_checkpoint: u64,
}

/// What a survey found, and what start-up does about it.
#[derive(Debug, Default)]
pub struct Survey {
    pub checkpoint: CheckpointRead,
    pub pages: Vec<PageInfo>,
    pub next_seq: u64,
    pub findings: Vec<Finding>,
    /// Torn tails to cut: (page, length to keep).
    pub cuts: Vec<(u64, u64)>,
    /// Files to remove: a leftover `checkpoint.tmp`, pages whose creation never completed.
    pub removals: Vec<String>,
    /// Fully acked pages to delete once a checkpoint no longer lists them.
    pub stale: Vec<u64>,
    /// The highest page number in use (pages are numbered on from it).
    pub last_page_num: u64,
    /// Intact unacked records found (counted with [`Depth::Full`] only).
    pub records: u64,
}

impl Survey {
    /// Unacked events lost, by every finding.
    pub fn lost(&self) -> u64 {
        self.findings.iter().map(Finding::lost).sum()
    }

    /// Unacked events lost where the reader will not meet the damage (missing pages, gaps):
    /// start-up counts these; the reader counts the rest as it skips them.
    pub fn lost_before_reading(&self) -> u64 {
        self.findings
            .iter()
            .filter(|f| !f.met_by_reader())
            .map(Finding::lost)
            .sum()
    }

    pub fn unacked(&self) -> u64 {
        self.pages.iter().map(|p| p.entry.unacked()).sum()
    }

    pub fn is_healthy(&self) -> bool {
        !self.findings.iter().any(Finding::is_problem)
    }
}

/// Called with each intact unacked record (sequence, payload) in [`Depth::Full`].
pub type Visit<'a> = &'a mut dyn FnMut(u64, &[u8]);

/// Reads the queue directory in `storage`. Only a checkpoint or page from a newer build, or
/// an I/O error, is an error: damage is a finding.
pub fn survey(
    storage: &dyn Storage,
    depth: Depth,
    visit: Option<Visit<'_>>,
) -> Result<Survey, QueueError> {
    Surveyor {
        storage,
        depth,
        visit,
        out: Survey::default(),
    }
    .run()
    .map_err(|e| match e {
        Failure::Storage(source) => QueueError::Storage {
            location: storage.describe(),
            source,
        },
        Failure::Format(source) => QueueError::Format {
            location: storage.describe(),
            source,
        },
    })
}

enum Failure {
    Storage(StorageError),
    Format(FormatError),
}

impl From<StorageError> for Failure {
    fn from(e: StorageError) -> Self {
        Failure::Storage(e)
    }
}

impl From<checkpoint::ReadError> for Failure {
    fn from(e: checkpoint::ReadError) -> Self {
        match e {
            checkpoint::ReadError::Storage(s) => Failure::Storage(s),
            checkpoint::ReadError::Format(f) => Failure::Format(f),
        }
    }
}

struct Surveyor<'s, 'v> {
    storage: &'s dyn Storage,
    depth: Depth,
    visit: Option<Visit<'v>>,
    out: Survey,
}

/// How to scan one page.
struct Plan {
    num: u64,
    /// The checkpoint's entry, if it lists the page.
    listed: Option<PageCheckpoint>,
    /// Whether records may follow the listed ones (the head page and newer pages).
    open_ended: bool,
}

impl Surveyor<'_, '_> {
    fn run(mut self) -> Result<Survey, Failure> {
        let s = self.storage;
        let cp = checkpoint::read(s)?;
        let names = s.list().context(|| "listing the queue directory".into())?;
        if names.iter().any(|n| n == CHECKPOINT_TMP) {
            self.out.findings.push(Finding::LeftoverTemp);
            self.out.removals.push(CHECKPOINT_TMP.to_owned());
        }
        let files = list_pages(s).context(|| "listing the queue directory".into())?;
        let listed: Vec<PageCheckpoint> =
            cp.checkpoint().map(|c| c.pages.clone()).unwrap_or_default();
        let fallback = cp.current.as_ref().map(|(g, _)| *g);
        for (slot, reason) in &cp.damaged_slots {
            if let Some(using) = fallback {
                self.out.findings.push(Finding::CheckpointSlotDamaged {
                    slot: *slot,
                    reason: reason.clone(),
                    using,
                    fell_back: cp.fell_back,
                });
            }
        }
        let fell_back = fallback.is_some() && !cp.damaged_slots.is_empty();
        let ack_state_lost = match (&cp.current, cp.exists, cp.damaged_slots.first()) {
            (Some(_), _, _) => None,
            (None, false, _) if files.is_empty() => None,
            (None, false, _) => Some("no checkpoint file".to_owned()),
            (None, true, Some((_, e))) => Some(format!("the checkpoint cannot be read: {e}")),
            (None, true, None) => Some("the checkpoint is empty".to_owned()),
        };
        let head_num = listed.last().map(|p| p.num);
        // Every record below the checkpoint's next sequence is in a page it lists, or was
        // acked (its page released) when it was written: the head page is always listed,
        // except in the middle of a rollover, when all pages may have been released. So a page
        // it does not list that was there when it was written (below its last listed page, or
        // starting below its next sequence) is an acked page a crash kept from being deleted;
        // and a page made after it starts at its next sequence or later.
        let cp_next = cp.checkpoint().map(|c| c.next_seq);
        let mut stale: Vec<u64> = Vec::new();
        for &f in files
            .iter()
            .filter(|f| !listed.iter().any(|p| p.num == **f))
        {
            let is_stale = match cp_next {
                None => false,
                Some(next) => {
                    head_num.is_some_and(|h| f < h) || self.first_seq(f)?.is_some_and(|s| s < next)
                }
            };
            if is_stale {
                stale.push(f);
            }
        }
        if !stale.is_empty() {
            self.out.findings.push(Finding::StalePages {
                pages: stale.clone(),
            });
            self.out.stale = stale;
        }
        let mut plans: Vec<Plan> = listed
            .iter()
            .enumerate()
            .map(|(i, p)| Plan {
                num: p.num,
                listed: Some(*p),
                open_ended: i + 1 == listed.len(),
            })
            .collect();
        plans.extend(
            files
                .iter()
                .filter(|f| head_num.is_none_or(|h| **f > h) && !self.out.stale.contains(f))
                .map(|&num| Plan {
                    num,
                    listed: None,
                    open_ended: true,
                }),
        );
        self.out.last_page_num = files
            .last()
            .copied()
            .into_iter()
            .chain(head_num)
            .max()
            .unwrap_or(0);
        let mut prev_end: Option<u64> = None;
        let mut prev_num: Option<u64> = None;
        let first_present = files.first().copied();
        let newest = files.last().copied();
        let mut past_listed = false;
        for plan in plans {
            // The first page made after the checkpoint starts at its next sequence (or after
            // records found past its head page's prefix).
            if plan.listed.is_none() && !past_listed {
                past_listed = true;
                prev_end = prev_end.max(cp_next);
            }
            if !files.contains(&plan.num) {
                let Some(p) = plan.listed else { continue };
                prev_end = Some(p.end_seq());
                prev_num = Some(p.num);
                if p.unacked() == 0 {
                    continue;
                }
                let seqs = p.first_unacked_seq..p.end_seq();
                self.out
                    .findings
                    .push(if fell_back && first_present.is_none_or(|f| p.num < f) {
                        Finding::PageGoneAfterDamagedCheckpoint { page: p.num, seqs }
                    } else {
                        Finding::MissingPage {
                            page: p.num,
                            lost: seqs,
                        }
                    });
                continue;
            }
            let newest = Some(plan.num) == newest;
            if let Some(info) = self.page(&plan, prev_end, newest)? {
                // Between pages a checkpoint lists, a gap was reported when the checkpoint
                // that first listed them was written.
                if let (Some(end), None) = (prev_end, plan.listed) {
                    if info.entry.first_seq > end {
                        let after = prev_num.map_or(plan.num, |n| n + 1);
                        self.out.findings.push(Finding::Gap {
                            before_page: plan.num,
                            missing_pages: after.min(plan.num)..plan.num,
                            lost: end..info.entry.first_seq,
                        });
                    }
                }
                prev_end = Some(info.entry.end_seq());
                prev_num = Some(plan.num);
                self.out.pages.push(info);
            }
        }
        // New records follow every sequence given out before: the last page kept, records
        // found after it, and the checkpoint's next sequence (sequences of acked pages, and of
        // records lost at the end, are not given out again).
        self.out.next_seq = self
            .out
            .pages
            .last()
            .map(|p| p.entry.end_seq())
            .into_iter()
            .chain(prev_end)
            .chain(cp_next)
            .max()
            .unwrap_or(0);
        if let Some(reason) = ack_state_lost {
            let events = self.out.unacked();
            self.out
                .findings
                .push(Finding::AckStateLost { events, reason });
        }
        self.out.checkpoint = cp;
        Ok(self.out)
    }

    /// The first sequence a page file's header gives, if it has a valid one.
    fn first_seq(&self, num: u64) -> Result<Option<u64>, Failure> {
        let io = |e| StorageError::new(format!("reading queue page {num}"), e);
        let file = self.storage.open(&page_name(num)).map_err(io)?;
        let mut hdr = [0u8; PAGE_HEADER_LEN];
        let got = file.read_at(0, &mut hdr).map_err(io)?;
        Ok(PageHeader::decode(&hdr[..got]).ok().map(|h| h.first_seq))
    }

    /// Scans one present page file as `plan` says; `None` for a page to remove.
    fn page(
        &mut self,
        plan: &Plan,
        prev_end: Option<u64>,
        newest: bool,
    ) -> Result<Option<PageInfo>, Failure> {
        let num = plan.num;
        let name = page_name(num);
        let file = self
            .storage
            .open(&name)
            .context(|| format!("opening queue page {num}"))?;
        let file_len = file.len().context(|| format!("reading queue page {num}"))?;
        let io = |e: io::Error| {
            Failure::Storage(StorageError::new(format!("reading queue page {num}"), e))
        };

        // Where records start, and which sequence comes first.
        let full = self.depth == Depth::Full;
        let (mut entry, start) = match plan.listed {
            Some(p) if !full && !plan.open_ended => {
                // A tail page at start-up: trusted as listed.
                return Ok(Some(PageInfo {
                    entry: p,
                    file_len,
                    found_after_checkpoint: 0,
                }));
            }
            // The head page at start-up: from its durable prefix if the file still has it,
            // else from its first unacked record.
            Some(p) if !full && file_len >= p.bytes => (p, (p.bytes, p.end_seq())),
            Some(p) if !full => (p, (p.first_unacked_offset, p.first_unacked_seq)),
            _ => {
                let mut hdr = [0u8; PAGE_HEADER_LEN];
                let got = file.read_at(0, &mut hdr).map_err(io)?;
                let header = PageHeader::decode(&hdr[..got]);
                if let Err(e) = &header {
                    if e.is_newer_version() {
                        return Err(Failure::Format(e.clone()));
                    }
                }
                let header = header.map_err(|e| e.to_string()).and_then(|h| {
                    if h.num != num {
                        Err(format!("the header says it is page {}", h.num))
                    } else if prev_end.is_some_and(|p| h.first_seq < p) {
                        Err(format!(
                            "its first sequence {} is inside the previous page's",
                            h.first_seq
                        ))
                    } else {
                        Ok(h)
                    }
                });
                let first_seq = match (&header, plan.listed) {
                    (_, Some(p)) => p.first_seq,
                    (Ok(h), None) => h.first_seq,
                    (Err(_), None) => prev_end.unwrap_or(0),
                };
                let entry = plan.listed.unwrap_or(PageCheckpoint::empty(num, first_seq));
                match header {
                    Ok(_) => (entry, (PAGE_HEADER_LEN as u64, first_seq)),
                    Err(reason) => {
                        // Records carry their own headers: find the first one.
                        let seqs = match plan.listed {
                            Some(p) => p.first_seq..p.end_seq().max(p.first_seq + 1),
                            None => prev_end.unwrap_or(0)..u64::MAX,
                        };
                        let mut c = RecordCursor::default();
                        let first = c
                            .find(file.as_ref(), PAGE_HEADER_LEN as u64, file_len, seqs)
                            .map_err(io)?;
                        if first.is_none() && newest && plan.listed.is_none() {
                            self.out.findings.push(Finding::IncompletePage {
                                page: num,
                                bytes: file_len,
                            });
                            self.out.removals.push(name);
                            return Ok(None);
                        }
                        self.out
                            .findings
                            .push(Finding::PageHeaderDamaged { page: num, reason });
                        match first {
                            // A page found by scanning starts at its first intact record.
                            Some((offset, seq)) if plan.listed.is_none() => (
                                PageCheckpoint {
                                    first_seq: seq,
                                    first_unacked_seq: seq,
                                    first_unacked_offset: offset,
                                    bytes: offset,
                                    ..entry
                                },
                                (offset, seq),
                            ),
                            // A listed page is scanned from its start: what comes before its
                            // first intact record is reported as damage.
                            _ => (entry, (PAGE_HEADER_LEN as u64, entry.first_seq)),
                        }
                    }
                }
            }
        };

        // Acked below this sequence (everything, when the ack state is lost, is unacked).
        let ack_from = entry.first_unacked_seq;
        let listed_end = plan.listed.map(|p| p.end_seq());
        let bound = (!plan.open_ended).then(|| entry.end_seq());
        let mut c = RecordCursor::new(start.0, start.1);
        let mut found = 0u64;
        let end = loop {
            match c.next(file.as_ref(), file_len, bound).map_err(io)? {
                Step::Record { seq, payload } => {
                    found += 1;
                    if full && seq >= ack_from {
                        self.out.records += 1;
                        if let Some(v) = self.visit.as_mut() {
                            v(seq, payload);
                        }
                    }
                }
                Step::Damaged(damage) => {
                    let acked =
                        ack_from.clamp(damage.lost.start, damage.lost.end) - damage.lost.start;
                    self.out.findings.push(Finding::Damaged {
                        page: num,
                        damage,
                        acked,
                    });
                }
                Step::End(end) => break end,
            }
        };
        // The cursor stays where the valid data ends.
        let (end_offset, end_seq) = (c.offset, c.seq);
        // Records the checkpoint vouched for that the scan did not reach are lost.
        if let Some(listed_end_seq) = listed_end {
            if end_seq < listed_end_seq {
                let lost = end_seq..listed_end_seq;
                let acked = ack_from.clamp(lost.start, lost.end) - lost.start;
                self.out.findings.push(Finding::LostTail {
                    page: num,
                    offset: end_offset,
                    lost,
                    acked,
                    reason: end.reason(),
                });
            }
        }
        let after_checkpoint = match listed_end {
            Some(e) => end_seq.saturating_sub(e),
            None => found,
        };
        if plan.open_ended {
            if after_checkpoint > 0 {
                self.out.findings.push(Finding::RecordsAfterCheckpoint {
                    page: num,
                    count: after_checkpoint,
                });
            }
            match &end {
                End::Clean => {}
                End::Zeroed { offset, bytes } => {
                    self.out.findings.push(Finding::TornTail {
                        page: num,
                        offset: *offset,
                        bytes: *bytes,
                        reason: None,
                    });
                    self.out.cuts.push((num, *offset));
                }
                End::Torn {
                    offset,
                    bytes,
                    reason,
                } => {
                    // Within what the checkpoint vouched for, it was reported as lost above.
                    if end_seq >= listed_end.unwrap_or(0) {
                        self.out.findings.push(Finding::TornTail {
                            page: num,
                            offset: *offset,
                            bytes: *bytes,
                            reason: Some(reason.clone()),
                        });
                    }
                    self.out.cuts.push((num, *offset));
                }
            }
            entry.count = end_seq - entry.first_seq;
            entry.bytes = end_offset;
        }
        Ok(Some(PageInfo {
            entry,
            file_len,
            found_after_checkpoint: if plan.open_ended { after_checkpoint } else { 0 },
        }))
    }
}

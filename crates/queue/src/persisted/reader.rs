//! Reading: workers take batches of published records in sequence order and ack them in any
//! order. A reader waits for records on `state` alone (`unread`, the records published and not
//! yet taken), then holds the `read` lock while it reads record bytes (through a
//! [`RecordCursor`], the same routine recovery and the tools use) and takes `state` only to
//! find its page and to publish what it took. A caller that holds the records it pushed
//! (`read_batch_with`) takes them instead: the cursor moves past their bytes unread.
//!
//! Damage never stops the reader: a damaged stretch is skipped up to the next intact record,
//! and the records it held are counted as lost, logged with their sequences, and acked so
//! their page can go (Vector #18336, #17644: a reader stuck on one bad record forever).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{lock, move_to, BatchInfo, Inner, State};
use crate::ackset::AckRange;
use crate::page::page_name;
use crate::repeated::Repeated;
use crate::scan::{RecordCursor, Step};
use crate::storage::QueueFile;

/// Records read from the queue, to be acked with `token` once processed.
#[derive(Debug, Default)]
pub struct RawBatch {
    pub data: Vec<u8>,
    /// The number of records at the start of the batch that the caller held itself (see
    /// [`super::PersistedQueue::read_batch_with`]): they have no bytes here. Either these or
    /// `records`.
    pub held: u64,
    /// Each record's payload range in `data`, after the held ones.
    pub records: Vec<std::ops::Range<usize>>,
    /// The sequence of the first record; the others follow without gaps.
    pub first_seq: u64,
    pub token: u64,
    /// The batch is one record that was being processed, alone, when the process died at
    /// least twice ([`crate::inflight`]): to be set aside (the dead letter queue, or a logged
    /// skip) and acked, not processed.
    pub poison: bool,
}

/// The token of the empty batch a woken reader returns; acking it does nothing.
pub const EMPTY_BATCH: u64 = u64::MAX;

/// A caller's answer to [`super::PersistedQueue::read_batch_with`]'s question: does it hold
/// the records from the reader's position on?
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// How many records from the position the caller took (0: none).
    pub taken: u64,
    /// Where the last record taken ends in the page (from [`super::Written::ends`]).
    pub end: u64,
    /// With none taken: the next sequence the caller holds on this page, if any (the read
    /// stops before it).
    pub next: Option<u64>,
}

/// What a waiting reader found.
enum Readable {
    /// Records to take (as many as the batch wants, or its delay is over).
    Records,
    /// Woken with nothing to read.
    Woken,
}

pub(super) struct Reader {
    page: u64,
    cursor: RecordCursor,
    /// The mean payload length of the last batch read: the room the next batch's copies
    /// get up front.
    record_len: usize,
}

impl Reader {
    pub fn new(front: Option<&super::PageState>) -> Self {
        let mut r = Reader {
            page: 0,
            cursor: RecordCursor::default(),
            record_len: 0,
        };
        if let Some(p) = front {
            r.page = p.num;
            move_to(&mut r.cursor, p);
        }
        r
    }
}

/// The most room a batch's copies get before they are read ([`Reader::record_len`]).
const READ_ROOM_MAX: usize = 8 << 20;

/// What to read, decided under the `state` lock.
struct Plan {
    file: Arc<dyn QueueFile>,
    /// Published bytes and records of the page.
    limit: u64,
    end_seq: u64,
    take: u64,
    /// The first record is poison (see [`RawBatch::poison`]).
    poison: bool,
}

/// Records lost to damage, found by the reader.
struct Loss {
    page: u64,
    offset: u64,
    bytes: u64,
    range: AckRange,
    reason: String,
}

impl Inner {
    pub(super) fn read_batch(
        &self,
        max: usize,
        delay: Duration,
        held: &mut dyn FnMut(u64, u64, u64) -> Held,
    ) -> Option<RawBatch> {
        let max = max.max(1) as u64;
        let wakes = lock(&self.state).wakes;
        let mut deadline: Option<Instant> = None;
        let mut read_errors: Option<Repeated> = None;
        loop {
            match self.wait_readable(max, delay, &mut deadline, wakes)? {
                Readable::Records => {}
                Readable::Woken => {
                    return Some(RawBatch {
                        token: EMPTY_BATCH,
                        ..RawBatch::default()
                    })
                }
            }
            let mut r = lock(&self.read);
            let Some(mut plan) = self.plan_read(&mut r, max) else {
                drop(r);
                let mut st = lock(&self.state);
                if st.unread == 0 {
                    // Another reader took them first: wait for more.
                    continue;
                }
                // Unread records the cursor does not reach: not expected (the count and the
                // pages change together under the `read` lock), but never spin on it.
                tracing::debug!(queue = %self.storage.describe(), "unread records not found at the read position; waiting");
                st.readers_waiting += 1;
                let mut st = self
                    .readable
                    .wait_timeout(st, Duration::from_millis(10))
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
                st.readers_waiting -= 1;
                continue;
            };
            let (seq, offset) = (r.cursor.seq, r.cursor.offset);
            // Poison is read from its page (it comes from an earlier run: nobody holds it).
            let answer = match plan.poison {
                true => Held::default(),
                false => held(r.page, seq, plan.take),
            };
            // The caller's word on where its records end is checked against what the page has
            // published; if it does not fit (a bug), the records are read instead, which is
            // always right.
            let fits = answer.taken <= plan.take && answer.end > offset && answer.end <= plan.limit;
            if answer.taken > 0 && !fits {
                tracing::error!(
                    queue = %self.storage.describe(),
                    page = r.page,
                    sequence = seq,
                    "held records {}..{} said to end at {}, outside the page's {offset}..{}; reading them instead",
                    seq,
                    seq + answer.taken,
                    answer.end,
                    plan.limit
                );
            }
            let (batch, loss, failed) = if answer.taken > 0 && fits {
                r.cursor.seek(answer.end, seq + answer.taken);
                let range = AckRange {
                    start_seq: seq,
                    end_seq: seq + answer.taken,
                    end_offset: answer.end,
                };
                let raw = RawBatch {
                    first_seq: seq,
                    held: answer.taken,
                    ..RawBatch::default()
                };
                (Some((raw, range)), None, None)
            } else {
                if let Some(next) = answer.next.filter(|&n| n > seq && answer.taken == 0) {
                    plan.take = plan.take.min(next - seq);
                }
                read_records(&mut r, &plan)
            };
            if let Some(e) = failed {
                read_errors
                    .get_or_insert_with(|| Repeated::new(format!("reading queue page {}", r.page)))
                    .failed(&e, "the records stay queued; retrying");
                if batch.is_none() && loss.is_none() {
                    drop(r);
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
            } else if let Some(log) = &mut read_errors {
                log.succeeded();
            }
            let mut st = lock(&self.state);
            if let Some(loss) = loss {
                self.count_loss(&mut st, loss);
            }
            if let Some((mut raw, range)) = batch {
                let token = st.next_token;
                st.next_token += 1;
                // Memory stores into the journal's mapping, no I/O.
                let slot =
                    (st.journal.as_mut()).and_then(|j| j.record(range.start_seq..range.end_seq));
                st.batches.insert(
                    token,
                    BatchInfo {
                        page: r.page,
                        range,
                        slot,
                    },
                );
                raw.poison = plan.poison && range.end_seq - range.start_seq == 1;
                if raw.poison {
                    st.set_aside += 1;
                }
                st.unread -= range.end_seq - range.start_seq;
                // Another reader may be waiting for the rest.
                if st.unread > 0 && st.readers_waiting > 0 {
                    self.readable.notify_one();
                }
                return Some(RawBatch { token, ..raw });
            }
        }
    }

    /// Waits (without the `read` lock) until there are records to take: at least `max`, or
    /// some once `delay` has passed since the first was seen. `None` once the queue is closed
    /// (and, with `queue.drain`, every record acked).
    fn wait_readable(
        &self,
        max: u64,
        delay: Duration,
        deadline: &mut Option<Instant>,
        wakes: u64,
    ) -> Option<Readable> {
        let mut st = lock(&self.state);
        loop {
            if st.closed && !(self.cfg.drain && !st.no_drain && st.unacked > 0) {
                return None;
            }
            if st.unread > 0 {
                let now = Instant::now();
                let due = *deadline.get_or_insert(now + delay);
                if st.unread >= max || now >= due || st.closed {
                    return Some(Readable::Records);
                }
                st.readers_waiting += 1;
                st = self
                    .readable
                    .wait_timeout(st, due - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
                st.readers_waiting -= 1;
                continue;
            }
            if st.wakes != wakes {
                return Some(Readable::Woken);
            }
            st.readers_waiting += 1;
            st = self.readable.wait(st).unwrap_or_else(|p| p.into_inner());
            st.readers_waiting -= 1;
        }
    }

    /// Says what to read at the reader's position, moving it on to the next page when its
    /// page is read to the end; `None` if there is nothing to read.
    fn plan_read(&self, r: &mut Reader, max: u64) -> Option<Plan> {
        let mut st = lock(&self.state);
        loop {
            // Move on past pages that are fully read or gone.
            let pos = st.pages.iter().position(|p| p.num >= r.page)?;
            let p = &st.pages[pos];
            if p.num != r.page || (r.cursor.seq >= p.end_seq() && pos + 1 < st.pages.len()) {
                let next = if p.num != r.page { pos } else { pos + 1 };
                let p = &st.pages[next];
                r.page = p.num;
                move_to(&mut r.cursor, p);
                continue;
            }
            let available = p.end_seq().saturating_sub(r.cursor.seq);
            if available == 0 {
                return None;
            }
            // Records in flight at a crash go out one by one (and poison alone, flagged);
            // a batch stops short of them.
            let (mut take, mut poison) = (available.min(max), false);
            if !st.suspects.is_empty() {
                if let Some((most, p)) = st.suspects.limit_at(r.cursor.seq) {
                    take = take.min(most);
                    poison = p;
                }
            }
            let (num, limit, end_seq) = (p.num, p.bytes, p.end_seq());
            let file = match &p.file {
                Some(f) => Arc::clone(f),
                None => match self.storage.open(&page_name(num)) {
                    Ok(f) => {
                        st.pages[pos].file = Some(Arc::clone(&f));
                        f
                    }
                    Err(e) => {
                        let loss = Loss {
                            page: num,
                            offset: r.cursor.offset,
                            bytes: limit.saturating_sub(r.cursor.offset),
                            range: AckRange {
                                start_seq: r.cursor.seq,
                                end_seq,
                                end_offset: limit,
                            },
                            reason: format!("the page file cannot be opened: {e}"),
                        };
                        r.cursor.reset(limit, end_seq);
                        self.count_loss(&mut st, loss);
                        continue;
                    }
                },
            };
            return Some(Plan {
                file,
                limit,
                end_seq,
                take,
                poison,
            });
        }
    }

    /// Counts, logs and acks records lost to damage.
    fn count_loss(&self, st: &mut State, loss: Loss) {
        let n = loss.range.end_seq - loss.range.start_seq;
        let (first, last) = (loss.range.start_seq, loss.range.end_seq - 1);
        tracing::error!(
            queue = %self.storage.describe(),
            page = loss.page,
            offset = loss.offset,
            damaged_bytes = loss.bytes,
            "skipping {n} event(s) lost to a damaged queue page (sequences {first}..={last}): {}",
            loss.reason
        );
        st.lost += n;
        st.unread -= n;
        if let Some(page) = st.pages.iter_mut().find(|p| p.num == loss.page) {
            let newly = page.acks.ack(loss.range);
            st.unacked -= newly;
            st.checkpoint_dirty = true;
        }
        self.release_acked_pages(st);
        self.acked(st);
    }

    pub(super) fn ack(&self, token: u64) {
        let mut st = lock(&self.state);
        let Some(info) = st.batches.remove(&token) else {
            return;
        };
        if let (Some(slot), Some(j)) = (info.slot, st.journal.as_mut()) {
            j.clear(slot);
        }
        let Some(page) = st.pages.iter_mut().find(|p| p.num == info.page) else {
            return;
        };
        let newly = page.acks.ack(info.range);
        st.unacked -= newly;
        st.acks_since_checkpoint += newly;
        if st.acks_since_checkpoint >= super::limit(self.cfg.checkpoint_acks) {
            st.checkpoint_dirty = true;
            // With pushed records waiting for a sync, the round that syncs them (asked for by
            // the pushes, or the flusher's own within a second) writes this checkpoint too:
            // one round instead of two, and no sync for the acks alone.
            if st.next_seq == st.synced_seq {
                self.request_flush(&mut st);
            }
        }
        self.release_acked_pages(&mut st);
        self.acked(&st);
    }
}

/// Reads up to `plan.take` records at the reader's position (under the read lock only). A
/// batch ends before damaged bytes; damage met before any record is skipped (and returned as
/// a loss) and reading goes on after it. An I/O error ends the batch too (and is returned).
#[allow(clippy::type_complexity)]
fn read_records(
    r: &mut Reader,
    plan: &Plan,
) -> (
    Option<(RawBatch, AckRange)>,
    Option<Loss>,
    Option<std::io::Error>,
) {
    let mut out = RawBatch {
        first_seq: r.cursor.seq,
        ..RawBatch::default()
    };
    let start_seq = r.cursor.seq;
    // Room for the batch at the last batch's mean record length and an eighth more, so
    // that the vector does not grow step by step, each step a copy of what it holds
    // (bounded: a batch of large records after one of small ones grows as it must).
    let take = plan.take as usize;
    out.records.reserve_exact(take);
    out.data.reserve(
        take.saturating_mul(r.record_len + r.record_len / 8)
            .min(READ_ROOM_MAX),
    );
    let mut loss = None;
    let mut failed = None;
    while (out.records.len() as u64) < plan.take {
        let step = match r
            .cursor
            .next(plan.file.as_ref(), plan.limit, Some(plan.end_seq))
        {
            Ok(step) => step,
            Err(e) => {
                failed = Some(e);
                break;
            }
        };
        match step {
            Step::Record { payload, .. } => {
                let start = out.data.len();
                out.data.extend_from_slice(payload);
                out.records.push(start..start + payload.len());
            }
            Step::Damaged(d) => {
                loss = Some(Loss {
                    page: r.page,
                    offset: d.offset,
                    bytes: d.bytes,
                    range: AckRange {
                        start_seq: d.lost.start,
                        end_seq: d.lost.end,
                        end_offset: d.offset + d.bytes,
                    },
                    reason: d.reason.to_string(),
                });
                break;
            }
            Step::End(end) => {
                // Within published bytes: the records that should be there are lost.
                if r.cursor.seq < plan.end_seq {
                    let offset = end.offset(plan.limit);
                    loss = Some(Loss {
                        page: r.page,
                        offset,
                        bytes: plan.limit - offset,
                        range: AckRange {
                            start_seq: r.cursor.seq,
                            end_seq: plan.end_seq,
                            end_offset: plan.limit,
                        },
                        reason: end.reason().to_string(),
                    });
                    r.cursor.seek(plan.limit, plan.end_seq);
                }
                break;
            }
        }
    }
    if out.records.is_empty() {
        return (None, loss, failed);
    }
    r.record_len = out.data.len() / out.records.len();
    let range = AckRange {
        start_seq,
        end_seq: start_seq + out.records.len() as u64,
        end_offset: match &loss {
            // The cursor is past the damage: the batch ends where the damage starts.
            Some(l) if l.range.start_seq == start_seq + out.records.len() as u64 => l.offset,
            _ => r.cursor.offset,
        },
    };
    (Some((out, range)), loss, failed)
}

//! Which records of a page are acknowledged. Batches are contiguous sequence ranges and are
//! acked in any order; the page remembers its first unacked record (sequence and byte
//! offset, what a checkpoint stores) and the ranges acked beyond it.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckRange {
    pub start_seq: u64,
    pub end_seq: u64,
    /// Byte offset just past the range's last record.
    pub end_offset: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckSet {
    first_unacked_seq: u64,
    first_unacked_offset: u64,
    /// Acked ranges that start after `first_unacked_seq`, sorted and disjoint.
    beyond: Vec<AckRange>,
}

impl AckSet {
    pub fn new(first_unacked_seq: u64, first_unacked_offset: u64) -> Self {
        AckSet {
            first_unacked_seq,
            first_unacked_offset,
            beyond: Vec::new(),
        }
    }

    pub fn first_unacked(&self) -> (u64, u64) {
        (self.first_unacked_seq, self.first_unacked_offset)
    }

    /// Records `r` as acked; returns how many records became acked (0 if already were).
    pub fn ack(&mut self, r: AckRange) -> u64 {
        if r.end_seq <= self.first_unacked_seq {
            return 0;
        }
        if r.start_seq <= self.first_unacked_seq {
            let newly = r.end_seq - self.first_unacked_seq;
            self.first_unacked_seq = r.end_seq;
            self.first_unacked_offset = r.end_offset;
            while let Some(next) = self.beyond.first().copied() {
                if next.start_seq > self.first_unacked_seq {
                    break;
                }
                self.beyond.remove(0);
                if next.end_seq > self.first_unacked_seq {
                    self.first_unacked_seq = next.end_seq;
                    self.first_unacked_offset = next.end_offset;
                }
            }
            return newly;
        }
        let pos = self.beyond.partition_point(|x| x.start_seq < r.start_seq);
        if self
            .beyond
            .get(pos)
            .is_some_and(|x| x.start_seq == r.start_seq)
        {
            return 0;
        }
        self.beyond.insert(pos, r);
        r.end_seq - r.start_seq
    }

    /// Whether every record before `end_seq` is acked.
    pub fn all_acked_before(&self, end_seq: u64) -> bool {
        self.first_unacked_seq >= end_seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: u64, e: u64) -> AckRange {
        AckRange {
            start_seq: s,
            end_seq: e,
            end_offset: e * 10,
        }
    }

    #[test]
    fn out_of_order_acks_advance_when_contiguous() {
        let mut a = AckSet::new(0, 0);
        assert_eq!(a.ack(r(5, 10)), 5);
        assert_eq!(a.first_unacked(), (0, 0));
        assert_eq!(a.ack(r(10, 12)), 2);
        assert_eq!(a.ack(r(0, 5)), 5);
        assert_eq!(a.first_unacked(), (12, 120));
        assert!(a.all_acked_before(12));
        assert_eq!(a.ack(r(0, 5)), 0);
    }
}

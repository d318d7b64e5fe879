//! A pipeline's dead letter queue: where an output (or a filter, when asked to) puts the events
//! it cannot deliver, with why, for a `dead_letter_queue` input to read back later.
//!
//! The agent opens one per pipeline with `dead_letter_queue.enable: true`, in
//! `<path.dead_letter_queue>/<pipeline.id>`, and hands it to the runtime; outputs reach it
//! through their [`crate::WriteContext`], and the runtime writes the events that filters set
//! aside (see [`crate::Filter::take_dead_letters`]) once per batch. Storage (segments,
//! checksums, size limits, retention) is [`sluice_queue::dlq`]'s; this module adds what an
//! entry means:
//!
//! ```text
//! entry = version u8 (1) | plugin type | plugin id | reason | event (sluice_event::binary)
//! where each string = length u32 (little endian) | UTF-8 bytes
//! ```
//!
//! The entry's time is the one the storage records. As in Logstash, an event that was read
//! from a dead letter queue (it has `[@metadata][dead_letter_queue]`) is never written to one
//! again: it is logged and skipped, so that a failing event cannot cycle for ever.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use sluice_event::{binary, Event, FieldRef};
pub use sluice_queue::dlq::DlqPosition as Position;
use sluice_queue::dlq::{DlqConfig, DlqReader, DlqStats, DlqWriter};
use sluice_queue::storage::{lock_dir, FsStorage};

const ENTRY_VERSION: u8 = 1;

/// Where a dead-lettered event's metadata says it came from.
pub const METADATA_FIELD: &str = "[@metadata][dead_letter_queue]";

/// One entry read back.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
    /// `output` or `filter`'s plugin name (`elasticsearch`, `grok`), as Logstash records it.
    pub plugin_type: String,
    pub plugin_id: String,
    pub reason: String,
    pub event: Event,
}

/// Appends an entry's bytes (without the time, which the storage adds).
pub fn encode_entry(
    plugin_type: &str,
    plugin_id: &str,
    reason: &str,
    event: &Event,
    out: &mut Vec<u8>,
) {
    out.push(ENTRY_VERSION);
    for s in [plugin_type, plugin_id, reason] {
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    binary::encode(event, out);
}

/// Reads an entry's bytes back.
pub fn decode_entry(bytes: &[u8]) -> Result<DeadLetter, String> {
    let Some((&version, mut rest)) = bytes.split_first() else {
        return Err("empty entry".to_owned());
    };
    if version != ENTRY_VERSION {
        return Err(format!("unknown entry version {version}"));
    }
    let mut strings = Vec::with_capacity(3);
    for what in ["plugin type", "plugin id", "reason"] {
        let len = rest
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| format!("entry cut short in its {what}"))?;
        let text = rest
            .get(4..4 + len)
            .ok_or_else(|| format!("entry cut short in its {what}"))?;
        let text =
            std::str::from_utf8(text).map_err(|_| format!("the entry's {what} is not UTF-8"))?;
        strings.push(text.to_owned());
        rest = &rest[4 + len..];
    }
    let event = binary::decode(rest).map_err(|e| format!("the entry's event: {e}"))?;
    let mut s = strings.into_iter();
    Ok(DeadLetter {
        plugin_type: s.next().unwrap_or_default(),
        plugin_id: s.next().unwrap_or_default(),
        reason: s.next().unwrap_or_default(),
        event,
    })
}

/// One pipeline's open dead letter queue. Writing takes one lock per batch of entries; a
/// thread syncs the newest segment every `flush_interval`.
pub struct DeadLetterQueue {
    pipeline: String,
    dir: PathBuf,
    writer: Arc<DlqWriter>,
    /// Entries are encoded here, one batch at a time.
    scratch: Mutex<Scratch>,
    flusher: Mutex<Option<(Sender<()>, JoinHandle<()>)>>,
    skip: FieldRef,
    /// Held until [`DeadLetterQueue::close`]: another process cannot write to the same
    /// directory meanwhile.
    lock: Mutex<Option<File>>,
}

#[derive(Default)]
struct Scratch {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    log: Option<sluice_queue::repeated::Repeated>,
}

impl DeadLetterQueue {
    /// Opens (or creates) the dead letter queue of pipeline `pipeline` in `dir`.
    pub fn open(pipeline: &str, dir: &Path, config: DlqConfig) -> io::Result<Arc<Self>> {
        let lock = lock_dir(dir)?;
        let writer = Arc::new(DlqWriter::open(Box::new(FsStorage::new(dir)?), config)?);
        // Each check seals a segment idle for `flush_interval` and syncs one not synced for
        // as long: checking every `check_interval` (at most `flush_interval`) keeps both
        // within `flush_interval` + `check_interval`.
        let interval = writer
            .config()
            .check_interval
            .min(writer.config().flush_interval);
        let (stop, stopped) = channel::<()>();
        let w = Arc::clone(&writer);
        let flusher = std::thread::Builder::new()
            .name(format!("[{pipeline}]dlq-flush"))
            .spawn(move || loop {
                match stopped.recv_timeout(interval) {
                    Err(RecvTimeoutError::Timeout) => {
                        if let Err(e) = w.flush() {
                            tracing::error!(error = %e, "syncing the dead letter queue failed");
                        }
                    }
                    _ => return,
                }
            })?;
        Ok(Arc::new(DeadLetterQueue {
            pipeline: pipeline.to_owned(),
            dir: dir.to_path_buf(),
            writer,
            scratch: Mutex::default(),
            flusher: Mutex::new(Some((stop, flusher))),
            skip: FieldRef::parse(METADATA_FIELD).expect("a valid field reference"),
            lock: Mutex::new(Some(lock)),
        }))
    }

    pub fn stats(&self) -> Arc<DlqStats> {
        self.writer.stats()
    }

    pub fn config(&self) -> &DlqConfig {
        self.writer.config()
    }

    /// Writes events with their reasons, for plugin `plugin_type`/`plugin_id`. Returns how
    /// many were written. The others are dropped, as in Logstash, where the DLQ never holds a
    /// pipeline up: refused by the storage policy, read from a dead letter queue already, or
    /// met by an I/O error; all are logged and counted in `dropped_events` (`last_error` says
    /// why).
    pub fn write(&self, plugin_type: &str, plugin_id: &str, items: &[(&Event, &str)]) -> usize {
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let s = &mut *scratch;
        s.bytes.clear();
        s.ends.clear();
        let mut skipped = 0;
        for (event, reason) in items {
            if event.get(&self.skip).is_some() {
                skipped += 1;
                continue;
            }
            encode_entry(plugin_type, plugin_id, reason, event, &mut s.bytes);
            s.ends.push(s.bytes.len());
        }
        let dropped = |n: usize| {
            (self.writer.stats().dropped_events)
                .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        };
        if skipped > 0 {
            dropped(skipped);
            tracing::warn!(pipeline = %self.pipeline, plugin = %plugin_id, events = skipped, "event(s) previously submitted to the dead letter queue: not written again");
        }
        let mut start = 0;
        let entries: Vec<&[u8]> = (s.ends.iter())
            .map(|&end| {
                let e = &s.bytes[start..end];
                start = end;
                e
            })
            .collect();
        let result = self.writer.write(&entries);
        let log = s.log.get_or_insert_with(|| {
            sluice_queue::repeated::Repeated::new(format!(
                "dead letter queue of pipeline {} ({})",
                self.pipeline,
                self.dir.display()
            ))
        });
        match result {
            Ok(n) => {
                log.succeeded();
                if n < entries.len() {
                    let why = (self.stats().last_error.lock())
                        .map(|e| e.clone().unwrap_or_default())
                        .unwrap_or_default();
                    log.failed(&why, "the event(s) are dropped");
                }
                n
            }
            Err(e) => {
                dropped(entries.len());
                if let Ok(mut last) = self.writer.stats().last_error.lock() {
                    *last = Some(format!("writing the dead letter queue: {e}"));
                }
                log.failed(&e, "the event(s) are dropped");
                0
            }
        }
    }

    /// Syncs, stops the flush thread and releases the directory (when the pipeline stops).
    pub fn close(&self) {
        let flusher = self
            .flusher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some((stop, handle)) = flusher {
            drop(stop);
            let _ = handle.join();
        }
        if let Err(e) = self.writer.flush() {
            tracing::error!(pipeline = %self.pipeline, error = %e, "syncing the dead letter queue failed");
        }
        self.lock.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

impl Drop for DeadLetterQueue {
    fn drop(&mut self) {
        self.close();
    }
}

/// Reads a pipeline's dead letter queue back (the `dead_letter_queue` input), following its
/// writer, which may be in this process or another.
pub struct DeadLetterReader {
    reader: DlqReader,
}

/// One entry read back: its time (Unix milliseconds) and what it holds, or why it could not
/// be decoded.
pub type ReadEntry = (u64, Result<DeadLetter, String>);

impl DeadLetterReader {
    /// Reads the DLQ in `dir` from `from` (a position saved earlier), or from its oldest
    /// entry.
    pub fn open(dir: &Path, from: Option<Position>) -> io::Result<Self> {
        Ok(DeadLetterReader {
            reader: DlqReader::open(Box::new(FsStorage::new(dir)?), from),
        })
    }

    /// Up to `max` entries; none when there is nothing more for now.
    pub fn read(&mut self, max: usize) -> io::Result<Vec<ReadEntry>> {
        Ok((self.reader.read(max)?.into_iter())
            .map(|e| (e.time, decode_entry(&e.payload)))
            .collect())
    }

    /// Where the next entry will be read from.
    pub fn position(&self) -> Position {
        self.reader.position()
    }

    /// Deletes the segments read completely (`clean_consumed`); returns how many.
    pub fn remove_consumed(&self) -> io::Result<u64> {
        self.reader.remove_consumed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_event::Value;

    #[test]
    fn entries_round_trip_and_damage_is_an_error() {
        let mut e = Event::new();
        e.set_field("message", Value::String("hello".into()));
        e.set(
            &FieldRef::parse("[@metadata][x]").unwrap(),
            Value::String("kept".into()),
        );
        let mut bytes = Vec::new();
        encode_entry(
            "elasticsearch",
            "es1",
            "mapper_parsing_exception",
            &e,
            &mut bytes,
        );
        let d = decode_entry(&bytes).unwrap();
        assert_eq!(d.plugin_type, "elasticsearch");
        assert_eq!(d.plugin_id, "es1");
        assert_eq!(d.reason, "mapper_parsing_exception");
        assert_eq!(d.event, e);
        for cut in 0..bytes.len() {
            assert!(decode_entry(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        bytes[0] = 9;
        assert!(decode_entry(&bytes).unwrap_err().contains("version 9"));
    }
}

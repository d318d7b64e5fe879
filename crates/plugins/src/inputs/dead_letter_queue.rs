//! `dead_letter_queue`: reads back the events a pipeline's outputs (or filters) put in its dead
//! letter queue, as Logstash's input of that name does.
//!
//! Options: `path` (the DLQ root, `path.dead_letter_queue`; required), `pipeline_id` (whose
//! DLQ: `<path>/<pipeline_id>`, default `main`), `commit_offsets` (default true: remember
//! where reading stopped, in `sincedb_path`), `sincedb_path` (default
//! `<path.data>/plugins/inputs/dead_letter_queue/<pipeline_id>/.sincedb_<hash of path>`),
//! `start_timestamp` (ISO-8601: read from the first entry at or after it; as in Logstash this
//! wins over a saved position) and
//! `clean_consumed` (delete segments once read past them; needs `commit_offsets`).
//!
//! Each entry becomes its original event (its `@metadata` included) with
//! `[@metadata][dead_letter_queue]` = `{entry_time, plugin_id, plugin_type, reason}`. The
//! input follows the queue as it grows and never finishes on its own. Batches are pushed
//! whole; the position is saved (write to a temporary file, then rename) after each batch
//! the pipeline's queue took, so that a restart goes on after the last batch queued: at least
//! once, never skipping an entry.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sluice_event::{Event, FieldRef, Map, Timestamp, Value};
use sluice_pipeline::dead_letter::{DeadLetterReader, Position, METADATA_FIELD};
use sluice_pipeline::{ConfigError, Input, InputContext, Options};

pub struct DeadLetterQueueInput {
    dir: PathBuf,
    sincedb: Option<PathBuf>,
    start: Option<Timestamp>,
    clean_consumed: bool,
    field: FieldRef,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    if opts.has("codec") {
        opts.take("codec");
        tracing::warn!(
            "dead_letter_queue input: the codec option has no effect (entries are events already)"
        );
    }
    let path = opts.required_string("path")?;
    let pipeline_id = opts.string_or("pipeline_id", "main")?;
    if pipeline_id.is_empty() {
        return Err(opts.error("pipeline_id", "must not be empty"));
    }
    let commit_offsets = opts.boolean_or("commit_offsets", true)?;
    let clean_consumed = opts.boolean_or("clean_consumed", false)?;
    if clean_consumed && !commit_offsets {
        return Err(opts.error(
            "clean_consumed",
            "needs commit_offsets => true (segments can only be deleted once the position \
             past them is saved)",
        ));
    }
    let start = match opts.string("start_timestamp")? {
        None => None,
        Some(t) => Some(Timestamp::parse_iso8601(&t).ok_or_else(|| {
            opts.error(
                "start_timestamp",
                format!("{t:?} is not an ISO-8601 timestamp such as `2026-04-04T23:40:37`"),
            )
        })?),
    };
    let sincedb = match opts.string("sincedb_path")? {
        Some(p) if p.is_empty() => return Err(opts.error("sincedb_path", "must not be empty")),
        Some(p) => Some(PathBuf::from(p)),
        None => {
            let data = opts
                .path_data()
                .map_or_else(|| PathBuf::from("data"), Path::to_path_buf);
            Some(
                data.join("plugins/inputs/dead_letter_queue")
                    .join(&pipeline_id)
                    .join(format!(".sincedb_{:016x}", fnv1a(path.as_bytes()))),
            )
        }
    };
    Ok(Box::new(DeadLetterQueueInput {
        dir: Path::new(&path).join(&pipeline_id),
        sincedb: sincedb.filter(|_| commit_offsets),
        start,
        clean_consumed,
        field: FieldRef::parse(METADATA_FIELD).expect("a valid field reference"),
    }))
}

/// A stable hash of the DLQ path, naming its default sincedb file.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

const SINCEDB_HEADER: &str = "sluice dead_letter_queue position v1";

fn load_position(path: &Path) -> Result<Option<Position>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut lines = text.lines();
    let numbers: Option<Vec<u64>> = match (lines.next(), lines.next()) {
        (Some(SINCEDB_HEADER), Some(l)) => l.split(' ').map(|n| n.parse().ok()).collect(),
        _ => None,
    };
    match numbers.as_deref() {
        Some(&[segment, offset, seq]) => Ok(Some(Position {
            segment,
            offset,
            seq,
        })),
        _ => Err(format!(
            "{} is not a dead_letter_queue position file; remove it to read from the start",
            path.display()
        )),
    }
}

fn save_position(path: &Path, p: Position) -> std::io::Result<()> {
    let text = format!("{SINCEDB_HEADER}\n{} {} {}\n", p.segment, p.offset, p.seq);
    sluice_pipeline::replace_file(path, text.as_bytes())
}

impl DeadLetterQueueInput {
    /// The entry's event, with where it came from in `[@metadata][dead_letter_queue]`.
    fn event(&self, time: u64, d: sluice_pipeline::dead_letter::DeadLetter) -> Event {
        let mut event = d.event;
        let mut m = Map::new();
        m.insert(
            "entry_time".into(),
            Value::Timestamp(Timestamp::from_millis(time as i64)),
        );
        m.insert("plugin_id".into(), Value::String(d.plugin_id.into()));
        m.insert("plugin_type".into(), Value::String(d.plugin_type.into()));
        m.insert("reason".into(), Value::String(d.reason.into()));
        event.set(&self.field, Value::Object(m));
        event
    }
}

impl Input for DeadLetterQueueInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        // As Logstash: a start_timestamp wins over the saved position.
        let saved = match (&self.sincedb, self.start) {
            (Some(p), None) => load_position(p)?,
            _ => None,
        };
        let mut skipping = self.start;
        if !self.dir.is_dir() {
            tracing::warn!(dir = %self.dir.display(), "dead_letter_queue input: the dead letter queue does not exist (yet); check path and pipeline_id. Waiting for entries");
        }
        let mut reader = DeadLetterReader::open(&self.dir, saved)
            .map_err(|e| format!("cannot open {}: {e}", self.dir.display()))?;
        let outage = crate::retry::Outage::new("dead_letter_queue input", "dead letter queue");
        let target = self.dir.display().to_string();
        let idle = Duration::from_millis(200);
        while !ctx.is_stopping() {
            let entries = match reader.read(ctx.batch_size().max(1)) {
                Ok(e) => {
                    outage.recovered(&target);
                    e
                }
                Err(e) => {
                    outage.failed(&target, &e);
                    sleep_unless_stopping(ctx, Duration::from_secs(1));
                    continue;
                }
            };
            if entries.is_empty() {
                sleep_unless_stopping(ctx, idle);
                continue;
            }
            let mut batch = Vec::with_capacity(entries.len());
            for (time, entry) in entries {
                if let Some(start) = skipping {
                    if (time as i64) < start.millis() {
                        continue;
                    }
                    skipping = None;
                }
                match entry {
                    Ok(d) => batch.push(self.event(time, d)),
                    Err(e) => {
                        tracing::warn!(dir = %self.dir.display(), "skipping a dead letter queue entry that cannot be read: {e}")
                    }
                }
            }
            if ctx.push(batch).is_err() {
                // Not queued: the position stays where it was, and they are read again.
                return Ok(());
            }
            if let Some(path) = &self.sincedb {
                if let Err(e) = save_position(path, reader.position()) {
                    tracing::error!(path = %path.display(), "cannot save the dead letter queue position: {e}");
                } else if self.clean_consumed {
                    if let Err(e) = reader.remove_consumed() {
                        tracing::error!(dir = %self.dir.display(), "cannot delete consumed dead letter queue segments: {e}");
                    }
                }
            }
        }
        Ok(())
    }
}

fn sleep_unless_stopping(ctx: &InputContext, d: Duration) {
    sluice_pipeline::plugin::sleep_unless(d, || ctx.is_stopping());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip_and_a_bad_file_is_an_error() {
        let dir = std::env::temp_dir().join(format!("sluice-dlq-pos-{}", std::process::id()));
        let path = dir.join("sub/.sincedb_x");
        assert_eq!(load_position(&path), Ok(None));
        let p = Position {
            segment: 3,
            offset: 4096,
            seq: 77,
        };
        save_position(&path, p).unwrap();
        assert_eq!(load_position(&path), Ok(Some(p)));
        std::fs::write(&path, "garbage\n").unwrap();
        assert!(load_position(&path)
            .unwrap_err()
            .contains("not a dead_letter_queue position file"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

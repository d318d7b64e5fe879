//! Opening a queue directory after a stop or a crash: a [`survey`] at [`Depth::Open`], then
//! the few changes it calls for, none of which needs new disk space (so a queue opens on a full
//! disk): torn tails are cut, leftovers (and spare pages) removed, and records found after the last checkpoint
//! synced (the next checkpoint will vouch for them). Every finding is logged, losses as errors
//! with their counts and sequences.

use crate::error::{Context, QueueError};
use crate::page::{list_numbered, page_name, spare_name, SPARE_PREFIX};
use crate::storage::Storage;
use crate::survey::{survey, Depth, Finding, Survey};

/// Recovers the directory; returns what the queue opens with.
pub fn recover(storage: &dyn Storage) -> Result<Survey, QueueError> {
    let found = survey(storage, Depth::Open, None)?;
    let fail = |source| QueueError::Storage {
        location: storage.describe(),
        source,
    };
    // Spare pages a crash left (a graceful stop removes them) are not kept across runs.
    let spares: Vec<String> = list_numbered(storage, SPARE_PREFIX)
        .context(|| "listing the queue directory".into())
        .map_err(fail)?
        .into_iter()
        .map(spare_name)
        .collect();
    for name in spares.iter().chain(&found.removals) {
        storage
            .remove(name)
            .context(|| format!("removing {name}"))
            .map_err(fail)?;
    }
    if !found.removals.is_empty() {
        storage
            .sync_dir()
            .context(|| "syncing the queue directory".into())
            .map_err(fail)?;
    }
    for p in &found.pages {
        let cut = found.cuts.iter().find(|(n, _)| *n == p.entry.num);
        if cut.is_none() && p.found_after_checkpoint == 0 {
            continue;
        }
        let num = p.entry.num;
        let file = storage
            .open(&page_name(num))
            .context(|| format!("opening queue page {num}"))
            .map_err(fail)?;
        if let Some(&(_, len)) = cut {
            file.set_len(len)
                .context(|| format!("cutting the torn tail of queue page {num}"))
                .map_err(fail)?;
        }
        // Records found by scanning may exist only in the page cache (the previous process
        // was killed before syncing them).
        file.sync()
            .context(|| format!("syncing queue page {num}"))
            .map_err(fail)?;
    }
    for f in &found.findings {
        if f.lost() > 0 || matches!(f, Finding::AckStateLost { .. }) {
            tracing::error!(queue = %storage.describe(), "{f}");
        } else if matches!(
            f,
            Finding::CheckpointSlotDamaged { .. }
                | Finding::PageGoneAfterDamagedCheckpoint { .. }
                | Finding::PageHeaderDamaged { .. }
        ) {
            tracing::warn!(queue = %storage.describe(), "{f}");
        } else {
            tracing::info!(queue = %storage.describe(), "{f}");
        }
    }
    let lost = found.lost();
    if lost > 0 {
        tracing::error!(
            queue = %storage.describe(),
            lost_events = lost,
            "the persisted queue lost {lost} event(s) to damage (listed above); every intact event is kept"
        );
    }
    Ok(found)
}

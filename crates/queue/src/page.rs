//! Page files: their names and their durable creation, fresh or from a spare.
//!
//! A spare (`spare.<N>`) is a page file whose records were all acked, kept (renamed, its
//! bytes untouched) to become a later head page: writing over blocks a file already has
//! needs no block allocation and lets `fdatasync` skip the file system's journal (on ext4,
//! about twice the bandwidth of appending to a new file). The old records it still holds are
//! below every sequence the new page gives out, so a scan never takes them for records.

use std::io;
use std::sync::Arc;

use crate::format::PageHeader;
use crate::storage::{QueueFile, Storage};

pub const PAGE_PREFIX: &str = "page.";
pub const SPARE_PREFIX: &str = "spare.";

pub fn spare_name(num: u64) -> String {
    format!("{SPARE_PREFIX}{num}")
}

pub fn page_name(num: u64) -> String {
    format!("{PAGE_PREFIX}{num}")
}

/// The page number a file name stands for (`page.12` → 12).
pub fn page_num(name: &str) -> Option<u64> {
    numbered(name, PAGE_PREFIX)
}

/// The page numbers present, ascending.
pub fn list_pages(storage: &dyn Storage) -> io::Result<Vec<u64>> {
    list_numbered(storage, PAGE_PREFIX)
}

/// The number of a file named `<prefix><N>`.
pub fn numbered(name: &str, prefix: &str) -> Option<u64> {
    let digits = name.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The numbers of the files named `<prefix><N>`, ascending.
pub fn list_numbered(storage: &dyn Storage, prefix: &str) -> io::Result<Vec<u64>> {
    let mut nums: Vec<u64> = storage
        .list()?
        .iter()
        .filter_map(|n| numbered(n, prefix))
        .collect();
    nums.sort_unstable();
    Ok(nums)
}

/// Creates page `num`, whose first record will carry `first_seq`. On return the file, its
/// header and its directory entry are durable, so no record can come to rely on a page that a
/// power loss would take away or leave without a header (Logstash #12040: "expected version 2,
/// found 0"). A file of that number left by an earlier attempt that failed half-way (a full
/// disk) is replaced: the caller only creates pages numbered above every page in use.
pub fn create_page(
    storage: &dyn Storage,
    num: u64,
    first_seq: u64,
) -> io::Result<Arc<dyn QueueFile>> {
    create_with_header(
        storage,
        &page_name(num),
        &PageHeader { num, first_seq }.encode(),
    )
}

/// Creates file `name` holding `header`, durably: on return the file, its header and its
/// directory entry are synced. A file of that name left by an earlier attempt that failed
/// half-way is replaced (callers only create names above every one in use).
pub fn create_with_header(
    storage: &dyn Storage,
    name: &str,
    header: &[u8],
) -> io::Result<Arc<dyn QueueFile>> {
    let file = match storage.create(name) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            storage.remove(name)?;
            storage.create(name)?
        }
        other => other?,
    };
    file.write_at(0, header)?;
    file.sync()?;
    storage.sync_dir()?;
    Ok(file)
}

/// Makes the spare file `spare` page `num`, whose first record will carry `first_seq`, as
/// durably as [`create_page`] does: the new header is written into the file and synced while
/// it is still named a spare (a spare is never read), and only then is it renamed and the
/// directory synced. So after a crash `page.<num>` either does not exist or has its own header;
/// what follows the header is old records with lower sequences, which end the page's valid
/// data like a torn tail. Needs no new disk space.
pub fn reuse_spare(
    storage: &dyn Storage,
    spare: &str,
    num: u64,
    first_seq: u64,
) -> io::Result<Arc<dyn QueueFile>> {
    let file = storage.open(spare)?;
    file.write_at(0, &PageHeader { num, first_seq }.encode())?;
    file.sync()?;
    storage.rename(spare, &page_name(num))?;
    storage.sync_dir()?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_names_round_trip_and_other_files_are_not_pages() {
        assert_eq!(page_num(&page_name(12)), Some(12));
        for other in [
            "page.",
            "page.1a",
            "page.-1",
            "checkpoint",
            ".lock",
            "page.1.bak",
        ] {
            assert_eq!(page_num(other), None, "{other}");
        }
    }
}

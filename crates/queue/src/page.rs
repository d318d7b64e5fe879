//! Page files: their names and their durable creation.

use std::io;
use std::sync::Arc;

use crate::format::PageHeader;
use crate::storage::{QueueFile, Storage};

pub const PAGE_PREFIX: &str = "page.";

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

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
    let digits = name.strip_prefix(PAGE_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The page numbers present, ascending.
pub fn list_pages(storage: &dyn Storage) -> io::Result<Vec<u64>> {
    let mut nums: Vec<u64> = storage.list()?.iter().filter_map(|n| page_num(n)).collect();
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
    let name = page_name(num);
    let file = match storage.create(&name) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            storage.remove(&name)?;
            storage.create(&name)?
        }
        other => other?,
    };
    file.write_at(0, &PageHeader { num, first_seq }.encode())?;
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

//! Nothing acknowledged is ever lost: the defects a fault probe found through the binary
//! (issue 46), each pinned by a test that drives the real `sluice` from the outside.
//!
//! - A full disk with the default 64 MB page: a queue whose records are all acked goes on.
//! - An event larger than a queue page is stored (on a page of its own), not acked and dropped.

mod run_support;
mod tmpfs;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use run_support::{sequences, Run};
use tmpfs::Tmpfs;

fn temp_dir(name: &str) -> PathBuf {
    run_support::temp_dir("acked", name)
}

fn start(dir: &Path, settings: &str, config: &str) -> Run {
    Run::start(dir, settings, &[], config, Stdio::null(), Stdio::null())
}

fn assert_exactly_once(seqs: &BTreeMap<i64, usize>, count: i64) {
    let dups: Vec<_> = seqs.iter().filter(|(_, &n)| n > 1).take(5).collect();
    assert!(dups.is_empty(), "delivered twice: {dups:?}");
    assert_eq!(seqs.len() as i64, count, "events missing");
    assert_eq!(seqs.keys().last().copied(), Some(count - 1));
}

/// The default page (64 MB) on a disk with less free space than one page: the head page fills
/// the disk while its records are delivered and acked. The queue must go on (a fully acked head
/// page is let go and the next page written over it), not wait for space forever.
#[test]
fn full_disk_smaller_than_one_default_page_goes_on_once_everything_is_acked() {
    let dir = temp_dir("small-disk");
    let Some(data) = Tmpfs::mount(&dir.join("data"), "12m", "") else {
        return;
    };
    let out = dir.join("out.log");
    let count = 150_000;
    let settings = format!(
        "path.data: {}\nqueue.type: persisted\nqueue.drain: true\n",
        data.path.display()
    );
    let config = format!(
        "input {{ generator {{ count => {count} }} }} output {{ file {{ path => \"{}\" }} }}",
        out.display()
    );
    let mut run = start(&dir, &settings, &config);
    let status = run.exit(240);
    assert!(status.success(), "{status}\n{}", run.log());
    assert_exactly_once(&sequences(&out), count);

    // A restart on the same (still small) disk takes more events.
    let out2 = dir.join("out2.log");
    let config = format!(
        "input {{ generator {{ count => {count} }} }} output {{ file {{ path => \"{}\" }} }}",
        out2.display()
    );
    let mut run = start(&dir, &settings, &config);
    let status = run.exit(240);
    assert!(status.success(), "{status}\n{}", run.log());
    assert_exactly_once(&sequences(&out2), count);
}

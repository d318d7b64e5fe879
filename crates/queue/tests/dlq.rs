//! The dead letter queue's segments under random writes and random crash damage: whatever is
//! cut off or flipped, the DLQ opens, the reader never fails, and what it returns is the
//! entries written, in order, minus only those the damage touched.

use proptest::prelude::*;
use sluice_queue::dlq::{DlqConfig, DlqReader, DlqWriter};
use sluice_queue::{FsStorage, Storage};

fn fs(d: &std::path::Path) -> Box<dyn Storage> {
    Box::new(FsStorage::new(d).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn damaged_segments_lose_only_the_damaged_entries(
        batches in prop::collection::vec(prop::collection::vec(1usize..300, 1..8), 1..20),
        segment_bytes in 64u64..4096,
        cut in any::<prop::sample::Index>(),
        flip in prop::option::of(any::<prop::sample::Index>()),
        case in any::<u64>(),
    ) {
        let d = std::env::temp_dir().join(format!("sluice-dlq-prop-{}-{case}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let cfg = DlqConfig { segment_bytes, ..DlqConfig::default() };
        let mut written = Vec::new();
        {
            let w = DlqWriter::open(fs(&d), cfg.clone()).unwrap();
            for (b, sizes) in batches.iter().enumerate() {
                let entries: Vec<Vec<u8>> = sizes
                    .iter()
                    .enumerate()
                    .map(|(i, n)| format!("{b}:{i}:{}", "x".repeat(*n)).into_bytes())
                    .collect();
                let refs: Vec<&[u8]> = entries.iter().map(|e| e.as_slice()).collect();
                prop_assert_eq!(w.write(&refs).unwrap(), entries.len());
                written.extend(entries);
            }
        }
        // A crash: the newest segment cut anywhere, and maybe one byte flipped in any segment.
        let mut segs: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().path()).collect();
        segs.sort_by_key(|p| p.file_name().unwrap().to_str().unwrap()[8..].parse::<u64>().unwrap());
        let last = segs.last().unwrap().clone();
        let len = std::fs::metadata(&last).unwrap().len() as usize;
        let f = std::fs::OpenOptions::new().write(true).open(&last).unwrap();
        let cut_at = cut.index(len + 1);
        f.set_len(cut_at as u64).unwrap();
        if let Some(flip) = flip {
            let target = &segs[flip.index(segs.len())];
            let mut bytes = std::fs::read(target).unwrap();
            if !bytes.is_empty() {
                let at = flip.index(bytes.len());
                bytes[at] ^= 0x5a;
                std::fs::write(target, bytes).unwrap();
            }
        }
        // It opens, takes new entries, and reads back an ordered subsequence.
        let w = DlqWriter::open(fs(&d), cfg).unwrap();
        w.write(&[b"after the crash"]).unwrap();
        let mut r = DlqReader::open(fs(&d), None);
        let mut got = Vec::new();
        loop {
            let batch = r.read(7).unwrap();
            if batch.is_empty() { break; }
            got.extend(batch);
        }
        prop_assert!(got.windows(2).all(|p| p[0].seq < p[1].seq));
        let payloads: Vec<Vec<u8>> = got.iter().map(|e| e.payload.clone()).collect();
        prop_assert_eq!(payloads.last().map(|p| p.as_slice()), Some(&b"after the crash"[..]));
        let mut it = written.iter();
        for p in &payloads[..payloads.len() - 1] {
            prop_assert!(it.any(|w| w == p), "an entry that was not written, or out of order");
        }
        // Without damage nothing is lost.
        if flip.is_none() && cut_at == len {
            prop_assert_eq!(payloads.len(), written.len() + 1);
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}

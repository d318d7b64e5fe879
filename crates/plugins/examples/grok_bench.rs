//! How fast grok matches `%{COMBINEDAPACHELOG}` on the shared Apache log, on one thread.
//!
//! ```text
//! cargo run --release -p sluice-plugins --example grok_bench [-- LOG_FILE [LINES]]
//! ```
//!
//! Prints lines per CPU-second (this thread's CPU time, so other load on the machine does not
//! count) for (1) the raw PCRE2 regex alone (captures read, nothing stored), and (2) the whole
//! grok filter on batches of events (captures stored as fields), for the ecs-v1 and legacy
//! pattern sets. The log defaults to `$SLUICE_SHARED/data/apache_logs` (or
//! `../shared/data/apache_logs`), repeated up to 200,000 lines.

use std::path::PathBuf;
use std::time::Instant;

use sluice_event::Event;
use sluice_plugins::filters::grok::{expand, patterns};
use sluice_regex::onig;

// The allocator the sluice binary ships with, so that allocation costs are the real ones.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

/// CPU time used by this thread, in seconds (Linux `CLOCK_THREAD_CPUTIME_ID`).
fn cpu_seconds() -> f64 {
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: clock_gettime writes one timespec (two 64-bit fields on 64-bit Linux).
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.sec as f64 + ts.nsec as f64 / 1e9
}

fn report(what: &str, lines: usize, matched: usize, cpu: f64, wall: f64) {
    println!(
        "{what:<44} {lines} lines, {matched} matched: {:>9.0} lines/CPU-s ({:.0} lines/s wall)",
        lines as f64 / cpu,
        lines as f64 / wall,
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().map(PathBuf::from).unwrap_or_else(|| {
        std::env::var_os("SLUICE_SHARED")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
            .join("data/apache_logs")
    });
    let want: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(200_000);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let base: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    let lines: Vec<&str> = base
        .iter()
        .copied()
        .cycle()
        .take(want.max(base.len()))
        .collect();
    println!("{} ({} distinct lines)", path.display(), base.len());

    for (set, ecs) in [
        (patterns::PatternSet::EcsV1, "v8"),
        (patterns::PatternSet::Legacy, "disabled"),
    ] {
        // (1) The raw regex, as the filter compiles it.
        let user = Default::default();
        let table = expand::Table {
            builtin: patterns::builtin(set),
            user: &user,
        };
        let expanded = expand::expand("%{COMBINEDAPACHELOG}", table, true).unwrap();
        let translated = onig::translate(&expanded);
        let regex = pcre2::bytes::RegexBuilder::new()
            .utf(true)
            .dotall(true)
            .multi_line(true)
            .jit_if_available(true)
            .build(&translated.pattern)
            .unwrap();
        let mut locs = regex.capture_locations();
        let (wall, cpu) = (Instant::now(), cpu_seconds());
        let mut matched = 0;
        for l in &lines {
            if regex
                .captures_read(&mut locs, l.as_bytes())
                .unwrap()
                .is_some()
            {
                matched += 1;
            }
        }
        let (cpu, wall) = (cpu_seconds() - cpu, wall.elapsed().as_secs_f64());
        report(
            &format!("raw pcre2 regex ({ecs})"),
            lines.len(),
            matched,
            cpu,
            wall,
        );

        // (2) The filter, through the registry, on batches of 125 events. Only the filter
        // runs are timed (making the events and dropping them afterwards are not).
        let config = format!(
            r#"filter {{ grok {{ match => {{ "message" => "%{{COMBINEDAPACHELOG}}" }} ecs_compatibility => {ecs} }} }}"#
        );
        let parsed = sluice_config::parse("bench", &config).unwrap();
        let registry = sluice_plugins::registry();
        let compiled = sluice_pipeline::graph::compile(&parsed, &registry).unwrap();
        let mut chain = compiled.filter_chain();
        let (mut cpu, mut wall, mut matched) = (0.0, 0.0, 0);
        for chunk in lines.chunks(125) {
            let mut batch: Vec<Event> = chunk.iter().map(|l| Event::with_message(*l)).collect();
            let (w, c) = (Instant::now(), cpu_seconds());
            chain.run(&mut batch);
            cpu += cpu_seconds() - c;
            wall += w.elapsed().as_secs_f64();
            matched += batch
                .iter()
                .filter(|e| !e.has_tag("_grokparsefailure"))
                .count();
        }
        report(
            &format!("grok filter on events ({ecs})"),
            lines.len(),
            matched,
            cpu,
            wall,
        );
    }
}

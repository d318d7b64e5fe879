//! Matches per second of typical condition and gsub patterns on log lines: sluice-regex (Ruby
//! syntax; Rust's regex crate where it reads the pattern the same, PCRE2 with JIT otherwise)
//! next to PCRE2 alone and Rust's regex crate alone on the same patterns. Run by bench/regex.sh:
//! `cargo run --release -p sluice-regex --example match_bench`.

use std::hint::black_box;
use std::time::Instant;

const LINES: [&str; 4] = [
    r#"83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /presentations/logstash-monitorama-2013/images/kibana-search.png HTTP/1.1" 200 203023 "http://semicomplete.com/presentations/logstash-monitorama-2013/" "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1) AppleWebKit/537.36""#,
    "2026-11-24T10:00:00.123Z ERROR [main] c.e.Service - connection refused to db-3:5432 after 3 retries",
    r#"{"level":"info","msg":"request served","status":200,"path":"/api/v1/items","took_ms":12}"#,
    "Nov 24 10:00:00 web1 sshd[4242]: Failed password for invalid user admin from 10.1.2.3 port 5022 ssh2",
];

const PATTERNS: [&str; 5] = [
    "ERROR",
    r"^\d{4}-\d{2}-\d{2}T",
    r#"^\{.*\}$"#,
    r"Failed password for (invalid user )?(\w+)",
    r"(?i)mozilla|curl|wget",
];

fn rate(n: usize, f: impl Fn(&str) -> bool) -> f64 {
    let start = Instant::now();
    let mut hits = 0usize;
    for i in 0..n {
        hits += usize::from(f(black_box(LINES[i % LINES.len()])));
    }
    black_box(hits);
    n as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let n = 2_000_000;
    println!("matches per second over {n} lines (4 kinds, 90-270 bytes), one thread");
    println!(
        "{:<45} {:>13} {:>13} {:>13} {:>7}",
        "pattern", "sluice-regex", "PCRE2 alone", "regex crate", "ratio"
    );
    for p in PATTERNS {
        let ours = sluice_regex::Regex::new(p).unwrap();
        let pcre = sluice_regex::Regex::new_on_pcre2(p).unwrap();
        let theirs = regex::RegexBuilder::new(p)
            .multi_line(true)
            .build()
            .unwrap();
        let a = rate(n, |l| ours.is_match(l));
        let c = rate(n, |l| pcre.is_match(l));
        let b = rate(n, |l| theirs.is_match(l));
        println!(
            "{:<45} {:>13.0} {:>13.0} {:>13.0} {:>7.2}",
            format!("/{p}/ ({})", ours.engine()),
            a,
            c,
            b,
            a / b
        );
    }
    let ours = sluice_regex::Regex::new(r"\d").unwrap();
    let pcre = sluice_regex::Regex::new_on_pcre2(r"\d").unwrap();
    let with = sluice_regex::Replacement::parse("#");
    let theirs = regex::Regex::new(r"\d").unwrap();
    let a = rate(n / 4, |l| ours.replace_all(l, &with).len() > 1);
    let c = rate(n / 4, |l| pcre.replace_all(l, &with).len() > 1);
    let b = rate(n / 4, |l| theirs.replace_all(l, "#").len() > 1);
    println!(
        "{:<45} {:>13.0} {:>13.0} {:>13.0} {:>7.2}",
        r"gsub /\d/ -> #",
        a,
        c,
        b,
        a / b
    );
}

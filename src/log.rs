//! The process log: tracing's formatter writing to standard error, one line per record.
//!
//! Log records carry text that comes from events (a JSON parse failure quotes the input, an
//! output error names a path rendered from an event). [`LineWriter`] escapes control
//! characters inside a record (`\n` becomes `\\n`, and so on), so that an event can never
//! start a line of its own and forge a log record.

use std::io::{self, Write};

pub fn init(level: Option<&str>) {
    let level = match level.unwrap_or("info") {
        "fatal" | "error" => tracing::Level::ERROR,
        "warn" => tracing::Level::WARN,
        "debug" => tracing::Level::DEBUG,
        "trace" => tracing::Level::TRACE,
        _ => tracing::Level::INFO,
    };
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(move || LineWriter { ansi })
        .with_target(false)
        .with_ansi(ansi)
        .init();
}

/// Writes each log record (handed over whole, ending in a newline) to standard error with
/// its inner control characters escaped. The escape character is kept when the log is
/// colored (the formatter's colors use it; it escapes ANSI sequences in values itself).
pub struct LineWriter {
    ansi: bool,
}

/// `record` with every control character but tab (and, when `ansi`, escape) escaped, except
/// a final newline.
pub fn escape_record(record: &[u8], ansi: bool) -> Vec<u8> {
    let (body, end) = match record.split_last() {
        Some((b'\n', body)) => (body, &b"\n"[..]),
        _ => (record, &b""[..]),
    };
    let mut out = Vec::with_capacity(record.len() + 8);
    for &b in body {
        match b {
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.push(b),
            0x1b if ansi => out.push(b),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.extend_from_slice(end);
    out
}

impl Write for LineWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        io::stderr()
            .lock()
            .write_all(&escape_record(buf, self.ansi))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::escape_record;

    #[test]
    fn a_record_stays_one_line() {
        let r = b"WARN data=not json\n2026-01-01T00:00:00Z ERROR forged\r\x07\n";
        assert_eq!(
            escape_record(r, false),
            b"WARN data=not json\\n2026-01-01T00:00:00Z ERROR forged\\r\\x07\n"
        );
        assert_eq!(
            escape_record(b"\x1b[1mx\x1b[0m\n", true),
            b"\x1b[1mx\x1b[0m\n"
        );
        assert_eq!(escape_record(b"\x1b[1mx\n", false), b"\\x1b[1mx\n");
    }
}

//! The process log: one line per record on standard error and, with `path.logs`, in a rolled
//! file there, as Logstash writes `logstash-plain.log` (or `logstash-json.log`).
//!
//! - **Format** (`log.format`): `plain` is tracing's text line; `json` is Logstash's JSON line,
//!   `{"level":"INFO","loggerName":"…","timeMillis":…,"thread":"…","logEvent":{"message":"…",
//!   …fields}}`.
//! - **Files** ([`RollingFile`]): rolled as Logstash's log4j2 configuration rolls them, when
//!   the day changes or the file passes 100 MiB, to `logstash-plain-YYYY-MM-DD-N.log.gz`
//!   (gzip), keeping the 30 newest and none older than 7 days.
//! - **Safety**: log records carry text that comes from events (a JSON parse failure quotes
//!   the input, an output error names a path rendered from an event). [`LineWriter`] escapes
//!   control characters inside a plain record (`\n` becomes `\\n`, and so on), so that an
//!   event can never start a line of its own and forge a log record; JSON strings are escaped
//!   by JSON itself.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// Where and how the process logs.
#[derive(Debug, Clone, Default)]
pub struct LogOptions<'a> {
    /// `log.level`: fatal, error, warn, info (default), debug, trace.
    pub level: Option<&'a str>,
    /// `log.format`: `plain` (default) or `json`.
    pub format: Option<&'a str>,
    /// `path.logs`: also write the log to a rolled file in this directory.
    pub path: Option<&'a Path>,
}

/// Size past which a log file is rolled (Logstash's `SizeBasedTriggeringPolicy`, 100MB).
const ROLL_BYTES: u64 = 100 * 1024 * 1024;
/// Rolled files kept (Logstash's `DefaultRolloverStrategy max`).
const KEEP_ROLLED: usize = 30;

pub fn init(options: &LogOptions) -> Result<(), String> {
    let level = match options.level.unwrap_or("info") {
        "fatal" | "error" => tracing::Level::ERROR,
        "warn" => tracing::Level::WARN,
        "debug" => tracing::Level::DEBUG,
        "trace" => tracing::Level::TRACE,
        _ => tracing::Level::INFO,
    };
    let json = match options.format.unwrap_or("plain") {
        "plain" => false,
        "json" => true,
        other => return Err(format!("log.format must be plain or json, got {other:?}")),
    };
    let filter = tracing_subscriber::filter::LevelFilter::from_level(level);
    let ansi = !json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let file = match options.path {
        Some(dir) => {
            let name = if json {
                "logstash-json"
            } else {
                "logstash-plain"
            };
            Some(RollingFile::open(dir, name)?)
        }
        None => None,
    };
    let console = move || LineWriter {
        ansi,
        escape: !json,
        to: Target::Stderr,
    };
    let registry = tracing_subscriber::registry().with(filter);
    let to_file = file.map(|f| {
        move || LineWriter {
            ansi: false,
            escape: !json,
            to: Target::File(f.clone()),
        }
    });
    let result = if json {
        let console_layer = tracing_subscriber::fmt::layer()
            .event_format(JsonFormat)
            .with_writer(console);
        let file_layer = to_file.map(|w| {
            tracing_subscriber::fmt::layer()
                .event_format(JsonFormat)
                .with_writer(w)
        });
        registry.with(console_layer).with(file_layer).try_init()
    } else {
        let console_layer = tracing_subscriber::fmt::layer()
            .with_target(false)
            .with_ansi(ansi)
            .with_writer(console)
            .boxed();
        let file_layer = to_file.map(|w| {
            tracing_subscriber::fmt::layer()
                .with_target(false)
                .with_ansi(false)
                .with_writer(w)
        });
        registry.with(console_layer).with(file_layer).try_init()
    };
    result.map_err(|e| format!("cannot set up logging: {e}"))
}

/// Logstash's JSON log line.
struct JsonFormat;

impl<S, N> FormatEvent<S, N> for JsonFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let mut fields = JsonFields(serde_json::Map::new());
        event.record(&mut fields);
        let thread = std::thread::current();
        let line = serde_json::json!({
            "level": meta.level().as_str(),
            "loggerName": meta.target().replace("::", "."),
            "timeMillis": sluice_event::Timestamp::now().millis(),
            "thread": thread.name().unwrap_or("main"),
            "logEvent": fields.0,
        });
        writeln!(writer, "{line}")
    }
}

/// A record's fields as JSON values (`message` first, as tracing records it).
struct JsonFields(serde_json::Map<String, serde_json::Value>);

impl Visit for JsonFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), format!("{value:?}").into());
    }
}

/// A log file under `path.logs`, rolled by day and by size.
#[derive(Clone)]
pub struct RollingFile {
    inner: Arc<Mutex<FileState>>,
}

struct FileState {
    dir: PathBuf,
    /// `logstash-plain` or `logstash-json`.
    name: &'static str,
    file: File,
    size: u64,
    /// The day (`YYYY-MM-DD`, UTC) the current file's records belong to.
    day: String,
}

/// The UTC day (`YYYY-MM-DD`) of `t`.
fn day_of(t: sluice_event::Timestamp) -> String {
    let mut s = String::new();
    t.write_iso8601(&mut s);
    s.truncate(10);
    s
}

fn today() -> String {
    day_of(sluice_event::Timestamp::now())
}

impl RollingFile {
    pub fn open(dir: &Path, name: &'static str) -> Result<RollingFile, String> {
        fs::create_dir_all(dir).map_err(|e| format!("path.logs {}: {e}", dir.display()))?;
        let path = dir.join(format!("{name}.log"));
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("path.logs {}: {e}", path.display()))?;
        let meta = file.metadata().map_err(|e| e.to_string())?;
        // A file left from an earlier day is rolled on the first record.
        let day = meta
            .modified()
            .ok()
            .map(|t| {
                let millis = t
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64);
                day_of(sluice_event::Timestamp::from_millis(millis))
            })
            .unwrap_or_else(today);
        Ok(RollingFile {
            inner: Arc::new(Mutex::new(FileState {
                dir: dir.to_owned(),
                name,
                file,
                size: meta.len(),
                day,
            })),
        })
    }

    fn write_record(&self, record: &[u8]) -> io::Result<()> {
        let mut s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let day = today();
        if s.size > 0 && (day != s.day || s.size + record.len() as u64 > ROLL_BYTES) {
            s.roll()?;
        }
        s.day = day;
        s.file.write_all(record)?;
        s.size += record.len() as u64;
        Ok(())
    }
}

impl FileState {
    /// Moves the current file to `<name>-<day>-<n>.log.gz` (the next free `n`), starts a new
    /// one, and deletes the oldest rolled files past [`KEEP_ROLLED`].
    fn roll(&mut self) -> io::Result<()> {
        let current = self.dir.join(format!("{}.log", self.name));
        let prefix = format!("{}-{}-", self.name, self.day);
        let mut n = 1;
        while self.dir.join(format!("{prefix}{n}.log.gz")).exists() {
            n += 1;
        }
        let rolled = self.dir.join(format!("{prefix}{n}.log.gz"));
        {
            let mut input = File::open(&current)?;
            let out = File::create(&rolled)?;
            let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
            io::copy(&mut input, &mut gz)?;
            gz.finish()?.sync_all()?;
        }
        self.file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&current)?;
        self.size = 0;
        let mut old: Vec<(std::time::SystemTime, PathBuf)> = fs::read_dir(&self.dir)?
            .filter_map(|e| e.ok())
            .filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with(&format!("{}-", self.name)) && name.ends_with(".log.gz")
            })
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        old.sort();
        let expired = std::time::SystemTime::now() - std::time::Duration::from_secs(7 * 86_400);
        let excess = old.len().saturating_sub(KEEP_ROLLED);
        for (i, (modified, path)) in old.iter().enumerate() {
            // Logstash's log4j2 setup: 30 rolled files at most, none older than 7 days.
            if i < excess || *modified < expired {
                let _ = fs::remove_file(path);
            }
        }
        Ok(())
    }
}

enum Target {
    Stderr,
    File(RollingFile),
}

/// Writes each log record (handed over whole, ending in a newline) with its inner control
/// characters escaped (plain format). The escape character is kept when the log is colored
/// (the formatter's colors use it; it escapes ANSI sequences in values itself).
pub struct LineWriter {
    ansi: bool,
    escape: bool,
    to: Target,
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
        let record = if self.escape {
            escape_record(buf, self.ansi)
        } else {
            buf.to_vec()
        };
        match &self.to {
            Target::Stderr => io::stderr().lock().write_all(&record)?,
            Target::File(f) => f.write_record(&record)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &self.to {
            Target::Stderr => io::stderr().flush(),
            Target::File(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn files_roll_by_size_and_day_and_keep_thirty() {
        let dir = std::env::temp_dir().join(format!("sluice-log-roll-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let f = RollingFile::open(&dir, "logstash-plain").unwrap();
        f.write_record(b"first\n").unwrap();
        // A record from another day rolls the file first.
        f.inner.lock().unwrap().day = "2000-01-01".into();
        f.write_record(b"second\n").unwrap();
        let rolled = dir.join("logstash-plain-2000-01-01-1.log.gz");
        let mut text = String::new();
        io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(File::open(&rolled).unwrap()),
            &mut text,
        )
        .unwrap();
        assert_eq!(text, "first\n");
        assert_eq!(
            fs::read_to_string(dir.join("logstash-plain.log")).unwrap(),
            "second\n"
        );
        for _ in 0..40 {
            f.inner.lock().unwrap().roll().unwrap();
        }
        let gz = fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".gz")
            })
            .count();
        assert_eq!(gz, KEEP_ROLLED);
        let _ = fs::remove_dir_all(&dir);
    }
}

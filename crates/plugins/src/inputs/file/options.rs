//! The file input's options, read and checked as logstash-input-file reads them: friendly
//! durations (`"5 s"`, `"1 hour"`, `"14 days"`, a bare number in the option's own unit),
//! absolute paths, the mode-dependent defaults.

use std::path::PathBuf;
use std::time::Duration;

use sluice_pipeline::{ConfigError, Options};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Tail,
    Read,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completed {
    Delete,
    Log,
    LogAndDelete,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    LastModified,
    Path,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub paths: Vec<String>,
    /// `exclude` patterns, compiled (see [`fnmatch`]).
    pub exclude: Vec<regex::Regex>,
    pub mode: Mode,
    /// `start_position => beginning` (tail mode; read mode always reads from the start).
    pub from_beginning: bool,
    pub sincedb_path: PathBuf,
    pub sincedb_write_interval: Duration,
    pub sincedb_clean_after: Duration,
    /// Discovery every this many loops of `stat_interval`.
    pub discover_interval: u64,
    pub stat_interval: Duration,
    pub close_older: Option<Duration>,
    pub ignore_older: Option<Duration>,
    pub max_open_files: usize,
    pub delimiter: Vec<u8>,
    pub chunk_size: usize,
    pub chunk_count: u64,
    pub sort_by: SortBy,
    pub sort_descending: bool,
    pub completed: Completed,
    pub completed_log: Option<PathBuf>,
    pub exit_after_read: bool,
    pub check_archive_validity: bool,
}

/// Parses a friendly duration: a number (with an optional fraction), an optional space, an
/// optional unit (`us`/`usec(s)`, `ms`/`msec(s)`, `s`/`sec(s)`/`second(s)`,
/// `m`/`min(s)`/`minute(s)`, `h`/`hour(s)`, `d`/`day(s)`, `w`/`week(s)`); no unit means
/// `default_unit` seconds.
pub fn friendly_duration(text: &str, default_unit: f64) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let unit = unit.strip_prefix(' ').unwrap_or(unit);
    let ok_number = !number.is_empty()
        && !number.starts_with('.')
        && !number.ends_with('.')
        && number.matches('.').count() <= 1;
    let bad =
        || format!("{text:?} is not a duration (for example 5, \"30 s\", \"1 hour\", \"14 days\")");
    if !ok_number {
        return Err(bad());
    }
    let n: f64 = number.parse().map_err(|_| bad())?;
    let unit_secs = match unit {
        "" => default_unit,
        "us" | "usec" | "usecs" => 1e-6,
        "ms" | "msec" | "msecs" => 1e-3,
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
        "h" | "hour" | "hours" => 3600.0,
        "d" | "day" | "days" => 86_400.0,
        "w" | "week" | "weeks" => 604_800.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(n * unit_secs).map_err(|_| bad())
}

fn duration(
    opts: &mut Options,
    name: &str,
    default: Option<&str>,
    unit: f64,
) -> Result<Option<Duration>, ConfigError> {
    let text = match opts.string(name)? {
        Some(t) => Some(t),
        None => default.map(str::to_owned),
    };
    text.map(|t| friendly_duration(&t, unit).map_err(|e| opts.error(name, e)))
        .transpose()
}

fn positive(opts: &mut Options, name: &str, default: i64) -> Result<i64, ConfigError> {
    match opts.int(name)? {
        None => Ok(default),
        Some(n) if n > 0 => Ok(n),
        Some(_) => Err(opts.error(name, "must be a whole number above 0")),
    }
}

pub fn read(opts: &mut Options) -> Result<Settings, ConfigError> {
    let Some(paths) = opts.string_list("path")? else {
        return Err(
            opts.plugin_error("the file input needs `path` (one or more absolute paths or globs)")
        );
    };
    if paths.is_empty() {
        return Err(opts.error("path", "must name at least one file or glob"));
    }
    if let Some(p) = paths.iter().find(|p| !p.starts_with('/')) {
        return Err(opts.error(
            "path",
            format!("file paths must be absolute, relative path specified: {p}"),
        ));
    }
    let exclude = opts
        .string_list("exclude")?
        .unwrap_or_default()
        .iter()
        .map(|x| {
            fnmatch(x).ok_or_else(|| opts.error("exclude", format!("{x:?} is not a valid pattern")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mode = match opts.choice("mode", &["tail", "read"], "tail")?.as_str() {
        "read" => Mode::Read,
        _ => Mode::Tail,
    };
    let from_beginning =
        opts.choice("start_position", &["beginning", "end"], "end")? == "beginning";
    let sincedb_path = match opts.string("sincedb_path")? {
        Some(p) => {
            let p = PathBuf::from(p);
            if p.is_dir() {
                return Err(opts.error(
                    "sincedb_path",
                    format!("{} is a directory; name a file", p.display()),
                ));
            }
            p
        }
        None => {
            let Some(data) = opts.path_data() else {
                return Err(opts.error(
                    "sincedb_path",
                    "no path.data to keep the sincedb under: set sincedb_path",
                ));
            };
            use md5::Digest;
            let digest = md5::Md5::digest(paths.join(",").as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            data.join("plugins/inputs/file")
                .join(format!(".sincedb_{hex}"))
        }
    };
    let sincedb_write_interval = duration(opts, "sincedb_write_interval", Some("15"), 1.0)?
        .unwrap_or(Duration::from_secs(15));
    let sincedb_clean_after = duration(opts, "sincedb_clean_after", Some("14"), 86_400.0)?
        .unwrap_or(Duration::from_secs(14 * 86_400));
    let discover_interval = positive(opts, "discover_interval", 15)? as u64;
    let stat_interval =
        duration(opts, "stat_interval", Some("1"), 1.0)?.unwrap_or(Duration::from_secs(1));
    let close_older = duration(opts, "close_older", Some("3600"), 1.0)?;
    let ignore_older = duration(opts, "ignore_older", None, 1.0)?;
    let max_open_files = match opts.int("max_open_files")? {
        Some(n) if n > 0 => n as usize,
        _ => 4095,
    };
    let delimiter = opts.string_or("delimiter", "\n")?;
    if delimiter.is_empty() {
        return Err(opts.error("delimiter", "must not be empty"));
    }
    let chunk_size = positive(opts, "file_chunk_size", 32_768)? as usize;
    let chunk_count = positive(opts, "file_chunk_count", 140_737_488_355_327)? as u64;
    let sort_by = match opts
        .choice("file_sort_by", &["last_modified", "path"], "last_modified")?
        .as_str()
    {
        "path" => SortBy::Path,
        _ => SortBy::LastModified,
    };
    let sort_descending = opts.choice("file_sort_direction", &["asc", "desc"], "asc")? == "desc";
    let completed = match opts
        .choice(
            "file_completed_action",
            &["delete", "log", "log_and_delete"],
            "delete",
        )?
        .as_str()
    {
        "log" => Completed::Log,
        "log_and_delete" => Completed::LogAndDelete,
        _ => Completed::Delete,
    };
    let completed_log = opts.string("file_completed_log_path")?.map(PathBuf::from);
    if completed != Completed::Delete && completed_log.is_none() {
        return Err(opts.error(
            "file_completed_action",
            "\"log\" and \"log_and_delete\" need file_completed_log_path",
        ));
    }
    let exit_after_read = opts.boolean_or("exit_after_read", false)?;
    if exit_after_read && mode == Mode::Tail {
        return Err(opts.error(
            "exit_after_read",
            "applies to mode => read only (a tailed file never ends)",
        ));
    }
    let check_archive_validity = opts.boolean_or("check_archive_validity", false)?;
    Ok(Settings {
        paths,
        exclude,
        mode,
        from_beginning,
        sincedb_path,
        sincedb_write_interval,
        sincedb_clean_after,
        discover_interval,
        stat_interval,
        close_older,
        ignore_older,
        max_open_files,
        delimiter: delimiter.into_bytes(),
        chunk_size,
        chunk_count,
        sort_by,
        sort_descending,
        completed,
        completed_log,
        exit_after_read,
        check_archive_validity,
    })
}

/// Ruby's `File.fnmatch` without flags, for `exclude` against a base name, as a regex: `*`
/// and `?` (which match `/` too, but base names have none), `[…]` sets.
pub fn fnmatch(pattern: &str) -> Option<regex::Regex> {
    let glob = regex::escape(pattern)
        .replace(r"\*", ".*")
        .replace(r"\?", ".")
        .replace(r"\[", "[")
        .replace(r"\]", "]")
        .replace(r"\-", "-")
        .replace(r"\^", "^");
    regex::Regex::new(&format!("^(?s:{glob})$")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn friendly_durations() {
        let d = |t, unit| friendly_duration(t, unit).map(|d| d.as_secs_f64());
        assert_eq!(d("5", 1.0), Ok(5.0));
        assert_eq!(d("14", 86_400.0), Ok(14.0 * 86_400.0));
        assert_eq!(d("1.5m", 1.0), Ok(90.0));
        assert_eq!(d("1 hour", 1.0), Ok(3600.0));
        assert_eq!(d("250 ms", 1.0), Ok(0.25));
        assert_eq!(d("2 weeks", 1.0), Ok(1_209_600.0));
        for bad in ["", ".5", "5 5 days", "-1", "5 fortnights", "1..5"] {
            assert!(friendly_duration(bad, 1.0).is_err(), "{bad}");
        }
    }
}

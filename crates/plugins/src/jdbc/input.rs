//! `jdbc` input: each row of a SQL query becomes an event, once or on a schedule, as
//! logstash-input-jdbc does.
//!
//! A run connects (tried `connection_retry_attempts` times, `connection_retry_attempts_wait_time`
//! apart), runs `statement` (or `statement_filepath`'s) with its `:name` parameters put in as
//! SQL literals (Sequel's way: `parameters`, and `:sql_last_value`), and pushes the rows'
//! events in batches of the pipeline's batch size. Each row's columns become fields
//! (lowercased unless `lowercase_column_names => false`), under `target` when set. A run that
//! fails is tried again `statement_retry_attempts` times, then logged; the connection is
//! closed after each run. Statements are logged at `sql_log_level` (info).
//!
//! - `jdbc_paging_enabled`: the statement is read `jdbc_page_size` rows at a time, counted
//!   first and then read page by page as `SELECT * FROM (statement) AS t1 LIMIT n OFFSET m`
//!   (Sequel's `each_page`; order only as the statement gives it). `jdbc_paging_mode =>
//!   explicit` puts `:size` and `:offset` into the statement instead, until a page is short.
//! - `use_prepared_statements`: `?` placeholders filled from `prepared_statement_bind_values`
//!   (`":sql_last_value"` is the tracked value), checked as Logstash checks them.
//! - `jdbc_fetch_size`: PostgreSQL sends that many rows at a time (a cursor); the other
//!   drivers stream anyway.
//!
//! `:sql_last_value` ([`super::tracking`]): after a run it becomes the `tracking_column` of the
//! run's last row (`use_column_value`, `tracking_column_type` numeric or timestamp) or the
//! time the run started. It is written to `last_run_metadata_path` (default
//! `<path.data>/plugins/inputs/jdbc/logstash_jdbc_last_run`, as Logstash's) only after the
//! run's events are queued (every push returned): a crash before that reads the run's rows
//! again (at-least-once), never skips any. A run cut short by the pipeline's stop records the
//! last row it queued.
//!
//! `schedule` (cron, [`crate::schedule`]) repeats runs until the pipeline stops; `interval`
//! runs again that long after a run ends, `period` every that long (first after one interval,
//! as rufus-scheduler). Without any of them the input runs once and ends.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sluice_event::{Event, FieldRef, Value};
use sluice_pipeline::options::ast_to_value;
use sluice_pipeline::plugin::sleep_unless;
use sluice_pipeline::{ConfigError, Input, InputContext, Options};

use super::connection::{
    count_sql, file_path, page_sql, trim_statement, Attempts, Connection, Database, Flow, JdbcError,
};
use super::tracking::{Kind, LastRun};
use super::value::{bind_named, bind_positional, row_to_map, Cell};
use crate::schedule::{parse_duration, Schedule};

/// How the statement is sent.
enum Mode {
    Plain,
    /// Sequel's `each_page`: counted, then LIMIT/OFFSET subselects.
    Paged(u64),
    /// `:offset` and `:size` in the statement.
    Explicit(u64),
    /// `?` placeholders; `None` stands for `:sql_last_value`.
    Prepared(Vec<Option<Cell>>),
}

enum When {
    Once,
    Cron(Schedule),
    Interval(Duration),
    Period(Duration),
}

#[derive(Clone, Copy)]
enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
}

pub struct JdbcInput {
    db: Database,
    statement: String,
    parameters: Vec<(String, Cell)>,
    mode: Mode,
    fetch_size: Option<u32>,
    lowercase: bool,
    target: Option<FieldRef>,
    use_column_value: bool,
    tracking_column: Option<String>,
    last_run: LastRun,
    when: When,
    connection_attempts: Attempts,
    statement_attempts: Attempts,
    sql_log_level: LogLevel,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let _ = opts.codec("plain")?; // as Logstash's: declared, never used
    let statement = match (opts.string("statement")?, opts.string("statement_filepath")?) {
        (Some(s), None) => s,
        (None, Some(path)) => std::fs::read_to_string(&path).map_err(|e| {
            opts.error("statement_filepath", format!("cannot read {path:?}: {e}"))
        })?,
        _ => {
            return Err(opts.plugin_error(
                "jdbc input: must set either statement or statement_filepath; only one may be set at a time",
            ))
        }
    };
    let mut parameters = Vec::new();
    for (k, v) in opts.hash("parameters")?.unwrap_or_default() {
        let cell = Cell::from_value(&ast_to_value(&v))
            .map_err(|e| opts.error("parameters", format!("{k:?}: {e}")))?;
        parameters.push((k, cell));
    }

    let schedule = opts.string("schedule")?;
    let interval = opts.string("interval")?;
    let period = opts.string("period")?;
    let given = [&schedule, &interval, &period]
        .iter()
        .filter(|o| o.is_some())
        .count();
    if given > 1 {
        let name = if period.is_some() {
            "period"
        } else {
            "interval"
        };
        return Err(opts.error(name, "use only one of: interval, period, schedule"));
    }
    let duration = |opts: &Options, name: &str, text: &str| {
        parse_duration(text)
            .map_err(|e| opts.error(name, e))
            .and_then(|d| {
                if d.is_zero() {
                    Err(opts.error(name, format!("{text:?} is zero")))
                } else {
                    Ok(d)
                }
            })
    };
    let when = match (schedule, interval, period) {
        (Some(s), _, _) => {
            When::Cron(Schedule::parse_cron(&s).map_err(|e| opts.error("schedule", e))?)
        }
        (_, Some(i), _) => When::Interval(duration(opts, "interval", &i)?),
        (_, _, Some(p)) => When::Period(duration(opts, "period", &p)?),
        _ => When::Once,
    };

    let use_column_value = opts.boolean_or("use_column_value", false)?;
    let tracking_column = opts.string("tracking_column")?;
    if use_column_value && tracking_column.is_none() {
        return Err(opts.error(
            "tracking_column",
            "must be set when use_column_value is true",
        ));
    }
    let numeric =
        opts.choice("tracking_column_type", &["numeric", "timestamp"], "numeric")? == "numeric";
    let clean_run = opts.boolean_or("clean_run", false)?;
    let record_last_run = opts.boolean_or("record_last_run", true)?;
    let path =
        match opts.string("last_run_metadata_path")? {
            Some(p) => Some(file_path(opts, "last_run_metadata_path", &p)?),
            None if record_last_run => match opts.path_data() {
                Some(data) => Some(data.join("plugins/inputs/jdbc/logstash_jdbc_last_run")),
                None => return Err(opts.error(
                    "last_run_metadata_path",
                    "no path.data to keep the last run's value under: set last_run_metadata_path",
                )),
            },
            None => None,
        };
    let path: Option<PathBuf> = path.filter(|_| record_last_run);

    let lowercase = opts.boolean_or("lowercase_column_names", true)?;
    if opts.string("charset")?.is_some() || opts.hash("columns_charset")?.is_some() {
        tracing::info!("jdbc input: charset and columns_charset are ignored: the native drivers give UTF-8 text");
    }
    let target = match opts.string("target")? {
        Some(t) => {
            Some(FieldRef::parse(&t).map_err(|e| opts.error("target", format!("{t:?}: {e}")))?)
        }
        None => None,
    };
    if target.is_none() && crate::ecs::Ecs::from_options(opts)?.enabled() {
        tracing::info!("jdbc input: ECS compatibility is enabled but no `target` option was specified, it is recommended to set the option to avoid potential schema conflicts (if your data is ECS compliant or non-conflicting feel free to ignore this message)");
    }

    let paging = opts.boolean_or("jdbc_paging_enabled", false)?;
    let explicit = opts.choice("jdbc_paging_mode", &["auto", "explicit"], "auto")? == "explicit";
    let page_size = opts.int("jdbc_page_size")?.unwrap_or(100_000);
    if page_size < 1 {
        return Err(opts.error("jdbc_page_size", "must be at least 1"));
    }
    let fetch_size = match opts.int("jdbc_fetch_size")? {
        None => None,
        Some(n) if n < 1 || n > i64::from(i32::MAX) => {
            return Err(opts.error("jdbc_fetch_size", "must be between 1 and 2147483647"))
        }
        Some(n) => Some(n as u32),
    };
    let prepared = opts.boolean_or("use_prepared_statements", false)?;
    let name = opts.string_or("prepared_statement_name", "")?;
    let binds: Vec<Value> = match opts.take("prepared_statement_bind_values") {
        Some((_, sluice_config::Value::Array(items))) => items.iter().map(ast_to_value).collect(),
        Some((_, v)) => vec![ast_to_value(&v)],
        None => Vec::new(),
    };
    let mode = if prepared {
        let mut errors = Vec::new();
        if name.is_empty() {
            errors.push("must provide a name for the Prepared Statement, it must be unique for the db session");
        }
        if statement.matches('?').count() != binds.len() {
            errors.push("there is a mismatch between the number of statement `?` placeholders and :prepared_statement_bind_values array setting elements");
        }
        if paging {
            errors.push("JDBC pagination cannot be used at this time");
        }
        if !errors.is_empty() {
            return Err(opts.error(
                "use_prepared_statements",
                format!(
                    "Prepared Statement Mode validation errors: {}",
                    errors.join(", ")
                ),
            ));
        }
        let mut cells = Vec::new();
        for b in &binds {
            cells.push(match b {
                Value::String(s) if s.as_str() == ":sql_last_value" => None,
                other => Some(
                    Cell::from_value(other)
                        .map_err(|e| opts.error("prepared_statement_bind_values", e))?,
                ),
            });
        }
        Mode::Prepared(cells)
    } else if paging && explicit {
        Mode::Explicit(page_size as u64)
    } else if paging {
        Mode::Paged(page_size as u64)
    } else {
        Mode::Plain
    };

    let sql_log_level = match opts
        .choice(
            "sql_log_level",
            &["fatal", "error", "warn", "info", "debug"],
            "info",
        )?
        .as_str()
    {
        "fatal" | "error" => LogLevel::Error,
        "warn" => LogLevel::Warn,
        "debug" => LogLevel::Debug,
        _ => LogLevel::Info,
    };
    let connection_attempts = Attempts::from_options(
        opts,
        "connection_retry_attempts",
        "connection_retry_attempts_wait_time",
    )?;
    let statement_attempts = Attempts::from_options(
        opts,
        "statement_retry_attempts",
        "statement_retry_attempts_wait_time",
    )?;
    let db = Database::from_options(opts)?;
    let kind = if use_column_value && numeric {
        Kind::Numeric
    } else {
        Kind::Time {
            datetime: opts.has("jdbc_default_timezone"),
        }
    };
    let last_run = LastRun::load(path, kind, clean_run);
    Ok(Box::new(JdbcInput {
        db,
        statement,
        parameters,
        mode,
        fetch_size,
        lowercase,
        target,
        use_column_value,
        tracking_column,
        last_run,
        when,
        connection_attempts,
        statement_attempts,
        sql_log_level,
    }))
}

/// How a statement's run ended.
enum Outcome {
    /// Every row was read and queued; the tracking column of the last row, if any.
    Complete(Option<Cell>),
    /// The pipeline stopped it; the tracking column of the last row queued, if any.
    Stopped(Option<Cell>),
}

/// Rows becoming events: buffered to the batch size, pushed, the tracked value following the
/// last row pushed.
struct Rows<'a> {
    ctx: &'a InputContext,
    input: &'a JdbcInput,
    buffer: Vec<Event>,
    /// The tracking column of the last row buffered, and of the last row pushed.
    buffered_last: Option<Cell>,
    pushed_last: Option<Cell>,
    tracking_index: Option<(Arc<[String]>, Option<usize>)>,
    warned: bool,
    stopped: bool,
    count: u64,
}

impl Rows<'_> {
    fn row(&mut self, names: &Arc<[String]>, cells: Vec<Cell>) -> Flow {
        if self.ctx.is_stopping() {
            self.stopped = true;
            return Flow::Stop;
        }
        if let Some(column) = self.input.tracking_column.as_deref() {
            let same = matches!(&self.tracking_index, Some((n, _)) if Arc::ptr_eq(n, names));
            if !same {
                let index = names.iter().position(|n| {
                    if self.input.lowercase {
                        n.to_lowercase() == column
                    } else {
                        n == column
                    }
                });
                self.tracking_index = Some((Arc::clone(names), index));
            }
            match self.tracking_index.as_ref().and_then(|(_, i)| *i) {
                Some(i) => self.buffered_last = Some(cells[i].clone()),
                None if self.input.use_column_value && !self.warned => {
                    self.warned = true;
                    tracing::warn!(
                        tracking_column = column,
                        "jdbc input: tracking_column not found in dataset."
                    );
                }
                None => {}
            }
        }
        let map = row_to_map(names, &cells, self.input.lowercase);
        let event = match &self.input.target {
            None => Event::from_map(map),
            Some(t) => {
                let mut e = Event::new();
                e.set(t, Value::Object(map));
                e
            }
        };
        self.buffer.push(event);
        self.count += 1;
        if self.buffer.len() >= self.ctx.batch_size().max(1) && !self.flush() {
            return Flow::Stop;
        }
        Flow::More
    }

    /// Pushes what is buffered; false when the pipeline stopped taking events.
    fn flush(&mut self) -> bool {
        if self.buffer.is_empty() {
            return true;
        }
        match self.ctx.push(std::mem::take(&mut self.buffer)) {
            Ok(()) => {
                self.pushed_last = self.buffered_last.clone();
                true
            }
            Err(_) => {
                self.stopped = true;
                false
            }
        }
    }
}

impl JdbcInput {
    fn log_sql(&self, sql: &str) {
        match self.sql_log_level {
            LogLevel::Error => tracing::error!(statement = %sql, "jdbc input: executing"),
            LogLevel::Warn => tracing::warn!(statement = %sql, "jdbc input: executing"),
            LogLevel::Info => tracing::info!(statement = %sql, "jdbc input: executing"),
            LogLevel::Debug => tracing::debug!(statement = %sql, "jdbc input: executing"),
        }
    }

    fn connect(&self, ctx: &InputContext) -> Result<Connection, JdbcError> {
        let n = self.connection_attempts.attempts;
        let mut attempt = 1;
        loop {
            match self.db.connect() {
                Ok(c) => return Ok(c),
                Err(e) if attempt < n && !ctx.is_stopping() => {
                    tracing::error!(error = %e, "jdbc input: Unable to connect to database. Trying again");
                }
                Err(e) => {
                    tracing::error!(error = %e, "jdbc input: Unable to connect to database. Tried {n} times");
                    return Err(e);
                }
            }
            attempt += 1;
            sleep_unless(self.connection_attempts.wait, || ctx.is_stopping());
        }
    }

    /// The named parameters of a run: `sql_last_value` first, then `parameters`.
    fn params(&self, extra: &[(&str, Cell)]) -> Vec<(String, Cell)> {
        let mut p = vec![("sql_last_value".to_owned(), self.last_run.value().clone())];
        p.extend(self.parameters.iter().cloned());
        p.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
        p
    }

    /// One try at the statement: connect, query, push every row's event. A stop while the
    /// statement runs cancels it (a thread watches for it).
    fn run_statement(&self, ctx: &InputContext) -> Result<Outcome, JdbcError> {
        let mut conn = self.connect(ctx)?;
        let canceller = conn.canceller(&self.db);
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    if ctx.is_stopping() {
                        canceller.cancel();
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            });
            let outcome = self.read_all(ctx, &mut conn);
            done.store(true, Ordering::Relaxed);
            outcome
        })
    }

    /// Reads every row of the run and pushes their events; a failure after a stop (the
    /// statement cancelled) is a stop, with what was queued.
    fn read_all(&self, ctx: &InputContext, conn: &mut Connection) -> Result<Outcome, JdbcError> {
        let mut rows = Rows {
            ctx,
            input: self,
            buffer: Vec::new(),
            buffered_last: None,
            pushed_last: None,
            tracking_index: None,
            warned: false,
            stopped: false,
            count: 0,
        };
        match self.read_rows(&mut rows, conn) {
            Ok(()) => {}
            Err(e) if ctx.is_stopping() => {
                tracing::debug!(error = %e, "jdbc input: statement cut short by the stop");
                return Ok(Outcome::Stopped(rows.pushed_last));
            }
            Err(e) => return Err(e),
        }
        if rows.stopped || !rows.flush() {
            return Ok(Outcome::Stopped(rows.pushed_last));
        }
        Ok(Outcome::Complete(rows.pushed_last))
    }

    /// The statements of a run, as `mode` says.
    fn read_rows(&self, rows: &mut Rows, conn: &mut Connection) -> Result<(), JdbcError> {
        let zones = Arc::clone(&self.db.zones);
        let dialect = self.db.dialect();
        let fetch = self.fetch_size;
        let run = |conn: &mut Connection, sql: &str, rows: &mut Rows| -> Result<u64, JdbcError> {
            self.log_sql(sql);
            let before = rows.count;
            conn.query(sql, fetch, &zones, &mut |names, cells| {
                rows.row(names, cells)
            })?;
            Ok(rows.count - before)
        };
        match &self.mode {
            Mode::Plain => {
                let sql = bind_named(&self.statement, &self.params(&[]), dialect, &zones.literal);
                run(conn, &sql, rows)?;
            }
            Mode::Prepared(binds) => {
                let values: Vec<Cell> = binds
                    .iter()
                    .map(|b| b.clone().unwrap_or_else(|| self.last_run.value().clone()))
                    .collect();
                let sql = bind_positional(&self.statement, &values, dialect, &zones.literal)
                    .map_err(JdbcError::Parameter)?;
                run(conn, &sql, rows)?;
            }
            Mode::Paged(size) => {
                let sql = bind_named(&self.statement, &self.params(&[]), dialect, &zones.literal);
                let counting = count_sql(&sql);
                self.log_sql(&counting);
                let total = conn.count(&sql, &zones)?.max(0) as u64;
                let pages = total.div_ceil(*size);
                for page in 0..pages {
                    if rows.stopped {
                        break;
                    }
                    tracing::debug!(
                        current_page = page + 1,
                        pages,
                        total_record_count = total,
                        "jdbc input: fetching paged dataset"
                    );
                    run(conn, &page_sql(&sql, *size, page * size), rows)?;
                }
            }
            Mode::Explicit(size) => {
                let mut offset = 0u64;
                loop {
                    let params = self.params(&[
                        ("offset", Cell::Int(offset.into())),
                        ("size", Cell::Int((*size).into())),
                    ]);
                    let sql = bind_named(
                        trim_statement(&self.statement),
                        &params,
                        dialect,
                        &zones.literal,
                    );
                    let n = run(conn, &sql, rows)?;
                    if rows.stopped || n != *size {
                        break;
                    }
                    offset += size;
                }
            }
        }
        Ok(())
    }

    /// A whole run: the statement tried `statement_retry_attempts` times, then the tracked
    /// value kept (in the file once the events are queued).
    fn execute(&mut self, ctx: &InputContext) {
        let started = jiff::Timestamp::now();
        let n = self.statement_attempts.attempts;
        let mut attempt = 1;
        let outcome = loop {
            match self.run_statement(ctx) {
                Ok(o) => break Some(o),
                Err(_) if ctx.is_stopping() => break None,
                Err(e) => {
                    tracing::warn!(error = %e, "jdbc input: Exception when executing JDBC query");
                    if attempt >= n {
                        tracing::error!(
                            "jdbc input: Unable to execute statement. Tried {n} times."
                        );
                        break None;
                    }
                    tracing::error!("jdbc input: Unable to execute statement. Trying again.");
                }
            }
            attempt += 1;
            sleep_unless(self.statement_attempts.wait, || ctx.is_stopping());
        };
        let changed = match outcome {
            None => false,
            Some(Outcome::Complete(last)) => {
                if self.use_column_value {
                    last.is_some_and(|v| self.last_run.set(v))
                } else {
                    self.last_run.set(Cell::Time(started))
                }
            }
            // Stopped: what was queued is recorded, so that a restart does not read it again.
            Some(Outcome::Stopped(last)) => {
                self.use_column_value && last.is_some_and(|v| self.last_run.set(v))
            }
        };
        if changed {
            if let Err(e) = self.last_run.store() {
                tracing::error!(error = %e, path = ?self.last_run.path(), "jdbc input: cannot write the last run's value");
            }
        }
    }
}

impl Input for JdbcInput {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        let stopping = || ctx.is_stopping();
        match &self.when {
            When::Once => {
                self.execute(ctx);
                return Ok(());
            }
            When::Cron(schedule) => {
                let schedule = schedule.clone();
                crate::schedule::run(&schedule, stopping, || self.execute(ctx));
            }
            When::Interval(every) => {
                let every = *every;
                while sleep_unless(every, stopping) {
                    self.execute(ctx);
                }
            }
            When::Period(every) => {
                let every = *every;
                let mut next = std::time::Instant::now() + every;
                loop {
                    let now = std::time::Instant::now();
                    if next > now && !sleep_unless(next - now, stopping) {
                        break;
                    }
                    self.execute(ctx);
                    // Runs missed while this one went on are not made up.
                    let now = std::time::Instant::now();
                    while next <= now {
                        next += every;
                    }
                }
            }
        }
        // As Logstash's scheduler: the input stays until the pipeline stops.
        while !ctx.is_stopping() {
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }
}

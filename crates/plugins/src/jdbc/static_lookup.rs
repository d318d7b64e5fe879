//! `jdbc_static` filter: copies tables of a remote database into a local in-memory database,
//! then enriches each event from the local copy, as logstash-filter-jdbc_static does (it uses
//! an embedded Derby; sluice uses an in-memory SQLite).
//!
//! - `local_db_objects`: the local tables, created when the filter is built (sorted by name):
//!   `{ name => "servers" columns => [["ip", "varchar(64)"], ["name", "text"]] index_columns =>
//!   ["ip"] preserve_existing => false }`.
//! - `loaders`: `{ id => "servers" query => "SELECT ip, name FROM servers" local_table =>
//!   "servers" max_rows => 1000000 }`. A load runs each loader's query on the remote database
//!   (`jdbc_connection_string` and its options), and replaces the local table's rows with the
//!   result, column by column in order, in one transaction: lookups see the old rows or the
//!   new ones. A query that returns no rows, or more than `max_rows`, leaves the table as it
//!   is (logged), as Logstash does. The first load runs at the first event (Logstash loads at
//!   startup); `loader_schedule` (cron) loads again on a thread of its own, which ends with
//!   the filter. A first load that fails (the remote database is down) is logged and tried
//!   again every 10 s in the background until it succeeds; events meanwhile see empty tables.
//! - `local_lookups`: `{ id => "server" query => "SELECT name FROM servers WHERE ip = :ip"
//!   parameters => { "ip" => "[source][ip]" } target => "server" default_hash => { name =>
//!   "unknown" } }` (or `prepared_parameters => ["[source][ip]"]` with `?` placeholders). A
//!   parameter is an event field, or a sprintf template when it holds `%{...}`; a field that is
//!   missing, an object or a list, or a template that stays as written, makes the lookup
//!   invalid: tagged `tag_on_failure` and skipped. The rows found (column names lowercased, as
//!   Derby gives them) go to `target` (the lookup's `id` when absent) as a list; none gives
//!   `[default_hash]` and `tag_on_default_use` when a default is set, else an empty list. A
//!   query that fails tags `tag_on_failure`. The filter matches only when every lookup was
//!   valid.
//!
//! The local database is shared by the workers behind one lock; lookups are indexed SQLite
//! reads, each a cached prepared statement with bound parameters.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rusqlite::types::Value as Sql;
use sluice_event::{Event, FieldRef, Template, Value};
use sluice_pipeline::options::ast_to_value;
use sluice_pipeline::{ConfigError, Filter, Options};

use super::connection::{Connection, Database, JdbcError};
use super::sqlite;
use super::value::{format_time, Cell, Zones};
use crate::schedule::Schedule;

/// How long a failed first load waits before it is tried again.
const FIRST_LOAD_RETRY: Duration = Duration::from_secs(10);

struct Loader {
    id: String,
    query: String,
    table: String,
    max_rows: i128,
}

struct DbObject {
    name: String,
    columns: Vec<(String, String)>,
    index_columns: Vec<String>,
    preserve_existing: bool,
}

/// Where a lookup parameter's value comes from.
enum Param {
    /// A field: missing, an object or a list makes the lookup invalid.
    Field(String, FieldRef),
    /// A template: rendered as written (nothing replaced) makes it invalid.
    Sprintf(String, Template),
}

struct Lookup {
    id: String,
    /// The query with its parameters as `?N` placeholders.
    sql: String,
    params: Vec<Param>,
    target: FieldRef,
    default: Option<Value>,
    tag_on_failure: Vec<String>,
    tag_on_default_use: Vec<String>,
}

#[derive(Default)]
struct LoadState {
    /// A load has been tried (the first one, at the first event).
    started: bool,
}

struct Shared {
    remote: Database,
    loaders: Vec<Loader>,
    local: Mutex<rusqlite::Connection>,
    lookups: Vec<Lookup>,
    schedule: Option<Schedule>,
    state: Mutex<LoadState>,
}

pub struct JdbcStatic {
    shared: Arc<Shared>,
}

type Entries = Vec<(String, Value)>;

/// The hashes of an array-of-hashes option, in order.
fn hashes(opts: &mut Options, name: &str) -> Result<Option<Vec<Entries>>, ConfigError> {
    let Some((_, ast)) = opts.take(name) else {
        return Ok(None);
    };
    let items = match ast_to_value(&ast) {
        Value::Array(items) => items,
        v @ Value::Object(_) => vec![v],
        _ => return Err(opts.error(name, "The options must be an Array")),
    };
    let mut out = Vec::new();
    for item in items {
        match item {
            Value::Object(m) => out.push(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
            _ => return Err(opts.error(name, "each entry must be a hash")),
        }
    }
    Ok(Some(out))
}

fn get<'a>(entries: &'a Entries, key: &str) -> Option<&'a Value> {
    entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn text(entries: &Entries, key: &str) -> Option<String> {
    match get(entries, key)? {
        Value::String(s) => Some(s.to_string()),
        _ => None,
    }
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    match v? {
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned))
            .collect(),
        Value::String(s) => Some(vec![s.to_string()]),
        _ => None,
    }
}

fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

fn parse_loaders(opts: &mut Options) -> Result<Vec<Loader>, ConfigError> {
    let mut loaders = Vec::new();
    for entries in hashes(opts, "loaders")?.unwrap_or_default() {
        let mut errors = Vec::new();
        let table = text(&entries, "local_table");
        if table.is_none() {
            errors.push("The options must include a 'local_table' string".to_owned());
        }
        let table = table.unwrap_or_default();
        let query = text(&entries, "query");
        if query.is_none() {
            errors.push(format!(
                "The options for '{table}' must include a 'query' string"
            ));
        }
        let max_rows = match get(&entries, "max_rows") {
            None => 1_000_000,
            Some(v) => match v
                .as_i128()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            {
                Some(n) => n,
                None => {
                    errors.push(format!(
                        "The 'max_rows' option for '{table}' must be an integer"
                    ));
                    0
                }
            },
        };
        if !errors.is_empty() {
            return Err(opts.error("loaders", errors.join(", ")));
        }
        loaders.push(Loader {
            id: text(&entries, "id").unwrap_or_else(|| table.clone()),
            query: query.unwrap_or_default(),
            table,
            max_rows,
        });
    }
    Ok(loaders)
}

fn parse_objects(opts: &mut Options) -> Result<Vec<DbObject>, ConfigError> {
    let mut objects = Vec::new();
    for entries in hashes(opts, "local_db_objects")?.unwrap_or_default() {
        let mut errors = Vec::new();
        let name = text(&entries, "name").unwrap_or_else(|| {
            errors.push("DbObject options must include a 'name' string".to_owned());
            "unnamed".to_owned()
        });
        let mut columns = Vec::new();
        match get(&entries, "columns") {
            Some(Value::Array(cols)) => {
                for c in cols {
                    match strings(Some(c)).as_deref() {
                        Some([n, t]) => columns.push((n.clone(), t.clone())),
                        _ => errors.push(format!("The columns array for '{name}' is not uniform, it should contain arrays of two strings only")),
                    }
                }
            }
            _ => errors.push(format!(
                "DbObject options for '{name}' must include a 'columns' array"
            )),
        }
        let mut index_columns = Vec::new();
        for c in strings(get(&entries, "index_columns")).unwrap_or_default() {
            if columns.iter().any(|(n, _)| *n == c) {
                index_columns.push(c);
            } else {
                errors.push(format!("The index_columns element: '{c}' must be a column defined in the columns array"));
            }
        }
        let preserve_existing =
            matches!(get(&entries, "preserve_existing"), Some(Value::Bool(true)))
                || text(&entries, "preserve_existing").as_deref() == Some("true");
        if !errors.is_empty() {
            return Err(opts.error("local_db_objects", errors.join(", ")));
        }
        objects.push(DbObject {
            name,
            columns,
            index_columns,
            preserve_existing,
        });
    }
    objects.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(objects)
}

/// `:name` (a key of `keys`, outside quotes) becomes `?N`, N the key's place from 1.
fn number_parameters(sql: &str, keys: &[String]) -> String {
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < bytes.len() && bytes[i] != q {
                    i += 1;
                }
                i += 1;
            }
            b':' => {
                let start = i + 1;
                let mut end = start;
                while end < bytes.len()
                    && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_')
                {
                    end += 1;
                }
                match keys.iter().position(|k| *k == sql[start..end]) {
                    Some(n) if end > start => {
                        out.push_str(&sql[copied..i]);
                        out.push_str(&format!("?{}", n + 1));
                        copied = end;
                        i = end;
                    }
                    _ => i = start,
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&sql[copied.min(sql.len())..]);
    out
}

fn param(value: &Value) -> Result<Param, String> {
    let Value::String(s) = value else {
        return Err(format!("{value:?} is not a field reference or a template"));
    };
    let s = s.to_string();
    if s.find("%{").is_some_and(|at| s[at..].contains('}')) {
        let t = Template::parse(&s);
        Ok(Param::Sprintf(s, t))
    } else {
        FieldRef::parse(&s)
            .map(|f| Param::Field(s.clone(), f))
            .map_err(|e| format!("{s:?}: {e}"))
    }
}

fn parse_lookups(
    opts: &mut Options,
    tag_on_failure: &[String],
    tag_on_default_use: &[String],
    ecs: bool,
) -> Result<Vec<Lookup>, ConfigError> {
    let Some(all) = hashes(opts, "local_lookups")? else {
        return Err(opts.plugin_error(
            "missing required setting \"local_lookups\" for filter plugin \"jdbc_static\"",
        ));
    };
    let mut lookups = Vec::new();
    let mut targets: Vec<(String, String)> = Vec::new();
    for (i, entries) in all.iter().enumerate() {
        let id = text(entries, "id").unwrap_or_else(|| format!("lookup-{}", i + 1));
        let target_text = match text(entries, "target") {
            Some(t) => {
                targets.push((t.clone(), id.clone()));
                t
            }
            None => {
                if ecs {
                    tracing::info!(lookup = %id, "jdbc_static: ECS compatibility is enabled but no ``target`` option was specified, it is recommended to set the option to avoid potential schema conflicts (if your data is ECS compliant or non-conflicting feel free to ignore this message)");
                }
                id.clone()
            }
        };
        let err = |m: String| opts.error("local_lookups", m);
        let Some(query) = text(entries, "query") else {
            return Err(err(format!(
                "The options for '{id}' must include a 'query' string"
            )));
        };
        let (sql, params) = match (
            get(entries, "parameters"),
            get(entries, "prepared_parameters"),
        ) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "Can't specify 'parameters' and 'prepared_parameters' in the same lookup"
                        .to_owned(),
                ))
            }
            (Some(Value::Object(m)), None) => {
                let keys: Vec<String> = m.keys().map(|k| k.to_string()).collect();
                let params = m
                    .values()
                    .map(param)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| err(format!("lookup '{id}' parameters: {e}")))?;
                (number_parameters(&query, &keys), params)
            }
            (Some(_), None) => {
                return Err(err(format!(
                    "The 'parameters' option for '{id}' must be a Hash"
                )))
            }
            (None, Some(Value::Array(items))) => {
                if query.matches('?').count() != items.len() {
                    return Err(err(format!("The 'prepared_parameters' option for '{id}' doesn't match count with query's placeholder")));
                }
                let params = items
                    .iter()
                    .map(param)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| err(format!("lookup '{id}' prepared_parameters: {e}")))?;
                (query.clone(), params)
            }
            (None, Some(_)) => {
                return Err(err(format!(
                    "The 'prepared_parameters' option for '{id}' must be an Array"
                )))
            }
            (None, None) => (query.clone(), Vec::new()),
        };
        let default = match get(entries, "default_hash") {
            Some(Value::Object(m)) if !m.is_empty() => {
                Some(Value::Array(vec![Value::Object(m.clone())]))
            }
            _ => None,
        };
        let target = FieldRef::parse(&target_text)
            .map_err(|e| err(format!("lookup '{id}' target {target_text:?}: {e}")))?;
        lookups.push(Lookup {
            id,
            sql,
            params,
            target,
            default,
            tag_on_failure: strings(get(entries, "tag_on_failure"))
                .unwrap_or_else(|| tag_on_failure.to_vec()),
            tag_on_default_use: strings(get(entries, "tag_on_default_use"))
                .unwrap_or_else(|| tag_on_default_use.to_vec()),
        });
    }
    let mut ids: Vec<&str> = lookups.iter().map(|l| l.id.as_str()).collect();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(opts.error(
            "local_lookups",
            format!(
                "Id setting must be different across all lookups, '{}' is specified multiple times",
                w[0]
            ),
        ));
    }
    targets.sort();
    if let Some(w) = targets.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(opts.error(
            "local_lookups",
            format!("Target setting must be different across all lookups, '{}', '{}' have the same target field setting", w[0].1, w[1].1),
        ));
    }
    Ok(lookups)
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let tag_on_failure = opts
        .string_list("tag_on_failure")?
        .unwrap_or_else(|| vec!["_jdbcstaticfailure".to_owned()]);
    let tag_on_default_use = opts
        .string_list("tag_on_default_use")?
        .unwrap_or_else(|| vec!["_jdbcstaticdefaultsused".to_owned()]);
    let ecs = crate::ecs::Ecs::from_options(opts)?.enabled();
    let loaders = parse_loaders(opts)?;
    let objects = parse_objects(opts)?;
    let lookups = parse_lookups(opts, &tag_on_failure, &tag_on_default_use, ecs)?;
    let schedule = match opts.string("loader_schedule")? {
        Some(s) => Some(Schedule::parse_cron(&s).map_err(|e| {
            opts.error(
                "loader_schedule",
                format!("The loader_schedule option is invalid: {e}"),
            )
        })?),
        None => None,
    };
    let _ = opts.string("staging_directory")?; // Derby's import files; nothing to stage here
    let remote = Database::from_options(opts)?;

    let local = sqlite::open(":memory:").map_err(|e| {
        opts.plugin_error(format!("jdbc_static: cannot open the local database: {e}"))
    })?;
    for o in &objects {
        let columns: Vec<String> = o
            .columns
            .iter()
            .map(|(n, t)| format!("{} {t}", quote(n)))
            .collect();
        let mut ddl = format!(
            "CREATE TABLE {}{} ({});",
            if o.preserve_existing {
                "IF NOT EXISTS "
            } else {
                ""
            },
            quote(&o.name),
            columns.join(", ")
        );
        if o.index_columns.is_empty() {
            tracing::warn!(local_db_object = %o.name, "jdbc_static: `index_columns` is optional but on larger datasets consider adding an index on the lookup column, it will improve performance");
        } else {
            let cols: Vec<String> = o.index_columns.iter().map(|c| quote(c)).collect();
            ddl.push_str(&format!(
                "CREATE INDEX IF NOT EXISTS {} ON {} ({});",
                quote(&format!("{}_{}_index", o.name, o.index_columns.join("_"))),
                quote(&o.name),
                cols.join(", ")
            ));
        }
        local
            .execute_batch(&ddl)
            .map_err(|e| opts.error("local_db_objects", format!("'{}': {e}", o.name)))?;
    }
    for l in &lookups {
        local
            .prepare_cached(&l.sql)
            .map_err(|e| opts.error("local_lookups", format!("lookup '{}': {e}", l.id)))?;
    }
    for l in &loaders {
        if !objects
            .iter()
            .any(|o| o.name.eq_ignore_ascii_case(&l.table))
        {
            tracing::warn!(loader = %l.id, local_table = %l.table, "jdbc_static: the loader's local_table is not one of local_db_objects");
        }
    }
    Ok(Box::new(JdbcStatic {
        shared: Arc::new(Shared {
            remote,
            loaders,
            local: Mutex::new(local),
            lookups,
            schedule,
            state: Mutex::new(LoadState::default()),
        }),
    }))
}

/// A cell as SQLite stores it (times as UTC text, which sorts and compares).
fn to_sql(c: &Cell) -> Sql {
    match c {
        Cell::Null => Sql::Null,
        Cell::Bool(b) => Sql::Integer(i64::from(*b)),
        Cell::Int(i) => match i64::try_from(*i) {
            Ok(i) => Sql::Integer(i),
            Err(_) => Sql::Text(i.to_string()),
        },
        Cell::Float(f) => Sql::Real(*f),
        Cell::Decimal(d) => Sql::Text(d.clone()),
        Cell::Text(s) => Sql::Text(s.clone()),
        Cell::Time(t) => Sql::Text(format_time(*t, &jiff::tz::TimeZone::UTC, false)),
        Cell::Array(_) => Sql::Text(sluice_event::json::to_string(&c.to_value())),
    }
}

impl Shared {
    /// Runs every loader: remote rows first, then each local table replaced in a transaction.
    fn load(&self) -> Result<(), JdbcError> {
        if self.loaders.is_empty() {
            return Ok(());
        }
        let zones = Arc::clone(&self.remote.zones);
        let mut remote: Connection = self.remote.connect()?;
        for l in &self.loaders {
            let started = Instant::now();
            let count = remote.count(&l.query, &zones)?;
            if count == 0 {
                tracing::warn!(lookup_id = %l.id, query = %l.query, "jdbc_static: Query returned no results");
                continue;
            }
            if count > l.max_rows {
                tracing::warn!(lookup_id = %l.id, query = %l.query, count = %count, max_rows = %l.max_rows, "jdbc_static: Query returned more than max_rows results");
                continue;
            }
            let (_, rows) = remote.query_all(&l.query, &zones)?;
            tracing::info!(
                "jdbc_static: loader {}, fetched {} records in: {:.3} seconds",
                l.id,
                rows.len(),
                started.elapsed().as_secs_f64()
            );
            let started = Instant::now();
            let mut local = self.local.lock().expect("not poisoned");
            let fill = |local: &mut rusqlite::Connection| -> rusqlite::Result<()> {
                let tx = local.transaction()?;
                tx.execute(&format!("DELETE FROM {}", quote(&l.table)), [])?;
                if let Some(first) = rows.first() {
                    let marks = vec!["?"; first.len()].join(", ");
                    let mut insert =
                        tx.prepare(&format!("INSERT INTO {} VALUES ({marks})", quote(&l.table)))?;
                    for r in &rows {
                        insert.execute(rusqlite::params_from_iter(r.iter().map(to_sql)))?;
                    }
                }
                tx.commit()
            };
            fill(&mut local).map_err(|e| {
                JdbcError::Statement(format!(
                    "Exception when filling lookup db from loader {}, query results, original message: {e}",
                    l.id
                ))
            })?;
            tracing::info!(
                "jdbc_static: loader {}, imported all fetched records in: {:.3} seconds",
                l.id,
                started.elapsed().as_secs_f64()
            );
        }
        Ok(())
    }

    fn load_logged(&self) -> bool {
        match self.load() {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "jdbc_static: loading the local tables failed");
                false
            }
        }
    }

    /// The first load, at the first event; then the schedule's loads (or the retries of a
    /// failed first load) on a thread that ends when the filter is dropped.
    fn start(self: &Arc<Self>) {
        let mut state = self.state.lock().expect("not poisoned");
        if state.started {
            return;
        }
        state.started = true;
        let loaded = self.load_logged();
        let weak: Weak<Shared> = Arc::downgrade(self);
        let gone = {
            let weak = weak.clone();
            move || weak.strong_count() == 0
        };
        if let Some(schedule) = self.schedule.clone() {
            std::thread::Builder::new()
                .name("jdbc_static loader".into())
                .spawn(move || {
                    crate::schedule::run(&schedule, gone, || {
                        if let Some(shared) = weak.upgrade() {
                            shared.load_logged();
                        }
                    })
                })
                .map(drop)
                .unwrap_or_else(|e| tracing::error!(error = %e, "jdbc_static: cannot start the loader_schedule thread"));
        } else if !loaded {
            std::thread::Builder::new()
                .name("jdbc_static first load".into())
                .spawn(move || loop {
                    if !sluice_pipeline::plugin::sleep_unless(FIRST_LOAD_RETRY, &gone) {
                        return;
                    }
                    match weak.upgrade() {
                        Some(shared) if shared.load_logged() => return,
                        Some(_) => {}
                        None => return,
                    }
                })
                .map(drop)
                .unwrap_or_else(|e| tracing::error!(error = %e, "jdbc_static: cannot start the first load's retry thread"));
        }
    }
}

/// What one lookup made of an event.
enum Outcome {
    Rows(Vec<Value>),
    /// A parameter is missing or unusable (named in the message).
    Invalid(String),
    Failed(String),
}

impl Lookup {
    fn bind(&self, event: &Event) -> Result<Vec<Sql>, String> {
        let mut out = Vec::with_capacity(self.params.len());
        for p in &self.params {
            let v = match p {
                Param::Field(text, f) => match event.get(f) {
                    None | Some(Value::Null) | Some(Value::Object(_)) | Some(Value::Array(_)) => {
                        return Err(text.clone())
                    }
                    Some(v) => v.clone(),
                },
                Param::Sprintf(text, t) => {
                    let rendered = t.render(event);
                    if rendered == *text {
                        return Err(text.clone());
                    }
                    Value::String(rendered.into())
                }
            };
            out.push(to_sql(&Cell::from_value(&v)?));
        }
        Ok(out)
    }

    fn run(&self, local: &rusqlite::Connection, params: Vec<Sql>) -> rusqlite::Result<Vec<Value>> {
        let zones = Zones::utc();
        let mut stmt = local.prepare_cached(&self.sql)?;
        let (names, types) = sqlite::columns(&stmt);
        let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let mut m = sluice_event::Map::with_capacity(names.len());
            for (i, name) in names.iter().enumerate() {
                let cell = sqlite::cell(r.get_ref(i)?, types[i], &zones);
                m.insert(name.to_lowercase().into(), cell.to_value());
            }
            out.push(Value::Object(m));
        }
        Ok(out)
    }

    fn lookup(&self, shared: &Shared, event: &Event) -> Outcome {
        let params = match self.bind(event) {
            Ok(p) => p,
            Err(bad) => return Outcome::Invalid(bad),
        };
        let local = shared.local.lock().expect("not poisoned");
        match self.run(&local, params) {
            Ok(rows) => Outcome::Rows(rows),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }
}

impl Filter for JdbcStatic {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        self.shared.start();
        let mut all_valid = true;
        for l in &self.shared.lookups {
            match l.lookup(&self.shared, event) {
                Outcome::Rows(rows) => match &l.default {
                    Some(default) if rows.is_empty() => {
                        for t in &l.tag_on_default_use {
                            event.add_tag(t);
                        }
                        event.set(&l.target, default.clone());
                    }
                    _ => event.set(&l.target, Value::Array(rows)),
                },
                Outcome::Invalid(param) => {
                    tracing::warn!(lookup_id = %l.id, invalid_parameters = %param, "jdbc_static: Parameter field not found in event");
                    for t in &l.tag_on_failure {
                        event.add_tag(t);
                    }
                    all_valid = false;
                }
                Outcome::Failed(e) => {
                    tracing::warn!(lookup_id = %l.id, exception = %e, "jdbc_static: Exception when executing Jdbc query");
                    for t in &l.tag_on_failure {
                        event.add_tag(t);
                    }
                    all_valid = false;
                }
            }
        }
        all_valid
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(JdbcStatic {
            shared: Arc::clone(&self.shared),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_parameters_become_numbered() {
        let keys = vec!["ip".to_owned(), "n".to_owned()];
        assert_eq!(
            number_parameters(
                "SELECT ':ip' FROM t WHERE ip = :ip AND x = :n AND :nope",
                &keys
            ),
            "SELECT ':ip' FROM t WHERE ip = ?1 AND x = ?2 AND :nope"
        );
    }
}

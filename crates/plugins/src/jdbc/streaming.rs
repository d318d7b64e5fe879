//! `jdbc_streaming` filter: runs a query for each event with parameters taken from the event,
//! and puts the rows it returns (a list of objects) in `target`, as
//! logstash-filter-jdbc_streaming does.
//!
//! `parameters => { "id" => "[user][id]" }` puts the event field's value where the statement
//! says `:id` (a value holding `%{...}` is sprintf'd instead), as a SQL literal (Sequel's
//! way). With `use_prepared_statements`, `?` placeholders take `prepared_statement_bind_values`
//! in order: `[field]` references, `%{...}` templates, or constants.
//!
//! Per event: the statement is bound, then looked up in the cache (`use_cache`, an LRU of
//! `cache_size` statements, each kept `cache_expiration` seconds from when it was fetched,
//! shared by the workers), else run. No rows gives `default_hash` (as a one-element list) and
//! the `tag_on_default_use` tags; a failure (no connection, a bad statement, a parameter with
//! no SQL form) tags `tag_on_failure` and gives the default too. As in Logstash, failures are
//! cached like answers, the filter always counts as matched, and `target` is overwritten.
//!
//! Each worker has its own connection, made at its first event and made again after an
//! error; a query is not run under the cache's lock.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lru::LruCache;
use sluice_event::{Event, FieldRef, Template, Value};
use sluice_pipeline::options::ast_to_value;
use sluice_pipeline::{ConfigError, Filter, Options};

use super::connection::{Connection, Database, JdbcError};
use super::value::{bind_named, bind_positional, row_to_map, Cell};

/// Where a parameter's value comes from.
#[derive(Clone)]
pub enum Source {
    Field(FieldRef),
    Sprintf(Template),
    Constant(Value),
}

impl Source {
    /// Logstash's parameter handler: `%{...}` is sprintf'd, anything else a field.
    pub fn parameter(opts: &Options, option: &str, v: &Value) -> Result<Source, ConfigError> {
        match v {
            Value::String(s) if has_sprintf(s) => Ok(Source::Sprintf(Template::parse(s))),
            Value::String(s) => FieldRef::parse(s)
                .map(Source::Field)
                .map_err(|e| opts.error(option, format!("{s:?}: {e}"))),
            other => Ok(Source::Constant(other.clone())),
        }
    }

    /// Logstash's bind value handler: `%{...}` sprintf'd, `[a][b]` a field, else a constant.
    fn bind_value(v: &Value) -> Source {
        match v {
            Value::String(s) if has_sprintf(s) => Source::Sprintf(Template::parse(s)),
            Value::String(s) if is_field_reference(s) => match FieldRef::parse(s.trim()) {
                Ok(f) => Source::Field(f),
                Err(_) => Source::Constant(v.clone()),
            },
            other => Source::Constant(other.clone()),
        }
    }

    pub fn fetch(&self, event: &Event) -> Value {
        match self {
            Source::Field(f) => event.get(f).cloned().unwrap_or(Value::Null),
            Source::Sprintf(t) => Value::String(t.render(event).into()),
            Source::Constant(v) => v.clone(),
        }
    }
}

fn has_sprintf(s: &str) -> bool {
    s.find("%{").is_some_and(|at| s[at..].contains('}'))
}

/// `[a]`, `[a][b]`, blanks around them allowed: `\A(\s*\[[^\]]+\]\s*)*\z`.
fn is_field_reference(s: &str) -> bool {
    let mut rest = s.trim();
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let Some(inner) = rest.strip_prefix('[') else {
            return false;
        };
        let Some(close) = inner.find(']') else {
            return false;
        };
        if close == 0 {
            return false;
        }
        rest = inner[close + 1..].trim_start();
    }
    true
}

enum Binding {
    Named(Vec<(String, Source)>),
    Positional(Vec<Source>),
}

/// A fetched answer: the rows, or a failure.
#[derive(Clone)]
struct Answer {
    rows: Arc<Vec<Value>>,
    failed: bool,
}

/// Bound statements and their answers, with when each was fetched.
type Cache = Mutex<LruCache<String, (Instant, Answer)>>;

struct Shared {
    db: Database,
    statement: String,
    binding: Binding,
    target: FieldRef,
    default: Value,
    tag_on_failure: Vec<String>,
    tag_on_default_use: Vec<String>,
    cache: Option<(Cache, Duration)>,
}

pub struct JdbcStreaming {
    shared: Arc<Shared>,
    /// This worker's connection, made at its first query.
    conn: Option<Connection>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let statement = opts.required_string("statement")?;
    let target_text = opts.required_string("target")?;
    let target = FieldRef::parse(&target_text)
        .map_err(|e| opts.error("target", format!("{target_text:?}: {e}")))?;
    let default_hash = match opts.hash("default_hash")? {
        Some(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| (k.as_str().into(), ast_to_value(v)))
                .collect(),
        ),
        None => Value::Object(Default::default()),
    };
    let tag_on_failure = opts
        .string_list("tag_on_failure")?
        .unwrap_or_else(|| vec!["_jdbcstreamingfailure".to_owned()]);
    let tag_on_default_use = opts
        .string_list("tag_on_default_use")?
        .unwrap_or_else(|| vec!["_jdbcstreamingdefaultsused".to_owned()]);
    let use_cache = opts.boolean_or("use_cache", true)?;
    let expiration = opts.seconds("cache_expiration", 5.0)?;
    let size = opts.int("cache_size")?.unwrap_or(500);
    if size < 1 {
        return Err(opts.error("cache_size", "must be at least 1"));
    }
    let mut parameters = Vec::new();
    for (k, v) in opts.hash("parameters")?.unwrap_or_default() {
        parameters.push((k, ast_to_value(&v)));
    }
    let prepared = opts.boolean_or("use_prepared_statements", false)?;
    let name = opts.string_or("prepared_statement_name", "")?;
    let binds: Vec<Value> = match opts.take("prepared_statement_bind_values") {
        Some((_, sluice_config::Value::Array(items))) => items.iter().map(ast_to_value).collect(),
        Some((_, v)) => vec![ast_to_value(&v)],
        None => Vec::new(),
    };
    let warn_constants = opts.boolean_or("prepared_statement_warn_on_constant_usage", true)?;
    let binding = if prepared {
        let mut errors = Vec::new();
        if name.is_empty() {
            errors.push("must provide a name for the Prepared Statement, it must be unique for the db session");
        }
        if statement.matches('?').count() != binds.len() {
            errors.push("there is a mismatch between the number of statement `?` placeholders and :prepared_statement_bind_values array setting elements");
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
        let sources: Vec<Source> = binds.iter().map(Source::bind_value).collect();
        let constants: Vec<String> = sources
            .iter()
            .filter_map(|s| match s {
                Source::Constant(Value::String(c)) => Some(c.to_string()),
                _ => None,
            })
            .collect();
        if warn_constants && !constants.is_empty() {
            tracing::warn!(?constants, "jdbc_streaming: When using prepared statements, the following `prepared_statement_bind_values` will be treated as constants, if you intend them to be field references please use the square bracket field reference syntax e.g. '[field]'");
        }
        Binding::Positional(sources)
    } else {
        let mut named = Vec::new();
        for (k, v) in &parameters {
            named.push((k.clone(), Source::parameter(opts, "parameters", v)?));
        }
        Binding::Named(named)
    };
    let db = Database::from_options(opts)?;
    Ok(Box::new(JdbcStreaming {
        shared: Arc::new(Shared {
            db,
            statement,
            binding,
            target,
            default: Value::Array(vec![default_hash]),
            tag_on_failure,
            tag_on_default_use,
            cache: use_cache.then(|| {
                let cap = std::num::NonZeroUsize::new(size as usize).expect("checked above");
                (Mutex::new(LruCache::new(cap)), expiration)
            }),
        }),
        conn: None,
    }))
}

impl JdbcStreaming {
    /// The statement with this event's parameters in it.
    fn bind(&self, event: &Event) -> Result<String, JdbcError> {
        let s = &self.shared;
        let dialect = s.db.dialect();
        let zone = &s.db.zones.literal;
        match &s.binding {
            Binding::Named(params) => {
                let mut cells = Vec::with_capacity(params.len());
                for (k, src) in params {
                    let cell = Cell::from_value(&src.fetch(event))
                        .map_err(|e| JdbcError::Parameter(format!("parameter {k:?}: {e}")))?;
                    cells.push((k.clone(), cell));
                }
                Ok(bind_named(&s.statement, &cells, dialect, zone))
            }
            Binding::Positional(sources) => {
                let cells = sources
                    .iter()
                    .map(|src| Cell::from_value(&src.fetch(event)))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(JdbcError::Parameter)?;
                bind_positional(&s.statement, &cells, dialect, zone).map_err(JdbcError::Parameter)
            }
        }
    }

    fn run(&mut self, sql: &str) -> Result<Vec<Value>, JdbcError> {
        let zones = Arc::clone(&self.shared.db.zones);
        if self.conn.is_none() {
            self.conn = Some(self.shared.db.connect()?);
        }
        let conn = self.conn.as_mut().expect("just made");
        let mut rows = Vec::new();
        let result = conn.query(sql, None, &zones, &mut |names, cells| {
            rows.push(Value::Object(row_to_map(names, &cells, false)));
            super::connection::Flow::More
        });
        if result.is_err() {
            // A connection in an unknown state is not used again.
            self.conn = None;
        }
        result.map(|_| rows)
    }

    fn answer(&mut self, event: &Event) -> Answer {
        let sql = match self.bind(event) {
            Ok(sql) => sql,
            Err(e) => {
                tracing::warn!(statement = %self.shared.statement, error = %e, "jdbc_streaming: Exception when executing JDBC query");
                return Answer {
                    rows: Arc::new(Vec::new()),
                    failed: true,
                };
            }
        };
        if let Some((cache, ttl)) = &self.shared.cache {
            let mut c = cache.lock().expect("not poisoned");
            if let Some((at, answer)) = c.get(&sql) {
                if at.elapsed() < *ttl {
                    return answer.clone();
                }
            }
        }
        tracing::debug!(statement = %sql, "jdbc_streaming: Executing JDBC query");
        let answer = match self.run(&sql) {
            Ok(rows) => Answer {
                rows: Arc::new(rows),
                failed: false,
            },
            Err(e) => {
                tracing::warn!(statement = %sql, error = %e, "jdbc_streaming: Exception when executing JDBC query");
                Answer {
                    rows: Arc::new(Vec::new()),
                    failed: true,
                }
            }
        };
        if let Some((cache, _)) = &self.shared.cache {
            cache
                .lock()
                .expect("not poisoned")
                .put(sql, (Instant::now(), answer.clone()));
        }
        answer
    }
}

impl Filter for JdbcStreaming {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let answer = self.answer(event);
        let s = Arc::clone(&self.shared);
        if answer.failed {
            for t in &s.tag_on_failure {
                event.add_tag(t);
            }
        }
        if answer.rows.is_empty() {
            for t in &s.tag_on_default_use {
                event.add_tag(t);
            }
            event.set(&s.target, s.default.clone());
        } else {
            event.set(&s.target, Value::Array(answer.rows.as_ref().clone()));
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(JdbcStreaming {
            shared: Arc::clone(&self.shared),
            conn: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_value_kinds() {
        assert!(is_field_reference("[a]"));
        assert!(is_field_reference(" [a][b] "));
        assert!(!is_field_reference("a"));
        assert!(!is_field_reference("[]"));
        assert!(!is_field_reference("[a]b"));
        assert!(has_sprintf("x%{a}y"));
        assert!(!has_sprintf("x%{a"));
        assert!(matches!(
            Source::bind_value(&Value::String("[a]".into())),
            Source::Field(_)
        ));
        assert!(matches!(
            Source::bind_value(&Value::String("a".into())),
            Source::Constant(_)
        ));
        assert!(matches!(
            Source::bind_value(&Value::Int(3)),
            Source::Constant(_)
        ));
    }
}

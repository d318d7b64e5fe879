//! Which database a JDBC URL names, the options every jdbc plugin shares to reach it, and a
//! [`Connection`] that runs a statement and hands its rows over one at a time.
//!
//! `jdbc_connection_string` picks a native driver: `jdbc:postgresql:` the `postgres` crate,
//! `jdbc:mysql:` and `jdbc:mariadb:` the `mysql` crate, `jdbc:sqlite:` SQLite (rusqlite).
//! `jdbc_driver_library` and `jdbc_driver_class` name Java drivers: they are accepted and
//! ignored, with one info line. Any other URL is refused at startup with the reason. Neither
//! client speaks TLS here: a URL that demands it (`sslmode=require`, `useSSL=true`,
//! `sslMode=REQUIRED`...) is refused rather than sent in the clear.
//!
//! A plugin parses its [`Database`] once when built, then [`Database::connect`]s when it needs
//! to (the input once per run, as Logstash's does, the streaming filter once per worker and
//! again after an error), and [`Connection::query`] streams rows to a callback: column names,
//! then each row's [`Cell`]s. Errors are typed ([`JdbcError`]): a connection that could not
//! be made is told apart from a statement that failed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sluice_pipeline::{ConfigError, Options};

use super::value::{Cell, Dialect, Zones};

/// What went wrong talking to a database.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JdbcError {
    /// No connection could be made (the server is down, refused the login...).
    #[error("cannot connect to {url}: {message}")]
    Connect { url: String, message: String },
    /// The connection is there but the statement failed.
    #[error("{0}")]
    Statement(String),
    /// A parameter has no SQL form (an object), or a bind count is wrong.
    #[error("{0}")]
    Parameter(String),
}

/// Where a JDBC URL points.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Postgres {
        host: String,
        port: u16,
        dbname: Option<String>,
        params: Vec<(String, String)>,
    },
    Mysql {
        host: String,
        port: u16,
        dbname: Option<String>,
        params: Vec<(String, String)>,
    },
    /// A file, or `:memory:`.
    Sqlite { path: String },
}

impl Target {
    /// Reads `jdbc:<driver>:...`; the error says why a URL cannot be used.
    pub fn parse(url: &str) -> Result<Target, String> {
        let Some(rest) = url.strip_prefix("jdbc:") else {
            return Err(format!(
                "{:?} is not a JDBC URL (it must start with jdbc:)",
                redact(url)
            ));
        };
        let (driver, rest) = rest.split_once(':').unwrap_or((rest, ""));
        match driver {
            "postgresql" => {
                let (host, port, dbname, params) = server_url(rest, 5432)?;
                for (k, v) in &params {
                    let refused = match k.as_str() {
                        "ssl" => v == "true",
                        "sslmode" => matches!(v.as_str(), "require" | "verify-ca" | "verify-full"),
                        _ => false,
                    };
                    if refused {
                        return Err(format!("{k}={v}: TLS connections are not supported by sluice's PostgreSQL driver (use sslmode=disable or prefer)"));
                    }
                }
                Ok(Target::Postgres {
                    host,
                    port,
                    dbname,
                    params,
                })
            }
            "mysql" | "mariadb" => {
                if !rest.starts_with("//") {
                    return Err(format!(
                        "jdbc:{driver}:{} is not supported: only jdbc:{driver}://host[:port]/database URLs are (no load-balancing or replication forms)",
                        rest.split("//").next().unwrap_or("")
                    ));
                }
                let (host, port, dbname, params) = server_url(rest, 3306)?;
                for (k, v) in &params {
                    let refused = match k.as_str() {
                        "useSSL" | "requireSSL" | "useSsl" => v == "true",
                        "sslMode" | "sslmode" => !matches!(
                            v.to_ascii_uppercase().as_str(),
                            "DISABLED" | "PREFERRED" | "DISABLE" | "PREFER"
                        ),
                        _ => false,
                    };
                    if refused {
                        return Err(format!("{k}={v}: TLS connections are not supported by sluice's MySQL/MariaDB driver (use sslMode=DISABLED)"));
                    }
                }
                Ok(Target::Mysql {
                    host,
                    port,
                    dbname,
                    params,
                })
            }
            "sqlite" => {
                if rest.is_empty() {
                    return Err("jdbc:sqlite: needs a file (jdbc:sqlite:/path/to/db) or :memory:".to_owned());
                }
                let path = rest.split('?').next().unwrap_or(rest).to_owned();
                Ok(Target::Sqlite { path })
            }
            other => Err(format!(
                "the {other:?} driver is not supported: sluice's jdbc plugins have native drivers for jdbc:postgresql:, jdbc:mysql:, jdbc:mariadb: and jdbc:sqlite: URLs only"
            )),
        }
    }

    pub fn dialect(&self) -> Dialect {
        match self {
            Target::Postgres { .. } => Dialect::Postgres,
            Target::Mysql { .. } => Dialect::Mysql,
            Target::Sqlite { .. } => Dialect::Sqlite,
        }
    }

    fn param(&self, name: &str) -> Option<&str> {
        let params = match self {
            Target::Postgres { params, .. } | Target::Mysql { params, .. } => params,
            Target::Sqlite { .. } => return None,
        };
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Host, port, database and parameters of a server URL.
type ServerUrl = (String, u16, Option<String>, Vec<(String, String)>);

/// `//host[:port][/db][?k=v&...]` (or `db` alone: localhost); `%`-escapes in values decoded.
fn server_url(rest: &str, default_port: u16) -> Result<ServerUrl, String> {
    let (main, query) = rest.split_once('?').unwrap_or((rest, ""));
    let params: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_owned(), crate::http::percent_decode(v))
        })
        .collect();
    let (authority, db) = match main.strip_prefix("//") {
        Some(a) => a.split_once('/').unwrap_or((a, "")),
        None => ("", main),
    };
    // Several hosts (failover lists) are not supported: the first is used.
    let authority = authority.split(',').next().unwrap_or("");
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("{authority:?}: unclosed ["))?;
        (h.to_owned(), after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (authority.to_owned(), None),
        }
    };
    let port = match port {
        None | Some("") => default_port,
        Some(p) => p
            .parse()
            .map_err(|_| format!("{p:?} is not a port number"))?,
    };
    let host = if host.is_empty() {
        "localhost".to_owned()
    } else {
        host
    };
    let db = (!db.is_empty()).then(|| crate::http::percent_decode(db));
    Ok((host, port, db, params))
}

/// The URL with any `password=` value hidden, for messages.
pub fn redact(url: &str) -> String {
    let Some((main, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=xxxxxx"),
            _ => p.to_owned(),
        })
        .collect();
    format!("{main}?{}", params.join("&"))
}

/// The connection options every jdbc plugin has, read once at startup.
#[derive(Clone)]
pub struct Database {
    /// The URL with its password hidden, for messages.
    pub url: String,
    pub target: Target,
    user: Option<String>,
    password: Option<String>,
    /// How long connecting may take (`jdbc_pool_timeout`, 5 s by default).
    connect_timeout: Duration,
    pub zones: Arc<Zones>,
}

impl Database {
    /// Reads `jdbc_connection_string`, the credentials (`jdbc_user`, `jdbc_password` or
    /// `jdbc_password_filepath`), the Java driver options (ignored), `jdbc_default_timezone`,
    /// `plugin_timezone`, and the options Logstash's connection pool has (accepted).
    pub fn from_options(opts: &mut Options) -> Result<Database, ConfigError> {
        let url_text = opts.required_string("jdbc_connection_string")?;
        let target =
            Target::parse(&url_text).map_err(|e| opts.error("jdbc_connection_string", e))?;
        let library = opts.string("jdbc_driver_library")?;
        let class = opts.string("jdbc_driver_class")?;
        if library.is_some() || class.is_some() {
            tracing::info!(
                plugin = opts.plugin_name(),
                jdbc_driver_library = library.as_deref().unwrap_or(""),
                jdbc_driver_class = class.as_deref().unwrap_or(""),
                "jdbc: the Java driver options are ignored: sluice uses its native driver for this URL"
            );
        }
        let user = opts
            .string("jdbc_user")?
            .filter(|u| !u.is_empty())
            .or_else(|| target.param("user").map(str::to_owned));
        let password = opts.string("jdbc_password")?;
        let password = match opts.string("jdbc_password_filepath")? {
            Some(_) if password.is_some() => {
                return Err(opts.error(
                    "jdbc_password_filepath",
                    "only one of jdbc_password and jdbc_password_filepath may be set",
                ))
            }
            Some(path) => Some(
                std::fs::read_to_string(&path)
                    .map_err(|e| {
                        opts.error(
                            "jdbc_password_filepath",
                            format!("cannot read {path:?}: {e}"),
                        )
                    })?
                    .trim()
                    .to_owned(),
            ),
            None => password,
        }
        .or_else(|| target.param("password").map(str::to_owned));
        let connect_timeout = opts.seconds("jdbc_pool_timeout", 5.0)?;
        let default_tz = opts.string("jdbc_default_timezone")?;
        let plugin_local = opts.choice("plugin_timezone", &["utc", "local"], "utc")? == "local";
        let zones = Zones::parse(default_tz.as_deref(), plugin_local)
            .map_err(|e| opts.error("jdbc_default_timezone", e))?;
        // Sequel's pool and its options: one connection at a time here, nothing to tune.
        let _ = (
            opts.boolean("jdbc_validate_connection")?,
            opts.int("jdbc_validation_timeout")?,
            opts.hash("sequel_opts")?,
        );
        Ok(Database {
            url: redact(&url_text),
            target,
            user,
            password,
            connect_timeout: connect_timeout.max(Duration::from_millis(100)),
            zones: Arc::new(zones),
        })
    }

    pub fn dialect(&self) -> Dialect {
        self.target.dialect()
    }

    /// Opens a connection.
    pub fn connect(&self) -> Result<Connection, JdbcError> {
        let fail = |message: String| JdbcError::Connect {
            url: self.url.clone(),
            message,
        };
        match &self.target {
            Target::Postgres {
                host,
                port,
                dbname,
                params,
            } => {
                let mut config = postgres::Config::new();
                config
                    .host(host)
                    .port(*port)
                    .connect_timeout(self.connect_timeout)
                    .application_name("sluice");
                if let Some(db) = dbname {
                    config.dbname(db);
                }
                if let Some(u) = &self.user {
                    config.user(u);
                }
                if let Some(p) = &self.password {
                    config.password(p);
                }
                let mut client = config
                    .connect(postgres::NoTls)
                    .map_err(|e| fail(super::postgres::error_text(&e)))?;
                for (k, v) in params {
                    if k == "currentSchema" {
                        client
                            .batch_execute(&format!("SET search_path TO {v}"))
                            .map_err(|e| fail(super::postgres::error_text(&e)))?;
                    }
                }
                Ok(Connection::Postgres(client))
            }
            Target::Mysql {
                host, port, dbname, ..
            } => {
                let opts = mysql::OptsBuilder::new()
                    .ip_or_hostname(Some(host.clone()))
                    .tcp_port(*port)
                    .prefer_socket(false)
                    .db_name(dbname.clone())
                    .user(self.user.clone())
                    .pass(self.password.clone())
                    .tcp_connect_timeout(Some(self.connect_timeout));
                mysql::Conn::new(opts)
                    .map(Connection::Mysql)
                    .map_err(|e| fail(e.to_string()))
            }
            Target::Sqlite { path } => super::sqlite::open(path)
                .map(Connection::Sqlite)
                .map_err(|e| fail(e.to_string())),
        }
    }
}

/// An open connection to one of the three kinds of database.
pub enum Connection {
    Postgres(postgres::Client),
    Mysql(mysql::Conn),
    Sqlite(rusqlite::Connection),
}

/// A statement's column names, shared by its rows.
pub type Columns = Arc<[String]>;

/// What receives a statement's rows, one at a time.
pub type RowSink<'a> = dyn FnMut(&Columns, Vec<Cell>) -> Flow + 'a;

/// A row handler's answer: go on, or stop reading (the pipeline is stopping).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Flow {
    More,
    Stop,
}

impl Connection {
    /// Runs `sql` and calls `row` with the column names and the cells of each row, in order.
    /// `fetch_size` asks PostgreSQL for that many rows at a time (a cursor); the other drivers
    /// stream rows as they come. Returns whether every row was read (`false` when `row`
    /// said [`Flow::Stop`]).
    pub fn query(
        &mut self,
        sql: &str,
        fetch_size: Option<u32>,
        zones: &Zones,
        row: &mut RowSink<'_>,
    ) -> Result<bool, JdbcError> {
        match self {
            Connection::Postgres(c) => super::postgres::query(c, sql, fetch_size, zones, row),
            Connection::Mysql(c) => super::mysql::query(c, sql, zones, row),
            Connection::Sqlite(c) => super::sqlite::query(c, sql, zones, row),
        }
    }

    /// What cancels this connection's running statement from another thread.
    pub fn canceller(&self, db: &Database) -> Canceller {
        match self {
            Connection::Postgres(c) => Canceller::Postgres(c.cancel_token()),
            Connection::Mysql(c) => Canceller::Mysql(Box::new(db.clone()), c.connection_id()),
            Connection::Sqlite(c) => Canceller::Sqlite(c.get_interrupt_handle()),
        }
    }

    /// All rows of `sql`, each as its column names and cells.
    pub fn query_all(
        &mut self,
        sql: &str,
        zones: &Zones,
    ) -> Result<(Columns, Vec<Vec<Cell>>), JdbcError> {
        let mut names: Columns = Arc::from(Vec::new());
        let mut rows = Vec::new();
        self.query(sql, None, zones, &mut |n, cells| {
            if rows.is_empty() {
                names = Arc::clone(n);
            }
            rows.push(cells);
            Flow::More
        })?;
        Ok((names, rows))
    }

    /// Sequel's `dataset.count` of a statement: `SELECT count(*) AS count FROM (sql) AS t1`.
    pub fn count(&mut self, sql: &str, zones: &Zones) -> Result<i128, JdbcError> {
        let (_, rows) = self.query_all(&count_sql(sql), zones)?;
        match rows.first().and_then(|r| r.first()) {
            Some(Cell::Int(n)) => Ok(*n),
            Some(Cell::Decimal(d)) => d
                .parse()
                .map_err(|_| JdbcError::Statement(format!("count(*) gave {d:?}"))),
            other => Err(JdbcError::Statement(format!("count(*) gave {other:?}"))),
        }
    }
}

/// Stops a statement that is running on a [`Connection`], from another thread: the way a
/// stop reaches an input waiting on a slow query.
pub enum Canceller {
    Postgres(postgres::CancelToken),
    /// `KILL QUERY <id>` over a second connection.
    Mysql(Box<Database>, u32),
    Sqlite(rusqlite::InterruptHandle),
}

impl Canceller {
    pub fn cancel(&self) {
        let outcome = match self {
            Canceller::Postgres(token) => token
                .cancel_query(postgres::NoTls)
                .map_err(|e| e.to_string()),
            Canceller::Mysql(db, id) => match db.connect() {
                Ok(Connection::Mysql(mut c)) => {
                    use mysql::prelude::Queryable;
                    c.query_drop(format!("KILL QUERY {id}"))
                        .map_err(|e| e.to_string())
                }
                Ok(_) => Ok(()),
                Err(e) => Err(e.to_string()),
            },
            Canceller::Sqlite(handle) => {
                handle.interrupt();
                Ok(())
            }
        };
        if let Err(e) = outcome {
            tracing::warn!(error = %e, "jdbc: cannot cancel the running statement");
        }
    }
}

/// Sequel's count of a custom SQL dataset.
pub fn count_sql(sql: &str) -> String {
    format!(
        "SELECT count(*) AS count FROM ({}) AS t1 LIMIT 1",
        trim_statement(sql)
    )
}

/// Sequel's page of a custom SQL dataset (`each_page`): a subselect with LIMIT and OFFSET.
pub fn page_sql(sql: &str, limit: u64, offset: u64) -> String {
    let inner = trim_statement(sql);
    if offset == 0 {
        format!("SELECT * FROM ({inner}) AS t1 LIMIT {limit}")
    } else {
        format!("SELECT * FROM ({inner}) AS t1 LIMIT {limit} OFFSET {offset}")
    }
}

/// A statement without the trailing `;` and blanks a file often ends with.
pub fn trim_statement(sql: &str) -> &str {
    sql.trim().trim_end_matches(';').trim_end()
}

/// Retries, as Logstash's `connection_retry_attempts`/`statement_retry_attempts` and their
/// wait times: `attempts` tries in all (at least one), `wait` between them.
#[derive(Clone, Copy, Debug)]
pub struct Attempts {
    pub attempts: u32,
    pub wait: Duration,
}

impl Attempts {
    pub fn from_options(
        opts: &mut Options,
        name: &str,
        wait_name: &str,
    ) -> Result<Attempts, ConfigError> {
        let attempts = opts.int(name)?.unwrap_or(1).max(1) as u32;
        let wait = opts.seconds(wait_name, 0.5)?;
        Ok(Attempts { attempts, wait })
    }
}

/// A file path option checked for being a file, not a directory.
pub fn file_path(opts: &Options, name: &str, text: &str) -> Result<PathBuf, ConfigError> {
    let p = PathBuf::from(text);
    if p.is_dir() {
        return Err(opts.error(
            name,
            format!("must point to a file, received a directory: {text:?}"),
        ));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            Target::parse("jdbc:postgresql://db.example:5433/app?user=u&password=p%40ss").unwrap(),
            Target::Postgres {
                host: "db.example".into(),
                port: 5433,
                dbname: Some("app".into()),
                params: vec![
                    ("user".into(), "u".into()),
                    ("password".into(), "p@ss".into())
                ],
            }
        );
        assert_eq!(
            Target::parse("jdbc:postgresql:app").unwrap(),
            Target::Postgres {
                host: "localhost".into(),
                port: 5432,
                dbname: Some("app".into()),
                params: vec![],
            }
        );
        assert!(matches!(
            Target::parse("jdbc:mariadb://[::1]/x").unwrap(),
            Target::Mysql { ref host, port: 3306, .. } if host == "::1"
        ));
        assert_eq!(
            Target::parse("jdbc:sqlite:/tmp/a.db").unwrap(),
            Target::Sqlite {
                path: "/tmp/a.db".into()
            }
        );
        for (bad, why) in [
            ("jdbc:oracle:thin:@host:1521:orcl", "not supported"),
            ("postgresql://x/y", "not a JDBC URL"),
            ("jdbc:postgresql://h/d?sslmode=require", "TLS"),
            ("jdbc:mysql://h/d?useSSL=true", "TLS"),
            ("jdbc:mysql:loadbalance://h1,h2/d", "load-balancing"),
            ("jdbc:postgresql://h:x/d", "port"),
        ] {
            let e = Target::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        assert_eq!(
            redact("jdbc:mysql://h/d?user=a&password=secret"),
            "jdbc:mysql://h/d?user=a&password=xxxxxx"
        );
        assert_eq!(
            page_sql("SELECT 1;", 10, 20),
            "SELECT * FROM (SELECT 1) AS t1 LIMIT 10 OFFSET 20"
        );
    }
}

//! The jdbc integration, as logstash-integration-jdbc: the `jdbc` input (rows of a query
//! become events, once or on a schedule, with `:sql_last_value` tracking), the
//! `jdbc_streaming` filter (a query per event, its rows put in the event, cached) and the
//! `jdbc_static` filter (remote tables copied into a local in-memory database, looked up per
//! event).
//!
//! Logstash reaches databases through Java JDBC drivers and the Sequel library; sluice has
//! native drivers, chosen by the URL ([`connection`]): PostgreSQL, MySQL/MariaDB and SQLite.
//! The pieces, and how data flows through them:
//!
//! ```text
//!  config ──▶ connection::Database (URL, credentials, zones)
//!  input:     tracking::LastRun ─:sql_last_value─▶ value::bind_named ─SQL─▶ Connection::query
//!             rows ─▶ value::Cell ─▶ event ─▶ InputContext::push ─(queued)─▶ LastRun::store
//!  streaming: event fields ─▶ Cells ─▶ SQL ─▶ cache? ─▶ Connection::query ─▶ [target] = rows
//!  static:    loaders: remote rows ─▶ local SQLite tables (at start, then on loader_schedule)
//!             lookups: event fields ─▶ local SQLite query ─▶ [target] = rows
//! ```
//!
//! - [`connection`]: the JDBC URL, the shared connection options, [`connection::Connection`];
//! - [`postgres`], [`mysql`], [`sqlite`]: each driver's rows decoded into [`value::Cell`]s;
//! - [`value`]: cells, event values, SQL literals and Sequel's placeholders;
//! - [`tracking`]: the last run's value and its file;
//! - [`input`], [`streaming`], [`static_lookup`]: the three plugins.
//!
//! The native drivers sit behind the default Cargo feature `jdbc`; without it the three
//! plugins are still known by name and say that they are not compiled in.

#[cfg(feature = "jdbc")]
pub mod connection;
#[cfg(feature = "jdbc")]
pub mod input;
#[cfg(feature = "jdbc")]
pub mod mysql;
#[cfg(feature = "jdbc")]
pub mod postgres;
#[cfg(feature = "jdbc")]
pub mod sqlite;
#[cfg(feature = "jdbc")]
pub mod static_lookup;
#[cfg(feature = "jdbc")]
pub mod streaming;
#[cfg(feature = "jdbc")]
pub mod tracking;
#[cfg(feature = "jdbc")]
pub mod value;

use sluice_pipeline::{ConfigError, Filter, Input, Options};

#[cfg(not(feature = "jdbc"))]
const NO_JDBC: &str = "this sluice was built without the `jdbc` feature, so the jdbc plugins are not compiled in (build with default features)";

/// The `jdbc` input.
pub fn build_input(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    #[cfg(feature = "jdbc")]
    return input::build(opts);
    #[cfg(not(feature = "jdbc"))]
    Err(opts.plugin_error(NO_JDBC))
}

/// The `jdbc_streaming` filter.
pub fn build_streaming(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    #[cfg(feature = "jdbc")]
    return streaming::build(opts);
    #[cfg(not(feature = "jdbc"))]
    Err(opts.plugin_error(NO_JDBC))
}

/// The `jdbc_static` filter.
pub fn build_static(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    #[cfg(feature = "jdbc")]
    return static_lookup::build(opts);
    #[cfg(not(feature = "jdbc"))]
    Err(opts.plugin_error(NO_JDBC))
}

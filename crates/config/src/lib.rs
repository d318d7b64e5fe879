//! sluice-config: the Logstash configuration language (LSCL), so that Logstash pipeline
//! `.conf` files run unchanged.
//!
//! Data flow: [`load_path`] finds and reads files (a file, a directory or a glob) →
//! [`parse_sources`] / [`parse`] turn each text into [`Section`]s of a [`Config`] (syntax
//! errors carry `file:line:column`) → [`Config::substitute_env`] replaces `${VAR}` and
//! `${VAR:default}` in values → the pipeline compiler walks the AST, calling
//! [`Plugin::merged_attributes`] to get each plugin's options merged the way Logstash's
//! compiler merges repeated options. [`to_json`] dumps the AST; [`ir`] renders Logstash's
//! compiled IR in a neutral JSON form (used to compare with Logstash's own compiler).
//!
//! Settings files: [`settings`] reads `sluice.yml` / `logstash.yml` ([`load_settings`],
//! [`parse_settings`]) and [`pipelines`] reads `pipelines.yml` ([`load_pipelines`],
//! [`parse_pipelines`]), with typed values and `file:line:column` errors.

mod ast;
mod condition;
mod cursor;
mod env;
mod error;
pub mod ir;
mod load;
mod merge;
mod parser;
pub mod pipelines;
pub mod settings;
mod yaml;

pub use ast::*;
pub use env::substitute_vars;
pub use error::{LoadError, ParseError};
pub use load::load_path;
pub use parser::{MAX_CONDITION_SIZE, MAX_NESTING};
pub use pipelines::{load_pipelines, parse_pipelines, parse_pipelines_with, PipelineEntry};
pub use settings::{
    load_settings, parse_port_range, parse_settings, parse_settings_with, parse_size,
    parse_time_value, ApiSettings, DlqOverrides, DlqSettings, PasswordPolicy, PipelineOverrides,
    PortRange, QueueOverrides, QueueSettings, QueueType, Settings, SettingsError,
};

/// Parser settings.
#[derive(Debug, Clone, Default)]
pub struct ParseOptions {
    /// Logstash's `config.support_escapes`: process `\\ \" \' \n \r \t \0` in quoted strings.
    /// When off (the default), strings are kept as written, backslashes included.
    pub support_escapes: bool,
}

/// Parses one config text with default options. `source` names it in errors (a file name,
/// or `"config string"`).
pub fn parse(source: &str, text: &str) -> Result<Config, ParseError> {
    parse_with(source, text, &ParseOptions::default())
}

/// Parses one config text.
pub fn parse_with(source: &str, text: &str, opts: &ParseOptions) -> Result<Config, ParseError> {
    let mut parser = parser::Parser::new(source, text, opts);
    let sections = parser.config()?;
    Ok(Config {
        source: source.to_string(),
        sections,
    })
}

/// Parses a condition on its own, as written after `if` (`[status] >= 500`); `source` names
/// it in errors.
pub fn parse_condition(source: &str, text: &str) -> Result<Expr, ParseError> {
    parser::Parser::new(source, text, &ParseOptions::default()).lone_condition()
}

/// Parses each `(name, text)` source on its own and concatenates their sections in order,
/// as Logstash concatenates the files of a config directory.
pub fn parse_sources(sources: &[(String, String)]) -> Result<Config, ParseError> {
    parse_sources_with(sources, &ParseOptions::default())
}

/// [`parse_sources`] with options.
pub fn parse_sources_with(
    sources: &[(String, String)],
    opts: &ParseOptions,
) -> Result<Config, ParseError> {
    let mut sections = Vec::new();
    for (name, text) in sources {
        sections.extend(parse_with(name, text, opts)?.sections);
    }
    let names: Vec<&str> = sources.iter().map(|(n, _)| n.as_str()).collect();
    Ok(Config {
        source: names.join(", "),
        sections,
    })
}

/// The AST as JSON (the shape of the serde derives), for `sluice config parse`.
pub fn to_json(config: &Config) -> serde_json::Value {
    serde_json::to_value(config).expect("the AST always serialises")
}

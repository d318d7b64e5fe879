//! Error types: [`ParseError`] (syntax, merge and substitution errors, all with a position),
//! [`LoadError`] (reading config files) and [`SettingsError`] (settings and pipelines files).

/// An error located in a config source: `file:line:column: message`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{source_name}:{line}:{column}: {message}")]
pub struct ParseError {
    pub source_name: String,
    pub line: u32,
    pub column: u32,
    pub message: String,
}

impl ParseError {
    pub(crate) fn at(source_name: &str, span: crate::Span, message: impl Into<String>) -> Self {
        ParseError {
            source_name: source_name.to_string(),
            line: span.line,
            column: span.column,
            message: message.into(),
        }
    }
}

/// An error while finding or reading config files.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no config files found in path {0}")]
    NoFiles(String),
    #[error("the following config files are not UTF-8 encoded: {}", .0.join(", "))]
    NotUtf8(Vec<String>),
}

/// A settings or pipelines file error at `source_name:line:column` (1-based). `line` is 0
/// when the error is about the whole file (e.g. it cannot be read); then the position is left
/// out of the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    pub source_name: String,
    pub line: u32,
    pub column: u32,
    pub message: String,
}

impl SettingsError {
    pub(crate) fn new(
        source_name: &str,
        pos: crate::yaml::Pos,
        message: impl Into<String>,
    ) -> SettingsError {
        SettingsError {
            source_name: source_name.to_string(),
            line: pos.line,
            column: pos.column,
            message: message.into(),
        }
    }

    /// An error about a whole file (no position).
    pub(crate) fn file(source_name: &str, message: impl Into<String>) -> SettingsError {
        SettingsError::new(source_name, crate::yaml::Pos::default(), message)
    }
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.source_name, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.source_name, self.line, self.column, self.message
            )
        }
    }
}

impl std::error::Error for SettingsError {}

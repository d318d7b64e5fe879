//! Error types: [`ParseError`] (syntax, merge and substitution errors, all with a position)
//! and [`LoadError`] (reading config files).

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

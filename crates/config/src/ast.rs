//! The syntax tree of a Logstash pipeline configuration.
//!
//! Values are kept as written (quoted strings already unquoted, escapes processed when
//! `config.support_escapes` is on); repeated attributes are kept as separate entries.
//! Use [`Plugin::merged_attributes`](crate::Plugin::merged_attributes) to get Logstash's
//! merged view of a plugin's options.

use serde::Serialize;

/// A 1-based position in a source text (column counted in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Span {
    pub line: u32,
    pub column: u32,
}

/// A whole configuration: the sections of one or more sources, in order.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// File name, or `"config string"`; for several files, their names joined with `", "`.
    pub source: String,
    pub sections: Vec<Section>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SectionKind {
    Input,
    Filter,
    Output,
}

impl SectionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SectionKind::Input => "input",
            SectionKind::Filter => "filter",
            SectionKind::Output => "output",
        }
    }
}

/// `input { ... }`, `filter { ... }` or `output { ... }`.
#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub kind: SectionKind,
    pub span: Span,
    pub body: Vec<Statement>,
    /// Name of the source (file) this section was read from; used in error messages.
    pub source: String,
}

#[derive(Debug, Clone, Serialize)]
pub enum Statement {
    Plugin(Plugin),
    If(IfStatement),
}

/// `name { attr => value ... }`; also the value of `codec => json { ... }`.
#[derive(Debug, Clone, Serialize)]
pub struct Plugin {
    pub name: String,
    pub span: Span,
    /// As written: a repeated attribute appears several times (see `merged_attributes`).
    pub attributes: Vec<Attribute>,
    /// Name of the source (file) this plugin was read from; used in error messages.
    pub source: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Attribute {
    pub name: String,
    /// Position of the attribute's name.
    pub span: Span,
    pub value: Value,
}

#[derive(Debug, Clone, Serialize)]
pub enum Value {
    /// A quoted string (quotes removed).
    String(String),
    /// An unquoted word such as `true` or `rubydebug`.
    Bareword(String),
    Number(Number),
    Array(Vec<Value>),
    Hash(Vec<HashEntry>),
    /// `codec => json { ... }`
    Plugin(Plugin),
}

#[derive(Debug, Clone, Serialize)]
pub struct HashEntry {
    /// The key's value: a bareword, an unquoted string or a number's decimal text.
    pub key: String,
    /// Position of the key.
    pub span: Span,
    pub value: Value,
    /// The key exactly as written (with quotes). Logstash finds duplicate keys by this text.
    #[serde(skip)]
    pub raw_key: String,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        }
    }
}

impl PartialEq for Number {
    /// Numeric equality, as Ruby's `==` (`1 == 1.0`).
    fn eq(&self, other: &Number) -> bool {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => a == b,
            _ => self.as_f64() == other.as_f64(),
        }
    }
}

/// `if` / `else if` ... / `else`.
#[derive(Debug, Clone, Serialize)]
pub struct IfStatement {
    /// The `if` branch followed by the `else if` branches.
    pub branches: Vec<Branch>,
    pub else_body: Option<Vec<Statement>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Branch {
    /// Position of the `if` (or of the `else` of an `else if`).
    pub span: Span,
    pub condition: Expr,
    pub body: Vec<Statement>,
}

/// A condition. Boolean operators are grouped exactly as Logstash's compiler groups them.
#[derive(Debug, Clone, Serialize)]
pub enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Xor(Box<Expr>, Box<Expr>),
    Nand(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Compare(CompareOp, Operand, Operand),
    /// `=~`
    Match(Operand, Regex),
    /// `!~`
    NotMatch(Operand, Regex),
    In(Operand, Operand),
    NotIn(Operand, Operand),
    /// A lone operand, e.g. `if [field]`.
    Truthy(Operand),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CompareOp {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

impl CompareOp {
    pub fn as_str(self) -> &'static str {
        match self {
            CompareOp::Eq => "==",
            CompareOp::Ne => "!=",
            CompareOp::Lt => "<",
            CompareOp::Gt => ">",
            CompareOp::Le => "<=",
            CompareOp::Ge => ">=",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub enum Operand {
    /// A field reference as written, e.g. `[a][b]` or `[@metadata][x]`.
    Field(String),
    String(String),
    Number(Number),
    Regex(Regex),
    /// A literal list such as `['foo', 'bar']` (barewords become strings).
    Array(Vec<Operand>),
}

#[derive(Debug, Clone, Serialize)]
pub struct Regex {
    /// The pattern: the text between `/ /` (with `\/` unescaped to `/`), or the string's
    /// content for `=~ "..."`.
    pub source: String,
}

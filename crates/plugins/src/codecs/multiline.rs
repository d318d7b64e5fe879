//! `multiline`: joins lines into one event (stack traces, continued log lines), as
//! logstash-codec-multiline does.
//!
//! Each line is matched against `pattern` (Ruby syntax, grok names such as
//! `%{TIMESTAMP_ISO8601}` expanded from the legacy pattern set and `patterns_dir`; an
//! unanchored search), the result inverted by `negate`. With `what => previous` a matching
//! line belongs to the lines before it (a line that does not match starts a new record); with
//! `what => next` a matching line belongs to the lines after it (a line that does not match
//! ends the record). A record is given out as one event: `message` is its lines joined with
//! `\n` (and `[event][original]` in ECS mode), tagged `multiline_tag` when it has more than
//! one line, `@timestamp` the time it is given out.
//!
//! A record that has more than `max_lines` lines or at least `max_bytes` bytes is cut there
//! and tagged `multiline_codec_max_lines_reached` / `…max_bytes_reached` (with `previous` the
//! line that finds it full starts the next record, with `next` it ends this one: Logstash's
//! order). `auto_flush_interval` gives out a record that no line has followed for that many
//! seconds ([`Codec::flush_idle`], called by the inputs); the last record is given out at the
//! end of the input.
//!
//! Line-oriented inputs (file) hand over one line at a time ([`Codec::decode_line`]); there
//! an empty line is no line at all, as in Logstash. Stream inputs (stdin, tcp) hand over
//! chunks: those are split at `\n` (a `\r` before it is kept), the unfinished last line kept
//! for the next chunk.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_event::Event;
use sluice_pipeline::{Codec, ConfigError, Options};

use super::charset::Charset;
use super::{format_event, text_event};
use crate::ecs::Ecs;
use crate::filters::grok::{expand, patterns};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    Previous,
    Next,
}

pub const MAX_LINES_TAG: &str = "multiline_codec_max_lines_reached";
pub const MAX_BYTES_TAG: &str = "multiline_codec_max_bytes_reached";

#[derive(Clone)]
pub struct Multiline {
    regex: Arc<sluice_regex::Regex>,
    negate: bool,
    what: What,
    /// `multiline_tag`; `None` when set to "".
    tag: Option<String>,
    max_lines: usize,
    max_bytes: u64,
    auto_flush: Option<Duration>,
    charset: Charset,
    ecs: Ecs,
    /// The record so far: its lines joined with `\n`.
    text: String,
    lines: usize,
    /// The lines' bytes, newlines not counted.
    bytes: u64,
    /// An unfinished line of a stream (no `\n` yet).
    partial: Vec<u8>,
    /// When the last line came, for `auto_flush_interval`.
    last_line: Option<Instant>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Codec>, ConfigError> {
    let source = opts.required_string("pattern")?;
    let what = match opts.required_string("what")?.as_str() {
        "previous" => What::Previous,
        "next" => What::Next,
        other => {
            return Err(opts.error(
                "what",
                format!("expected \"previous\" or \"next\", got {other:?}"),
            ))
        }
    };
    let negate = opts.boolean_or("negate", false)?;
    let dirs = opts.string_list("patterns_dir")?.unwrap_or_default();
    let user =
        patterns::load_user_patterns(&dirs, "*").map_err(|e| opts.error("patterns_dir", e))?;
    // Logstash's multiline loads logstash-patterns-core's legacy set whatever the ECS mode.
    let table = expand::Table {
        builtin: patterns::builtin(patterns::PatternSet::Legacy),
        user: &user,
    };
    let expanded = expand::expand(&source, table, true)
        .map_err(|e| opts.error("pattern", format!("{e} (in {source:?})")))?;
    let regex = sluice_regex::Regex::with_dotall(&expanded).map_err(|e| {
        opts.error(
            "pattern",
            format!("invalid regular expression {source:?}: {e}"),
        )
    })?;
    let tag = opts.string_or("multiline_tag", "multiline")?;
    let max_lines = match opts.int("max_lines")? {
        None => 500,
        Some(n) if n >= 0 => n as usize,
        Some(_) => return Err(opts.error("max_lines", "must not be negative")),
    };
    let max_bytes = match opts.string("max_bytes")? {
        None => 10 * 1024 * 1024,
        Some(text) => crate::numbers::filesize(&text).map_err(|e| opts.error("max_bytes", e))?,
    };
    let auto_flush = match opts.float("auto_flush_interval")? {
        None => None,
        Some(s) if s > 0.0 && s <= 86_400.0 => Some(Duration::from_secs_f64(s)),
        Some(_) => {
            return Err(opts.error(
                "auto_flush_interval",
                "must be a number of seconds above 0 (at most 86400)",
            ))
        }
    };
    Ok(Box::new(Multiline {
        regex: Arc::new(regex),
        negate,
        what,
        tag: (!tag.is_empty()).then_some(tag),
        max_lines,
        max_bytes,
        auto_flush,
        charset: Charset::from_options(opts)?,
        ecs: Ecs::from_options(opts)?,
        text: String::new(),
        lines: 0,
        bytes: 0,
        partial: Vec::new(),
        last_line: None,
    }))
}

impl Multiline {
    fn full(&self) -> bool {
        self.lines > self.max_lines || self.bytes >= self.max_bytes
    }

    fn add(&mut self, line: &str) {
        if self.lines > 0 {
            self.text.push('\n');
        }
        self.text.push_str(line);
        self.lines += 1;
        self.bytes += line.len() as u64;
        if self.auto_flush.is_some() {
            self.last_line = Some(Instant::now());
        }
    }

    fn line(&mut self, raw: &[u8], out: &mut Vec<Event>) {
        let line = self.charset.decode(raw);
        let matched = self.regex.is_match(&line) != self.negate;
        match self.what {
            What::Previous => {
                if !matched || self.full() {
                    self.give_out(out);
                }
                self.add(&line);
            }
            What::Next => {
                self.add(&line);
                if !matched || self.full() {
                    self.give_out(out);
                }
            }
        }
    }

    /// The record so far as one event.
    fn give_out(&mut self, out: &mut Vec<Event>) {
        if self.lines == 0 {
            return;
        }
        let mut event = text_event(std::mem::take(&mut self.text), self.ecs);
        if let (Some(tag), true) = (&self.tag, self.lines > 1) {
            event.add_tag(tag);
        }
        if self.bytes >= self.max_bytes {
            event.add_tag(MAX_BYTES_TAG);
        }
        if self.lines > self.max_lines {
            event.add_tag(MAX_LINES_TAG);
        }
        out.push(event);
        self.lines = 0;
        self.bytes = 0;
        self.last_line = None;
    }
}

impl Codec for Multiline {
    fn decode(&mut self, data: &[u8], out: &mut Vec<Event>) {
        let mut rest = data;
        if !self.partial.is_empty() {
            let Some(i) = rest.iter().position(|&b| b == b'\n') else {
                self.partial.extend_from_slice(rest);
                return;
            };
            let mut line = std::mem::take(&mut self.partial);
            line.extend_from_slice(&rest[..i]);
            self.line(&line, out);
            rest = &rest[i + 1..];
        }
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            self.line(&rest[..i], out);
            rest = &rest[i + 1..];
        }
        self.partial.extend_from_slice(rest);
    }

    fn decode_line(&mut self, line: &[u8], out: &mut Vec<Event>) {
        if !line.is_empty() {
            self.line(line, out);
        }
    }

    fn flush(&mut self, out: &mut Vec<Event>) {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line, out);
        }
        self.give_out(out);
    }

    fn idle_flush_interval(&self) -> Option<Duration> {
        self.auto_flush
    }

    fn flush_idle(&mut self, now: Instant, out: &mut Vec<Event>) {
        if let (Some(interval), Some(last)) = (self.auto_flush, self.last_line) {
            if now.saturating_duration_since(last) >= interval {
                self.give_out(out);
            }
        }
    }

    fn pending_bytes(&self) -> usize {
        self.partial.len() + self.text.len()
    }

    /// Logstash's multiline encodes nothing of its own: the event's text form, as `plain`.
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        format_event(None, event, out);
    }

    fn clone_box(&self) -> Box<dyn Codec> {
        Box::new(Multiline {
            text: String::new(),
            lines: 0,
            bytes: 0,
            partial: Vec::new(),
            last_line: None,
            ..self.clone()
        })
    }
}

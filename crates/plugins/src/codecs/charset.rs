//! The `charset` option of the text codecs (`line`, `plain`, `json`, `json_lines`): input bytes
//! to UTF-8 text, as Logstash's `LogStash::Util::Charset#convert` does.
//!
//! - **UTF-8** (the default): valid text is taken as it is, without a copy. Text that is not
//!   valid UTF-8 becomes what Ruby's `String#inspect` shows of it, without the quotes: each
//!   invalid byte as `\xNN`, `"` and `\` escaped, control characters as `\n`, `\e`,
//!   `\u0001`..., and a warning is logged ("Received an event that has a different character
//!   encoding than you configured."), as Logstash does.
//! - **Any other charset** is converted to UTF-8, bytes that do not decode becoming U+FFFD:
//!   `ISO-8859-1` (each byte is the code point of the same number), `ASCII-8BIT`/`BINARY` and
//!   `US-ASCII` (bytes past 0x7F are U+FFFD), and every encoding the WHATWG standard names
//!   (`CP1252`/`Windows-1252`, `ISO-8859-2`..`-16`, `Shift_JIS`, `EUC-JP`, `GBK`, `GB18030`,
//!   `Big5`, `EUC-KR`, `KOI8-R`, `UTF-16LE`/`BE`, ...) through `encoding_rs`.
//!
//! A name none of these know is a config error.

use std::borrow::Cow;
use std::fmt::Write as _;

use sluice_pipeline::{ConfigError, Options};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Charset {
    Utf8,
    /// ISO-8859-1: byte n is U+00nn.
    Latin1,
    /// ASCII-8BIT, BINARY, US-ASCII: ASCII, and U+FFFD for every other byte.
    Ascii,
    Whatwg(&'static encoding_rs::Encoding),
}

impl Charset {
    /// The codec's `charset` option (default UTF-8).
    pub fn from_options(opts: &mut Options) -> Result<Charset, ConfigError> {
        let name = opts.string_or("charset", "UTF-8")?;
        Charset::named(&name).ok_or_else(|| {
            opts.error(
                "charset",
                format!("unknown character set {name:?} (for example UTF-8, ISO-8859-1, CP1252, Shift_JIS, UTF-16LE)"),
            )
        })
    }

    pub fn named(name: &str) -> Option<Charset> {
        let lower = name.trim().to_ascii_lowercase();
        Some(match lower.as_str() {
            "utf-8" | "utf8" => Charset::Utf8,
            "iso-8859-1" | "iso8859-1" | "iso_8859-1" | "latin1" | "l1" => Charset::Latin1,
            "ascii-8bit" | "binary" | "us-ascii" | "ascii" | "ansi_x3.4-1968" | "646" => {
                Charset::Ascii
            }
            "cp1252" => Charset::Whatwg(encoding_rs::WINDOWS_1252),
            "cp932" | "windows-31j" | "sjis" => Charset::Whatwg(encoding_rs::SHIFT_JIS),
            "eucjp" | "euc-jp-ms" => Charset::Whatwg(encoding_rs::EUC_JP),
            "cp936" => Charset::Whatwg(encoding_rs::GBK),
            "cp949" => Charset::Whatwg(encoding_rs::EUC_KR),
            "cp950" | "big5-hkscs" => Charset::Whatwg(encoding_rs::BIG5),
            _ => match encoding_rs::Encoding::for_label(lower.as_bytes())? {
                e if e == encoding_rs::UTF_8 => Charset::Utf8,
                // The WHATWG "replacement" encoding is not a real charset.
                e if e == encoding_rs::REPLACEMENT => return None,
                e => Charset::Whatwg(e),
            },
        })
    }

    /// `bytes` as UTF-8 text.
    pub fn decode<'a>(&self, bytes: &'a [u8]) -> Cow<'a, str> {
        match self {
            Charset::Utf8 => match std::str::from_utf8(bytes) {
                Ok(text) => Cow::Borrowed(text),
                Err(_) => {
                    let escaped = ruby_inspect(bytes);
                    tracing::warn!(
                        text = %escaped,
                        expected_charset = "UTF-8",
                        "Received an event that has a different character encoding than you configured."
                    );
                    Cow::Owned(escaped)
                }
            },
            // ASCII reads the same in both: no copy.
            Charset::Latin1 | Charset::Ascii if bytes.is_ascii() => {
                Cow::Borrowed(std::str::from_utf8(bytes).unwrap_or_default())
            }
            Charset::Latin1 => Cow::Owned(bytes.iter().map(|&b| b as char).collect()),
            Charset::Ascii => Cow::Owned(
                bytes
                    .iter()
                    .map(|&b| if b.is_ascii() { b as char } else { '\u{fffd}' })
                    .collect(),
            ),
            Charset::Whatwg(encoding) => encoding.decode_without_bom_handling(bytes).0,
        }
    }
}

/// Ruby's `String#inspect` of UTF-8 bytes, without the surrounding quotes.
fn ruby_inspect(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 16);
    let mut rest = bytes;
    loop {
        let (valid, bad) = match std::str::from_utf8(rest) {
            Ok(text) => (text, &[][..]),
            Err(e) => {
                let (good, after) = rest.split_at(e.valid_up_to());
                let bad_len = e.error_len().unwrap_or(after.len());
                (
                    std::str::from_utf8(good).unwrap_or_default(),
                    &after[..bad_len],
                )
            }
        };
        let mut chars = valid.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{0c}' => out.push_str("\\f"),
                '\u{0b}' => out.push_str("\\v"),
                '\u{08}' => out.push_str("\\b"),
                '\u{07}' => out.push_str("\\a"),
                '\u{1b}' => out.push_str("\\e"),
                // `#{`, `#$` and `#@` would interpolate in a Ruby literal.
                '#' if matches!(chars.peek(), Some('{' | '$' | '@')) => out.push_str("\\#"),
                c if c.is_control() => {
                    let _ = write!(out, "\\u{:04X}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in bad {
            let _ = write!(out, "\\x{b:02X}");
        }
        let consumed = valid.len() + bad.len();
        if bad.is_empty() || consumed >= rest.len() {
            break;
        }
        rest = &rest[consumed..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_passes_through_and_invalid_bytes_are_escaped_as_ruby_inspects() {
        let utf8 = Charset::Utf8;
        assert!(matches!(
            utf8.decode("κόσμε".as_bytes()),
            Cow::Borrowed("κόσμε")
        ));
        // Logstash's charset_spec.
        assert_eq!(
            utf8.decode(b"foo \xED\xB9\x81\xC3"),
            "foo \\xED\\xB9\\x81\\xC3"
        );
        assert_eq!(utf8.decode(b"bar \xAD"), "bar \\xAD");
        assert_eq!(
            utf8.decode(b"q\"\\ \x01\t\x1b #{x} \xff \xc3\xa9"),
            "q\\\"\\\\ \\u0001\\t\\e \\#{x} \\xFF \u{e9}"
        );
    }

    #[test]
    fn other_charsets_convert_to_utf8() {
        let latin1 = Charset::named("ISO-8859-1").unwrap();
        assert_eq!(latin1.decode(b"\xE0 Montr\xE9al"), "à Montréal");
        assert_eq!(latin1.decode(b"\x80"), "\u{80}");
        let cp1252 = Charset::named("CP1252").unwrap();
        assert_eq!(cp1252.decode(b"\x80 \xE9"), "€ é");
        let binary = Charset::named("ASCII-8BIT").unwrap();
        assert_eq!(
            binary.decode(b"\xE0 Montr\xE9al"),
            "\u{fffd} Montr\u{fffd}al"
        );
        assert_eq!(
            binary.decode(b"\xCE\xBA\xCF\x8C\xCF\x83\xCE\xBC\xCE\xB5"),
            "\u{fffd}".repeat(10)
        );
        let sjis = Charset::named("Shift_JIS").unwrap();
        assert_eq!(sjis.decode(b"\x93\xfa\x96\x7b"), "日本");
        let utf16 = Charset::named("UTF-16LE").unwrap();
        assert_eq!(utf16.decode(b"h\x00i\x00"), "hi");
        assert_eq!(Charset::named("utf8"), Some(Charset::Utf8));
        assert_eq!(Charset::named("EBCDIC-nonsense"), None);
    }
}

//! Grok pattern definitions: the built-in logstash-patterns-core library (legacy and ecs-v1
//! sets, compiled in), pattern files read the way jls-grok reads them, and `patterns_dir`
//! globbing as Logstash's `Dir.glob` does it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Which built-in set: `ecs_compatibility => disabled` loads the legacy files, `v1`/`v8` the
/// ecs-v1 files (Logstash 8 uses the v1 patterns for v8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatternSet {
    Legacy,
    EcsV1,
}

macro_rules! files {
    ($dir:literal: $($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("patterns/", $dir, "/", $name)))),*]
    };
}

static LEGACY_FILES: &[(&str, &str)] = files!("legacy":
    "aws", "bacula", "bind", "bro", "exim", "firewalls", "grok-patterns", "haproxy", "httpd",
    "java", "junos", "linux-syslog", "maven", "mcollective", "mcollective-patterns", "mongodb",
    "nagios", "postgresql", "rails", "redis", "ruby", "squid",
);

static ECS_V1_FILES: &[(&str, &str)] = files!("ecs-v1":
    "aws", "bacula", "bind", "bro", "exim", "firewalls", "grok-patterns", "haproxy", "httpd",
    "java", "junos", "linux-syslog", "maven", "mcollective", "mongodb", "nagios", "postgresql",
    "rails", "redis", "ruby", "squid", "zeek",
);

type Table = HashMap<&'static str, &'static str>;

/// The built-in definitions of a set, parsed once per process.
pub fn builtin(set: PatternSet) -> &'static Table {
    static LEGACY: OnceLock<Table> = OnceLock::new();
    static ECS_V1: OnceLock<Table> = OnceLock::new();
    let (cell, files) = match set {
        PatternSet::Legacy => (&LEGACY, LEGACY_FILES),
        PatternSet::EcsV1 => (&ECS_V1, ECS_V1_FILES),
    };
    cell.get_or_init(|| {
        let mut table = Table::new();
        for (_, text) in files {
            for (name, pattern) in parse_file(text) {
                table.insert(name, pattern);
            }
        }
        table
    })
}

fn is_ruby_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// Ruby's `String#chomp`: one trailing `\r\n`, `\n` or `\r`.
pub fn chomp(s: &str) -> &str {
    s.strip_suffix("\r\n")
        .or_else(|| s.strip_suffix('\n'))
        .or_else(|| s.strip_suffix('\r'))
        .unwrap_or(s)
}

/// The definitions in a pattern file, in order, as jls-grok reads them: lines starting
/// (after blanks) with `#` are comments; otherwise the first word is the name and everything
/// after the blanks that follow it is the pattern, less its line ending. Trailing spaces are
/// part of the pattern; a name alone at the very end of the file defines nothing, a name
/// followed by blanks defines an empty pattern.
pub fn parse_file(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    for line in text.split_inclusive('\n') {
        let line = line.trim_start_matches(is_ruby_space);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(name_end) = line.find(is_ruby_space) else {
            continue;
        };
        let rest = line[name_end..].trim_start_matches(is_ruby_space);
        out.push((&line[..name_end], chomp(rest)));
    }
    out
}

/// The files `patterns_dir` names, as Logstash finds them: a directory contributes the files
/// matching `glob` inside it, anything else is itself a glob pattern; directories are skipped.
pub fn files_from_dirs(dirs: &[String], glob: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in dirs {
        let pattern = if Path::new(dir).is_dir() {
            format!("{}/{glob}", dir.trim_end_matches('/'))
        } else {
            dir.clone()
        };
        let found = expand_glob(&pattern);
        if found.is_empty() {
            tracing::warn!(
                path = %dir,
                glob = %glob,
                "grok: patterns_dir entry matches no file"
            );
        }
        out.extend(found.into_iter().filter(|p| !p.is_dir()));
    }
    out
}

/// The patterns in the files `patterns_dir` names ([`files_from_dirs`]), by name; a later
/// file's definition replaces an earlier one's. An unreadable file is an error naming it.
pub fn load_user_patterns(dirs: &[String], glob: &str) -> Result<HashMap<String, String>, String> {
    let mut user = HashMap::new();
    for path in files_from_dirs(dirs, glob) {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read pattern file {}: {e}", path.display()))?;
        for (name, pattern) in parse_file(&text) {
            user.insert(name.to_owned(), pattern.to_owned());
        }
    }
    Ok(user)
}

/// Paths matching a Ruby `Dir.glob` pattern (`*`, `?`, `[...]`, `{a,b}`, `**`), sorted.
pub fn expand_glob(pattern: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in expand_braces(pattern) {
        let (root, rest) = match p.strip_prefix('/') {
            Some(rest) => (PathBuf::from("/"), rest.to_owned()),
            None => (PathBuf::new(), p.clone()),
        };
        let parts: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
        walk(&root, &parts, &mut out);
    }
    out.sort();
    out.dedup();
    out
}

fn has_wildcard(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

fn walk(base: &Path, parts: &[&str], out: &mut Vec<PathBuf>) {
    let Some((first, rest)) = parts.split_first() else {
        if base.exists() {
            out.push(base.to_path_buf());
        }
        return;
    };
    let dir = if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    };
    if *first == "**" {
        // Zero or more directories.
        walk(base, rest, out);
        for (name, path) in entries(dir, base) {
            if path.is_dir() && !name.starts_with('.') {
                walk(&path, parts, out);
            }
        }
    } else if has_wildcard(first) {
        for (name, path) in entries(dir, base) {
            if (!name.starts_with('.') || first.starts_with('.')) && fnmatch(first, &name) {
                walk(&path, rest, out);
            }
        }
    } else {
        walk(&base.join(first), rest, out);
    }
}

fn entries(dir: &Path, base: &Path) -> Vec<(String, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let path = base.join(&name);
            Some((name, path))
        })
        .collect()
}

/// `{a,b}` alternatives, expanded into separate patterns (nested braces included).
fn expand_braces(p: &str) -> Vec<String> {
    let b = p.as_bytes();
    let mut depth = 0;
    let mut open = None;
    let mut commas = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'{' => {
                if depth == 0 {
                    open = Some(i);
                    commas.clear();
                }
                depth += 1;
            }
            b',' if depth == 1 => commas.push(i),
            b'}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    let o = open.expect("an open brace");
                    let (pre, post) = (&p[..o], &p[i + 1..]);
                    let mut bounds = vec![o];
                    bounds.extend(&commas);
                    bounds.push(i);
                    let mut out = Vec::new();
                    for w in bounds.windows(2) {
                        let alt = &p[w[0] + 1..w[1]];
                        out.extend(expand_braces(&format!("{pre}{alt}{post}")));
                    }
                    return out;
                }
            }
            _ => {}
        }
        i += 1;
    }
    vec![p.to_owned()]
}

/// Shell-style matching of one path component.
fn fnmatch(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|k| go(&p[1..], &n[k..])),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some('[') => {
                let Some(&c) = n.first() else { return false };
                let mut i = 1;
                let negate = matches!(p.get(1), Some('^') | Some('!'));
                if negate {
                    i += 1;
                }
                let mut hit = false;
                let mut first = true;
                while i < p.len() && (p[i] != ']' || first) {
                    first = false;
                    let lo = if p[i] == '\\' && i + 1 < p.len() {
                        i += 1;
                        p[i]
                    } else {
                        p[i]
                    };
                    if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
                        if lo <= c && c <= p[i + 2] {
                            hit = true;
                        }
                        i += 3;
                    } else {
                        if lo == c {
                            hit = true;
                        }
                        i += 1;
                    }
                }
                if i >= p.len() {
                    // No closing bracket: a literal '['.
                    return c == '[' && go(&p[1..], &n[1..]);
                }
                hit != negate && go(&p[i + 1..], &n[1..])
            }
            Some('\\') if p.len() > 1 => n.first() == Some(&p[1]) && go(&p[2..], &n[1..]),
            Some(c) => n.first() == Some(c) && go(&p[1..], &n[1..]),
        }
    }
    go(&p, &n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_parse_like_jls_grok() {
        let text = "# comment\n  # indented comment\n\nA a b \nB\t\tx\r\nC \nD";
        assert_eq!(parse_file(text), vec![("A", "a b "), ("B", "x"), ("C", "")]);
    }

    #[test]
    fn builtin_sets_differ_in_field_names() {
        let legacy = builtin(PatternSet::Legacy);
        let ecs = builtin(PatternSet::EcsV1);
        assert!(legacy["HTTPD_COMMONLOG"].contains("%{IPORHOST:clientip}"));
        assert!(ecs["HTTPD_COMMONLOG"].contains("%{IPORHOST:[source][address]}"));
        assert_eq!(
            legacy["REDISLOG"],
            r"\[%{POSINT:pid}\] %{REDISTIMESTAMP:timestamp} \* "
        );
        assert!(ecs.contains_key("ZEEK_HTTP"));
        assert!(legacy.len() > 300 && ecs.len() > 300);
    }

    #[test]
    fn globbing() {
        assert!(fnmatch("*", "abc"));
        assert!(fnmatch("*.grok", "x.grok"));
        assert!(!fnmatch("*.grok", "x.grokk"));
        assert!(fnmatch("[a-c]?", "bz"));
        assert!(!fnmatch("[!a-c]?", "bz"));
        assert_eq!(expand_braces("a{b,c{d,e}}f"), vec!["abf", "acdf", "acef"]);
    }
}

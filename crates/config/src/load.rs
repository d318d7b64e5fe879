//! Finding and reading config files, like Logstash's `path.config`: a file, a directory
//! (its files, not recursive, in lexical order) or a glob pattern (`*`, `?`, `[...]`,
//! `{a,b}`, `**/` for any depth of directories; as Ruby's `Dir.glob`, wildcards do not match names starting with a dot).
//! Files whose name ends with `~` (editor backups) are skipped, as Logstash does; a leading
//! `file://` and `~/` are understood.

use crate::LoadError;
use std::path::{Path, PathBuf};

/// Reads the config files named by `path`: `(file name, text)` pairs, in lexical order.
pub fn load_path(path: &str) -> Result<Vec<(String, String)>, LoadError> {
    let path = strip_file_uri(path);
    let expanded;
    let path = match (path.strip_prefix("~/"), std::env::var("HOME")) {
        (Some(rest), Ok(home)) => {
            expanded = format!("{}/{rest}", home.trim_end_matches('/'));
            expanded.as_str()
        }
        _ => path,
    };
    let mut files: Vec<PathBuf> = if Path::new(path).is_dir() {
        let mut out = Vec::new();
        let dir = PathBuf::from(path);
        for name in read_dir_names(&dir)? {
            if !name.starts_with('.') {
                out.push(dir.join(name));
            }
        }
        out
    } else if has_glob_chars(path) {
        let mut out = Vec::new();
        for pattern in expand_braces(path) {
            glob(&pattern, &mut out)?;
        }
        out
    } else {
        vec![PathBuf::from(path)]
    };
    files.sort_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
    files.dedup();

    let mut sources = Vec::new();
    let mut not_utf8 = Vec::new();
    for file in files {
        let name = file.to_string_lossy().into_owned();
        if name.ends_with('~') || file.is_dir() {
            continue;
        }
        let bytes = std::fs::read(&file).map_err(|source| LoadError::Io {
            path: name.clone(),
            source,
        })?;
        match String::from_utf8(bytes) {
            // A byte order mark (Windows editors write one) is not part of the config.
            Ok(text) => sources.push((name, strip_bom(text))),
            Err(_) => not_utf8.push(name),
        }
    }
    if !not_utf8.is_empty() {
        return Err(LoadError::NotUtf8(not_utf8));
    }
    if sources.is_empty() {
        return Err(LoadError::NoFiles(path.to_string()));
    }
    Ok(sources)
}

/// The text without a leading UTF-8 byte order mark.
pub fn strip_bom(text: String) -> String {
    match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    }
}

fn strip_file_uri(path: &str) -> &str {
    match path.get(..7) {
        Some(prefix) if prefix.eq_ignore_ascii_case("file://") => &path[7..],
        _ => path,
    }
}

fn has_glob_chars(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

fn read_dir_names(dir: &Path) -> Result<Vec<String>, LoadError> {
    let entries = std::fs::read_dir(dir).map_err(|source| LoadError::Io {
        path: dir.to_string_lossy().into_owned(),
        source,
    })?;
    let mut names = Vec::new();
    for entry in entries.flatten() {
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}

/// Expands a pattern (without braces) component by component.
fn glob(pattern: &str, out: &mut Vec<PathBuf>) -> Result<(), LoadError> {
    let (base, rest) = match pattern.strip_prefix('/') {
        Some(rest) => (PathBuf::from("/"), rest),
        None => (PathBuf::new(), pattern),
    };
    let components: Vec<&str> = rest.split('/').filter(|c| !c.is_empty()).collect();
    walk(base, &components, out);
    Ok(())
}

fn walk(base: PathBuf, components: &[&str], out: &mut Vec<PathBuf>) {
    let Some((first, rest)) = components.split_first() else {
        if base.exists() {
            out.push(base);
        }
        return;
    };
    if *first == "**" {
        // As Ruby's `Dir.glob`: any number of directories, none included (not hidden ones).
        walk(base.clone(), rest, out);
        let dir = if base.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            base.clone()
        };
        for name in read_dir_names(&dir).unwrap_or_default() {
            let sub = base.join(&name);
            if !name.starts_with('.') && sub.is_dir() {
                walk(sub, components, out);
            }
        }
        return;
    }
    if !has_glob_chars(first) {
        walk(base.join(first), rest, out);
        return;
    }
    let dir = if base.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        base.clone()
    };
    let Ok(names) = read_dir_names(&dir) else {
        return;
    };
    for name in names {
        if name.starts_with('.') && !first.starts_with('.') {
            continue;
        }
        if glob_match(first, &name) {
            walk(base.join(&name), rest, out);
        }
    }
}

/// `a{b,c}d` → `abd`, `acd` (nested braces included).
fn expand_braces(pattern: &str) -> Vec<String> {
    let bytes = pattern.as_bytes();
    let Some(open) = pattern.find('{') else {
        return vec![pattern.to_string()];
    };
    let mut depth = 0;
    let mut parts = Vec::new();
    let mut part_start = open + 1;
    for (i, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    parts.push(&pattern[part_start..i]);
                    let (head, tail) = (&pattern[..open], &pattern[i + 1..]);
                    return parts
                        .iter()
                        .flat_map(|p| expand_braces(&format!("{head}{p}{tail}")))
                        .collect();
                }
            }
            b',' if depth == 1 => {
                parts.push(&pattern[part_start..i]);
                part_start = i + 1;
            }
            _ => {}
        }
    }
    vec![pattern.to_string()] // unbalanced: literal
}

/// Matches one path component against `*`, `?`, `[abc]`, `[a-z]`, `[!x]`/`[^x]`, `\x`.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    match_from(&p, &n)
}

fn match_from(p: &[char], n: &[char]) -> bool {
    let Some((&first, rest)) = p.split_first() else {
        return n.is_empty();
    };
    match first {
        '*' => (0..=n.len()).any(|i| match_from(rest, &n[i..])),
        '?' => !n.is_empty() && match_from(rest, &n[1..]),
        '[' => match (n.first(), parse_class(rest)) {
            (Some(&c), Some((matches, after))) => matches(c) && match_from(after, &n[1..]),
            (Some(&c), None) => c == '[' && match_from(rest, &n[1..]),
            (None, _) => false,
        },
        '\\' if !rest.is_empty() => n.first() == Some(&rest[0]) && match_from(&rest[1..], &n[1..]),
        c => n.first() == Some(&c) && match_from(rest, &n[1..]),
    }
}

/// Parses a character class after its `[`; returns its matcher and the pattern after `]`.
#[allow(clippy::type_complexity)]
fn parse_class(p: &[char]) -> Option<(Box<dyn Fn(char) -> bool + '_>, &[char])> {
    let (negated, body) = match p.first() {
        Some('!' | '^') => (true, &p[1..]),
        _ => (false, p),
    };
    // A `]` right at the start is a literal member.
    let from = usize::from(body.first() == Some(&']'));
    let end = body[from..].iter().position(|&c| c == ']')? + from;
    let members = &body[..end];
    let matcher = move |c: char| {
        let mut i = 0;
        let mut hit = false;
        while i < members.len() {
            if i + 2 < members.len() && members[i + 1] == '-' {
                hit |= members[i] <= c && c <= members[i + 2];
                i += 3;
            } else {
                hit |= members[i] == c;
                i += 1;
            }
        }
        hit != negated
    };
    Some((Box::new(matcher), &body[end + 1..]))
}

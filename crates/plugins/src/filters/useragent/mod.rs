//! `useragent`: browser, operating system and device from a User-Agent string, with
//! ua-parser's rules (uap-core `regexes.yaml`, matched by the `ua-parser` crate).
//!
//! Options as Logstash's: `source` (required; an array uses its first element), `target`,
//! `regexes` (a `regexes.yaml` to use instead of the built-in one), `prefix` (legacy mode
//! only), `lru_cache_size` (100000), `ecs_compatibility`.
//!
//! Fields, as Logstash 8's plugin sets them (an absent part is not set):
//!
//! | legacy (under `target`, default the event root) | ECS (under `target`, default `[user_agent]`) |
//! |---|---|
//! | `name` | `name` |
//! | `version` (`89.0.4389.90`) | `version` |
//! | `major`, `minor`, `patch` | `[@metadata][filter][user_agent][version][major/minor/patch]` |
//! | `os_name`, and `os` (the same) | `[os][name]` |
//! | `os_version` (`10.14.4`, or `Vista`) | `[os][version]` |
//! | `os_major`, `os_minor`, `os_patch` | `[@metadata][filter][user_agent][os][version][major/minor/patch]` |
//! | `os_full` (`Mac OS X 10.14.4`) | `[os][full]` |
//! | `device` | `[device][name]` |
//!
//! An unrecognised agent gets `name`, `os_name` and `device` `Other`, as in Logstash; an empty or
//! missing source does nothing. Like Logstash's plugin, `[user_agent][original]` is not set
//! (the rules cannot tell which part of the text was the agent).
//!
//! The compiled rules are shared by every instance; results are cached per worker in an LRU
//! keyed by the agent string (real logs repeat a few hundred agents), so the regex work is paid
//! once per distinct agent per worker.

use std::borrow::Cow;
use std::num::NonZeroUsize;
use std::sync::{Arc, OnceLock};

use lru::LruCache;
use sluice_event::{Event, FieldRef, Str, Value};
use sluice_pipeline::{ConfigError, Filter, Options};
use ua_parser::{device, os, user_agent, Extractor, Regexes};
use yaml_rust2::{Yaml, YamlLoader};

use crate::ecs::Ecs;

/// uap-core's rules, compiled in (see the file's header for its origin and licence).
const BUILTIN_REGEXES: &str = include_str!("regexes.yaml");

/// The fields one parse can set, in the order Logstash sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Name,
    Device,
    Major,
    Minor,
    Patch,
    Version,
    OsMajor,
    OsMinor,
    OsPatch,
    OsVersion,
    OsName,
    /// Legacy mode's `os` (a copy of `os_name`).
    OsLegacy,
    OsFull,
}

const SLOTS: usize = 13;

/// One agent's result: what to set, in order.
/// The fields of one agent string, as the values the event gets: the cache keeps them ready
/// to clone (a short one, most of them, is stored inline and copied without an allocation).
type Parsed = Vec<(Slot, Str)>;

pub struct UserAgent {
    source: FieldRef,
    /// `target` names the source field itself: the text is replaced by the parsed hash.
    replaces_source: bool,
    /// Where each [`Slot`] goes, indexed by `Slot as usize` (`None`: not set in this mode).
    paths: Arc<[Option<FieldRef>; SLOTS]>,
    rules: Arc<Extractor<'static>>,
    cache_size: NonZeroUsize,
    cache: LruCache<String, Parsed>,
}

fn yaml_text(v: &Yaml) -> Option<Cow<'static, str>> {
    match v {
        Yaml::String(s) | Yaml::Real(s) => Some(Cow::Owned(s.clone())),
        Yaml::Integer(i) => Some(Cow::Owned(i.to_string())),
        _ => None,
    }
}

/// Compiles a `regexes.yaml` document.
pub fn compile_rules(text: &str) -> Result<Extractor<'static>, String> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| format!("not valid YAML: {e}"))?;
    let doc = docs.first().ok_or("the file is empty")?;
    let section = |key: &str| -> Result<&Vec<Yaml>, String> {
        doc[key]
            .as_vec()
            .ok_or_else(|| format!("{key} is missing from yaml"))
    };
    let regex = |entry: &Yaml, key: &str| -> Result<Cow<'static, str>, String> {
        yaml_text(&entry["regex"]).ok_or_else(|| format!("an entry of {key} has no regex"))
    };
    let mut uas = Vec::new();
    for e in section("user_agent_parsers")? {
        uas.push(user_agent::Parser {
            regex: regex(e, "user_agent_parsers")?,
            family_replacement: yaml_text(&e["family_replacement"]),
            v1_replacement: yaml_text(&e["v1_replacement"]),
            v2_replacement: yaml_text(&e["v2_replacement"]),
            v3_replacement: yaml_text(&e["v3_replacement"]),
            v4_replacement: yaml_text(&e["v4_replacement"]),
        });
    }
    let mut oses = Vec::new();
    for e in section("os_parsers")? {
        oses.push(os::Parser {
            regex: regex(e, "os_parsers")?,
            os_replacement: yaml_text(&e["os_replacement"]),
            os_v1_replacement: yaml_text(&e["os_v1_replacement"]),
            os_v2_replacement: yaml_text(&e["os_v2_replacement"]),
            os_v3_replacement: yaml_text(&e["os_v3_replacement"]),
            os_v4_replacement: yaml_text(&e["os_v4_replacement"]),
        });
    }
    let mut devices = Vec::new();
    for e in section("device_parsers")? {
        devices.push(device::Parser {
            regex: regex(e, "device_parsers")?,
            regex_flag: (e["regex_flag"].as_str() == Some("i")).then_some(device::Flag::IgnoreCase),
            device_replacement: yaml_text(&e["device_replacement"]),
            brand_replacement: yaml_text(&e["brand_replacement"]),
            model_replacement: yaml_text(&e["model_replacement"]),
        });
    }
    Extractor::try_from(Regexes {
        user_agent_parsers: uas,
        os_parsers: oses,
        device_parsers: devices,
    })
    .map_err(|e| format!("the rules do not compile: {e}"))
}

/// The built-in rules, compiled once per process.
pub fn builtin_rules() -> Arc<Extractor<'static>> {
    static RULES: OnceLock<Arc<Extractor<'static>>> = OnceLock::new();
    RULES
        .get_or_init(|| {
            Arc::new(compile_rules(BUILTIN_REGEXES).expect("the built-in regexes.yaml compiles"))
        })
        .clone()
}

/// Ruby's `s.to_i.to_s == s`: a canonical decimal integer.
fn is_canonical_int(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" && s == "0" || !digits.starts_with('0'))
}

/// The agent's version, `major[.minor[.patch[.patch_minor]]]`; when the rules stop at the
/// patch but the text goes on with `.<number> `, that number is added (Logstash's
/// `check_and_adjust_version`).
fn ua_version(ua: &str, v: &user_agent::ValueRef) -> Option<String> {
    let mut version = v.major?.to_owned();
    let Some(minor) = v.minor else {
        return Some(version);
    };
    version.push('.');
    version.push_str(minor);
    let Some(patch) = v.patch else {
        return Some(version);
    };
    version.push('.');
    version.push_str(patch);
    if let Some(pm) = v.patch_minor {
        version.push('.');
        version.push_str(pm);
    } else if let Some(at) = ua.find(version.as_str()) {
        let rest = &ua[at + version.len()..];
        if let Some(after_dot) = rest.strip_prefix('.') {
            if let Some(space) = after_dot.find(' ') {
                let candidate = &after_dot[..space];
                if is_canonical_int(candidate) {
                    version.push('.');
                    version.push_str(candidate);
                }
            }
        }
    }
    Some(version)
}

/// The OS version: a numeric major joins the minor with `.`, a word (`Vista`) with a space.
fn os_version(v: &os::ValueRef) -> Option<String> {
    let major = v.major.as_deref()?;
    let sep = if is_canonical_int(major) { '.' } else { ' ' };
    let mut version = major.to_owned();
    if let Some(minor) = v.minor.as_deref() {
        version.push(sep);
        version.push_str(minor);
        if let Some(patch) = v.patch.as_deref() {
            version.push('.');
            version.push_str(patch);
            if let Some(pm) = v.patch_minor.as_deref() {
                version.push('.');
                version.push_str(pm);
            }
        }
    }
    Some(version)
}

/// Parses one agent string into the fields Logstash sets, in its order.
fn parse(rules: &Extractor<'static>, ua: &str) -> Parsed {
    let mut out: Vec<(Slot, String)> = Vec::with_capacity(SLOTS);
    let agent = rules
        .ua
        .extract(ua)
        .unwrap_or_else(|| user_agent::ValueRef {
            family: "Other".into(),
            ..Default::default()
        });
    out.push((Slot::Name, agent.family.to_string()));
    let device = rules.dev.extract(ua);
    out.push((
        Slot::Device,
        device.map_or_else(|| "Other".to_owned(), |d| d.device.into_owned()),
    ));
    for (slot, part) in [
        (Slot::Major, agent.major),
        (Slot::Minor, agent.minor),
        (Slot::Patch, agent.patch),
    ] {
        if let Some(p) = part {
            out.push((slot, p.to_owned()));
        }
    }
    if let Some(v) = ua_version(ua, &agent) {
        out.push((Slot::Version, v));
    }

    let os = rules.os.extract(ua).unwrap_or_else(|| os::ValueRef {
        os: "Other".into(),
        ..Default::default()
    });
    for (slot, part) in [
        (Slot::OsMajor, &os.major),
        (Slot::OsMinor, &os.minor),
        (Slot::OsPatch, &os.patch),
    ] {
        if let Some(p) = part {
            out.push((slot, p.to_string()));
        }
    }
    let version = os_version(&os);
    if let Some(v) = &version {
        out.push((Slot::OsVersion, v.clone()));
    }
    let name = os.os.to_string();
    let full = match &version {
        Some(v) => format!("{name} {v}"),
        None => name.clone(),
    };
    out.push((Slot::OsName, name.clone()));
    out.push((Slot::OsLegacy, name));
    out.push((Slot::OsFull, full));
    out.into_iter()
        .map(|(slot, v)| (slot, Str::from(v)))
        .collect()
}

fn field(text: &str) -> Option<FieldRef> {
    Some(FieldRef::parse(text).expect("built from valid parts"))
}

/// Where each slot goes. `target` is already a bracketed reference (or empty: the event root).
fn slot_paths(target: &str, ecs: bool, prefix: &str) -> [Option<FieldRef>; SLOTS] {
    const META: &str = "[@metadata][filter][user_agent]";
    let t = |sub: &str| field(&format!("{target}{sub}"));
    let p = |name: &str| t(&format!("[{prefix}{name}]"));
    let mut paths: [Option<FieldRef>; SLOTS] = Default::default();
    let mut put = |slot: Slot, path: Option<FieldRef>| paths[slot as usize] = path;
    if ecs {
        put(Slot::Name, t("[name]"));
        put(Slot::Device, t("[device][name]"));
        put(Slot::Version, t("[version]"));
        put(Slot::Major, field(&format!("{META}[version][major]")));
        put(Slot::Minor, field(&format!("{META}[version][minor]")));
        put(Slot::Patch, field(&format!("{META}[version][patch]")));
        put(Slot::OsFull, t("[os][full]"));
        put(Slot::OsName, t("[os][name]"));
        put(Slot::OsVersion, t("[os][version]"));
        put(Slot::OsMajor, field(&format!("{META}[os][version][major]")));
        put(Slot::OsMinor, field(&format!("{META}[os][version][minor]")));
        put(Slot::OsPatch, field(&format!("{META}[os][version][patch]")));
    } else {
        put(Slot::Name, p("name"));
        put(Slot::Device, p("device"));
        put(Slot::Version, p("version"));
        put(Slot::Major, p("major"));
        put(Slot::Minor, p("minor"));
        put(Slot::Patch, p("patch"));
        put(Slot::OsFull, p("os_full"));
        put(Slot::OsName, p("os_name"));
        put(Slot::OsLegacy, p("os"));
        put(Slot::OsVersion, p("os_version"));
        put(Slot::OsMajor, p("os_major"));
        put(Slot::OsMinor, p("os_minor"));
        put(Slot::OsPatch, p("os_patch"));
    }
    paths
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let ecs = Ecs::from_options(opts)?.enabled();
    let source_text = opts.required_string("source")?;
    let source = FieldRef::parse(&source_text).map_err(|e| opts.error("source", e.to_string()))?;
    let target_text = opts.string("target")?;
    let target = match target_text.as_deref() {
        None if ecs => "[user_agent]".to_owned(),
        None | Some("") => String::new(),
        Some(t) => FieldRef::parse(t)
            .map_err(|e| opts.error("target", e.to_string()))?
            .to_string(),
    };
    let mut prefix = opts.string_or("prefix", "")?;
    if ecs && !prefix.is_empty() {
        tracing::warn!(
            "useragent: Field prefix isn't supported in ECS compatibility mode, please remove `prefix => {prefix:?}`"
        );
        prefix.clear();
    }
    let rules = match opts.string("regexes")? {
        None => builtin_rules(),
        Some(path) => {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| opts.error("regexes", format!("cannot read {path}: {e}")))?;
            Arc::new(
                compile_rules(&text).map_err(|e| opts.error("regexes", format!("{path}: {e}")))?,
            )
        }
    };
    let size = opts.int("lru_cache_size")?.unwrap_or(100_000);
    let cache_size = usize::try_from(size)
        .ok()
        .and_then(NonZeroUsize::new)
        .ok_or_else(|| opts.error("lru_cache_size", "must be greater than 0"))?;
    Ok(Box::new(UserAgent {
        replaces_source: target_text.as_deref() == Some(source_text.as_str()),
        source,
        paths: Arc::new(slot_paths(&target, ecs, &prefix)),
        rules,
        cache_size,
        cache: LruCache::new(cache_size),
    }))
}

impl Filter for UserAgent {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let ua = match event.get(&self.source) {
            Some(Value::String(s)) => s,
            Some(Value::Array(a)) => match a.first() {
                Some(Value::String(s)) => s,
                _ => return false,
            },
            _ => return false,
        };
        if ua.is_empty() {
            return false;
        }
        let rules = &self.rules;
        let parsed: &Parsed = self
            .cache
            .get_or_insert_ref(ua.as_str(), || parse(rules, ua));
        if self.replaces_source {
            event.remove(&self.source);
        }
        for (slot, value) in parsed {
            if let Some(path) = &self.paths[*slot as usize] {
                event.set(path, Value::String(value.clone()));
            }
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(UserAgent {
            source: self.source.clone(),
            replaces_source: self.replaces_source,
            paths: self.paths.clone(),
            rules: self.rules.clone(),
            cache_size: self.cache_size,
            cache: LruCache::new(self.cache_size),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_integers_follow_ruby_to_i_to_s() {
        for yes in ["0", "7", "10", "-3", "190414"] {
            assert!(is_canonical_int(yes), "{yes}");
        }
        for no in ["", "-", "-0", "08", "Vista", "10a", "+5", " 5", "1_000"] {
            assert!(!is_canonical_int(no), "{no}");
        }
    }

    #[test]
    fn the_builtin_rules_compile() {
        let rules = builtin_rules();
        let p = parse(&rules, "curl/7.68.0");
        assert_eq!(p[0], (Slot::Name, Str::from("curl")));
    }

    #[test]
    fn rule_files_without_a_section_are_rejected() {
        let err = compile_rules("user_agent_parsers: []\nos_parsers: []\n")
            .err()
            .unwrap();
        assert!(err.contains("device_parsers is missing"), "{err}");
        assert!(compile_rules("user_agent_parsers: [").is_err());
    }
}

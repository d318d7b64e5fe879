//! `translate`: replaces a field's value by its entry in a dictionary, as
//! logstash-filter-translate does.
//!
//! - The dictionary is inline (`dictionary`, a hash or `[key, value, …]`) or a file
//!   (`dictionary_path`: `.yml`/`.yaml`, `.json` or `.csv` with `key,value` rows), read at
//!   load (a file that cannot be read or parsed is a config error), then every
//!   `refresh_interval` seconds (default 300; when it is 300 or less only if the file's mtime
//!   changed) by one background thread, without stopping the pipeline: `refresh_behaviour`
//!   `merge` (default: entries are added or updated) or `replace`. A reload that fails is
//!   logged and the dictionary stays as it was.
//! - The dictionary is shared by every worker: each reload publishes a new one, which a worker
//!   picks up at its next event after checking one counter (no lock per event).
//! - Lookup of the source text (a string; an array's first item; any other value's text):
//!   `exact => true` (default) is an equality test, with `regex => true` the first key (in the
//!   dictionary's order) whose regex matches; `exact => false` replaces every occurrence of any
//!   key in the text by its value (the result is the translation when anything changed).
//! - `source` (old name `field`), `target` (old name `destination`; default `translation`,
//!   or with ECS the source itself, translated in place). An existing target is left alone
//!   unless `override` (which is on for in-place translation). No match: `fallback`
//!   (sprintf'd), if set.
//! - `iterate_on`: naming the source, an array whose items are each translated (the target
//!   gets an array of results, `fallback` or null where nothing matched); naming another
//!   field, an array of hashes whose `[source]` are translated into their `[target]`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use sluice_event::{Event, FieldRef, Template, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

/// The entries, in the order the dictionary gave them, with what each lookup kind needs.
#[derive(Default)]
struct Dict {
    keys: Vec<String>,
    values: Vec<Value>,
    index: HashMap<String, usize>,
    /// `exact` and `regex`: each key as a Ruby regex (`None`: it does not compile).
    regexes: Vec<Option<sluice_regex::Regex>>,
    /// Not `exact`: every key, escaped, in one alternation.
    union: Option<regex::Regex>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Exact,
    ExactRegex,
    Fuzzy,
}

impl Dict {
    fn build(entries: Vec<(String, Value)>, mode: Mode) -> Dict {
        let mut d = Dict::default();
        d.merge(entries);
        d.prepare(mode);
        d
    }

    /// Adds or updates entries; an updated key keeps its place.
    fn merge(&mut self, entries: Vec<(String, Value)>) {
        for (k, v) in entries {
            match self.index.get(&k) {
                Some(&i) => self.values[i] = v,
                None => {
                    self.index.insert(k.clone(), self.keys.len());
                    self.keys.push(k);
                    self.values.push(v);
                }
            }
        }
    }

    fn prepare(&mut self, mode: Mode) {
        match mode {
            Mode::Exact => {}
            Mode::ExactRegex => {
                self.regexes = self
                    .keys
                    .iter()
                    .map(|k| sluice_regex::Regex::new(k).ok())
                    .collect();
            }
            Mode::Fuzzy => {
                let alternation: Vec<String> = self.keys.iter().map(|k| regex::escape(k)).collect();
                self.union = regex::RegexBuilder::new(&alternation.join("|"))
                    .size_limit(1 << 30)
                    .build()
                    .ok();
            }
        }
    }

    fn lookup(&self, mode: Mode, text: &str) -> Option<Value> {
        match mode {
            Mode::Exact => self.index.get(text).map(|&i| self.values[i].clone()),
            Mode::ExactRegex => self
                .regexes
                .iter()
                .position(|r| r.as_ref().is_some_and(|r| r.is_match(text)))
                .map(|i| self.values[i].clone()),
            Mode::Fuzzy => {
                let union = self.union.as_ref()?;
                let replaced = union.replace_all(text, |c: &regex::Captures| {
                    self.index
                        .get(&c[0])
                        .map(|&i| self.values[i].to_display_string())
                        .unwrap_or_default()
                });
                match replaced {
                    std::borrow::Cow::Owned(s) if s != text => Some(Value::String(s.into())),
                    _ => None,
                }
            }
        }
    }
}

/// A dictionary file, as the plugin reads each format. Keys are text.
fn read_file(path: &Path) -> Result<Vec<(String, Value)>, String> {
    parse_file(path, &read_text(path)?)
}

/// A dictionary file's text (a byte order mark dropped).
fn read_text(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(text.strip_prefix('\u{feff}').unwrap_or(&text).to_owned())
}

/// A dictionary file's entries, read by the format its name says.
fn parse_file(path: &Path, text: &str) -> Result<Vec<(String, Value)>, String> {
    let name = path.to_string_lossy();
    if name.ends_with(".yml") || name.ends_with(".yaml") {
        read_yaml(text)
    } else if name.ends_with(".json") {
        read_json(text)
    } else if name.ends_with(".csv") {
        read_csv(text)
    } else {
        Err(format!("Dictionary {name} has a non valid format"))
    }
}

fn read_csv(text: &str) -> Result<Vec<(String, Value)>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let row = crate::csv::parse_line(line, ",", Some('"'))
            .map_err(|e| format!("{e} (line {})", n + 1))?;
        let mut fields = row.unwrap_or_default().into_iter();
        if let Some(Some(key)) = fields.next() {
            let value = fields
                .next()
                .flatten()
                .map_or(Value::Null, |v| Value::String(v.into()));
            out.push((key, value));
        }
    }
    Ok(out)
}

/// A JSON object's entries in the file's order.
fn read_json(text: &str) -> Result<Vec<(String, Value)>, String> {
    struct Entries(Vec<(String, Value)>);
    impl<'de> serde::Deserialize<'de> for Entries {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Entries;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut m: A,
                ) -> Result<Entries, A::Error> {
                    let mut out = Vec::new();
                    while let Some((k, v)) = m.next_entry::<String, serde_json::Value>()? {
                        out.push((k, Value::from(v)));
                    }
                    Ok(Entries(out))
                }
            }
            d.deserialize_map(Visit)
        }
    }
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str::<Entries>(text)
        .map(|e| e.0)
        .map_err(|e| e.to_string())
}

fn read_yaml(text: &str) -> Result<Vec<(String, Value)>, String> {
    use yaml_rust2::{Yaml, YamlLoader};
    fn key(y: &Yaml) -> Option<String> {
        Some(match y {
            Yaml::String(s) | Yaml::Real(s) => s.clone(),
            Yaml::Integer(i) => i.to_string(),
            Yaml::Boolean(b) => b.to_string(),
            _ => return None,
        })
    }
    fn value(y: &Yaml) -> Value {
        match y {
            Yaml::String(s) => Value::String(s.as_str().into()),
            Yaml::Integer(i) => Value::Int(*i),
            Yaml::Real(r) => r
                .parse()
                .map_or_else(|_| Value::String(r.as_str().into()), Value::Float),
            Yaml::Boolean(b) => Value::Bool(*b),
            Yaml::Array(a) => Value::Array(a.iter().map(value).collect()),
            Yaml::Hash(h) => Value::Object(
                h.iter()
                    .filter_map(|(k, v)| Some((key(k)?.into(), value(v))))
                    .collect(),
            ),
            _ => Value::Null,
        }
    }
    let docs = YamlLoader::load_from_str(text).map_err(|e| e.to_string())?;
    match docs.first() {
        None | Some(Yaml::Null) => Ok(Vec::new()),
        Some(Yaml::Hash(h)) => Ok(h
            .iter()
            .filter_map(|(k, v)| Some((key(k)?, value(v))))
            .collect()),
        Some(_) => Err("the YAML document is not a hash".to_owned()),
    }
}

/// The dictionary all workers share, and what reloads it.
struct Shared {
    current: Mutex<Arc<Dict>>,
    generation: AtomicU64,
}

#[derive(Clone)]
pub struct Translate {
    shared: Arc<Shared>,
    /// This worker's copy of the current dictionary, and its generation.
    dict: Arc<Dict>,
    generation: u64,
    mode: Mode,
    source: FieldRef,
    target: FieldRef,
    source_text: String,
    target_text: String,
    iterate_on: Option<(FieldRef, String)>,
    override_: bool,
    fallback: Option<Template>,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let field = opts.string("field")?;
    let source = match (opts.string("source")?, field) {
        (Some(_), Some(f)) => {
            return Err(opts.error(
                "field",
                format!(
                "Please remove `field => {f:?}` and only set the `source => ...` option instead"
            ),
            ))
        }
        (Some(s), None) | (None, Some(s)) => s,
        (None, None) => {
            return Err(opts.plugin_error(
                "No source field specified, please provide the `source => ...` option",
            ))
        }
    };
    let destination = opts.string("destination")?;
    let target = match (opts.string("target")?, destination) {
        (Some(_), Some(d)) => {
            return Err(opts.error(
                "destination",
                format!("Please remove `destination => {d:?}` and only set the `target => ...` option instead"),
            ))
        }
        (Some(t), None) | (None, Some(t)) => Some(t),
        (None, None) => None,
    };
    let ecs = crate::ecs::Ecs::from_options(opts)?;
    let target = target.unwrap_or_else(|| {
        if ecs.enabled() {
            source.clone()
        } else {
            "translation".to_owned()
        }
    });
    let mut override_ = opts.boolean("override")?;
    if source == target {
        if override_ == Some(false) {
            return Err(opts.error(
                "override",
                "Configuring `override => false` with in-place translation has no effect, please remove the option",
            ));
        }
        override_ = Some(true);
    }
    let exact = opts.boolean_or("exact", true)?;
    let regex = opts.boolean_or("regex", false)?;
    let mode = match (exact, regex) {
        (true, false) => Mode::Exact,
        (true, true) => Mode::ExactRegex,
        (false, _) => Mode::Fuzzy,
    };
    let inline = opts.hash("dictionary")?;
    let path = opts.string("dictionary_path")?;
    let refresh_interval = opts.float("refresh_interval")?.unwrap_or(300.0);
    let replace = opts.choice("refresh_behaviour", &["merge", "replace"], "merge")? == "replace";
    let yaml_limit = opts.int("yaml_dictionary_code_point_limit")?;
    let yaml_strategy =
        opts.choice("yaml_load_strategy", &["streaming", "one_shot"], "one_shot")?;
    let _ = yaml_strategy; // both read the whole document; the result is the same
    let is_yaml = path
        .as_deref()
        .is_some_and(|p| p.ends_with(".yml") || p.ends_with(".yaml"));
    if yaml_limit.is_some() && !is_yaml {
        return Err(opts.error(
            "yaml_dictionary_code_point_limit",
            "Please remove `yaml_dictionary_code_point_limit` for dictionary file in JSON or CSV format",
        ));
    }
    if yaml_limit.is_some_and(|l| l <= 0) {
        return Err(opts.error(
            "yaml_dictionary_code_point_limit",
            "Please set a positive number",
        ));
    }
    let entries = match (&inline, &path) {
        (Some(d), Some(_)) if !d.is_empty() => return Err(opts.error(
            "dictionary_path",
            "The configuration options 'dictionary' and 'dictionary_path' are mutually exclusive",
        )),
        (_, Some(p)) => {
            let limit = yaml_limit.unwrap_or(134_217_728) as usize;
            let loading = |e: String| {
                opts.error(
                    "dictionary_path",
                    format!("Translate: {e} when loading dictionary file at {p}"),
                )
            };
            // Read once: the limit is checked on the text that is then parsed.
            let text = read_text(Path::new(p)).map_err(loading)?;
            if is_yaml && text.chars().count() > limit {
                return Err(opts.error(
                    "dictionary_path",
                    format!(
                        "{p} has more than yaml_dictionary_code_point_limit ({limit}) code points"
                    ),
                ));
            }
            parse_file(Path::new(p), &text).map_err(loading)?
        }
        (Some(d), None) => d
            .iter()
            .map(|(k, v)| (k.clone(), sluice_pipeline::options::ast_to_value(v)))
            .collect(),
        (None, None) => Vec::new(),
    };
    let iterate_on = match opts.string("iterate_on")? {
        Some(i) => Some((
            FieldRef::parse(&i).map_err(|e| opts.error("iterate_on", e.to_string()))?,
            i,
        )),
        None => None,
    };
    let fallback = opts.string("fallback")?.map(|f| Template::parse(&f));
    let parse = |opts: &Options, name: &str, text: &str| {
        FieldRef::parse(text).map_err(|e| opts.error(name, e.to_string()))
    };
    let dict = Arc::new(Dict::build(entries, mode));
    let shared = Arc::new(Shared {
        current: Mutex::new(Arc::clone(&dict)),
        generation: AtomicU64::new(0),
    });
    if let Some(p) = path {
        if refresh_interval > 0.0 {
            reload_in_background(
                Arc::downgrade(&shared),
                PathBuf::from(p),
                Duration::from_secs_f64(refresh_interval),
                replace,
                mode,
            );
        }
    }
    Ok(Box::new(Translate {
        shared,
        dict,
        generation: 0,
        mode,
        source: parse(opts, "source", &source)?,
        target: parse(opts, "target", &target)?,
        source_text: source,
        target_text: target,
        iterate_on,
        override_: override_.unwrap_or(false),
        fallback,
    }))
}

/// One thread per file dictionary: reloads it every `every` (only when its mtime changed,
/// for intervals of 300 s or less) until the filter is gone.
fn reload_in_background(
    shared: Weak<Shared>,
    path: PathBuf,
    every: Duration,
    replace: bool,
    mode: Mode,
) {
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let mut last = mtime(&path);
    let only_if_changed = every <= Duration::from_secs(300);
    std::thread::Builder::new()
        .name("translate-reload".to_owned())
        .spawn(move || loop {
            let mut waited = Duration::ZERO;
            while waited < every {
                let step = (every - waited).min(Duration::from_millis(200));
                std::thread::sleep(step);
                waited += step;
                if shared.strong_count() == 0 {
                    return;
                }
            }
            let Some(shared) = shared.upgrade() else { return };
            let now = mtime(&path);
            if only_if_changed && now == last {
                continue;
            }
            last = now;
            let started = SystemTime::now();
            match read_file(&path) {
                Ok(entries) => {
                    let mut current = shared.current.lock().unwrap_or_else(|p| p.into_inner());
                    let mut next = Dict::default();
                    if !replace {
                        next.merge(current.keys.iter().cloned().zip(current.values.iter().cloned()).collect());
                    }
                    next.merge(entries);
                    next.prepare(mode);
                    *current = Arc::new(next);
                    shared.generation.fetch_add(1, Ordering::Release);
                    tracing::debug!(path = %path.display(), took = ?started.elapsed().unwrap_or_default(), "translate: dictionary reloaded");
                }
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "translate: reloading the dictionary failed; keeping the one loaded"),
            }
        })
        .expect("a thread can be started");
}

/// The text a value is looked up by.
fn lookup_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        Value::Array(items) => items
            .first()
            .map(Value::to_display_string)
            .unwrap_or_default(),
        other => other.to_display_string(),
    }
}

impl Translate {
    fn refresh(&mut self) {
        let g = self.shared.generation.load(Ordering::Acquire);
        if g != self.generation {
            let current = self
                .shared
                .current
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            self.dict = Arc::clone(&current);
            self.generation = g;
        }
    }

    fn fallback(&self, event: &Event) -> Option<Value> {
        self.fallback
            .as_ref()
            .map(|f| Value::String(f.render(event).into()))
    }
}

impl Filter for Translate {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        self.refresh();
        match &self.iterate_on {
            None => {
                if !self.override_ && event.contains(&self.target) {
                    return false;
                }
                let Some(v) = event.get(&self.source) else {
                    return false;
                };
                let text = lookup_text(v);
                let found = self
                    .dict
                    .lookup(self.mode, &text)
                    .or_else(|| self.fallback(event));
                let matched = found.is_some();
                if let Some(value) = found {
                    event.set(&self.target, value);
                }
                matched || self.source_text == self.target_text
            }
            Some((iterate_on, name)) if *name == self.source_text => {
                if !self.override_ && event.contains(&self.target) {
                    return false;
                }
                let items = match event.get(iterate_on) {
                    None => return false,
                    Some(Value::Array(items)) => items.clone(),
                    Some(Value::Null) => Vec::new(),
                    Some(other) => vec![other.clone()],
                };
                let fallback = self.fallback(event);
                let results: Vec<Value> = items
                    .iter()
                    .map(|item| {
                        self.dict
                            .lookup(self.mode, &item.to_display_string())
                            .or_else(|| fallback.clone())
                            .unwrap_or(Value::Null)
                    })
                    .collect();
                let any = results
                    .iter()
                    .any(|r| !matches!(r, Value::Null | Value::Bool(false)));
                event.set(&self.target, Value::Array(results));
                any || self.source_text == self.target_text
            }
            Some((iterate_on, _)) => {
                let count = match event.get(iterate_on) {
                    None => return false,
                    Some(Value::Array(items)) => items.len(),
                    Some(Value::Null) => 0,
                    Some(_) => 1,
                };
                let mut any = false;
                for i in 0..count {
                    let mut at = iterate_on.segments().to_vec();
                    at.push(i.to_string().into());
                    let mut from = at.clone();
                    from.extend(self.source.segments().iter().cloned());
                    let Some(v) = event.get(&FieldRef::from_segments(from)) else {
                        continue;
                    };
                    let found = self
                        .dict
                        .lookup(self.mode, &v.to_display_string())
                        .or_else(|| self.fallback(event));
                    if let Some(value) = found {
                        let mut to = at;
                        to.extend(self.target.segments().iter().cloned());
                        event.set(&FieldRef::from_segments(to), value);
                        any = true;
                    }
                }
                any || self.source_text == self.target_text
            }
        }
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

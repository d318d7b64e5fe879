//! Opening `.mmdb` files, telling their schema apart, and turning one record into Logstash's
//! geoip fields.
//!
//! Two schemas are read:
//! - MaxMind's (GeoLite2/GeoIP2 City, Country, ASN, ISP, Domain, Enterprise, Anonymous-IP, and
//!   any database that copies it, such as DB-IP's own `.mmdb` files): the kind is taken from the
//!   metadata's `database_type` exactly as Logstash's `Database.fromDatabaseType` does (a
//!   substring test, in the same order), and each kind fills the same fields as Logstash's
//!   `GeoIPFilter.retrieve*GeoData`.
//! - ip-location-db's flat schema (`database_type` `city ipv4`, `country ipv6`, ...; records of
//!   `country_code`, `state1`, `state2`, `city`, `postcode`, `latitude`, `longitude`,
//!   `timezone`), which is how the default database, DB-IP City Lite, is packaged. Country
//!   and continent names come from [`super::countries`], since the records carry only codes.
//!   Its IPv4 and IPv6 halves are separate files; [`Database`] holds both and picks by address.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use maxminddb::{geoip2, MaxMindDbError, Mmap, Reader};
use serde::de::{Deserializer, Visitor};
use serde::Deserialize;
use sluice_event::{Map, Value};

use super::countries::{CONTINENTS, COUNTRIES};

/// The fields Logstash's geoip filter can add, in the order of its `Field` enum (which is the
/// order it sets them in: `location` before `latitude`/`longitude`, which refine it in ECS
/// mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Field {
    AutonomousSystemNumber,
    AutonomousSystemOrganization,
    CityName,
    CountryName,
    ContinentCode,
    ContinentName,
    CountryCode2,
    CountryCode3,
    Domain,
    Ip,
    Isp,
    PostalCode,
    DmaCode,
    RegionName,
    RegionCode,
    RegionIsoCode,
    Timezone,
    Location,
    Latitude,
    Longitude,
    Organization,
    Network,
    HostingProvider,
    TorExitNode,
    AnonymousVpn,
    Anonymous,
    PublicProxy,
    ResidentialProxy,
}

impl Field {
    pub(super) const ALL: [Field; 28] = [
        Field::AutonomousSystemNumber,
        Field::AutonomousSystemOrganization,
        Field::CityName,
        Field::CountryName,
        Field::ContinentCode,
        Field::ContinentName,
        Field::CountryCode2,
        Field::CountryCode3,
        Field::Domain,
        Field::Ip,
        Field::Isp,
        Field::PostalCode,
        Field::DmaCode,
        Field::RegionName,
        Field::RegionCode,
        Field::RegionIsoCode,
        Field::Timezone,
        Field::Location,
        Field::Latitude,
        Field::Longitude,
        Field::Organization,
        Field::Network,
        Field::HostingProvider,
        Field::TorExitNode,
        Field::AnonymousVpn,
        Field::Anonymous,
        Field::PublicProxy,
        Field::ResidentialProxy,
    ];

    /// The name the `fields` option uses (Logstash's enum constant, matched case-insensitively).
    pub(super) fn option_name(self) -> &'static str {
        match self {
            Field::AutonomousSystemNumber => "AUTONOMOUS_SYSTEM_NUMBER",
            Field::AutonomousSystemOrganization => "AUTONOMOUS_SYSTEM_ORGANIZATION",
            Field::CityName => "CITY_NAME",
            Field::CountryName => "COUNTRY_NAME",
            Field::ContinentCode => "CONTINENT_CODE",
            Field::ContinentName => "CONTINENT_NAME",
            Field::CountryCode2 => "COUNTRY_CODE2",
            Field::CountryCode3 => "COUNTRY_CODE3",
            Field::Domain => "DOMAIN",
            Field::Ip => "IP",
            Field::Isp => "ISP",
            Field::PostalCode => "POSTAL_CODE",
            Field::DmaCode => "DMA_CODE",
            Field::RegionName => "REGION_NAME",
            Field::RegionCode => "REGION_CODE",
            Field::RegionIsoCode => "REGION_ISO_CODE",
            Field::Timezone => "TIMEZONE",
            Field::Location => "LOCATION",
            Field::Latitude => "LATITUDE",
            Field::Longitude => "LONGITUDE",
            Field::Organization => "ORGANIZATION",
            Field::Network => "NETWORK",
            Field::HostingProvider => "HOSTING_PROVIDER",
            Field::TorExitNode => "TOR_EXIT_NODE",
            Field::AnonymousVpn => "ANONYMOUS_VPN",
            Field::Anonymous => "ANONYMOUS",
            Field::PublicProxy => "PUBLIC_PROXY",
            Field::ResidentialProxy => "RESIDENTIAL_PROXY",
        }
    }

    pub(super) fn parse(name: &str) -> Option<Field> {
        Field::ALL
            .into_iter()
            .find(|f| f.option_name().eq_ignore_ascii_case(name))
    }

    /// Where the field goes under the target without ECS (`ecs_compatibility => disabled`).
    pub(super) fn legacy_path(self) -> &'static [&'static str] {
        match self {
            Field::AutonomousSystemNumber => &["asn"],
            Field::AutonomousSystemOrganization => &["as_org"],
            Field::CityName => &["city_name"],
            Field::CountryName => &["country_name"],
            Field::ContinentCode => &["continent_code"],
            Field::ContinentName => &["continent_name"],
            Field::CountryCode2 => &["country_code2"],
            Field::CountryCode3 => &["country_code3"],
            Field::Domain => &["domain"],
            Field::Ip => &["ip"],
            Field::Isp => &["isp"],
            Field::PostalCode => &["postal_code"],
            Field::DmaCode => &["dma_code"],
            Field::RegionName => &["region_name"],
            Field::RegionCode => &["region_code"],
            Field::RegionIsoCode => &["region_iso_code"],
            Field::Timezone => &["timezone"],
            Field::Location => &["location"],
            Field::Latitude => &["latitude"],
            Field::Longitude => &["longitude"],
            Field::Organization => &["organization"],
            Field::Network => &["network"],
            Field::HostingProvider => &["hosting_provider"],
            Field::TorExitNode => &["tor_exit_node"],
            Field::AnonymousVpn => &["anonymous_vpn"],
            Field::Anonymous => &["anonymous"],
            Field::PublicProxy => &["public_proxy"],
            Field::ResidentialProxy => &["residential_proxy"],
        }
    }

    /// Where the field goes under the target in ECS mode; empty for `country_code3`, which has
    /// no ECS name and is skipped.
    pub(super) fn ecs_path(self) -> &'static [&'static str] {
        match self {
            Field::AutonomousSystemNumber => &["as", "number"],
            Field::AutonomousSystemOrganization => &["as", "organization", "name"],
            Field::CityName => &["geo", "city_name"],
            Field::CountryName => &["geo", "country_name"],
            Field::ContinentCode => &["geo", "continent_code"],
            Field::ContinentName => &["geo", "continent_name"],
            Field::CountryCode2 => &["geo", "country_iso_code"],
            Field::CountryCode3 => &[],
            Field::Domain => &["domain"],
            Field::Ip => &["ip"],
            Field::Isp => &["mmdb", "isp"],
            Field::PostalCode => &["geo", "postal_code"],
            Field::DmaCode => &["mmdb", "dma_code"],
            Field::RegionName => &["geo", "region_name"],
            Field::RegionCode => &["geo", "region_code"],
            Field::RegionIsoCode => &["geo", "region_iso_code"],
            Field::Timezone => &["geo", "timezone"],
            Field::Location => &["geo", "location"],
            Field::Latitude => &["geo", "location", "lat"],
            Field::Longitude => &["geo", "location", "lon"],
            Field::Organization => &["mmdb", "organization"],
            Field::Network => &["ip_traits", "network"],
            Field::HostingProvider => &["ip_traits", "hosting_provider"],
            Field::TorExitNode => &["ip_traits", "tor_exit_node"],
            Field::AnonymousVpn => &["ip_traits", "anonymous_vpn"],
            Field::Anonymous => &["ip_traits", "anonymous"],
            Field::PublicProxy => &["ip_traits", "public_proxy"],
            Field::ResidentialProxy => &["ip_traits", "residential_proxy"],
        }
    }
}

/// What a database holds, which decides the record layout and the default fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    City,
    Country,
    Domain,
    Asn,
    Isp,
    Enterprise,
    AnonymousIp,
    /// ip-location-db's flat city schema (the default DB-IP database).
    FlatCity,
    /// ip-location-db's flat country schema (`country_code` only).
    FlatCountry,
}

impl Kind {
    /// Logstash's `Database.fromDatabaseType`, plus the flat schemas.
    fn from_database_type(t: &str) -> Option<Kind> {
        Some(if t.contains("City") {
            Kind::City
        } else if t.contains("Country") {
            Kind::Country
        } else if t.contains("GeoIP2-Domain") {
            Kind::Domain
        } else if t.contains("GeoLite2-ASN") {
            Kind::Asn
        } else if t.contains("GeoIP2-ISP") {
            Kind::Isp
        } else if t.contains("Enterprise") {
            Kind::Enterprise
        } else if t.contains("GeoIP2-Anonymous-IP") {
            Kind::AnonymousIp
        } else if t.split(' ').next() == Some("city") {
            Kind::FlatCity
        } else if t.split(' ').next() == Some("country") {
            Kind::FlatCountry
        } else {
            return None;
        })
    }

    /// The fields added when the `fields` option is not given (Logstash's `Database` enum,
    /// with `region_code` in place of `region_iso_code` for a City database without ECS).
    pub(super) fn default_fields(self, ecs: bool) -> Vec<Field> {
        use Field::*;
        let mut fields = match self {
            Kind::City | Kind::FlatCity => vec![
                Ip,
                CityName,
                ContinentCode,
                CountryName,
                CountryCode2,
                CountryCode3,
                PostalCode,
                DmaCode,
                RegionName,
                if ecs { RegionIsoCode } else { RegionCode },
                Timezone,
                Location,
                Latitude,
                Longitude,
            ],
            Kind::Country | Kind::FlatCountry => vec![Ip, CountryCode2, CountryName, ContinentName],
            Kind::Domain => vec![Domain],
            Kind::Asn => vec![Ip, AutonomousSystemNumber, AutonomousSystemOrganization],
            Kind::Isp => vec![
                Ip,
                AutonomousSystemNumber,
                AutonomousSystemOrganization,
                Isp,
                Organization,
            ],
            Kind::AnonymousIp => vec![
                HostingProvider,
                TorExitNode,
                AnonymousVpn,
                Anonymous,
                PublicProxy,
                ResidentialProxy,
            ],
            Kind::Enterprise => vec![
                Ip,
                CountryCode2,
                CountryName,
                ContinentName,
                RegionIsoCode,
                RegionName,
                CityName,
                Location,
            ],
        };
        fields.sort();
        fields
    }
}

/// Why a lookup produced nothing.
#[derive(Debug)]
pub(super) enum LookupError {
    /// The database has no record for the address (private, reserved, unassigned).
    NotFound,
    /// The record could not be read: a damaged database, or an address family the file
    /// cannot hold.
    Database(MaxMindDbError),
}

impl From<MaxMindDbError> for LookupError {
    fn from(e: MaxMindDbError) -> Self {
        LookupError::Database(e)
    }
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupError::NotFound => f.write_str("address not found"),
            LookupError::Database(e) => write!(f, "{e}"),
        }
    }
}

enum Readers {
    One(Reader<Mmap>),
    /// IPv4 and IPv6 in separate files (the default DB-IP database).
    Split {
        v4: Reader<Mmap>,
        v6: Reader<Mmap>,
    },
}

/// An open database (one file, or an IPv4 and an IPv6 file of the same schema), shared by
/// every filter instance and worker that names the same files.
pub(super) struct Database {
    kind: Kind,
    readers: Readers,
    description: String,
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Database({}, {:?})", self.description, self.kind)
    }
}

/// Maps a database file into memory: its pages are read from the page cache as lookups touch
/// them, so a start reads nothing up front, and every process (and pipeline) that opens the
/// file shares one copy. As MaxMind's own readers do; a database is replaced by renaming a new
/// file over it (what `geoipupdate` and Logstash's database manager do), never by writing into
/// it.
fn open_reader(path: &Path) -> Result<Reader<Mmap>, String> {
    if path.is_dir() {
        return Err(format!(
            "the database provided was not found in the path {}: it is a directory",
            path.display()
        ));
    }
    // SAFETY: the mapping is only read; sluice never writes a database file, and a file that
    // is replaced by renaming (as database updates are) leaves this mapping on the old one.
    unsafe { Reader::open_mmap(path) }.map_err(|e| match e {
        MaxMindDbError::Io(io) => format!(
            "the database provided was not found in the path {}: {io}",
            path.display()
        ),
        MaxMindDbError::Mmap(io) => format!(
            "the database provided in the path {} cannot be mapped into memory: {io}",
            path.display()
        ),
        other => format!(
            "the database provided is invalid or corrupted ({}): {other}",
            path.display()
        ),
    })
}

fn kind_of(reader: &Reader<Mmap>, path: &Path) -> Result<Kind, String> {
    let t = &reader.metadata().database_type;
    Kind::from_database_type(t).ok_or_else(|| {
        format!(
            "the database {} has type {t:?}, which the geoip filter does not support \
             (supported: GeoLite2/GeoIP2 City, Country, ASN, ISP, Domain, Enterprise, Anonymous-IP, \
             and ip-location-db's city/country files)",
            path.display()
        )
    })
}

/// Databases already open in this process, by their files, so that several geoip filters (and
/// every worker) share one copy in memory.
fn open_databases() -> &'static Mutex<HashMap<Vec<PathBuf>, Weak<Database>>> {
    static OPEN: OnceLock<Mutex<HashMap<Vec<PathBuf>, Weak<Database>>>> = OnceLock::new();
    OPEN.get_or_init(Default::default)
}

fn shared(
    files: Vec<PathBuf>,
    open: impl FnOnce() -> Result<Database, String>,
) -> Result<Arc<Database>, String> {
    let key: Vec<PathBuf> = files
        .iter()
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .collect();
    let mut cache = open_databases()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(db) = cache.get(&key).and_then(Weak::upgrade) {
        return Ok(db);
    }
    let db = Arc::new(open()?);
    cache.retain(|_, w| w.strong_count() > 0);
    cache.insert(key, Arc::downgrade(&db));
    Ok(db)
}

impl Database {
    /// Opens one `.mmdb` file of any supported schema.
    pub(super) fn open(path: &Path) -> Result<Arc<Database>, String> {
        shared(vec![path.to_owned()], || {
            let reader = open_reader(path)?;
            let kind = kind_of(&reader, path)?;
            Ok(Database {
                kind,
                readers: Readers::One(reader),
                description: path.display().to_string(),
            })
        })
    }

    /// Opens an IPv4 file and an IPv6 file of the same schema as one database.
    pub(super) fn open_split(v4: &Path, v6: &Path) -> Result<Arc<Database>, String> {
        shared(vec![v4.to_owned(), v6.to_owned()], || {
            let r4 = open_reader(v4)?;
            let r6 = open_reader(v6)?;
            let kind = kind_of(&r4, v4)?;
            if kind_of(&r6, v6)? != kind {
                return Err(format!(
                    "{} and {} hold different kinds of data",
                    v4.display(),
                    v6.display()
                ));
            }
            Ok(Database {
                kind,
                readers: Readers::Split { v4: r4, v6: r6 },
                description: format!("{} + {}", v4.display(), v6.display()),
            })
        })
    }

    pub(super) fn kind(&self) -> Kind {
        self.kind
    }

    pub(super) fn description(&self) -> &str {
        &self.description
    }

    fn reader(&self, ip: IpAddr) -> &Reader<Mmap> {
        match (&self.readers, ip) {
            (Readers::One(r), _) => r,
            (Readers::Split { v4, .. }, IpAddr::V4(_)) => v4,
            (Readers::Split { v6, .. }, IpAddr::V6(_)) => v6,
        }
    }

    /// The wanted `fields` (in [`Field`] order) of the record for `ip`. An empty result is a
    /// failed lookup, as in Logstash (a City record without coordinates counts as empty).
    pub(super) fn lookup(
        &self,
        ip: IpAddr,
        fields: &[Field],
    ) -> Result<Vec<(Field, Value)>, LookupError> {
        let reader = self.reader(ip);
        if ip.is_ipv6() && reader.metadata().ip_version == 4 {
            // An IPv4-only file (one half of the default database given alone as `database`).
            return Err(LookupError::NotFound);
        }
        let result = reader.lookup(ip)?;
        if !result.has_data() {
            return Err(LookupError::NotFound);
        }
        let mut out = Vec::with_capacity(fields.len());
        let mut put = |f: Field, v: Option<Value>| {
            if let Some(v) = v {
                out.push((f, v));
            }
        };
        let text = |s: Option<&str>| s.map(Value::from);
        // Logstash's traits getters are booleans that default to false.
        let flag = |b: Option<bool>| Some(Value::Bool(b.unwrap_or(false)));
        let ip_text = || Some(Value::String(java_host_address(ip).into()));
        let network = || {
            result.network().ok().map(|n| {
                Value::String(format!("{}/{}", java_host_address(n.ip()), n.prefix()).into())
            })
        };
        match self.kind {
            Kind::City => {
                let Some(r) = result.decode::<geoip2::City>()? else {
                    return Err(LookupError::NotFound);
                };
                let loc = &r.location;
                if loc.latitude.is_none() && loc.longitude.is_none() {
                    return Ok(out);
                }
                let sub = r.subdivisions.last();
                for &f in fields {
                    put(
                        f,
                        match f {
                            Field::CityName => text(r.city.names.english),
                            Field::ContinentCode => text(r.continent.code),
                            Field::ContinentName => text(r.continent.names.english),
                            Field::CountryName => text(r.country.names.english),
                            Field::CountryCode2 | Field::CountryCode3 => text(r.country.iso_code),
                            Field::Ip => ip_text(),
                            Field::PostalCode => text(r.postal.code),
                            Field::DmaCode => loc.metro_code.map(|m| Value::Int(m.into())),
                            Field::RegionName => text(sub.and_then(|s| s.names.english)),
                            Field::RegionCode => text(sub.and_then(|s| s.iso_code)),
                            Field::RegionIsoCode => {
                                region_iso_code(r.country.iso_code, sub.and_then(|s| s.iso_code))
                            }
                            Field::Timezone => text(loc.time_zone),
                            Field::Location => location(loc.latitude, loc.longitude),
                            Field::Latitude => loc.latitude.map(Value::Float),
                            Field::Longitude => loc.longitude.map(Value::Float),
                            _ => None,
                        },
                    );
                }
            }
            Kind::Country => {
                let Some(r) = result.decode::<geoip2::Country>()? else {
                    return Err(LookupError::NotFound);
                };
                for &f in fields {
                    put(
                        f,
                        match f {
                            Field::Ip => ip_text(),
                            Field::CountryCode2 => text(r.country.iso_code),
                            Field::CountryName => text(r.country.names.english),
                            Field::ContinentName => text(r.continent.names.english),
                            _ => None,
                        },
                    );
                }
            }
            Kind::Asn => {
                let Some(r) = result.decode::<geoip2::Asn>()? else {
                    return Err(LookupError::NotFound);
                };
                for &f in fields {
                    put(
                        f,
                        match f {
                            Field::Ip => ip_text(),
                            Field::AutonomousSystemNumber => {
                                r.autonomous_system_number.map(|n| Value::Int(n.into()))
                            }
                            Field::AutonomousSystemOrganization => {
                                text(r.autonomous_system_organization)
                            }
                            Field::Network => network(),
                            _ => None,
                        },
                    );
                }
            }
            Kind::Isp => {
                let Some(r) = result.decode::<geoip2::Isp>()? else {
                    return Err(LookupError::NotFound);
                };
                for &f in fields {
                    put(
                        f,
                        match f {
                            Field::Ip => ip_text(),
                            Field::AutonomousSystemNumber => {
                                r.autonomous_system_number.map(|n| Value::Int(n.into()))
                            }
                            Field::AutonomousSystemOrganization => {
                                text(r.autonomous_system_organization)
                            }
                            Field::Isp => text(r.isp),
                            Field::Organization => text(r.organization),
                            _ => None,
                        },
                    );
                }
            }
            Kind::Domain => {
                let Some(r) = result.decode::<geoip2::Domain>()? else {
                    return Err(LookupError::NotFound);
                };
                for &f in fields {
                    if f == Field::Domain {
                        put(f, text(r.domain));
                    }
                }
            }
            Kind::Enterprise => {
                let Some(r) = result.decode::<geoip2::Enterprise>()? else {
                    return Err(LookupError::NotFound);
                };
                let loc = &r.location;
                let sub = r.subdivisions.last();
                let t = &r.traits;
                for &f in fields {
                    put(
                        f,
                        match f {
                            Field::Ip => ip_text(),
                            Field::CountryCode2 => text(r.country.iso_code),
                            Field::CountryName => text(r.country.names.english),
                            Field::ContinentName => text(r.continent.names.english),
                            Field::RegionIsoCode => {
                                region_iso_code(r.country.iso_code, sub.and_then(|s| s.iso_code))
                            }
                            Field::RegionName => text(sub.and_then(|s| s.names.english)),
                            Field::CityName => text(r.city.names.english),
                            Field::Timezone => text(loc.time_zone),
                            Field::Location => location(loc.latitude, loc.longitude),
                            Field::AutonomousSystemNumber => {
                                t.autonomous_system_number.map(|n| Value::Int(n.into()))
                            }
                            Field::AutonomousSystemOrganization => {
                                text(t.autonomous_system_organization)
                            }
                            Field::Network => network(),
                            Field::HostingProvider => flag(t.is_hosting_provider),
                            Field::TorExitNode => flag(t.is_tor_exit_node),
                            Field::AnonymousVpn => flag(t.is_anonymous_vpn),
                            Field::Anonymous => flag(t.is_anonymous),
                            Field::PublicProxy => flag(t.is_public_proxy),
                            Field::ResidentialProxy => flag(t.is_residential_proxy),
                            _ => None,
                        },
                    );
                }
            }
            Kind::AnonymousIp => {
                let Some(r) = result.decode::<geoip2::AnonymousIp>()? else {
                    return Err(LookupError::NotFound);
                };
                for &f in fields {
                    put(
                        f,
                        match f {
                            Field::Ip => ip_text(),
                            Field::HostingProvider => flag(r.is_hosting_provider),
                            Field::TorExitNode => flag(r.is_tor_exit_node),
                            Field::AnonymousVpn => flag(r.is_anonymous_vpn),
                            Field::Anonymous => flag(r.is_anonymous),
                            Field::PublicProxy => flag(r.is_public_proxy),
                            Field::ResidentialProxy => flag(r.is_residential_proxy),
                            _ => None,
                        },
                    );
                }
            }
            Kind::FlatCity | Kind::FlatCountry => {
                let Some(r) = result.decode::<FlatRecord>()? else {
                    return Err(LookupError::NotFound);
                };
                let (lat, lon) = (r.latitude.map(|c| c.0), r.longitude.map(|c| c.0));
                if self.kind == Kind::FlatCity && lat.is_none() && lon.is_none() {
                    return Ok(out);
                }
                let nonempty = |s: Option<&str>| s.filter(|s| !s.is_empty()).map(Value::from);
                let country = r.country_code.filter(|c| !c.is_empty());
                let known = country.and_then(|c| {
                    COUNTRIES
                        .binary_search_by(|(code, _, _)| code.cmp(&c))
                        .ok()
                        .map(|i| COUNTRIES[i])
                });
                for &f in fields {
                    put(
                        f,
                        match f {
                            Field::Ip => ip_text(),
                            Field::CountryCode2 | Field::CountryCode3 => text(country),
                            Field::CountryName => known.map(|(_, name, _)| Value::from(name)),
                            Field::ContinentCode => known.map(|(_, _, cont)| Value::from(cont)),
                            Field::ContinentName => known.and_then(|(_, _, cont)| {
                                CONTINENTS
                                    .iter()
                                    .find(|(code, _)| *code == cont)
                                    .map(|(_, name)| Value::from(*name))
                            }),
                            Field::RegionName => nonempty(r.state1),
                            Field::CityName => nonempty(r.city),
                            Field::PostalCode => nonempty(r.postcode),
                            Field::Timezone => nonempty(r.timezone),
                            Field::Location => location(lat, lon),
                            Field::Latitude => lat.map(Value::Float),
                            Field::Longitude => lon.map(Value::Float),
                            _ => None,
                        },
                    );
                }
            }
        }
        Ok(out)
    }
}

fn location(lat: Option<f64>, lon: Option<f64>) -> Option<Value> {
    let (lat, lon) = (lat?, lon?);
    let mut m = Map::new();
    m.insert("lat".into(), Value::Float(lat));
    m.insert("lon".into(), Value::Float(lon));
    Some(Value::Object(m))
}

fn region_iso_code(country: Option<&str>, subdivision: Option<&str>) -> Option<Value> {
    Some(Value::String(
        format!("{}-{}", country?, subdivision?).into(),
    ))
}

/// A record of ip-location-db's flat schema.
#[derive(Deserialize)]
struct FlatRecord<'a> {
    #[serde(borrow, default)]
    country_code: Option<&'a str>,
    #[serde(borrow, default)]
    state1: Option<&'a str>,
    #[serde(borrow, default)]
    city: Option<&'a str>,
    #[serde(borrow, default)]
    postcode: Option<&'a str>,
    #[serde(default)]
    latitude: Option<Coordinate>,
    #[serde(default)]
    longitude: Option<Coordinate>,
    #[serde(borrow, default)]
    timezone: Option<&'a str>,
}

/// A latitude or longitude. DB-IP stores them as 32-bit floats; widening one to `f64` gives
/// noise digits (37.422000885009766), so it is widened through its shortest decimal form
/// (37.422), which is what the data meant.
struct Coordinate(f64);

impl<'de> Deserialize<'de> for Coordinate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Coordinate;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a coordinate")
            }
            fn visit_f32<E: serde::de::Error>(self, v: f32) -> Result<Coordinate, E> {
                Ok(Coordinate(v.to_string().parse().unwrap_or(v as f64)))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Coordinate, E> {
                Ok(Coordinate(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Coordinate, E> {
                Ok(Coordinate(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Coordinate, E> {
                Ok(Coordinate(v as f64))
            }
        }
        d.deserialize_any(V)
    }
}

/// An address as Java's `InetAddress.getHostAddress` writes it, which is what Logstash puts in
/// the `ip` field: IPv6 as eight lowercase hex groups without `::` compression
/// (`2607:f0d0:1002:51:0:0:0:4`).
pub(super) fn java_host_address(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            format!(
                "{:x}:{:x}:{:x}:{:x}:{:x}:{:x}:{:x}:{:x}",
                s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
            )
        }
    }
}

/// Parses an address as the lookup sees it: an IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) is
/// the IPv4 address, as Java's `InetAddress.getByName` makes it. Host names are not resolved.
pub(super) fn parse_ip(text: &str) -> Option<IpAddr> {
    let text = text.trim();
    let text = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    match text.parse::<IpAddr>().ok()? {
        IpAddr::V6(v6) => Some(match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        }),
        v4 => Some(v4),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn host_addresses_are_written_as_java_does() {
        assert_eq!(
            java_host_address("2607:f0d0:1002:51::4".parse().unwrap()),
            "2607:f0d0:1002:51:0:0:0:4"
        );
        assert_eq!(java_host_address("::1".parse().unwrap()), "0:0:0:0:0:0:0:1");
        assert_eq!(
            java_host_address(IpAddr::V4(Ipv4Addr::new(8, 8, 8, 8))),
            "8.8.8.8"
        );
        assert_eq!(
            parse_ip("::ffff:1.2.3.4"),
            Some(IpAddr::V4(Ipv4Addr::new(1, 2, 3, 4)))
        );
        assert_eq!(
            parse_ip("[::2]"),
            Some(IpAddr::V6(Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 2)))
        );
        assert_eq!(parse_ip("N/A"), None);
        assert_eq!(parse_ip("1.2.3.4,5.6.7.8"), None);
    }

    #[test]
    fn fields_parse_by_logstash_enum_name_in_any_case() {
        assert_eq!(Field::parse("city_name"), Some(Field::CityName));
        assert_eq!(
            Field::parse("AUTONOMOUS_SYSTEM_NUMBER"),
            Some(Field::AutonomousSystemNumber)
        );
        assert_eq!(Field::parse("asn"), None);
        assert!(Field::ALL.iter().enumerate().all(|(i, f)| *f as usize == i));
    }

    #[test]
    fn database_types_are_told_apart_as_logstash_does() {
        assert_eq!(Kind::from_database_type("GeoLite2-City"), Some(Kind::City));
        assert_eq!(Kind::from_database_type("DBIP-City-Lite"), Some(Kind::City));
        assert_eq!(
            Kind::from_database_type("GeoIP2-Country"),
            Some(Kind::Country)
        );
        assert_eq!(Kind::from_database_type("GeoLite2-ASN"), Some(Kind::Asn));
        assert_eq!(
            Kind::from_database_type("GeoIP2-Precision-Enterprise"),
            Some(Kind::Enterprise)
        );
        assert_eq!(Kind::from_database_type("city ipv4"), Some(Kind::FlatCity));
        assert_eq!(
            Kind::from_database_type("country ipv6"),
            Some(Kind::FlatCountry)
        );
        assert_eq!(Kind::from_database_type("GeoIP2-Connection-Type"), None);
    }

    #[test]
    fn country_table_is_sorted_for_binary_search() {
        assert!(COUNTRIES.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(COUNTRIES
            .iter()
            .all(|(_, _, c)| CONTINENTS.iter().any(|(code, _)| code == c)));
    }
}

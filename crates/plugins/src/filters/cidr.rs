//! `cidr`: matches when an address is inside one of the networks, as logstash-filter-cidr
//! does: it changes nothing itself, and `add_tag`/`add_field` and the like apply on a match.
//!
//! - Addresses: `address` (sprintf'd texts) or `address_field` (a field holding one address
//!   or an array of them). Text that is not an address is skipped.
//! - Networks: `network` (sprintf'd texts, each possibly a comma-separated list), or
//!   `network_path`, a file of networks split at `separator` (default a newline), read at
//!   load (an unreadable or empty file is a config error) and again every `refresh_interval`
//!   seconds (default 600; a failed reload keeps the last list). A network is
//!   `address/prefix`, `address/netmask` or one address; IPv4 or IPv6.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use sluice_event::{Event, FieldRef, Template, Value};
use sluice_pipeline::{ConfigError, Filter, Options};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Net {
    base: IpAddr,
    prefix: u8,
}

fn bits(ip: IpAddr) -> (u128, u8) {
    match ip {
        IpAddr::V4(a) => (u128::from(u32::from(a)), 32),
        IpAddr::V6(a) => (u128::from(a), 128),
    }
}

impl Net {
    /// Ruby's `IPAddr.new(text)`: an address, with `/prefix` or `/netmask`.
    fn parse(text: &str) -> Option<Net> {
        let text = text.trim();
        let (addr, mask) = match text.split_once('/') {
            Some((a, m)) => (a, Some(m)),
            None => (text, None),
        };
        let base: IpAddr = addr.parse().ok()?;
        let width = bits(base).1;
        let prefix = match mask {
            None => width,
            Some(m) => match m.parse::<u8>() {
                Ok(p) if p <= width => p,
                Ok(_) => return None,
                Err(_) => {
                    let mask: IpAddr = m.parse().ok()?;
                    let (b, w) = bits(mask);
                    if w != width {
                        return None;
                    }
                    let ones = b.count_ones() as u8;
                    // A netmask is ones then zeros.
                    if ones > 0 && b.trailing_zeros() as u8 != w - ones {
                        return None;
                    }
                    ones
                }
            },
        };
        Some(Net { base, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        let (net, width) = bits(self.base);
        let (addr, w) = bits(ip);
        if w != width {
            return false;
        }
        let shift = u32::from(width - self.prefix);
        shift >= 128 || (net >> shift) == (addr >> shift)
    }
}

#[derive(Clone)]
enum Networks {
    Fixed(Vec<Net>),
    Templates(Vec<Template>),
    File {
        path: PathBuf,
        separator: String,
        every: Duration,
        next: Instant,
        nets: Vec<Net>,
    },
}

#[derive(Clone)]
pub struct Cidr {
    address: Vec<Template>,
    address_field: Option<FieldRef>,
    networks: Networks,
}

fn read_networks(path: &PathBuf, separator: &str) -> Result<Vec<Net>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let items: Vec<&str> = text.split(separator).collect();
    if items.is_empty() || text.is_empty() {
        return Err("the file holds no network".to_owned());
    }
    Ok(items.iter().filter_map(|n| Net::parse(n)).collect())
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    let address = opts.string_list("address")?.unwrap_or_default();
    let address_field = opts.string("address_field")?;
    if address_field.is_some() && !address.is_empty() {
        return Err(opts.error(
            "address_field",
            "The configuration options 'address' and 'address_field' are mutually exclusive",
        ));
    }
    let address_field = match address_field {
        Some(f) => {
            Some(FieldRef::parse(&f).map_err(|e| opts.error("address_field", e.to_string()))?)
        }
        None => None,
    };
    let network = opts.string_list("network")?.unwrap_or_default();
    let path = opts.string("network_path")?;
    let every = opts.float("refresh_interval")?.unwrap_or(600.0);
    let separator = opts.string_or("separator", "\n")?;
    let networks = match path {
        Some(_) if !network.is_empty() => {
            return Err(opts.error(
                "network_path",
                "The configuration options 'network' and 'network_path' are mutually exclusive",
            ))
        }
        Some(p) => {
            let path = PathBuf::from(&p);
            let nets = read_networks(&path, &separator).map_err(|e| {
                opts.error(
                    "network_path",
                    format!("The file containing the network list is invalid, please check the separator character or permissions for the file ({p}: {e})"),
                )
            })?;
            let every = Duration::from_secs_f64(every.max(0.0));
            Networks::File {
                path,
                separator,
                every,
                next: Instant::now() + every,
                nets,
            }
        }
        None => {
            let templates: Vec<Template> = network.iter().map(|n| Template::parse(n)).collect();
            if templates.iter().all(Template::is_constant) {
                let mut nets = Vec::new();
                for n in &network {
                    for part in n.split(',') {
                        match Net::parse(part) {
                            Some(net) => nets.push(net),
                            None => {
                                tracing::warn!(network = %part, "cidr: invalid IP network, skipping")
                            }
                        }
                    }
                }
                Networks::Fixed(nets)
            } else {
                Networks::Templates(templates)
            }
        }
    };
    Ok(Box::new(Cidr {
        address: address.iter().map(|a| Template::parse(a)).collect(),
        address_field,
        networks,
    }))
}

impl Filter for Cidr {
    fn filter(&mut self, event: &mut Event, _emit: &mut Vec<Event>) -> bool {
        let texts: Vec<String> = match &self.address_field {
            Some(f) => match event.get(f) {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items.iter().map(Value::to_display_string).collect(),
                Some(v) => vec![v.to_display_string()],
            },
            None => self.address.iter().map(|t| t.render(event)).collect(),
        };
        let addresses: Vec<IpAddr> = texts
            .iter()
            .filter_map(|t| Net::parse(t).map(|n| n.base))
            .collect();
        if addresses.is_empty() {
            return false;
        }
        let dynamic;
        let nets: &[Net] = match &mut self.networks {
            Networks::Fixed(n) => n,
            Networks::Templates(templates) => {
                dynamic = templates
                    .iter()
                    .flat_map(|t| {
                        t.render(event)
                            .split(',')
                            .filter_map(Net::parse)
                            .collect::<Vec<_>>()
                    })
                    .collect::<Vec<_>>();
                &dynamic
            }
            Networks::File {
                path,
                separator,
                every,
                next,
                nets,
            } => {
                if Instant::now() >= *next {
                    match read_networks(path, separator) {
                        Ok(n) => *nets = n,
                        Err(e) => {
                            tracing::error!(path = %path.display(), error = %e, "cidr: error while opening/parsing the network file; keeping the last list")
                        }
                    }
                    *next = Instant::now() + *every;
                }
                nets
            }
        };
        addresses
            .iter()
            .any(|a| nets.iter().any(|n| n.contains(*a)))
    }

    fn clone_box(&self) -> Box<dyn Filter> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::Net;

    #[test]
    fn networks_as_ipaddr_reads_them() {
        let n = Net::parse("192.168.0.0/24").unwrap();
        assert!(n.contains("192.168.0.30".parse().unwrap()));
        assert!(!n.contains("192.168.1.30".parse().unwrap()));
        let m = Net::parse("10.0.0.0/255.0.0.0").unwrap();
        assert_eq!(m.prefix, 8);
        assert!(m.contains("10.9.8.7".parse().unwrap()));
        assert!(Net::parse("10.0.0.0/255.0.255.0").is_none());
        let one = Net::parse("1.2.3.4").unwrap();
        assert!(
            one.contains("1.2.3.4".parse().unwrap()) && !one.contains("1.2.3.5".parse().unwrap())
        );
        let v6 = Net::parse("2001:db8::/32").unwrap();
        assert!(v6.contains("2001:db8:1::1".parse().unwrap()));
        assert!(!v6.contains("10.0.0.1".parse().unwrap()));
        assert!(Net::parse("0.0.0.0/0")
            .unwrap()
            .contains("8.8.8.8".parse().unwrap()));
        assert!(Net::parse("300.1.1.1").is_none());
    }
}

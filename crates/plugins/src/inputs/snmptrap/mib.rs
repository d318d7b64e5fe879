//! OIDs as names, as Logstash's snmp integration maps them: a trie of the OIDs the MIBs name,
//! and the three `oid_mapping_format`s.
//!
//! The built-in names (`mib.tsv`) are those of SNMPv2-SMI, SNMPv2-MIB, IF-MIB and the roots
//! of IP-, TCP- and UDP-MIB (ruby-snmp's default MIBs); with `use_provided_mibs` also
//! `sysUpTimeInstance` (1.3.6.1.2.1.1.3.0), which Logstash's bundled IETF MIBs name. More come
//! from `mib_paths`: ruby-snmp's YAML files (`name: dotted.oid` per line). An OID past the known
//! names keeps its numbers (`iso.org.dod.internet.private.enterprises.8072.3.2.10`).

use std::collections::HashMap;

/// How field names are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Every arc by its name where known, else its number.
    Default,
    /// `MODULE::name` of the deepest known node, then the remaining numbers.
    RubySnmp,
    /// The numbers.
    Dotted,
}

#[derive(Default, Clone)]
struct Node {
    /// (name, module)
    data: Option<(String, String)>,
    children: HashMap<u32, Node>,
}

#[derive(Clone)]
pub struct Mib {
    root: Node,
    pub format: Format,
    pub root_skip: usize,
    pub path_length: usize,
}

impl Mib {
    pub fn new(provided: bool, format: Format) -> Mib {
        let mut m = Mib {
            root: Node::default(),
            format,
            root_skip: 0,
            path_length: 0,
        };
        for line in include_str!("mib.tsv").lines() {
            let mut p = line.split('\t');
            if let (Some(oid), Some(name), Some(module)) = (p.next(), p.next(), p.next()) {
                m.add(&parse(oid).expect("a valid built-in OID"), name, module);
            }
        }
        if provided {
            m.add(
                &[1, 3, 6, 1, 2, 1, 1, 3, 0],
                "sysUpTimeInstance",
                "DISMAN-EVENT-MIB",
            );
        }
        m
    }

    /// Names the OID (a later name for the same OID replaces an earlier one).
    pub fn add(&mut self, oid: &[u32], name: &str, module: &str) {
        let mut n = &mut self.root;
        for arc in oid {
            n = n.children.entry(*arc).or_default();
        }
        n.data = Some((name.to_owned(), module.to_owned()));
    }

    /// Reads a ruby-snmp YAML MIB (`name: 1.3.6.1...` lines); the module is the file's name.
    pub fn add_yaml(&mut self, path: &std::path::Path) -> Result<usize, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let module = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut n = 0;
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line == "---" {
                continue;
            }
            let Some((name, oid)) = line.split_once(':') else {
                continue;
            };
            let oid = oid.trim().trim_matches(|c| c == '"' || c == '\'');
            match parse(oid) {
                Some(o) => {
                    self.add(
                        &o,
                        name.trim().trim_matches(|c| c == '"' || c == '\''),
                        &module,
                    );
                    n += 1;
                }
                None => {
                    tracing::warn!(path = %path.display(), "snmptrap input: {oid:?} is not an OID; skipped")
                }
            }
        }
        Ok(n)
    }

    /// The field name of an OID.
    pub fn name(&self, oid: &[u32]) -> String {
        let dotted = || oid.iter().map(u32::to_string).collect::<Vec<_>>().join(".");
        match self.format {
            Format::Dotted => dotted(),
            Format::Default => {
                let mut parts: Vec<String> = Vec::with_capacity(oid.len());
                let mut n = Some(&self.root);
                for arc in oid {
                    n = n.and_then(|node| node.children.get(arc));
                    match n.and_then(|node| node.data.as_ref()) {
                        Some((name, _)) => parts.push(name.clone()),
                        None => parts.push(arc.to_string()),
                    }
                }
                let parts = if self.root_skip > 0 {
                    parts.get(self.root_skip..).unwrap_or(&[]).to_vec()
                } else if self.path_length > 0 && self.path_length < parts.len() {
                    parts[parts.len() - self.path_length..].to_vec()
                } else {
                    parts
                };
                parts.join(".")
            }
            Format::RubySnmp => {
                let mut n = &self.root;
                let mut depth = 0;
                for arc in oid {
                    match n.children.get(arc) {
                        Some(c) => {
                            n = c;
                            depth += 1;
                        }
                        None => break,
                    }
                }
                let Some((name, module)) = n.data.as_ref().filter(|_| depth > 0) else {
                    return dotted();
                };
                let mut s = if module.is_empty() {
                    name.clone()
                } else {
                    format!("{module}::{name}")
                };
                for arc in &oid[depth..] {
                    s.push('.');
                    s.push_str(&arc.to_string());
                }
                s
            }
        }
    }
}

/// `1.3.6...` as arcs.
pub fn parse(text: &str) -> Option<Vec<u32>> {
    let t = text.trim().trim_start_matches('.');
    if t.is_empty() {
        return None;
    }
    t.split('.').map(|a| a.parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(m: &Mib, oid: &str) -> String {
        m.name(&parse(oid).unwrap())
    }

    #[test]
    fn names_as_logstash_maps_them() {
        let m = Mib::new(true, Format::Default);
        assert_eq!(
            name(&m, "1.3.6.1.2.1.1.1.0"),
            "iso.org.dod.internet.mgmt.mib-2.system.sysDescr.0"
        );
        assert_eq!(
            name(&m, "1.3.6.1.4.1.8072.3.2.10"),
            "iso.org.dod.internet.private.enterprises.8072.3.2.10"
        );
        assert_eq!(name(&m, "1.2.3"), "iso.2.3");
        assert_eq!(name(&m, "2.5.4"), "2.5.4");
        assert_eq!(name(&m, "0.0"), "0.zeroDotZero");
        assert_eq!(
            name(&m, "1.3.6.1.6.3.1.1.4.1.0"),
            "iso.org.dod.internet.snmpV2.snmpModules.snmpMIB.snmpMIBObjects.snmpTrap.snmpTrapOID.0"
        );
        assert_eq!(
            name(&m, "1.3.6.1.2.1.31.1.1.1.1.3"),
            "iso.org.dod.internet.mgmt.mib-2.ifMIB.ifMIBObjects.ifXTable.ifXEntry.ifName.3"
        );
        assert_eq!(
            name(&m, "1.3.6.1.2.1.1.3.0"),
            "iso.org.dod.internet.mgmt.mib-2.system.sysUpTime.sysUpTimeInstance"
        );
        let defaults = Mib::new(false, Format::Default);
        assert_eq!(
            name(&defaults, "1.3.6.1.2.1.1.3.0"),
            "iso.org.dod.internet.mgmt.mib-2.system.sysUpTime.0"
        );
        let mut skip = Mib::new(true, Format::Default);
        skip.root_skip = 5;
        assert_eq!(name(&skip, "1.3.6.1.2.1.1.1.0"), "mib-2.system.sysDescr.0");
        skip.root_skip = 100;
        assert_eq!(name(&skip, "1.3.6.1.2.1.1.1.0"), "");
        let mut last = Mib::new(true, Format::Default);
        last.path_length = 2;
        assert_eq!(name(&last, "1.3.6.1.2.1.1.1.0"), "sysDescr.0");
        let ruby = Mib::new(false, Format::RubySnmp);
        assert_eq!(name(&ruby, "1.3.6.1.2.1.1.1.0"), "SNMPv2-MIB::sysDescr.0");
        assert_eq!(name(&ruby, "1.3"), "SNMPv2-SMI::org");
        assert_eq!(name(&ruby, "1.3.6.1.2.1.2.1"), "IF-MIB::ifNumber");
        assert_eq!(name(&ruby, "1.3.6.1.2.1.60"), "SNMPv2-SMI::mib-2.60");
        assert_eq!(name(&ruby, "1.3.6.1.6.3.1.1.5.3"), "IF-MIB::linkDown");
        assert_eq!(
            name(&Mib::new(true, Format::Dotted), "1.3.6.1.2.1.1.1.0"),
            "1.3.6.1.2.1.1.1.0"
        );
    }
}

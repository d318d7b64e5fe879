//! SNMPv3's User-based Security Model (RFC 3414), for both SNMP inputs: one user, as Logstash's
//! SNMP integration takes it (`security_name`, `auth_protocol`/`auth_pass`, `priv_protocol`/
//! `priv_pass`, `security_level` as the least level accepted).
//!
//! A passphrase becomes a key once (`Ku`: the hash of a megabyte of the passphrase repeated);
//! each engine the user talks with gets keys localized to its engine ID (`H(Ku ‖ engineID ‖
//! Ku)`), made on first use and kept (at most [`ENGINES`] engines). An incoming message
//! ([`ber::V3`]) is opened by [`User::open`]: user and level checked, its HMAC verified over
//! the datagram with the MAC field zeroed (HMAC-MD5-96, HMAC-SHA-96, RFC 7860's SHA-2 MACs),
//! its ScopedPDU decrypted (DES-CBC, RFC 3414; AES-CFB128, RFC 3826; AES-192/256 with the
//! Blumenthal key extension that net-snmp and SNMP4J use). [`User::seal`] is the way back:
//! encrypt, then sign the finished message in place. Time windows are the callers' business
//! (the trap receiver keeps a [`TimeTable`] of senders; the poller follows its agents' clocks).

use std::collections::HashMap;
use std::time::Instant;

use aes::cipher::generic_array::GenericArray;
use aes::cipher::{AsyncStreamCipher, BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use hmac::{Hmac, Mac};
use sha2::Digest;
use sluice_pipeline::{ConfigError, Options};

use super::ber::{self, V3};

/// How many engines' localized keys (and clocks) are kept; past it the table starts over.
pub const ENGINES: usize = 4096;

/// The authentication protocols (`auth_protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    Md5,
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

/// Runs `$body` with `$h` the hash type of `$auth`.
macro_rules! with_hash {
    ($auth:expr, $h:ident => $body:expr) => {
        match $auth {
            Auth::Md5 => {
                type $h = md5::Md5;
                $body
            }
            Auth::Sha1 => {
                type $h = sha1::Sha1;
                $body
            }
            Auth::Sha224 => {
                type $h = sha2::Sha224;
                $body
            }
            Auth::Sha256 => {
                type $h = sha2::Sha256;
                $body
            }
            Auth::Sha384 => {
                type $h = sha2::Sha384;
                $body
            }
            Auth::Sha512 => {
                type $h = sha2::Sha512;
                $body
            }
        }
    };
}

impl Auth {
    /// As Logstash names them (`sha2` is HMAC-SHA-256, as there).
    pub fn parse(name: &str) -> Option<Auth> {
        Some(match name {
            "md5" => Auth::Md5,
            "sha" => Auth::Sha1,
            "hmac128sha224" => Auth::Sha224,
            "sha2" | "hmac192sha256" => Auth::Sha256,
            "hmac256sha384" => Auth::Sha384,
            "hmac384sha512" => Auth::Sha512,
            _ => return None,
        })
    }

    /// The length of msgAuthenticationParameters: the MAC, truncated.
    pub fn mac_len(self) -> usize {
        match self {
            Auth::Md5 | Auth::Sha1 => 12,
            Auth::Sha224 => 16,
            Auth::Sha256 => 24,
            Auth::Sha384 => 32,
            Auth::Sha512 => 48,
        }
    }

    fn hash(self, parts: &[&[u8]]) -> Vec<u8> {
        with_hash!(self, H => {
            let mut d = H::new();
            for p in parts {
                d.update(p);
            }
            d.finalize().to_vec()
        })
    }

    /// `Ku`: the hash of 1,048,576 bytes of the passphrase repeated (RFC 3414 A.2).
    pub fn password_to_key(self, pass: &[u8]) -> Vec<u8> {
        assert!(
            !pass.is_empty(),
            "passphrases are checked to be 8 bytes or more"
        );
        with_hash!(self, H => {
            let mut d = H::new();
            let mut block = [0u8; 64];
            let mut at = 0;
            for _ in 0..(1 << 20) / 64 {
                for b in block.iter_mut() {
                    *b = pass[at];
                    at = (at + 1) % pass.len();
                }
                d.update(block);
            }
            d.finalize().to_vec()
        })
    }

    /// A key localized to an engine: `H(Ku ‖ engineID ‖ Ku)`.
    pub fn localize(self, ku: &[u8], engine: &[u8]) -> Vec<u8> {
        self.hash(&[ku, engine, ku])
    }

    /// The MAC of `msg` under the localized key, truncated to [`Auth::mac_len`].
    pub fn mac(self, key: &[u8], msg: &[u8]) -> Vec<u8> {
        let mut full = with_hash!(self, H => {
            let mut m = <Hmac<H> as Mac>::new_from_slice(key).expect("HMAC takes keys of any length");
            m.update(msg);
            m.finalize().into_bytes().to_vec()
        });
        full.truncate(self.mac_len());
        full
    }
}

/// The privacy protocols (`priv_protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privacy {
    Des,
    Aes128,
    Aes192,
    Aes256,
}

impl Privacy {
    /// As Logstash names them; `3des` is known there and refused here.
    pub fn parse(name: &str) -> Result<Privacy, String> {
        Ok(match name {
            "des" => Privacy::Des,
            "aes" | "aes128" => Privacy::Aes128,
            "aes192" => Privacy::Aes192,
            "aes256" => Privacy::Aes256,
            "3des" | "aes256with3desKey" => {
                return Err(format!(
                    "{name:?} is not supported yet (des, aes, aes128, aes192 and aes256 are)"
                ))
            }
            _ => {
                return Err(format!(
                    "{name:?} is not a privacy protocol (des, 3des, aes, aes128, aes192, aes256)"
                ))
            }
        })
    }

    /// Key bytes needed: DES's key and pre-IV, or the AES key.
    fn key_len(self) -> usize {
        match self {
            Privacy::Des | Privacy::Aes128 => 16,
            Privacy::Aes192 => 24,
            Privacy::Aes256 => 32,
        }
    }

    /// The localized privacy key, extended (Blumenthal: the hash of the key so far appended)
    /// when the auth hash is shorter than the cipher's key.
    fn localize(self, auth: Auth, ku: &[u8], engine: &[u8]) -> Vec<u8> {
        let mut k = auth.localize(ku, engine);
        while k.len() < self.key_len() {
            let more = auth.hash(&[&k]);
            k.extend(more);
        }
        k.truncate(self.key_len());
        k
    }

    /// Encrypts a ScopedPDU; the ciphertext and msgPrivacyParameters (the salt).
    fn encrypt(
        self,
        key: &[u8],
        boots: u32,
        time: u32,
        salt: u64,
        plain: &[u8],
    ) -> (Vec<u8>, [u8; 8]) {
        let mut buf = plain.to_vec();
        match self {
            Privacy::Des => {
                // The salt: the engine's boots and a counter; padded to whole blocks.
                let mut s = [0u8; 8];
                s[..4].copy_from_slice(&boots.to_be_bytes());
                s[4..].copy_from_slice(&(salt as u32).to_be_bytes());
                let iv: Vec<u8> = key[8..16].iter().zip(s).map(|(a, b)| a ^ b).collect();
                buf.resize(plain.len().div_ceil(8) * 8, 0);
                let mut enc = cbc::Encryptor::<des::Des>::new_from_slices(&key[..8], &iv)
                    .expect("8-byte key and IV");
                for block in buf.chunks_exact_mut(8) {
                    enc.encrypt_block_mut(GenericArray::from_mut_slice(block));
                }
                (buf, s)
            }
            aes => {
                let s = salt.to_be_bytes();
                let iv = aes_iv(boots, time, &s);
                match aes {
                    Privacy::Aes128 => {
                        cfb_mode::Encryptor::<aes::Aes128>::new_from_slices(key, &iv)
                            .expect("a 16-byte key")
                            .encrypt(&mut buf)
                    }
                    Privacy::Aes192 => {
                        cfb_mode::Encryptor::<aes::Aes192>::new_from_slices(key, &iv)
                            .expect("a 24-byte key")
                            .encrypt(&mut buf)
                    }
                    _ => cfb_mode::Encryptor::<aes::Aes256>::new_from_slices(key, &iv)
                        .expect("a 32-byte key")
                        .encrypt(&mut buf),
                }
                (buf, s)
            }
        }
    }

    fn decrypt(
        self,
        key: &[u8],
        boots: u32,
        time: u32,
        salt: &[u8],
        cipher: &[u8],
    ) -> Result<Vec<u8>, Refused> {
        if salt.len() != 8 {
            return Err(Refused::Decryption);
        }
        let mut buf = cipher.to_vec();
        match self {
            Privacy::Des => {
                if buf.is_empty() || !buf.len().is_multiple_of(8) {
                    return Err(Refused::Decryption);
                }
                let iv: Vec<u8> = key[8..16].iter().zip(salt).map(|(a, b)| a ^ b).collect();
                let mut dec = cbc::Decryptor::<des::Des>::new_from_slices(&key[..8], &iv)
                    .expect("8-byte key and IV");
                for block in buf.chunks_exact_mut(8) {
                    dec.decrypt_block_mut(GenericArray::from_mut_slice(block));
                }
            }
            aes => {
                let iv = aes_iv(boots, time, salt);
                match aes {
                    Privacy::Aes128 => {
                        cfb_mode::Decryptor::<aes::Aes128>::new_from_slices(key, &iv)
                            .expect("a 16-byte key")
                            .decrypt(&mut buf)
                    }
                    Privacy::Aes192 => {
                        cfb_mode::Decryptor::<aes::Aes192>::new_from_slices(key, &iv)
                            .expect("a 24-byte key")
                            .decrypt(&mut buf)
                    }
                    _ => cfb_mode::Decryptor::<aes::Aes256>::new_from_slices(key, &iv)
                        .expect("a 32-byte key")
                        .decrypt(&mut buf),
                }
            }
        }
        Ok(buf)
    }
}

/// AES's IV (RFC 3826 3.1.2.1): the authoritative engine's boots and time, and the salt.
fn aes_iv(boots: u32, time: u32, salt: &[u8]) -> [u8; 16] {
    let mut iv = [0u8; 16];
    iv[..4].copy_from_slice(&boots.to_be_bytes());
    iv[4..8].copy_from_slice(&time.to_be_bytes());
    iv[8..].copy_from_slice(salt);
    iv
}

/// A security level; they are ordered (`authPriv` is the most).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    NoAuthNoPriv,
    AuthNoPriv,
    AuthPriv,
}

impl Level {
    pub fn parse(name: &str) -> Option<Level> {
        Some(match name.to_ascii_lowercase().as_str() {
            "noauthnopriv" => Level::NoAuthNoPriv,
            "authnopriv" => Level::AuthNoPriv,
            "authpriv" => Level::AuthPriv,
            _ => return None,
        })
    }

    /// The level of msgFlags.
    pub fn of_flags(flags: u8) -> Level {
        match flags & 3 {
            0 => Level::NoAuthNoPriv,
            1 => Level::AuthNoPriv,
            _ => Level::AuthPriv,
        }
    }

    /// msgFlags' auth and priv bits.
    pub fn flags(self) -> u8 {
        match self {
            Level::NoAuthNoPriv => 0,
            Level::AuthNoPriv => 1,
            Level::AuthPriv => 3,
        }
    }
}

/// Why a message was not accepted: each is one of RFC 3414's usmStats counters, whose OID a
/// Report carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    UnsupportedLevel,
    NotInTimeWindow,
    UnknownUser,
    UnknownEngine,
    WrongDigest,
    Decryption,
}

impl Refused {
    /// `usmStats…` as its OID (`1.3.6.1.6.3.15.1.1.N.0`).
    pub fn oid(self) -> Vec<u32> {
        let n = match self {
            Refused::UnsupportedLevel => 1,
            Refused::NotInTimeWindow => 2,
            Refused::UnknownUser => 3,
            Refused::UnknownEngine => 4,
            Refused::WrongDigest => 5,
            Refused::Decryption => 6,
        };
        vec![1, 3, 6, 1, 6, 3, 15, 1, 1, n, 0]
    }

    /// The counter a Report's binding names, read back.
    pub fn from_oid(oid: &[u32]) -> Option<Refused> {
        match oid {
            [1, 3, 6, 1, 6, 3, 15, 1, 1, n, 0] => Some(match n {
                1 => Refused::UnsupportedLevel,
                2 => Refused::NotInTimeWindow,
                3 => Refused::UnknownUser,
                4 => Refused::UnknownEngine,
                5 => Refused::WrongDigest,
                6 => Refused::Decryption,
                _ => return None,
            }),
            _ => None,
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            Refused::UnsupportedLevel => "unsupported security level",
            Refused::NotInTimeWindow => "not in time window",
            Refused::UnknownUser => "unknown user name",
            Refused::UnknownEngine => "unknown engine ID",
            Refused::WrongDigest => "wrong digest (authentication failed)",
            Refused::Decryption => "decryption error",
        }
    }
}

/// Keys localized to one engine.
#[derive(Clone)]
struct Keys {
    auth: Vec<u8>,
    privacy: Vec<u8>,
}

/// The one SNMPv3 user an input is configured with.
pub struct User {
    pub name: Vec<u8>,
    /// The least level accepted (`security_level`); the poller's requests use it.
    pub level: Level,
    auth: Option<(Auth, Vec<u8>)>,
    privacy: Option<(Privacy, Vec<u8>)>,
    localized: HashMap<Vec<u8>, Keys>,
    salt: u64,
}

/// A message to seal: its header and security parameters.
pub struct Outgoing<'a> {
    pub msg_id: i64,
    pub reportable: bool,
    pub level: Level,
    pub engine_id: &'a [u8],
    pub boots: u32,
    pub time: u32,
    pub user: &'a [u8],
}

/// The largest message we take (msgMaxSize).
pub const MAX_SIZE: i64 = 65507;

impl User {
    pub fn new(
        name: &[u8],
        level: Level,
        auth: Option<(Auth, &[u8])>,
        privacy: Option<(Privacy, &[u8])>,
    ) -> User {
        // The privacy passphrase is turned into a key with the auth protocol's hash.
        let priv_hash = auth.map_or(Auth::Md5, |(a, _)| a);
        User {
            name: name.to_vec(),
            level,
            auth: auth.map(|(a, pass)| (a, a.password_to_key(pass))),
            privacy: privacy.map(|(p, pass)| (p, priv_hash.password_to_key(pass))),
            localized: HashMap::new(),
            salt: crate::retry::random_u64(),
        }
    }

    /// The highest level this user can speak.
    pub fn max_level(&self) -> Level {
        match (&self.auth, &self.privacy) {
            (Some(_), Some(_)) => Level::AuthPriv,
            (Some(_), None) => Level::AuthNoPriv,
            _ => Level::NoAuthNoPriv,
        }
    }

    fn keys(&mut self, engine: &[u8]) -> Keys {
        if let Some(k) = self.localized.get(engine) {
            return k.clone();
        }
        if self.localized.len() >= ENGINES {
            self.localized.clear();
        }
        let keys = Keys {
            auth: self
                .auth
                .as_ref()
                .map(|(a, ku)| a.localize(ku, engine))
                .unwrap_or_default(),
            privacy: match (&self.auth, &self.privacy) {
                (Some((a, _)), Some((p, ku))) => p.localize(*a, ku, engine),
                _ => Vec::new(),
            },
        };
        self.localized.insert(engine.to_vec(), keys.clone());
        keys
    }

    /// Checks an incoming message of this user (RFC 3414 3.2): its level (at least the
    /// configured one), its MAC, and decrypts it. Gives the ScopedPDU's bytes (a SEQUENCE,
    /// perhaps followed by padding).
    pub fn open(&mut self, m: &V3, datagram: &[u8]) -> Result<Vec<u8>, Refused> {
        if m.user != self.name.as_slice() {
            return Err(Refused::UnknownUser);
        }
        if Level::of_flags(m.flags) < self.level {
            return Err(Refused::UnsupportedLevel);
        }
        self.verify(m, datagram)
    }

    /// [`User::open`] at whatever level the message has (a poller takes an agent's Reports,
    /// which come below the level it asks with).
    pub fn verify(&mut self, m: &V3, datagram: &[u8]) -> Result<Vec<u8>, Refused> {
        let level = Level::of_flags(m.flags);
        if m.user != self.name.as_slice() {
            return Err(Refused::UnknownUser);
        }
        if level > self.max_level() {
            return Err(Refused::UnsupportedLevel);
        }
        if level == Level::NoAuthNoPriv {
            return Ok(m.data.to_vec());
        }
        let keys = self.keys(m.engine_id);
        let (auth, _) = self.auth.as_ref().expect("the level says auth is set");
        let given = &datagram[m.auth_params.clone()];
        if given.len() != auth.mac_len() {
            return Err(Refused::WrongDigest);
        }
        let mut zeroed = datagram.to_vec();
        zeroed[m.auth_params.clone()].fill(0);
        let mac = auth.mac(&keys.auth, &zeroed);
        // Constant time: every byte compared whatever the first difference.
        if mac.iter().zip(given).fold(0u8, |d, (a, b)| d | (a ^ b)) != 0 {
            return Err(Refused::WrongDigest);
        }
        if level < Level::AuthPriv {
            return Ok(m.data.to_vec());
        }
        let (p, _) = self
            .privacy
            .as_ref()
            .expect("the level says privacy is set");
        p.decrypt(
            &keys.privacy,
            m.boots as u32,
            m.time as u32,
            m.priv_params,
            m.data,
        )
    }

    /// The message around a ScopedPDU (`ber::scoped_pdu`), encrypted and signed at `o.level`
    /// with keys localized to `o.engine_id`.
    pub fn seal(&mut self, o: &Outgoing, scoped: Vec<u8>) -> Vec<u8> {
        let mut flags = o.level.flags();
        if o.reportable {
            flags |= 4;
        }
        if o.level == Level::NoAuthNoPriv {
            let params = ber::usm_params(o.engine_id, o.boots, o.time, o.user, 0, &[]);
            return ber::message_v3(o.msg_id, MAX_SIZE, flags, &params, scoped);
        }
        let keys = self.keys(o.engine_id);
        let auth = self
            .auth
            .as_ref()
            .expect("the level needs auth; the options checked it")
            .0;
        let (data, salt) = if o.level == Level::AuthPriv {
            let p = self
                .privacy
                .as_ref()
                .expect("the level needs privacy; the options checked it")
                .0;
            self.salt = self.salt.wrapping_add(1);
            let (cipher, salt) = p.encrypt(&keys.privacy, o.boots, o.time, self.salt, &scoped);
            (ber::octet_string(&cipher), salt.to_vec())
        } else {
            (scoped, Vec::new())
        };
        let params = ber::usm_params(o.engine_id, o.boots, o.time, o.user, auth.mac_len(), &salt);
        let mut msg = ber::message_v3(o.msg_id, MAX_SIZE, flags, &params, data);
        let at = ber::decode_v3(&msg)
            .expect("a message just written reads back")
            .auth_params;
        let mac = auth.mac(&keys.auth, &msg);
        msg[at].copy_from_slice(&mac);
        msg
    }
}

/// The SNMPv3 options both inputs take, checked as Logstash checks them when version 3 is in
/// use (`v3`); None when no `security_name` is set.
pub fn read_user(opts: &mut Options, v3: bool) -> Result<Option<User>, ConfigError> {
    let name = opts.string("security_name")?;
    let auth = opts.string("auth_protocol")?;
    let auth_pass = opts.string("auth_pass")?;
    let privacy = opts.string("priv_protocol")?;
    let priv_pass = opts.string("priv_pass")?;
    let level = opts.string("security_level")?;
    let auth = match auth {
        None => None,
        Some(a) => Some(Auth::parse(&a).ok_or_else(|| {
            opts.error(
                "auth_protocol",
                format!("{a:?} is not one of md5, sha, sha2, hmac128sha224, hmac192sha256, hmac256sha384, hmac384sha512"),
            )
        })?),
    };
    let privacy = match privacy {
        None => None,
        Some(p) => Some(Privacy::parse(&p).map_err(|e| opts.error("priv_protocol", e))?),
    };
    let level = match level {
        None => None,
        Some(l) => Some(Level::parse(&l).ok_or_else(|| {
            opts.error(
                "security_level",
                format!("{l:?} is not one of noAuthNoPriv, authNoPriv, authPriv"),
            )
        })?),
    };
    if !v3 {
        return Ok(None);
    }
    // Logstash's checks, its messages, all at once.
    let mut errors: Vec<String> = Vec::new();
    if name.is_none() {
        errors.push("`security_name` is required when SNMP v3 is enabled".into());
    }
    for (proto, set, pass, pass_name) in [
        ("auth_protocol", auth.is_some(), &auth_pass, "auth_pass"),
        ("priv_protocol", privacy.is_some(), &priv_pass, "priv_pass"),
    ] {
        match (set, pass) {
            (true, None) => errors.push(format!("Using `{proto}` requires the `{pass_name}`")),
            (false, Some(_)) => {
                errors.push(format!("`{proto}` is required when using `{pass_name}`"))
            }
            _ => {}
        }
        if pass.as_ref().is_some_and(|p| p.len() < 8) {
            errors.push(format!(
                "`{pass_name}` passphrase must be at least 8 bytes long"
            ));
        }
    }
    if auth.is_none() && matches!(level, Some(Level::AuthNoPriv | Level::AuthPriv)) {
        errors.push(format!(
            "Using `security_level` set to `{}` requires the configuration of `auth_protocol`",
            if level == Some(Level::AuthPriv) {
                "authPriv"
            } else {
                "authNoPriv"
            }
        ));
    }
    if privacy.is_none() && level == Some(Level::AuthPriv) {
        errors.push("Using `security_level` set to `authPriv` requires the configuration of `priv_protocol`".into());
    }
    if privacy.is_some() && auth.is_none() {
        errors.push("`priv_protocol` needs `auth_protocol` too: SNMPv3 has no privacy without authentication".into());
    }
    if !errors.is_empty() {
        return Err(opts.plugin_error(errors.join(", ")));
    }
    let name = name.expect("checked above");
    Ok(Some(User::new(
        name.as_bytes(),
        level.unwrap_or(Level::NoAuthNoPriv),
        auth.zip(auth_pass.as_deref().map(str::as_bytes)),
        privacy.zip(priv_pass.as_deref().map(str::as_bytes)),
    )))
}

/// What a non-authoritative receiver knows of other engines' clocks (RFC 3414 3.2.7 b), to
/// refuse authenticated messages that are replays from outside the time window.
#[derive(Default)]
pub struct TimeTable {
    engines: HashMap<Vec<u8>, (i64, i64, Instant)>,
}

impl TimeTable {
    /// Whether (`boots`, `time`) of `engine` is within the window; the table follows the
    /// engine's clock forward.
    pub fn check(&mut self, engine: &[u8], boots: i64, time: i64) -> bool {
        if boots >= i32::MAX as i64 {
            return false;
        }
        let now = Instant::now();
        match self.engines.get_mut(engine) {
            Some((b, t, at)) => {
                let expected = *t + at.elapsed().as_secs() as i64;
                if boots < *b || (boots == *b && time < expected - 150) {
                    return false;
                }
                if boots > *b || time > expected {
                    *b = boots;
                    *t = time;
                    *at = now;
                }
                true
            }
            None => {
                if self.engines.len() >= ENGINES {
                    self.engines.clear();
                }
                self.engines.insert(engine.to_vec(), (boots, time, now));
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// RFC 3414's A.3 vectors: "maplesyrup" for engine 00…02.
    #[test]
    fn keys_as_rfc_3414_derives_them() {
        let engine = [0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
        let ku = Auth::Md5.password_to_key(b"maplesyrup");
        assert_eq!(hex(&ku), "9faf3283884e92834ebc9847d8edd963");
        assert_eq!(
            hex(&Auth::Md5.localize(&ku, &engine)),
            "526f5eed9fcce26f8964c2930787d82b"
        );
        let ku = Auth::Sha1.password_to_key(b"maplesyrup");
        assert_eq!(hex(&ku), "9fb5cc0381497b3793528939ff788d5d79145211");
        assert_eq!(
            hex(&Auth::Sha1.localize(&ku, &engine)),
            "6695febc9288e36282235fc7151f128497b38f3f"
        );
    }

    /// A message sealed at each level opens again; a flipped byte anywhere in an
    /// authenticated message is refused.
    #[test]
    fn sealed_messages_open_and_tampering_is_refused() {
        let engine = b"\x80\x00\x1f\x88\x80engine-1";
        let pdu = ber::pdu(
            0xa7,
            42,
            (0, 0),
            &[(
                vec![1, 3, 6, 1, 2, 1, 1, 3, 0],
                ber::SnmpValue::TimeTicks(7),
            )],
        );
        let scoped = ber::scoped_pdu(engine, b"", pdu);
        for (auth, privacy) in [
            (Auth::Md5, Some(Privacy::Des)),
            (Auth::Sha1, Some(Privacy::Aes128)),
            (Auth::Sha1, Some(Privacy::Aes256)),
            (Auth::Sha224, Some(Privacy::Aes192)),
            (Auth::Sha512, None),
        ] {
            let level = if privacy.is_some() {
                Level::AuthPriv
            } else {
                Level::AuthNoPriv
            };
            let mut u = User::new(
                b"alice",
                level,
                Some((auth, b"authpass123")),
                privacy.map(|p| (p, b"privpass123".as_slice())),
            );
            let o = Outgoing {
                msg_id: 7,
                reportable: false,
                level,
                engine_id: engine,
                boots: 3,
                time: 1234,
                user: b"alice",
            };
            let msg = u.seal(&o, scoped.clone());
            let m = ber::decode_v3(&msg).unwrap();
            let plain = u.open(&m, &msg).unwrap();
            let s = ber::scoped(&plain).unwrap();
            assert_eq!(s.tag, 0xa7, "{auth:?} {privacy:?}");
            assert_eq!(s.context_engine_id, engine);
            for i in 0..msg.len() {
                let mut b = msg.clone();
                b[i] ^= 0x01;
                if let Ok(m) = ber::decode_v3(&b) {
                    let r = u.open(&m, &b);
                    assert!(
                        r.is_err(),
                        "{auth:?} {privacy:?}: byte {i} flipped and accepted"
                    );
                }
            }
            // Another user's message, and one below the configured level.
            let mut other = User::new(b"bob", Level::NoAuthNoPriv, None, None);
            let o2 = Outgoing {
                user: b"bob",
                level: Level::NoAuthNoPriv,
                ..o
            };
            let msg = other.seal(&o2, scoped.clone());
            assert_eq!(
                u.open(&ber::decode_v3(&msg).unwrap(), &msg),
                Err(Refused::UnknownUser)
            );
            let o3 = Outgoing {
                level: Level::NoAuthNoPriv,
                ..o
            };
            let msg = u.seal(&o3, scoped.clone());
            assert_eq!(
                u.open(&ber::decode_v3(&msg).unwrap(), &msg),
                Err(Refused::UnsupportedLevel)
            );
        }
    }

    #[test]
    fn the_time_window() {
        let mut t = TimeTable::default();
        assert!(t.check(b"e", 2, 1000));
        assert!(t.check(b"e", 2, 900));
        assert!(!t.check(b"e", 2, 800));
        assert!(!t.check(b"e", 1, 5000));
        assert!(t.check(b"e", 3, 1));
        assert!(!t.check(b"e", 2, 2000));
        assert!(!t.check(b"f", i32::MAX as i64, 0));
    }
}

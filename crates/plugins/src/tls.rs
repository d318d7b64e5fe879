//! The `ssl_*` options every network plugin shares, read once into [`Tls`]: the authorities to
//! trust, a client certificate and key, and whether to verify the server. Each plugin turns
//! them into its client library's configuration (rustls underneath everywhere).
//!
//! Options that cannot be honoured (encrypted keys, Java keystores, protocol and cipher lists:
//! rustls picks TLS 1.2/1.3 and its own suites) are configuration errors, not ignored.

use std::sync::Arc;

use sluice_pipeline::{ConfigError, Options};

/// A client certificate chain and its key, PEM.
pub type ClientPem = (Vec<u8>, Vec<u8>);

/// TLS settings (`ssl_enabled` and the `ssl_*` options).
#[derive(Clone, Default, Debug)]
pub struct Tls {
    /// PEM of the authorities to trust; the system's roots when absent.
    pub ca: Option<Vec<u8>>,
    /// PEM client certificate and key, for servers that check clients.
    pub client: Option<ClientPem>,
    /// `ssl_verification_mode => none` turns this off.
    pub verify: bool,
}

/// Which option names a plugin takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    /// `ssl` (the redis input's and older outputs' name) or `ssl_enabled`; any number of
    /// authority files.
    Redis,
    /// `ssl_enabled` only (`ssl`, `cacert`, `ssl_certificate_verification`, `truststore`,
    /// `keystore` are the obsolete names Logstash rejects); one authority file.
    Elasticsearch,
}

pub(crate) fn read_pem(opts: &Options, name: &str, path: &str) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|e| opts.error(name, format!("cannot read {path:?}: {e}")))
}

/// The client certificate and key (PEM), read from the paths the two options give; one
/// without the other is an error.
pub(crate) fn client_pair(
    opts: &Options,
    (cert_name, cert): (&str, Option<String>),
    (key_name, key): (&str, Option<String>),
) -> Result<Option<ClientPem>, ConfigError> {
    match (cert, key) {
        (Some(c), Some(k)) => Ok(Some((
            read_pem(opts, cert_name, &c)?,
            read_pem(opts, key_name, &k)?,
        ))),
        (Some(_), None) => Err(opts.error(cert_name, format!("requires {key_name} as well"))),
        (None, Some(_)) => Err(opts.error(key_name, format!("requires {cert_name} as well"))),
        (None, None) => Ok(None),
    }
}

/// Reads the TLS options; `None` when TLS is off. `enabled_by_default` is for plugins that
/// turn TLS on from elsewhere (an `https://` host).
pub fn read(
    opts: &mut Options,
    names: Names,
    enabled_by_default: bool,
) -> Result<Option<Tls>, ConfigError> {
    let plugin = opts.plugin_name().to_owned();
    let ssl_enabled = opts.boolean("ssl_enabled")?;
    let enabled = match names {
        Names::Redis => ssl_enabled.or(opts.boolean("ssl")?),
        Names::Elasticsearch => {
            opts.reject_obsolete(&[
                ("ssl", "ssl_enabled"),
                ("ssl_certificate_verification", "ssl_verification_mode"),
                ("cacert", "ssl_certificate_authorities"),
                ("truststore", "ssl_certificate_authorities (PEM)"),
                ("keystore", "ssl_certificate and ssl_key (PEM)"),
                ("truststore_password", "nothing (PEM files have none)"),
                ("keystore_password", "nothing (PEM files have none)"),
            ])?;
            ssl_enabled
        }
    }
    .unwrap_or(enabled_by_default);
    if let (Some(false), true) = (ssl_enabled, enabled_by_default) {
        return Err(opts.error("ssl_enabled", "is false, but a host is given as https://"));
    }
    let cas = opts.string_list("ssl_certificate_authorities")?;
    let cert = opts.string("ssl_certificate")?;
    let key = opts.string("ssl_key")?;
    let mode = opts.choice("ssl_verification_mode", &["full", "none"], "full")?;
    for unsupported in [
        "ssl_key_passphrase",
        "ssl_supported_protocols",
        "ssl_cipher_suites",
        "ssl_truststore_path",
        "ssl_truststore_type",
        "ssl_truststore_password",
        "ssl_keystore_path",
        "ssl_keystore_type",
        "ssl_keystore_password",
        "ca_trusted_fingerprint",
    ] {
        if opts.has(unsupported) {
            opts.take(unsupported);
            return Err(opts.error(
                unsupported,
                "is not supported (use unencrypted PEM files with ssl_certificate_authorities, ssl_certificate and ssl_key; rustls picks TLS 1.2/1.3 and its own cipher suites)",
            ));
        }
    }
    if names == Names::Elasticsearch && cas.as_ref().is_some_and(|c| c.len() > 1) {
        return Err(opts.error(
            "ssl_certificate_authorities",
            "takes one file (put several authorities in it)",
        ));
    }
    if !enabled {
        let given: Vec<&str> = [
            ("ssl_certificate_authorities", cas.is_some()),
            ("ssl_certificate", cert.is_some()),
            ("ssl_key", key.is_some()),
        ]
        .iter()
        .filter(|(_, g)| *g)
        .map(|(n, _)| *n)
        .collect();
        if !given.is_empty() {
            tracing::warn!(settings = ?given, "{plugin}: SSL settings are not used while SSL is off");
        }
        return Ok(None);
    }
    let client = client_pair(opts, ("ssl_certificate", cert), ("ssl_key", key))?;
    let ca = match cas {
        Some(paths) if !paths.is_empty() => {
            let mut pem = Vec::new();
            for p in &paths {
                pem.extend_from_slice(&read_pem(opts, "ssl_certificate_authorities", p)?);
                pem.push(b'\n');
            }
            Some(pem)
        }
        _ => None,
    };
    Ok(Some(Tls {
        ca,
        client,
        verify: mode == "full",
    }))
}

/// The `opensearch` output's TLS options, which keep the older names: `ssl`,
/// `ssl_certificate_verification`, `cacert`, `tls_certificate` and `tls_key`. An `https://`
/// host turns TLS on as the plugin does (`enabled_by_default`).
pub fn read_opensearch(
    opts: &mut Options,
    enabled_by_default: bool,
) -> Result<Option<Tls>, ConfigError> {
    for unsupported in [
        "truststore",
        "truststore_password",
        "keystore",
        "keystore_password",
    ] {
        if opts.has(unsupported) {
            opts.take(unsupported);
            return Err(opts.error(
                unsupported,
                "is not supported (Java keystores); use PEM files with cacert, tls_certificate and tls_key",
            ));
        }
    }
    let enabled = opts.boolean("ssl")?.unwrap_or(false) || enabled_by_default;
    let verify = opts.boolean_or("ssl_certificate_verification", true)?;
    let ca = opts.string("cacert")?;
    let cert = opts.string("tls_certificate")?;
    let key = opts.string("tls_key")?;
    if !enabled {
        return Ok(None);
    }
    let client = client_pair(opts, ("tls_certificate", cert), ("tls_key", key))?;
    let ca = match ca {
        Some(p) => Some(read_pem(opts, "cacert", &p)?),
        None => None,
    };
    Ok(Some(Tls { ca, client, verify }))
}

/// Chooses ring as rustls's process-wide provider (once; a choice made earlier stands).
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// `ssl_client_authentication` (and the deprecated `ssl_verify_mode` of the beats input):
/// whether a server asks clients for a certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    /// Asked for; checked against the authorities when given.
    Optional,
    /// Required, and checked against the authorities.
    Required,
}

/// The `ssl_*` options of a server (the beats, tcp and http inputs) as a rustls configuration:
/// `ssl_enabled`, `ssl_certificate` + `ssl_key` (unencrypted PEM), `ssl_certificate_authorities`
/// (PEM; which clients to trust), `ssl_client_authentication` (`none`, `optional`, `required`;
/// `required` when authorities are given without it, as in Logstash), `ssl_supported_protocols`
/// (`TLSv1.2`, `TLSv1.3`), `ssl_handshake_timeout` (milliseconds, default 10000). `None` when
/// TLS is off.
/// Every problem is a configuration error at the option; a plugin's obsolete names are its
/// own to reject first.
pub fn read_server(opts: &mut Options) -> Result<Option<ServerTls>, ConfigError> {
    read_server_default(opts, false)
}

/// [`read_server`] for a server whose TLS is on unless `ssl_enabled => false` (the `logstash`
/// input's).
pub fn read_server_default(
    opts: &mut Options,
    enabled_by_default: bool,
) -> Result<Option<ServerTls>, ConfigError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let plugin = opts.plugin_name().to_owned();
    let enabled = opts.boolean_or("ssl_enabled", enabled_by_default)?;
    let cert = opts.string("ssl_certificate")?;
    let key = opts.string("ssl_key")?;
    let cas = opts.string_list("ssl_certificate_authorities")?;
    let explicit_auth = opts.has("ssl_client_authentication");
    let mut auth = opts.choice(
        "ssl_client_authentication",
        &["none", "optional", "required"],
        "none",
    )?;
    let have_cas = cas.as_ref().is_some_and(|c| !c.is_empty());
    if have_cas && !explicit_auth {
        // As Logstash: authorities without a mode mean clients must present a certificate.
        auth = "required".to_owned();
    } else if have_cas && auth == "none" {
        return Err(opts.error(
            "ssl_client_authentication",
            "is none, but ssl_certificate_authorities are given (they only check clients): set optional or required, or remove them",
        ));
    }
    let protocols = opts.string_list("ssl_supported_protocols")?;
    let handshake_timeout = opts.int("ssl_handshake_timeout")?.unwrap_or(10_000);
    if handshake_timeout < 1 {
        return Err(opts.error("ssl_handshake_timeout", "must be at least 1 (milliseconds)"));
    }
    for unsupported in [
        "ssl_key_passphrase",
        "ssl_cipher_suites",
        "ssl_keystore_path",
        "ssl_keystore_type",
        "ssl_keystore_password",
        "ssl_truststore_path",
        "ssl_truststore_password",
    ] {
        if opts.has(unsupported) {
            opts.take(unsupported);
            return Err(opts.error(
                unsupported,
                "is not supported (use an unencrypted PEM ssl_key and PEM files; rustls picks its own cipher suites, ssl_supported_protocols picks TLSv1.2/TLSv1.3)",
            ));
        }
    }
    if !enabled {
        if cert.is_some() || key.is_some() || cas.is_some() {
            tracing::warn!("{plugin}: SSL settings are not used while ssl_enabled is false");
        }
        return Ok(None);
    }
    let (Some(cert), Some(key)) = (cert, key) else {
        return Err(opts.plugin_error(format!(
            "{plugin}: ssl_enabled => true needs ssl_certificate and ssl_key (PEM files)"
        )));
    };
    let cert_pem = read_pem(opts, "ssl_certificate", &cert)?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| opts.error("ssl_certificate", format!("{cert}: {e}")))?;
    if certs.is_empty() {
        return Err(opts.error("ssl_certificate", format!("{cert}: no CERTIFICATE in it")));
    }
    let key_pem = read_pem(opts, "ssl_key", &key)?;
    let private = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        opts.error(
            "ssl_key",
            format!("{key}: no usable private key ({e}); an encrypted key is not supported"),
        )
    })?;
    let mut versions: Vec<&'static rustls::SupportedProtocolVersion> = Vec::new();
    for p in protocols.unwrap_or_else(|| vec!["TLSv1.2".into(), "TLSv1.3".into()]) {
        match p.as_str() {
            "TLSv1.3" => versions.push(&rustls::version::TLS13),
            "TLSv1.2" => versions.push(&rustls::version::TLS12),
            other => {
                return Err(opts.error(
                    "ssl_supported_protocols",
                    format!("{other} is not supported (TLSv1.2 and TLSv1.3 are)"),
                ))
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| opts.error("ssl_supported_protocols", e.to_string()))?;
    let builder = if auth == "none" {
        builder.with_no_client_auth()
    } else {
        let paths = cas.unwrap_or_default();
        if paths.is_empty() {
            return Err(opts.error(
                "ssl_client_authentication",
                format!("`{auth}` needs ssl_certificate_authorities (the authorities clients' certificates are checked against)"),
            ));
        }
        let mut roots = rustls::RootCertStore::empty();
        for p in &paths {
            let pem = read_pem(opts, "ssl_certificate_authorities", p)?;
            for c in CertificateDer::pem_slice_iter(&pem) {
                let c =
                    c.map_err(|e| opts.error("ssl_certificate_authorities", format!("{p}: {e}")))?;
                roots
                    .add(c)
                    .map_err(|e| opts.error("ssl_certificate_authorities", format!("{p}: {e}")))?;
            }
        }
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
        let verifier = if auth == "optional" {
            verifier.allow_unauthenticated()
        } else {
            verifier
        }
        .build()
        .map_err(|e| opts.error("ssl_certificate_authorities", e.to_string()))?;
        builder.with_client_cert_verifier(verifier)
    };
    let config = builder
        .with_single_cert(certs, private)
        .map_err(|e| opts.error("ssl_certificate", e.to_string()))?;
    Ok(Some(ServerTls {
        config: Arc::new(config),
        handshake_timeout: std::time::Duration::from_millis(handshake_timeout as u64),
        client_auth: match auth.as_str() {
            "required" => ClientAuth::Required,
            "optional" => ClientAuth::Optional,
            _ => ClientAuth::None,
        },
    }))
}

/// A server's TLS: the rustls configuration, how long a handshake may take, and whether it asks
/// clients for certificates.
#[derive(Clone)]
pub struct ServerTls {
    pub config: Arc<rustls::ServerConfig>,
    /// `ssl_handshake_timeout`.
    pub handshake_timeout: std::time::Duration,
    pub client_auth: ClientAuth,
}

/// One DER element at the front of `b`: (tag, content, rest).
fn der(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = b.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |a, b| (a << 8) | *b as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// A certificate's subject in RFC 2253 form (`CN=client,O=Example`, the last element first),
/// from its DER; `None` when it cannot be read.
pub fn subject(cert: &[u8]) -> Option<String> {
    let (_, certificate, _) = der(cert)?;
    let (_, mut tbs, _) = der(certificate)?;
    // [0] version (optional), serial, signature, issuer, validity, subject.
    if tbs.first() == Some(&0xa0) {
        tbs = der(tbs)?.2;
    }
    for _ in 0..4 {
        tbs = der(tbs)?.2;
    }
    let (_, mut name, _) = der(tbs)?;
    let mut parts = Vec::new();
    while !name.is_empty() {
        let (_, mut set, rest) = der(name)?;
        name = rest;
        let mut rdn = Vec::new();
        while !set.is_empty() {
            let (_, attr, rest) = der(set)?;
            set = rest;
            let (_, oid, after) = der(attr)?;
            let (_, value, _) = der(after)?;
            let key = match oid {
                [0x55, 0x04, 0x03] => "CN".to_owned(),
                [0x55, 0x04, 0x06] => "C".to_owned(),
                [0x55, 0x04, 0x07] => "L".to_owned(),
                [0x55, 0x04, 0x08] => "ST".to_owned(),
                [0x55, 0x04, 0x0a] => "O".to_owned(),
                [0x55, 0x04, 0x0b] => "OU".to_owned(),
                [0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x19] => "DC".to_owned(),
                [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01] => "EMAILADDRESS".to_owned(),
                other => oid_text(other),
            };
            let text = String::from_utf8_lossy(value);
            let mut escaped = String::with_capacity(text.len());
            for (i, c) in text.chars().enumerate() {
                if matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
                    || (i == 0 && (c == '#' || c == ' '))
                {
                    escaped.push('\\');
                }
                escaped.push(c);
            }
            rdn.push(format!("{key}={escaped}"));
        }
        parts.push(rdn.join("+"));
    }
    parts.reverse();
    Some(parts.join(","))
}

/// An OID in dotted form.
fn oid_text(oid: &[u8]) -> String {
    let Some((&first, rest)) = oid.split_first() else {
        return String::new();
    };
    let mut out = format!("{}.{}", first / 40, first % 40);
    let mut v: u64 = 0;
    for b in rest {
        v = (v << 7) | (b & 0x7f) as u64;
        if b & 0x80 == 0 {
            out.push_str(&format!(".{v}"));
            v = 0;
        }
    }
    out
}

/// A rustls client configuration from [`Tls`] (a client of a plain TCP protocol: the tcp
/// input's client mode): the authorities given (else the system's), the client certificate
/// if any, and no server check at all with `ssl_verification_mode => none`.
pub fn client_config(tls: &Tls) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if tls.verify {
        let mut roots = rustls::RootCertStore::empty();
        match &tls.ca {
            Some(pem) => {
                for c in CertificateDer::pem_slice_iter(pem) {
                    roots
                        .add(c.map_err(|e| format!("ssl_certificate_authorities: {e}"))?)
                        .map_err(|e| format!("ssl_certificate_authorities: {e}"))?;
                }
            }
            None => {
                for c in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(c);
                }
            }
        }
        builder.with_root_certificates(roots)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
    };
    let config = match &tls.client {
        Some((cert, key)) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert)
                .collect::<Result<_, _>>()
                .map_err(|e| format!("ssl_certificate: {e}"))?;
            let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| format!("ssl_key: {e}"))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| format!("ssl_certificate: {e}"))?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// `ssl_verification_mode => none`: any server certificate is accepted (signatures are still
/// checked, so the session is still encrypted to whoever answered).
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

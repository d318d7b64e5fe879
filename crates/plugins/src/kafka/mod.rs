//! Kafka: the `kafka` input and output (Logstash's kafka integration), on librdkafka through
//! the `rdkafka` crate (the `kafka` Cargo feature, on by default).
//!
//! [`client_config`] turns the options both plugins share (brokers, client id, timeouts and
//! back-offs, socket buffers, TLS and SASL) into librdkafka settings. Logstash's names are
//! Java client properties; where librdkafka has the same setting the value passes through,
//! where it has none (JKS key stores, Kerberos, login callback classes) the option is refused
//! with the reason. [`input`] consumes in a group and commits offsets only once the events
//! are in sluice's queue; [`output`] acks a batch only once the broker confirmed every record.

mod fetch;
pub mod input;
pub mod output;

use rdkafka::ClientConfig;
use sluice_pipeline::{ConfigError, Options};

/// A number option written into `conf` under `key` (librdkafka's name), when set or defaulted.
fn number(
    opts: &mut Options,
    conf: &mut ClientConfig,
    name: &str,
    key: &str,
    default: Option<i64>,
) -> Result<(), ConfigError> {
    let value = match opts.float(name)? {
        Some(v) if v < 0.0 || v.fract() != 0.0 => {
            return Err(opts.error(name, "expected a whole number of 0 or more"))
        }
        Some(v) => Some(v as i64),
        None => default,
    };
    if let Some(v) = value {
        conf.set(key, v.to_string());
    }
    Ok(())
}

/// Settings both the input and the output take.
pub(crate) fn client_config(opts: &mut Options) -> Result<ClientConfig, ConfigError> {
    let mut conf = ClientConfig::new();
    let servers = opts.string_or("bootstrap_servers", "localhost:9092")?;
    conf.set("bootstrap.servers", servers);
    conf.set("client.id", opts.string_or("client_id", "logstash")?);
    let dns = opts.choice(
        "client_dns_lookup",
        &[
            "default",
            "use_all_dns_ips",
            "resolve_canonical_bootstrap_servers_only",
        ],
        "use_all_dns_ips",
    )?;
    conf.set(
        "client.dns.lookup",
        if dns == "default" {
            "use_all_dns_ips"
        } else {
            &dns
        },
    );
    number(
        opts,
        &mut conf,
        "reconnect_backoff_ms",
        "reconnect.backoff.ms",
        Some(50),
    )?;
    number(
        opts,
        &mut conf,
        "reconnect_backoff_max_ms",
        "reconnect.backoff.max.ms",
        Some(1000),
    )?;
    number(
        opts,
        &mut conf,
        "retry_backoff_ms",
        "retry.backoff.ms",
        Some(100),
    )?;
    number(
        opts,
        &mut conf,
        "receive_buffer_bytes",
        "socket.receive.buffer.bytes",
        Some(32_768),
    )?;
    number(
        opts,
        &mut conf,
        "send_buffer_bytes",
        "socket.send.buffer.bytes",
        Some(131_072),
    )?;
    number(
        opts,
        &mut conf,
        "connections_max_idle_ms",
        "connections.max.idle.ms",
        Some(540_000),
    )?;
    number(
        opts,
        &mut conf,
        "metadata_max_age_ms",
        "metadata.max.age.ms",
        Some(300_000),
    )?;
    number(
        opts,
        &mut conf,
        "request_timeout_ms",
        "socket.timeout.ms",
        Some(40_000),
    )?;
    security(opts, &mut conf)?;
    Ok(conf)
}

/// `security_protocol`, TLS and SASL.
fn security(opts: &mut Options, conf: &mut ClientConfig) -> Result<(), ConfigError> {
    let protocol = opts.choice(
        "security_protocol",
        &["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"],
        "PLAINTEXT",
    )?;
    conf.set("security.protocol", protocol.to_lowercase());
    for java_only in [
        "jaas_path",
        "kerberos_config",
        "sasl_kerberos_service_name",
        "sasl_client_callback_handler_class",
        "sasl_login_callback_handler_class",
        "sasl_oauthbearer_token_endpoint_url",
        "sasl_iam_jar_paths",
    ] {
        if opts.has(java_only) {
            return Err(opts.error(
                java_only,
                "is a setting of Kafka's Java client that librdkafka (sluice's Kafka client) has no equivalent for; use sasl_jaas_config with PLAIN or SCRAM",
            ));
        }
    }
    for name in [
        "sasl_login_connect_timeout_ms",
        "sasl_login_read_timeout_ms",
        "sasl_login_retry_backoff_ms",
        "sasl_login_retry_backoff_max_ms",
        "sasl_oauthbearer_scope_claim_name",
    ] {
        if opts.has(name) {
            return Err(opts.error(
                name,
                "configures Kafka's Java login modules, which librdkafka (sluice's Kafka client) does not have",
            ));
        }
    }
    let sasl = protocol.starts_with("SASL");
    let mechanism = opts.string_or("sasl_mechanism", "GSSAPI")?;
    let jaas = opts.string("sasl_jaas_config")?;
    if sasl {
        match mechanism.as_str() {
            "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512" => {}
            "GSSAPI" => {
                return Err(opts.error(
                    "sasl_mechanism",
                    "GSSAPI (Kerberos) is not built into sluice's Kafka client; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
                ))
            }
            other => {
                return Err(opts.error(
                    "sasl_mechanism",
                    format!("{other:?} is not supported; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"),
                ))
            }
        }
        conf.set("sasl.mechanism", &mechanism);
        let jaas = jaas.ok_or_else(|| {
            opts.error(
                "sasl_jaas_config",
                "SASL needs sasl_jaas_config with username and password (PlainLoginModule or ScramLoginModule)",
            )
        })?;
        let (user, password) = jaas_credentials(&jaas).ok_or_else(|| {
            opts.error(
                "sasl_jaas_config",
                "expected a login module line with username=\"...\" and password=\"...\"",
            )
        })?;
        conf.set("sasl.username", user);
        conf.set("sasl.password", password);
    }
    // TLS: PEM trust stores (a CA file) and PKCS12 key stores; JKS is the JVM's own format.
    if let Some(location) = opts.string("ssl_truststore_location")? {
        let kind = opts
            .string("ssl_truststore_type")?
            .unwrap_or_else(|| "JKS".into());
        if !kind.eq_ignore_ascii_case("PEM") {
            return Err(opts.error(
                "ssl_truststore_type",
                format!("a {kind} trust store cannot be read by librdkafka (sluice's Kafka client): give the CA certificates as a PEM file with ssl_truststore_type => \"PEM\""),
            ));
        }
        if opts.string("ssl_truststore_password")?.is_some() {
            return Err(opts.error(
                "ssl_truststore_password",
                "a PEM trust store has no password",
            ));
        }
        conf.set("ssl.ca.location", location);
    }
    if let Some(location) = opts.string("ssl_keystore_location")? {
        let kind = opts
            .string("ssl_keystore_type")?
            .unwrap_or_else(|| "JKS".into());
        if !kind.eq_ignore_ascii_case("PKCS12") {
            return Err(opts.error(
                "ssl_keystore_type",
                format!("a {kind} key store cannot be read by librdkafka (sluice's Kafka client): use a PKCS12 key store (ssl_keystore_type => \"PKCS12\")"),
            ));
        }
        conf.set("ssl.keystore.location", location);
        if let Some(p) = opts.string("ssl_keystore_password")? {
            conf.set("ssl.keystore.password", p);
        }
        if opts.string("ssl_key_password")?.is_some() {
            return Err(opts.error(
                "ssl_key_password",
                "librdkafka reads the key of a PKCS12 key store with ssl_keystore_password",
            ));
        }
    }
    let identification = opts.string_or("ssl_endpoint_identification_algorithm", "https")?;
    conf.set(
        "ssl.endpoint.identification.algorithm",
        if identification.is_empty() {
            "none"
        } else {
            "https"
        },
    );
    Ok(())
}

/// The username and password of a JAAS login module line:
/// `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`
fn jaas_credentials(jaas: &str) -> Option<(String, String)> {
    let value = |name: &str| -> Option<String> {
        let at = jaas.find(&format!("{name}="))? + name.len() + 1;
        let rest = &jaas[at..];
        let quote = rest.chars().next()?;
        if quote == '"' || quote == '\'' {
            let end = rest[1..].find(quote)?;
            Some(rest[1..1 + end].to_owned())
        } else {
            Some(
                rest.split(|c: char| c.is_whitespace() || c == ';')
                    .next()?
                    .to_owned(),
            )
        }
    };
    Some((value("username")?, value("password")?))
}

#[cfg(test)]
mod tests {
    use super::jaas_credentials;

    #[test]
    fn credentials_from_jaas_lines() {
        assert_eq!(
            jaas_credentials(
                r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cr;et";"#
            ),
            Some(("alice".into(), "s3cr;et".into()))
        );
        assert_eq!(
            jaas_credentials("org.apache.kafka.common.security.scram.ScramLoginModule required username='bob' password=pw;"),
            Some(("bob".into(), "pw".into()))
        );
        assert_eq!(jaas_credentials("PlainLoginModule required;"), None);
    }
}

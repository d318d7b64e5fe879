//! What the AWS plugins (the s3 output and input, the sqs input) share: the options of
//! Logstash's `aws_config` mixin read into an [`Aws`] client, the credentials they name, and
//! Signature Version 4, with which every request is signed.
//!
//! Credentials come from, in order: `access_key_id` + `secret_access_key` (+ `session_token`),
//! the YAML file `aws_credentials_file`, the environment (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), the shared credentials file
//! (`~/.aws/credentials`, profile `AWS_PROFILE` or `default`); with none, requests go
//! unsigned. `region` (default `us-east-1`), `endpoint` (an S3- or SQS-compatible server),
//! `proxy_uri`. Assuming a role (`role_arn`, `web_identity_token_file`) is refused: sluice
//! has no STS client. Requests go through one keep-alive `ureq` agent; an answer of any status
//! comes back as a response, and the callers decide.

use std::time::Duration;

use sha2::Digest;
use sluice_pipeline::{ConfigError, Options};

use crate::numbers::hex;

/// An access key pair, with a session token for temporary credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    pub key: String,
    pub secret: String,
    pub token: Option<String>,
}

/// A signed-request client for one region.
#[derive(Clone)]
pub struct Aws {
    pub region: String,
    /// `endpoint`, without a trailing slash.
    pub endpoint: Option<String>,
    credentials: Option<Credentials>,
    agent: ureq::Agent,
}

/// An answer: status, headers (lower-case names), body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl Aws {
    /// Reads the mixin's options.
    pub fn read(opts: &mut Options) -> Result<Aws, ConfigError> {
        let region = opts.string_or("region", "us-east-1")?;
        let endpoint = opts
            .string("endpoint")?
            .map(|e| e.trim_end_matches('/').to_owned());
        for name in ["role_arn", "web_identity_token_file"] {
            if opts.has(name) {
                opts.take(name);
                return Err(opts.error(
                    name,
                    "is not supported (sluice has no STS client to assume a role; give the role's credentials)",
                ));
            }
        }
        let _ = opts.string("role_session_name")?;
        let _ = opts.boolean("use_aws_bundled_ca")?;
        let key = opts.string("access_key_id")?;
        let secret = opts.string("secret_access_key")?;
        let token = opts.string("session_token")?;
        let file = opts.string("aws_credentials_file")?;
        let credentials = match (key, secret) {
            (Some(key), Some(secret)) => Some(Credentials { key, secret, token }),
            (Some(_), None) => {
                return Err(opts.error("access_key_id", "is given without secret_access_key"))
            }
            (None, Some(_)) => {
                return Err(opts.error("secret_access_key", "is given without access_key_id"))
            }
            (None, None) => match file {
                Some(path) => Some(
                    credentials_file(&path).map_err(|e| opts.error("aws_credentials_file", e))?,
                ),
                None => from_environment(),
            },
        };
        let proxy = match opts.string("proxy_uri")? {
            Some(p) => {
                Some(ureq::Proxy::new(&p).map_err(|e| opts.error("proxy_uri", e.to_string()))?)
            }
            None => None,
        };
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(300)))
            .timeout_connect(Some(Duration::from_secs(10)))
            .max_idle_connections_per_host(8)
            .user_agent(concat!("sluice/", env!("CARGO_PKG_VERSION")))
            .proxy(proxy)
            .build();
        Ok(Aws {
            region,
            endpoint,
            credentials,
            agent: crate::http::new_agent(config),
        })
    }

    /// Sends a request signed for `service` (`s3`, `sqs`). `url` is complete (scheme, host,
    /// path, query, all encoded); `s3` requests carry `x-amz-content-sha256` as S3 requires.
    pub fn send(
        &self,
        service: &str,
        method: &str,
        url: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> Result<Reply, String> {
        let mut all: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
            .collect();
        if let Some(c) = &self.credentials {
            let now = jiff::Timestamp::now();
            sign(
                &Signing {
                    service,
                    region: &self.region,
                    credentials: c,
                    time: now,
                    content_sha: service == "s3",
                },
                method,
                url,
                &mut all,
                body,
            )?;
        }
        let mut req = ureq::http::Request::builder().method(method).uri(url);
        for (k, v) in &all {
            req = req.header(k.as_str(), v.as_str());
        }
        let result = if body.is_empty() && matches!(method, "GET" | "HEAD" | "DELETE") {
            req.body(()).map(|r| self.agent.run(r))
        } else {
            req.body(body).map(|r| self.agent.run(r))
        };
        let mut response = result
            .map_err(|e| format!("bad request: {e}"))?
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let (headers, body) = crate::http::read_response(&mut response, 1 << 40)
            .map_err(|e| format!("reading the answer: {e}"))?;
        Ok(Reply {
            status,
            headers,
            body,
        })
    }
}

/// The YAML credentials file Logstash reads: `access_key_id`, `secret_access_key`, and
/// optionally `session_token`.
fn credentials_file(path: &str) -> Result<Credentials, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path:?}: {e}"))?;
    let docs = yaml_rust2::YamlLoader::load_from_str(&text)
        .map_err(|e| format!("{path:?} is not YAML: {e}"))?;
    let doc = docs.first().ok_or_else(|| format!("{path:?} is empty"))?;
    let get = |k: &str| doc[k].as_str().map(str::to_owned);
    match (get("access_key_id"), get("secret_access_key")) {
        (Some(key), Some(secret)) => Ok(Credentials {
            key,
            secret,
            token: get("session_token"),
        }),
        _ => Err(format!(
            "{path:?} needs access_key_id and secret_access_key"
        )),
    }
}

/// Credentials from the environment, or from the shared credentials file.
fn from_environment() -> Option<Credentials> {
    if let (Ok(key), Ok(secret)) = (
        std::env::var("AWS_ACCESS_KEY_ID"),
        std::env::var("AWS_SECRET_ACCESS_KEY"),
    ) {
        return Some(Credentials {
            key,
            secret,
            token: std::env::var("AWS_SESSION_TOKEN").ok(),
        });
    }
    let path = std::env::var("AWS_SHARED_CREDENTIALS_FILE")
        .ok()
        .or_else(|| {
            std::env::var("HOME")
                .ok()
                .map(|h| format!("{h}/.aws/credentials"))
        })?;
    let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".to_owned());
    shared_file(&std::fs::read_to_string(path).ok()?, &profile)
}

/// A profile of the shared credentials file (INI).
fn shared_file(text: &str, profile: &str) -> Option<Credentials> {
    let mut in_profile = false;
    let (mut key, mut secret, mut token) = (None, None, None);
    for line in text.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_profile = name.trim() == profile;
            continue;
        }
        if !in_profile {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            let v = v.trim().to_owned();
            match k.trim() {
                "aws_access_key_id" => key = Some(v),
                "aws_secret_access_key" => secret = Some(v),
                "aws_session_token" => token = Some(v),
                _ => {}
            }
        }
    }
    Some(Credentials {
        key: key?,
        secret: secret?,
        token,
    })
}

/// What a signature is made for.
pub struct Signing<'a> {
    pub service: &'a str,
    pub region: &'a str,
    pub credentials: &'a Credentials,
    pub time: jiff::Timestamp,
    /// Send and sign `x-amz-content-sha256` (S3 wants it).
    pub content_sha: bool,
}

/// SigV4's URI encoding: unreserved characters kept, the rest `%XX`; `/` kept in paths.
pub fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b'/' if keep_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    use hmac::Mac;
    let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes any key");
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

/// Signs a request (Signature Version 4): adds `x-amz-date`, `host`, the session token and
/// (for S3) the payload's hash to `headers`, then `authorization`. The URL's path and query
/// must be encoded already (as they are sent).
pub fn sign(
    s: &Signing,
    method: &str,
    url: &str,
    headers: &mut Vec<(String, String)>,
    body: &[u8],
) -> Result<(), String> {
    let (host, path, query) = split_url(url)?;
    let amz_date = s.time.strftime("%Y%m%dT%H%M%SZ").to_string();
    let date = &amz_date[..8];
    let payload = hex(&sha2::Sha256::digest(body));
    headers.retain(|(k, _)| k != "authorization" && k != "x-amz-date");
    if !headers.iter().any(|(k, _)| k == "host") {
        headers.push(("host".into(), host.to_owned()));
    }
    headers.push(("x-amz-date".into(), amz_date.clone()));
    if s.content_sha {
        headers.retain(|(k, _)| k != "x-amz-content-sha256");
        headers.push(("x-amz-content-sha256".into(), payload.clone()));
    }
    if let Some(t) = &s.credentials.token {
        headers.push(("x-amz-security-token".into(), t.clone()));
    }
    // Canonical query: pairs sorted, as sent (already encoded), `=` always present.
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => (p.to_owned(), String::new()),
        })
        .collect();
    pairs.sort();
    let canonical_query = pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let mut signed: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| {
            (
                k.to_ascii_lowercase(),
                v.split_whitespace().collect::<Vec<_>>().join(" "),
            )
        })
        .collect();
    signed.sort();
    let canonical_headers: String = signed.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let signed_names = signed
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical = format!(
        "{method}\n{}\n{canonical_query}\n{canonical_headers}\n{signed_names}\n{payload}",
        if path.is_empty() { "/" } else { path }
    );
    let scope = format!("{date}/{}/{}/aws4_request", s.region, s.service);
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(&sha2::Sha256::digest(canonical.as_bytes()))
    );
    let k_date = hmac(
        format!("AWS4{}", s.credentials.secret).as_bytes(),
        date.as_bytes(),
    );
    let k_region = hmac(&k_date, s.region.as_bytes());
    let k_service = hmac(&k_region, s.service.as_bytes());
    let k_signing = hmac(&k_service, b"aws4_request");
    let signature = hex(&hmac(&k_signing, to_sign.as_bytes()));
    headers.push((
        "authorization".into(),
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_names}, Signature={signature}",
            s.credentials.key
        ),
    ));
    Ok(())
}

/// `scheme://host[:port]/path?query` → (host with port, path, query).
fn split_url(url: &str) -> Result<(&str, &str, &str), String> {
    let rest = url
        .split_once("://")
        .map(|(_, r)| r)
        .ok_or_else(|| format!("{url:?} is not a URL"))?;
    let (authority, path_query) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (path, query) = path_query.split_once('?').unwrap_or((path_query, ""));
    Ok((authority, path, query))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AWS's SigV4 test suite, `get-vanilla` and `get-vanilla-query-order-key-case`.
    #[test]
    fn signs_as_the_aws_test_suite_says() {
        let creds = Credentials {
            key: "AKIDEXAMPLE".into(),
            secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            token: None,
        };
        let s = Signing {
            service: "service",
            region: "us-east-1",
            credentials: &creds,
            time: "2015-08-30T12:36:00Z".parse().unwrap(),
            content_sha: false,
        };
        let mut headers = Vec::new();
        sign(
            &s,
            "GET",
            "https://example.amazonaws.com/",
            &mut headers,
            b"",
        )
        .unwrap();
        let auth = &headers
            .iter()
            .find(|(k, _)| k == "authorization")
            .unwrap()
            .1;
        assert_eq!(
            auth,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
        let mut headers = Vec::new();
        sign(
            &s,
            "GET",
            "https://example.amazonaws.com/?Param2=value2&Param1=value1",
            &mut headers,
            b"",
        )
        .unwrap();
        let auth = &headers
            .iter()
            .find(|(k, _)| k == "authorization")
            .unwrap()
            .1;
        assert!(
            auth.ends_with(
                "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
            ),
            "{auth}"
        );
    }

    #[test]
    fn credentials_files() {
        let ini = "[default]\naws_access_key_id = A\naws_secret_access_key = B\n[other]\naws_access_key_id=C\naws_secret_access_key=D\naws_session_token=T\n";
        assert_eq!(shared_file(ini, "default").unwrap().key, "A");
        assert_eq!(
            shared_file(ini, "other").unwrap().token.as_deref(),
            Some("T")
        );
        assert!(shared_file(ini, "none").is_none());
        assert_eq!(uri_encode("a b/c~", true), "a%20b/c~");
        assert_eq!(uri_encode("a/b", false), "a%2Fb");
    }
}

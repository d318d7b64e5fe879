//! A small S3 client for the s3 output and input: the calls they make (put, multipart upload,
//! list, get, delete, copy), signed by [`crate::aws`], on AWS or on any S3-compatible store
//! (`endpoint`, and `additional_settings => { force_path_style => true }` for stores that
//! take the bucket in the path).

use sluice_pipeline::{ConfigError, Options};

use crate::aws::{uri_encode, Aws, Reply};

/// One bucket, through one client.
#[derive(Clone)]
pub struct Bucket {
    aws: Aws,
    pub name: String,
    path_style: bool,
}

/// An object of a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    pub key: String,
    /// ISO 8601, as S3 writes it (`2026-11-27T10:00:00.000Z`).
    pub last_modified: String,
    pub size: u64,
    pub etag: String,
}

/// A page of a listing.
pub struct Listing {
    pub objects: Vec<Object>,
    pub next: Option<String>,
}

/// `additional_settings`, read as the AWS SDK reads the keys sluice knows; others are refused.
pub fn read_additional_settings(opts: &mut Options) -> Result<bool, ConfigError> {
    let mut path_style = false;
    for (k, v) in opts.string_hash("additional_settings")?.unwrap_or_default() {
        match k.as_str() {
            "force_path_style" => path_style = v == "true",
            "follow_redirects" | "retry_limit" | "retry_mode" => {}
            other => {
                return Err(opts.error(
                    "additional_settings",
                    format!("{other:?} is not supported (sluice knows force_path_style)"),
                ))
            }
        }
    }
    Ok(path_style)
}

/// The text of the first `<tag>` in `xml`, entities decoded.
pub fn xml_text(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&close)? + start;
    Some(unescape(&xml[start..end]))
}

/// Each `<tag>...</tag>` block's inside.
pub fn xml_blocks<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find(&open) {
        let after = &rest[i + open.len()..];
        let Some(j) = after.find(&close) else { break };
        out.push(&after[..j]);
        rest = &after[j + close.len()..];
    }
    out
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&#13;", "\r")
        .replace("&amp;", "&")
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Bucket {
    pub fn new(aws: Aws, name: String, path_style: bool) -> Bucket {
        Bucket {
            aws,
            name,
            path_style,
        }
    }

    /// The URL of `key` (empty for the bucket) with an encoded `query`.
    fn url(&self, bucket: &str, key: &str, query: &str) -> String {
        let key = uri_encode(key, true);
        let q = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        // The bucket itself (a listing) has no trailing slash in path style.
        let slash_key = if key.is_empty() && self.path_style {
            String::new()
        } else {
            format!("/{key}")
        };
        match (&self.aws.endpoint, self.path_style) {
            (Some(e), true) => format!("{e}/{bucket}{slash_key}{q}"),
            (Some(e), false) => {
                let (scheme, host) = e.split_once("://").unwrap_or(("https", e));
                format!("{scheme}://{bucket}.{host}/{key}{q}")
            }
            (None, true) => format!(
                "https://s3.{}.amazonaws.com/{bucket}/{key}{q}",
                self.aws.region
            ),
            (None, false) => format!(
                "https://{bucket}.s3.{}.amazonaws.com/{key}{q}",
                self.aws.region
            ),
        }
    }

    fn call(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> Result<Reply, String> {
        let r = self.aws.send("s3", method, url, headers, body)?;
        if (200..300).contains(&r.status) {
            Ok(r)
        } else {
            Err(format!(
                "{method} {url}: status {}: {}",
                r.status,
                xml_text(&r.text(), "Message")
                    .or_else(|| xml_text(&r.text(), "Code"))
                    .unwrap_or_else(|| r.text().chars().take(300).collect())
            ))
        }
    }

    pub fn put(&self, key: &str, body: &[u8], headers: &[(&str, String)]) -> Result<(), String> {
        self.call("PUT", &self.url(&self.name, key, ""), headers, body)
            .map(|_| ())
    }

    /// A multipart upload of `parts` (each but the last at least 5 MiB).
    pub fn put_multipart(
        &self,
        key: &str,
        parts: &mut dyn Iterator<Item = Result<Vec<u8>, String>>,
        headers: &[(&str, String)],
    ) -> Result<(), String> {
        let r = self.call("POST", &self.url(&self.name, key, "uploads="), headers, b"")?;
        let id = xml_text(&r.text(), "UploadId").ok_or("no UploadId in the answer")?;
        let eid = uri_encode(&id, false);
        let mut etags = Vec::new();
        let result = (|| {
            for (i, part) in parts.enumerate() {
                let part = part?;
                let url = self.url(
                    &self.name,
                    key,
                    &format!("partNumber={}&uploadId={eid}", i + 1),
                );
                let r = self.call("PUT", &url, &[], &part)?;
                etags.push(r.header("etag").unwrap_or("").to_owned());
            }
            let mut xml = String::from("<CompleteMultipartUpload>");
            for (i, etag) in etags.iter().enumerate() {
                xml.push_str(&format!(
                    "<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>",
                    i + 1,
                    xml_escape(etag)
                ));
            }
            xml.push_str("</CompleteMultipartUpload>");
            let url = self.url(&self.name, key, &format!("uploadId={eid}"));
            let r = self.call("POST", &url, &[], xml.as_bytes())?;
            if r.text().contains("<Error>") {
                return Err(format!("completing the upload: {}", r.text()));
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = self.call(
                "DELETE",
                &self.url(&self.name, key, &format!("uploadId={eid}")),
                &[],
                b"",
            );
        }
        result
    }

    /// A page of the objects under `prefix` (ListObjectsV2).
    pub fn list(&self, prefix: &str, continuation: Option<&str>) -> Result<Listing, String> {
        let mut q = format!("list-type=2&prefix={}", uri_encode(prefix, false));
        if let Some(c) = continuation {
            q = format!("continuation-token={}&{q}", uri_encode(c, false));
        }
        let r = self.call("GET", &self.url(&self.name, "", &q), &[], b"")?;
        let text = r.text();
        let objects = xml_blocks(&text, "Contents")
            .into_iter()
            .map(|c| Object {
                key: xml_text(c, "Key").unwrap_or_default(),
                last_modified: xml_text(c, "LastModified").unwrap_or_default(),
                size: xml_text(c, "Size")
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0),
                etag: xml_text(c, "ETag").unwrap_or_default(),
            })
            .collect();
        let next = match xml_text(&text, "IsTruncated").as_deref() {
            Some("true") => xml_text(&text, "NextContinuationToken"),
            _ => None,
        };
        Ok(Listing { objects, next })
    }

    /// An object's bytes and headers.
    pub fn get(&self, key: &str) -> Result<Reply, String> {
        self.call("GET", &self.url(&self.name, key, ""), &[], b"")
    }

    pub fn delete(&self, key: &str) -> Result<(), String> {
        self.call("DELETE", &self.url(&self.name, key, ""), &[], b"")
            .map(|_| ())
    }

    /// Copies `key` of this bucket to `to_bucket`/`to_key`.
    pub fn copy_to(&self, key: &str, to_bucket: &str, to_key: &str) -> Result<(), String> {
        let source = format!("/{}/{}", self.name, uri_encode(key, true));
        let r = self.call(
            "PUT",
            &self.url(to_bucket, to_key, ""),
            &[("x-amz-copy-source", source)],
            b"",
        )?;
        if r.text().contains("<Error>") {
            return Err(format!("copying {key}: {}", r.text()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_bits() {
        let xml = "<R><Contents><Key>a&amp;b</Key><Size>3</Size></Contents><Contents><Key>c</Key></Contents><IsTruncated>false</IsTruncated></R>";
        let blocks = xml_blocks(xml, "Contents");
        assert_eq!(blocks.len(), 2);
        assert_eq!(xml_text(blocks[0], "Key").as_deref(), Some("a&b"));
        assert_eq!(xml_text(xml, "IsTruncated").as_deref(), Some("false"));
        assert_eq!(xml_text(xml, "Nope"), None);
    }
}

//! `s3` input: reads the objects of an S3 bucket, line by line through the codec, as
//! logstash-input-s3 does (log archives, CloudFront and load-balancer logs).
//!
//! Every `interval` seconds (60) the objects under `prefix` are listed; those not excluded
//! (`exclude_pattern`, "directories", the backups this input writes) that are newer than the
//! sincedb's time and older than `cutoff_second` (objects still being written wait for the
//! next round) are read oldest first. An object is read whole (gunzipped when its key matches
//! `gzip_pattern`), each line goes through the codec (`plain`), and its events get
//! `[@metadata][s3][key]` (with `include_object_properties`, the object's properties too);
//! CloudFront's `#Version:` and `#Fields:` lines become `cloudfront_version` and
//! `cloudfront_fields` (under `[@metadata][s3][cloudfront]` in ECS mode) instead of events.
//! Once an object's events are queued it is copied to `backup_to_bucket` (keys prefixed with
//! `backup_add_prefix`) and/or `backup_to_dir`, deleted with `delete`, and its last-modified
//! time is written to the sincedb (`sincedb_path`, by default under `path.data`). A stop in
//! the middle of an object leaves it to be read again at the next start (at least once).
//! With `watch_for_new_files => false` the input ends after one round. The connection options
//! are the aws mixin's ([`crate::aws`]).

use std::path::PathBuf;
use std::time::Duration;

use sluice_event::{Event, FieldRef, Map, Value};
use sluice_pipeline::{Codec, ConfigError, Input, InputContext, Options};

use crate::ecs::Ecs;
use crate::s3::{Bucket, Object};

pub struct S3Input {
    bucket: Bucket,
    backup_bucket: Option<Bucket>,
    backup_add_prefix: String,
    backup_to_dir: Option<PathBuf>,
    prefix: String,
    exclude: Option<regex::Regex>,
    gzip: regex::Regex,
    delete: bool,
    interval: Duration,
    watch: bool,
    cutoff: i64,
    sincedb: PathBuf,
    properties: bool,
    codec: Box<dyn Codec>,
    version_field: FieldRef,
    fields_field: FieldRef,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Input>, ConfigError> {
    let name = opts.required_string("bucket")?;
    let aws = crate::aws::Aws::read(opts)?;
    let path_style = crate::s3::read_additional_settings(opts)?;
    let prefix = opts.string_or("prefix", "")?;
    let backup_bucket = opts
        .string("backup_to_bucket")?
        .map(|b| Bucket::new(aws.clone(), b, path_style));
    let backup_add_prefix = opts.string_or("backup_add_prefix", "")?;
    let backup_to_dir = opts.string("backup_to_dir")?.map(PathBuf::from);
    if let Some(d) = &backup_to_dir {
        std::fs::create_dir_all(d)
            .map_err(|e| opts.error("backup_to_dir", format!("{}: {e}", d.display())))?;
    }
    let regex = |opts: &Options, name: &str, text: &str| {
        regex::Regex::new(text).map_err(|e| opts.error(name, format!("{text:?}: {e}")))
    };
    let exclude = match opts.string("exclude_pattern")? {
        Some(p) => Some(regex(opts, "exclude_pattern", &p)?),
        None => None,
    };
    let gzip_text = opts.string_or("gzip_pattern", r"\.gz(ip)?$")?;
    let gzip = regex(opts, "gzip_pattern", &gzip_text)?;
    let delete = opts.boolean_or("delete", false)?;
    let interval = opts.seconds("interval", 60.0)?;
    let watch = opts.boolean_or("watch_for_new_files", true)?;
    let cutoff = opts.int("cutoff_second")?.unwrap_or(3);
    let _ = opts.string("temporary_directory")?;
    let properties = opts.boolean_or("include_object_properties", false)?;
    let sincedb = match opts.string("sincedb_path")? {
        Some(p) => PathBuf::from(p),
        None => {
            let Some(data) = opts.path_data() else {
                return Err(opts.error(
                    "sincedb_path",
                    "no path.data to keep the sincedb under: set sincedb_path",
                ));
            };
            use md5::Digest;
            let digest = md5::Md5::digest(format!("{name}+{prefix}").as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            data.join("plugins/inputs/s3")
                .join(format!("sincedb_{hex}"))
        }
    };
    let ecs = Ecs::from_options(opts)?.enabled();
    let (version, fields) = if ecs {
        (
            "[@metadata][s3][cloudfront][version]",
            "[@metadata][s3][cloudfront][fields]",
        )
    } else {
        ("cloudfront_version", "cloudfront_fields")
    };
    let codec = opts.codec("plain")?;
    Ok(Box::new(S3Input {
        bucket: Bucket::new(aws, name, path_style),
        backup_bucket,
        backup_add_prefix,
        backup_to_dir,
        prefix,
        exclude,
        gzip,
        delete,
        interval,
        watch,
        cutoff,
        sincedb,
        properties,
        codec,
        version_field: FieldRef::parse(version).expect("a valid reference"),
        fields_field: FieldRef::parse(fields).expect("a valid reference"),
    }))
}

/// Seconds since the epoch of S3's ISO 8601 time.
fn epoch(iso: &str) -> i64 {
    iso.parse::<jiff::Timestamp>()
        .map(|t| t.as_second())
        .unwrap_or(0)
}

impl S3Input {
    fn since(&self) -> i64 {
        std::fs::read_to_string(&self.sincedb)
            .ok()
            .and_then(|t| t.trim().parse::<jiff::Timestamp>().ok())
            .map_or(0, |t| t.as_second())
    }

    fn record(&self, o: &Object) -> Result<(), String> {
        if let Some(dir) = self.sincedb.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let t = o
            .last_modified
            .parse::<jiff::Timestamp>()
            .map_err(|e| e.to_string())?;
        std::fs::write(&self.sincedb, format!("{t}\n"))
            .map_err(|e| format!("{}: {e}", self.sincedb.display()))
    }

    fn ignored(&self, key: &str) -> bool {
        key == self.prefix
            || key.ends_with('/')
            || (self
                .backup_bucket
                .as_ref()
                .is_some_and(|b| b.name == self.bucket.name)
                && !self.backup_add_prefix.is_empty()
                && key.starts_with(&self.backup_add_prefix))
            || self.exclude.as_ref().is_some_and(|r| r.is_match(key))
    }

    /// The objects to read this round, oldest first.
    fn list_new(&self) -> Result<Vec<Object>, String> {
        let since = self.since();
        let now = jiff::Timestamp::now().as_second();
        let mut out = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let page = self.bucket.list(&self.prefix, next.as_deref())?;
            for o in page.objects {
                let t = epoch(&o.last_modified);
                if self.ignored(&o.key) || o.size == 0 || t <= since || t > now - self.cutoff {
                    continue;
                }
                out.push(o);
            }
            match page.next {
                Some(n) => next = Some(n),
                None => break,
            }
        }
        out.sort_by_key(|o| epoch(&o.last_modified));
        Ok(out)
    }

    /// Reads one object into events, pushed as they come; `Ok(false)` when a stop cut it
    /// short.
    fn process(&mut self, ctx: &InputContext, o: &Object) -> Result<bool, String> {
        let reply = self.bucket.get(&o.key)?;
        let inflated;
        let data: &[u8] = if self.gzip.is_match(&o.key) {
            let mut out = Vec::new();
            std::io::Read::read_to_end(
                &mut flate2::read::MultiGzDecoder::new(&reply.body[..]),
                &mut out,
            )
            .map_err(|e| format!("{}: not gzip: {e}", o.key))?;
            inflated = out;
            &inflated
        } else {
            &reply.body
        };
        let mut meta = Map::new();
        if self.properties {
            let props = [
                ("last_modified", reply.header("last-modified")),
                ("etag", reply.header("etag")),
                ("content_type", reply.header("content-type")),
                ("content_length", reply.header("content-length")),
                (
                    "server_side_encryption",
                    reply.header("x-amz-server-side-encryption"),
                ),
                ("storage_class", reply.header("x-amz-storage-class")),
            ];
            for (k, v) in props {
                if let Some(v) = v {
                    let value = match k {
                        "content_length" => {
                            v.parse::<i64>().map(Value::Int).unwrap_or(Value::from(v))
                        }
                        _ => Value::from(v),
                    };
                    meta.insert(k.into(), value);
                }
            }
            let user: Map = reply
                .headers
                .iter()
                .filter_map(|(k, v)| {
                    k.strip_prefix("x-amz-meta-")
                        .map(|n| (n.into(), Value::from(v.as_str())))
                })
                .collect();
            meta.insert("metadata".into(), Value::Object(user));
        }
        meta.insert("key".into(), Value::from(o.key.as_str()));
        let meta_field = FieldRef::parse("[@metadata][s3]").expect("a valid reference");
        let mut cloudfront: (Option<String>, Option<String>) = (None, None);
        let mut batch = Vec::new();
        let mut events = Vec::new();
        let text = data.strip_suffix(b"\n").unwrap_or(data);
        for line in text.split(|b| *b == b'\n') {
            if ctx.is_stopping() {
                tracing::warn!(key = %o.key, "s3 input: stopping in the middle of an object; it is read again at the next start");
                return Ok(false);
            }
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if let Some(v) = line.strip_prefix(b"#Version: ") {
                cloudfront.0 = Some(String::from_utf8_lossy(v).trim().to_owned());
                continue;
            }
            if let Some(f) = line.strip_prefix(b"#Fields: ") {
                cloudfront.1 = Some(String::from_utf8_lossy(f).trim().to_owned());
                continue;
            }
            self.codec.decode_line(line, &mut events);
            self.decorate(&mut events, &meta_field, &meta, &cloudfront, &mut batch);
            if batch.len() >= ctx.batch_size() {
                ctx.push(std::mem::take(&mut batch))
                    .map_err(|_| "stopping".to_owned())?;
            }
        }
        self.codec.flush(&mut events);
        self.decorate(&mut events, &meta_field, &meta, &cloudfront, &mut batch);
        ctx.push(batch).map_err(|_| "stopping".to_owned())?;
        Ok(true)
    }

    fn decorate(
        &self,
        events: &mut Vec<Event>,
        field: &FieldRef,
        meta: &Map,
        cloudfront: &(Option<String>, Option<String>),
        out: &mut Vec<Event>,
    ) {
        for mut e in events.drain(..) {
            e.set(field, Value::Object(meta.clone()));
            if let Some(v) = &cloudfront.0 {
                e.set(&self.version_field, Value::from(v.as_str()));
            }
            if let Some(f) = &cloudfront.1 {
                e.set(&self.fields_field, Value::from(f.as_str()));
            }
            out.push(e);
        }
    }

    /// After an object's events are queued: backups, deletion, the sincedb.
    fn done(&self, o: &Object, body: Option<&[u8]>) -> Result<(), String> {
        if let Some(b) = &self.backup_bucket {
            self.bucket.copy_to(
                &o.key,
                &b.name,
                &format!("{}{}", self.backup_add_prefix, o.key),
            )?;
        }
        if let (Some(dir), Some(body)) = (&self.backup_to_dir, body) {
            let name = o.key.rsplit('/').next().unwrap_or(&o.key);
            std::fs::write(dir.join(name), body).map_err(|e| format!("backup_to_dir: {e}"))?;
        }
        if self.delete {
            self.bucket.delete(&o.key)?;
        }
        self.record(o)
    }

    fn round(&mut self, ctx: &InputContext) {
        let objects = match self.list_new() {
            Ok(o) => o,
            Err(e) => {
                tracing::error!(bucket = %self.bucket.name, prefix = %self.prefix, error = %e, "s3 input: unable to list objects in bucket");
                return;
            }
        };
        for o in objects {
            if ctx.is_stopping() {
                return;
            }
            match self.process(ctx, &o) {
                Ok(true) => {
                    let body = if self.backup_to_dir.is_some() {
                        self.bucket.get(&o.key).ok().map(|r| r.body)
                    } else {
                        None
                    };
                    if let Err(e) = self.done(&o, body.as_deref()) {
                        tracing::error!(key = %o.key, error = %e, "s3 input: after reading the object");
                    }
                }
                Ok(false) => return,
                Err(e) => {
                    tracing::warn!(key = %o.key, error = %e, "s3 input: unable to read the object; trying again next round");
                    return;
                }
            }
        }
    }
}

impl Input for S3Input {
    fn run(&mut self, ctx: &InputContext) -> Result<(), String> {
        loop {
            self.round(ctx);
            if !self.watch {
                return Ok(());
            }
            if !sluice_pipeline::plugin::sleep_unless(self.interval, || ctx.is_stopping()) {
                return Ok(());
            }
        }
    }
}

//! `s3` output: writes events to files in an S3 bucket, as logstash-output-s3 does: events
//! gather in local temporary files, one per (sprintf'd) `prefix`, and each file is uploaded as
//! one object when it is rotated.
//!
//! Data flow: a batch is encoded (`line` by default) and appended to its prefix's temporary
//! file under `temporary_directory` (`<dir>/<uuid>/<prefix>/ls.s3.<uuid>.<time>[.tag_<tags>]
//! .part<n>.txt`); once the bytes are in the file the batch is acknowledged. A file is rotated
//! when it reaches `size_file` bytes or `time_file` minutes (`rotation_strategy`:
//! `size_and_time`, `size`, `time`; a periodic check catches idle ones), and rotated files
//! go to `upload_workers_count` upload threads: a PUT, or a multipart upload past
//! `upload_multipart_threshold`, with `canned_acl`, `server_side_encryption`,
//! `storage_class`, tried again every `retry_delay` seconds up to `retry_count` times
//! (forever by default); an uploaded file is deleted. At shutdown every file is uploaded.
//!
//! Nothing acknowledged is lost to a crash: the temporary files stay on disk, and with
//! `restore` (default true) the files left by an earlier run are uploaded when the output
//! starts. With `encoding => gzip` each batch is written as a gzip member of its own (a
//! file of members is one valid gzip stream), so a file cut short by a crash keeps every whole
//! batch; restoring drops a torn last member. The connection options are the aws mixin's
//! ([`crate::aws`]).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use sluice_event::{Event, Template};
use sluice_pipeline::{Codec, ConfigError, Options, Output, OutputError, WriteContext};

use crate::s3::Bucket;

const INVALID_PREFIX: &[char] = &['^', '`', '>', '<', '\\'];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Rotation {
    Size,
    Time,
    SizeAndTime,
}

/// A file being written.
struct TempFile {
    /// The object key (`prefix/name`).
    key: String,
    /// The file's `<uuid>` directory, removed once uploaded.
    dir: PathBuf,
    path: PathBuf,
    file: File,
    size: u64,
    created: Instant,
}

/// A file to upload.
struct Job {
    key: String,
    dir: PathBuf,
    path: PathBuf,
}

struct Settings {
    bucket: Bucket,
    temp_dir: PathBuf,
    gzip: bool,
    tags: Vec<String>,
    headers: Vec<(&'static str, String)>,
    multipart_threshold: u64,
    retry_count: Option<u64>,
    retry_delay: Duration,
}

/// The upload threads and the periodic check, started at the first write (not when a config
/// is only checked).
struct Running {
    jobs: Mutex<Option<SyncSender<Job>>>,
    workers: Mutex<Vec<std::thread::JoinHandle<()>>>,
    stop: Arc<AtomicBool>,
    periodic: Mutex<Option<std::thread::JoinHandle<()>>>,
}

pub struct S3Output {
    settings: Arc<Settings>,
    prefix: Template,
    size_file: u64,
    time_file: Duration,
    rotation: Rotation,
    restore: bool,
    workers: usize,
    queue: usize,
    state: Arc<Mutex<State>>,
    running: OnceLock<Running>,
}

struct State {
    codec: Box<dyn Codec>,
    files: HashMap<String, TempFile>,
    counter: u64,
}

pub fn build(opts: &mut Options) -> Result<Box<dyn Output>, ConfigError> {
    let name = opts.required_string("bucket")?;
    let aws = crate::aws::Aws::read(opts)?;
    let path_style = crate::s3::read_additional_settings(opts)?;
    let prefix = opts.string_or("prefix", "")?;
    if prefix.contains(INVALID_PREFIX) {
        return Err(opts.error("prefix", "must not contain any of ^ ` > < \\"));
    }
    let size_file = opts.int("size_file")?.unwrap_or(5 * 1024 * 1024).max(0) as u64;
    let time_file = opts.float("time_file")?.unwrap_or(15.0);
    if time_file.is_nan() || time_file < 0.0 {
        return Err(opts.error("time_file", "must be 0 or more minutes"));
    }
    let rotation = match opts
        .choice(
            "rotation_strategy",
            &["size_and_time", "size", "time"],
            "size_and_time",
        )?
        .as_str()
    {
        "size" => Rotation::Size,
        "time" => Rotation::Time,
        _ => Rotation::SizeAndTime,
    };
    let (no_size, no_time) = (size_file == 0, time_file == 0.0);
    let impossible = match rotation {
        Rotation::Size => no_size,
        Rotation::Time => no_time,
        Rotation::SizeAndTime => no_size && no_time,
    };
    if impossible {
        return Err(opts.error(
            "size_file",
            "and time_file: the rotation needs one of them greater than 0",
        ));
    }
    let temp_dir = PathBuf::from(opts.string_or(
        "temporary_directory",
        &std::env::temp_dir().join("logstash").display().to_string(),
    )?);
    std::fs::create_dir_all(&temp_dir).map_err(|e| {
        opts.error(
            "temporary_directory",
            format!("{} is not writable: {e}", temp_dir.display()),
        )
    })?;
    let gzip = opts.choice("encoding", &["none", "gzip"], "none")? == "gzip";
    let tags = opts.string_list("tags")?.unwrap_or_default();
    let canned_acl = opts.choice(
        "canned_acl",
        &[
            "private",
            "public-read",
            "public-read-write",
            "authenticated-read",
            "aws-exec-read",
            "bucket-owner-read",
            "bucket-owner-full-control",
            "log-delivery-write",
        ],
        "private",
    )?;
    let sse = opts.boolean_or("server_side_encryption", false)?;
    let sse_algorithm = opts.choice(
        "server_side_encryption_algorithm",
        &["AES256", "aws:kms"],
        "AES256",
    )?;
    let kms_key = opts.string("ssekms_key_id")?;
    let storage_class = opts.choice(
        "storage_class",
        &[
            "STANDARD",
            "REDUCED_REDUNDANCY",
            "STANDARD_IA",
            "ONEZONE_IA",
            "INTELLIGENT_TIERING",
            "GLACIER",
            "DEEP_ARCHIVE",
            "OUTPOSTS",
            "GLACIER_IR",
            "SNOW",
            "EXPRESS_ONEZONE",
        ],
        "STANDARD",
    )?;
    let mut headers = vec![
        ("x-amz-acl", canned_acl),
        ("x-amz-storage-class", storage_class),
    ];
    if sse {
        headers.push(("x-amz-server-side-encryption", sse_algorithm.clone()));
        if sse_algorithm == "aws:kms" {
            if let Some(k) = kms_key {
                headers.push(("x-amz-server-side-encryption-aws-kms-key-id", k));
            }
        }
    }
    if gzip {
        headers.push(("content-encoding", "gzip".to_owned()));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = opts
        .int("upload_workers_count")?
        .unwrap_or((cores as i64 + 1) / 2)
        .max(1) as usize;
    let queue = opts
        .int("upload_queue_size")?
        .unwrap_or(2 * ((cores as i64 + 3) / 4))
        .max(1) as usize;
    let multipart_threshold = opts
        .int("upload_multipart_threshold")?
        .unwrap_or(15 * 1024 * 1024)
        .max(5 * 1024 * 1024) as u64;
    if let Some(v) = opts.string("signature_version")? {
        if v != "v4" {
            return Err(opts.error("signature_version", "only v4 is supported"));
        }
    }
    let _ = opts.boolean("validate_credentials_on_root_bucket")?;
    let retry_count = match opts.float("retry_count")? {
        Some(n) if n.is_finite() && n >= 0.0 => Some(n as u64),
        _ => None,
    };
    let retry_delay = opts.seconds("retry_delay", 1.0)?;
    let restore = opts.boolean_or("restore", true)?;
    let codec = opts.codec("line")?;
    Ok(Box::new(S3Output {
        settings: Arc::new(Settings {
            bucket: Bucket::new(aws, name, path_style),
            temp_dir,
            gzip,
            tags,
            headers,
            multipart_threshold,
            retry_count,
            retry_delay,
        }),
        prefix: Template::parse(&prefix),
        size_file,
        time_file: Duration::from_secs_f64(time_file * 60.0),
        rotation,
        restore,
        workers,
        queue,
        state: Arc::new(Mutex::new(State {
            codec,
            files: HashMap::new(),
            counter: 0,
        })),
        running: OnceLock::new(),
    }))
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Gzip of `data` as one member.
fn gzip_member(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = enc.write_all(data);
    enc.finish().unwrap_or_default()
}

impl Settings {
    /// Uploads one file (tried again as the options say); the file is removed once it is in
    /// the bucket. `false` when it was given up on (the file stays for the next start).
    fn upload(&self, job: &Job, stop: &AtomicBool) -> bool {
        let mut tries: u64 = 0;
        loop {
            match self.upload_once(job) {
                Ok(()) => {
                    let _ = std::fs::remove_dir_all(&job.dir);
                    tracing::debug!(key = %job.key, "s3: uploaded");
                    return true;
                }
                Err(e) => {
                    if self.retry_count.is_some_and(|n| tries >= n) {
                        tracing::error!(key = %job.key, path = %job.path.display(), error = %e, "s3: failed to upload file; it stays for the next start");
                        return false;
                    }
                    tries += 1;
                    tracing::warn!(key = %job.key, error = %e, attempt = tries, "s3: uploading failed, retrying");
                    // Waits, but not past a stop that has given up on the uploads.
                    let until = Instant::now() + self.retry_delay;
                    while Instant::now() < until {
                        if stop.load(Ordering::Relaxed) && self.retry_count.is_none() && tries > 3 {
                            tracing::error!(key = %job.key, "s3: stopping with the file not uploaded; it stays for the next start");
                            return false;
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            }
        }
    }

    fn upload_once(&self, job: &Job) -> Result<(), String> {
        let size = std::fs::metadata(&job.path)
            .map_err(|e| format!("{}: {e}", job.path.display()))?
            .len();
        if size == 0 {
            return Ok(());
        }
        if size <= self.multipart_threshold {
            let data =
                std::fs::read(&job.path).map_err(|e| format!("{}: {e}", job.path.display()))?;
            return self.bucket.put(&job.key, &data, &self.headers);
        }
        let mut file = File::open(&job.path).map_err(|e| format!("{}: {e}", job.path.display()))?;
        let part = self.multipart_threshold as usize;
        let mut parts = std::iter::from_fn(|| {
            let mut buf = vec![0; part];
            let mut n = 0;
            while n < part {
                match file.read(&mut buf[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) => return Some(Err(e.to_string())),
                }
            }
            (n > 0).then(|| {
                buf.truncate(n);
                Ok(buf)
            })
        });
        self.bucket
            .put_multipart(&job.key, &mut parts, &self.headers)
    }
}

/// The files an earlier run left: each file under `<dir>/<uuid>/` with its key.
fn leftovers(dir: &Path) -> Vec<Job> {
    fn walk(at: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(at) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut jobs = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return jobs;
    };
    for e in entries.flatten() {
        let uuid_dir = e.path();
        if !uuid_dir.is_dir() {
            continue;
        }
        let mut files = Vec::new();
        walk(&uuid_dir, &mut files);
        if files.is_empty() {
            let _ = std::fs::remove_dir_all(&uuid_dir);
        }
        for path in files {
            let Ok(rel) = path.strip_prefix(&uuid_dir) else {
                continue;
            };
            let key = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            jobs.push(Job {
                key,
                dir: uuid_dir.clone(),
                path,
            });
        }
    }
    jobs
}

/// Keeps the whole gzip members of a file a crash may have cut short (drops a torn last one).
fn repair_gzip(path: &Path) {
    let Ok(data) = std::fs::read(path) else {
        return;
    };
    let mut good = 0usize;
    let mut rest = &data[..];
    while !rest.is_empty() {
        let mut dec = flate2::bufread::GzDecoder::new(rest);
        let mut sink = Vec::new();
        if dec.read_to_end(&mut sink).is_err() {
            break;
        }
        let left = dec.into_inner().len();
        let used = rest.len() - left;
        if used == 0 {
            break;
        }
        good += used;
        rest = &rest[used..];
    }
    if good < data.len() {
        tracing::warn!(path = %path.display(), kept = good, dropped = data.len() - good, "s3: dropping a torn gzip member left by a crash");
        if let Ok(f) = OpenOptions::new().write(true).open(path) {
            let _ = f.set_len(good as u64);
        }
    }
}

impl S3Output {
    /// Starts the upload threads, the periodic check, and the upload of what an earlier run
    /// left (with `restore`).
    fn running(&self) -> &Running {
        self.running.get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Job>(self.queue);
            let rx: Arc<Mutex<Receiver<Job>>> = Arc::new(Mutex::new(rx));
            let stop = Arc::new(AtomicBool::new(false));
            let mut workers = Vec::new();
            for i in 0..self.workers {
                let (rx, settings, stop) = (Arc::clone(&rx), Arc::clone(&self.settings), Arc::clone(&stop));
                workers.push(
                    std::thread::Builder::new()
                        .name(format!("s3-upload-{i}"))
                        .spawn(move || loop {
                            let job = rx.lock().expect("not poisoned").recv();
                            match job {
                                Ok(job) => {
                                    settings.upload(&job, &stop);
                                }
                                Err(_) => return,
                            }
                        })
                        .expect("a thread"),
                );
            }
            if self.restore {
                let found = leftovers(&self.settings.temp_dir);
                if !found.is_empty() {
                    tracing::info!(files = found.len(), dir = %self.settings.temp_dir.display(), "s3: uploading the files an earlier run left");
                }
                for job in found {
                    if self.settings.gzip || job.path.extension().is_some_and(|x| x == "gz") {
                        repair_gzip(&job.path);
                    }
                    let _ = tx.send(job);
                }
            }
            // Idle files reach their time limit without a write: a check now and then.
            let periodic = (self.rotation != Rotation::Size).then(|| {
                let (state, stop, tx) = (Arc::clone(&self.state), Arc::clone(&stop), tx.clone());
                let limit = self.time_file;
                // Logstash checks every 15 s; a shorter time_file is checked more often.
                let every = (limit / 4).clamp(Duration::from_millis(200), Duration::from_secs(15));
                std::thread::spawn(move || {
                    let mut last = Instant::now();
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(100));
                        if last.elapsed() < every {
                            continue;
                        }
                        last = Instant::now();
                        let mut st = state.lock().expect("not poisoned");
                        let due: Vec<String> = st
                            .files
                            .iter()
                            .filter(|(_, f)| f.created.elapsed() >= limit && f.size > 0)
                            .map(|(k, _)| k.clone())
                            .collect();
                        for k in due {
                            if let Some(f) = st.files.remove(&k) {
                                let _ = tx.send(Job {
                                    key: f.key,
                                    dir: f.dir,
                                    path: f.path,
                                });
                            }
                        }
                    }
                })
            });
            Running {
                jobs: Mutex::new(Some(tx)),
                workers: Mutex::new(workers),
                stop,
                periodic: Mutex::new(periodic),
            }
        })
    }

    fn send(&self, f: TempFile) {
        let job = Job {
            key: f.key,
            dir: f.dir,
            path: f.path,
        };
        if let Some(tx) = self.running().jobs.lock().expect("not poisoned").as_ref() {
            let _ = tx.send(job);
        }
    }

    /// A new temporary file for `prefix`.
    fn new_file(&self, st: &mut State, prefix: &str) -> Result<TempFile, String> {
        let dir = self.settings.temp_dir.join(uuid());
        let time = jiff::Zoned::now().strftime("%Y-%m-%dT%H.%M").to_string();
        let ext = if self.settings.gzip { "txt.gz" } else { "txt" };
        let tags = if self.settings.tags.is_empty() {
            String::new()
        } else {
            format!(".tag_{}", self.settings.tags.join("."))
        };
        let name = format!("ls.s3.{}.{time}{tags}.part{}.{ext}", uuid(), st.counter);
        st.counter += 1;
        let key = if prefix.is_empty() {
            name
        } else {
            format!("{}/{name}", prefix.trim_end_matches('/'))
        };
        let path = dir.join(&key);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(TempFile {
            key: key.trim_start_matches('/').to_owned(),
            dir,
            path,
            file,
            size: 0,
            created: Instant::now(),
        })
    }

    fn rotate_due(&self, f: &TempFile) -> bool {
        let by_size = f.size >= self.size_file && self.size_file > 0;
        let by_time = f.created.elapsed() >= self.time_file && self.time_file > Duration::ZERO;
        match self.rotation {
            Rotation::Size => by_size,
            Rotation::Time => by_time,
            Rotation::SizeAndTime => by_size || by_time,
        }
    }
}

impl Output for S3Output {
    fn write(&self, events: &[&Event], _ctx: &WriteContext) -> Result<(), OutputError> {
        self.running();
        let mut st = self.state.lock().expect("not poisoned");
        let mut by_prefix: HashMap<String, Vec<u8>> = HashMap::new();
        for e in events {
            let prefix = self.prefix.render(e).replace(INVALID_PREFIX, "_");
            let buf = by_prefix.entry(prefix).or_default();
            st.codec.encode(e, buf);
        }
        let mut rotated = Vec::new();
        for (prefix, bytes) in by_prefix {
            let data = if self.settings.gzip {
                gzip_member(&bytes)
            } else {
                bytes
            };
            if !st.files.contains_key(&prefix) {
                let f = self
                    .new_file(&mut st, &prefix)
                    .map_err(OutputError::retryable)?;
                st.files.insert(prefix.clone(), f);
            }
            let f = st.files.get_mut(&prefix).expect("just made");
            if let Err(e) = f.file.write_all(&data) {
                // Cut back to where it stood: the retried batch is written once.
                let _ = f.file.set_len(f.size);
                return Err(OutputError::retryable(format!(
                    "s3: writing {}: {e}",
                    f.path.display()
                )));
            }
            f.size += data.len() as u64;
            if self.rotate_due(f) {
                rotated.push(st.files.remove(&prefix).expect("present"));
            }
        }
        drop(st);
        for f in rotated {
            self.send(f);
        }
        Ok(())
    }

    fn close(&self) -> Result<(), OutputError> {
        let running = self.running();
        let files: Vec<TempFile> = {
            let mut st = self.state.lock().expect("not poisoned");
            st.files.drain().map(|(_, f)| f).collect()
        };
        for f in files {
            if f.size > 0 {
                self.send(f);
            } else {
                let _ = std::fs::remove_dir_all(&f.dir);
            }
        }
        running.stop.store(true, Ordering::Relaxed);
        if let Some(p) = running.periodic.lock().expect("not poisoned").take() {
            let _ = p.join();
        }
        // Closing the queue ends the workers once it is empty: every file uploaded.
        running.jobs.lock().expect("not poisoned").take();
        for w in running.workers.lock().expect("not poisoned").drain(..) {
            let _ = w.join();
        }
        Ok(())
    }
}

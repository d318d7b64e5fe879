//! S3- and SQS-compatible servers for the AWS plugins' tests: s3proxy (its filesystem
//! backend, checking SigV4 signatures with the test's credentials) and ElasticMQ, from the
//! jars `scripts/fetch-aws-servers` puts in ~/.cache/sluice (`SLUICE_S3PROXY_LIB`,
//! `SLUICE_ELASTICMQ_LIB`), each started on a free 127.0.0.1 port and killed on drop.
//! Without the jars the tests skip, except under `CI=true`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub const KEY: &str = "AKIDSLUICETEST";
pub const SECRET: &str = "sluice-test-secret";

fn lib(var: &str, default: &str) -> Option<PathBuf> {
    let dir = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(default));
    if dir.join(".complete").exists() {
        return Some(dir);
    }
    crate::net_support::missing(&format!(
        "{var}: no jars at {} (run scripts/fetch-aws-servers)",
        dir.display()
    ));
    None
}

pub struct Server {
    child: Child,
    pub url: String,
    pub dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }
}

fn java(dir: &Path, lib: &Path, args: &[&str]) -> Child {
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    Command::new("java")
        .arg("-Xmx256m")
        .args(args.iter().take_while(|a| a.starts_with("-D")))
        .arg("-cp")
        .arg(format!("{}/*", lib.display()))
        .args(args.iter().skip_while(|a| a.starts_with("-D")))
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap()
}

/// s3proxy on a free port, its objects under `dir/data/<bucket>/<key>`.
pub fn s3proxy(dir: &Path) -> Option<Server> {
    s3proxy_on(dir, crate::net_support::free_port())
}

/// s3proxy on `port`.
pub fn s3proxy_on(dir: &Path, port: u16) -> Option<Server> {
    let lib = lib("SLUICE_S3PROXY_LIB", ".cache/sluice/s3proxy-2.6.0/lib")?;
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let conf = dir.join("s3proxy.conf");
    std::fs::write(
        &conf,
        format!(
            "s3proxy.endpoint=http://127.0.0.1:{port}\ns3proxy.authorization=aws-v2-or-v4\n\
             s3proxy.identity={KEY}\ns3proxy.credential={SECRET}\njclouds.provider=filesystem\n\
             jclouds.filesystem.basedir={}\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    let child = java(
        dir,
        &lib,
        &[
            "-DLOG_LEVEL=warn",
            "org.gaul.s3proxy.Main",
            "--properties",
            conf.to_str().unwrap(),
        ],
    );
    crate::net_support::wait_listening(port, 60);
    Some(Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
        dir: dir.to_path_buf(),
    })
}

/// ElasticMQ on a free port.
pub fn elasticmq(dir: &Path) -> Option<Server> {
    elasticmq_on(dir, crate::net_support::free_port())
}

/// ElasticMQ on `port` (its queues in memory: a new one starts empty).
pub fn elasticmq_on(dir: &Path, port: u16) -> Option<Server> {
    let lib = lib("SLUICE_ELASTICMQ_LIB", ".cache/sluice/elasticmq-1.6.11/lib")?;
    std::fs::create_dir_all(dir).unwrap();
    let conf = dir.join("elasticmq.conf");
    std::fs::write(
        &conf,
        format!(
            "include classpath(\"application.conf\")\n\
             node-address {{ protocol = http, host = 127.0.0.1, port = {port}, context-path = \"\" }}\n\
             rest-sqs {{ enabled = true, bind-port = {port}, bind-hostname = \"127.0.0.1\", sqs-limits = strict }}\n\
             rest-stats {{ enabled = false }}\nqueues {{ }}\n"
        ),
    )
    .unwrap();
    let config = format!("-Dconfig.file={}", conf.display());
    let child = java(dir, &lib, &[&config, "org.elasticmq.server.Main"]);
    crate::net_support::wait_listening(port, 60);
    Some(Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
        dir: dir.to_path_buf(),
    })
}

/// A bucket made on s3proxy (its filesystem backend: a directory).
pub fn make_bucket(s3: &Server, name: &str) -> PathBuf {
    let d = s3.dir.join("data").join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

//! A small tmpfs mounted by a test (as root, which CI is), to fill a disk or make it read-only
//! for real. Where mounting is impossible the test says so and skips, except under `CI=true`,
//! where that is a failure.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Tmpfs {
    pub path: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`64m`, `512k`) at `path` (created), with extra `options`
    /// (`ro`). `None` (after saying so) where mounting is not possible.
    pub fn mount(path: &Path, size: &str, options: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(path).unwrap();
        let opts = if options.is_empty() {
            format!("size={size}")
        } else {
            format!("size={size},{options}")
        };
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &opts, "tmpfs"])
            .arg(path)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs {
                path: path.to_path_buf(),
            }),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                    Err(e) => e.to_string(),
                };
                if std::env::var("CI").as_deref() == Ok("true") {
                    panic!(
                        "cannot mount a tmpfs at {} (root needed): {why}",
                        path.display()
                    );
                }
                eprintln!(
                    "SKIP: cannot mount a tmpfs at {} (root needed): {why}",
                    path.display()
                );
                None
            }
        }
    }

    /// Remounts with other options (`rw`, `ro`).
    pub fn remount(&self, options: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(&self.path)
            .status()
            .unwrap();
        assert!(status.success(), "remount {options} failed");
    }

    /// Bytes free.
    pub fn free(&self) -> u64 {
        let out = Command::new("df")
            .args(["-B1", "--output=avail"])
            .arg(&self.path)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

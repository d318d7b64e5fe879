//! Shared test helper: locating the compatibility corpora in `shared/compat`.

use std::path::PathBuf;

/// The `compat` directory (from `SLUICE_SHARED` or `<project>/../shared`), or `None` when it
/// is absent, in which case the caller skips (but with `CI=true` a missing corpus panics).
pub fn compat_dir() -> Option<PathBuf> {
    let shared = match std::env::var_os("SLUICE_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    };
    let dir = shared.join("compat");
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("compat corpus not found at {}", dir.display());
    }
    println!("skipping: compat corpus not found at {}", dir.display());
    None
}

#[allow(dead_code)]
pub fn read_json(name: &str) -> Option<serde_json::Value> {
    let path = compat_dir()?.join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

//! `load_path`: a file, a directory (lexical order, not recursive) or a glob.

use sluice_config::{load_path, LoadError};
use std::path::PathBuf;

fn temp_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!(
        "sluice-config-{tag}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn names(files: &[(String, String)]) -> Vec<String> {
    files
        .iter()
        .map(|(n, _)| n.rsplit('/').next().unwrap().to_string())
        .collect()
}

fn setup(tag: &str) -> PathBuf {
    let dir = temp_dir(tag);
    for (name, text) in [
        ("20-filter.conf", "filter {}"),
        ("10-input.conf", "input {}"),
        ("30-output.conf", "output {}"),
        ("99-notes.txt", "# notes"),
        ("30-output.conf~", "backup"),
        (".hidden.conf", "hidden"),
        ("Z.conf", "# byte order: after digits"),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    std::fs::create_dir(dir.join("sub.conf")).unwrap();
    std::fs::write(dir.join("sub.conf/40.conf"), "nested").unwrap();
    dir
}

#[test]
fn directory_reads_its_files_in_lexical_order() {
    let dir = setup("dir");
    let files = load_path(dir.to_str().unwrap()).unwrap();
    assert_eq!(
        names(&files),
        [
            "10-input.conf",
            "20-filter.conf",
            "30-output.conf",
            "99-notes.txt",
            "Z.conf"
        ]
    );
    assert_eq!(files[0].1, "input {}");
    assert_eq!(files[0].0, dir.join("10-input.conf").to_str().unwrap());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn glob_patterns() {
    let dir = setup("glob");
    let d = dir.to_str().unwrap();
    let got = |pattern: &str| names(&load_path(&format!("{d}/{pattern}")).unwrap());
    assert_eq!(
        got("*.conf"),
        [
            "10-input.conf",
            "20-filter.conf",
            "30-output.conf",
            "Z.conf"
        ]
    );
    assert_eq!(got("[12]0-*"), ["10-input.conf", "20-filter.conf"]);
    assert_eq!(got("[!1-2]0-*.conf"), ["30-output.conf"]);
    assert_eq!(got("?0-input.conf"), ["10-input.conf"]);
    assert_eq!(got("{10,30}-*.conf"), ["10-input.conf", "30-output.conf"]);
    assert_eq!(got("s*/*.conf"), ["40.conf"]);
    assert_eq!(got(".h*"), [".hidden.conf"]);
    // `**/` is any number of directories, none included (LFV's pipelines use `main/**/*.conf`).
    assert_eq!(
        got("**/*.conf"),
        [
            "10-input.conf",
            "20-filter.conf",
            "30-output.conf",
            "Z.conf",
            "40.conf"
        ]
    );
    assert_eq!(got("**/40.conf"), ["40.conf"]);
    assert!(matches!(
        load_path(&format!("{d}/*.yml")),
        Err(LoadError::NoFiles(_))
    ));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn single_file_and_errors() {
    let dir = setup("file");
    let file = dir.join("20-filter.conf");
    let files = load_path(file.to_str().unwrap()).unwrap();
    assert_eq!(
        files,
        vec![(file.to_str().unwrap().to_string(), "filter {}".to_string())]
    );
    let uri = format!("file://{}", file.to_str().unwrap());
    assert_eq!(load_path(&uri).unwrap().len(), 1);
    let missing = dir.join("nope.conf");
    assert!(matches!(
        load_path(missing.to_str().unwrap()),
        Err(LoadError::Io { .. })
    ));
    std::fs::write(dir.join("bad.conf"), [0xff, 0xfe, b'x']).unwrap();
    let e = load_path(dir.to_str().unwrap()).unwrap_err();
    assert!(
        matches!(e, LoadError::NotUtf8(ref f) if f.len() == 1),
        "{e}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

//! Every repository path a comment or a document names exists: a path that a move or a rename left
//! behind sends the reader nowhere. A path is a word that starts with one of the repository's
//! top-level folders (`src/`, `crates/`, `tests/`, ...) and ends in a file name with an extension;
//! it is looked up from the repository root and, for a file inside a crate, from that crate's root
//! too (a crate's README names its own `src/...`).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

/// The folders whose files are read, and the prefixes that make a word a repository path.
const TOP_LEVEL: &[&str] = &["src", "crates", "tests", "docs", "scripts", "manifests", "inf", "benches"];
/// The files read besides those folders.
const ROOT_FILES: &[&str] = &["README.md", "Cargo.toml", "Makefile.toml", "build.rs"];
/// The kinds of file read.
const TEXT: &[&str] = &["rs", "md", "toml", "sh", "ps1", "psm1", "man", "inx", "asm", "rc"];

fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The text files under `dir`, skipping build output.
fn text_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name != "target" && name != ".git") {
                text_files(&path, files);
            }
        } else if path.extension().is_some_and(|ext| TEXT.iter().any(|text| ext == *text)) {
            files.push(path);
        }
    }
}

/// The crate root of `file` (the nearest folder above it with a Cargo.toml), if below the repository.
fn crate_root(file: &Path) -> Option<&Path> {
    file.ancestors().skip(1).find(|dir| dir.join("Cargo.toml").is_file())
}

/// The repository paths `text` names that exist neither from the repository root nor from the
/// crate root of the file at `file`, with their line numbers.
fn missing_paths(text: &str, file: &Path) -> Vec<(usize, String)> {
    // A word boundary before the prefix, so that `target/x86_64.../src/lib.rs` or `OUT_DIR/...` are
    // not taken for repository paths; file names end in a known extension. Compiled once for all files.
    static PATH: LazyLock<Regex> = LazyLock::new(|| {
        let prefixes = TOP_LEVEL.join("|");
        let pattern = format!(
            r"(?:^|[\s`'(\[])((?:{prefixes})/[A-Za-z0-9_./-]*\.(?:rs|md|toml|sh|ps1|psm1|man|inx|asm|rc|txt))\b"
        );
        Regex::new(&pattern).expect("the path pattern")
    });
    let regex = &*PATH;
    let crate_root = crate_root(file);
    let mut missing = Vec::new();
    for (number, line) in text.lines().enumerate() {
        for capture in regex.captures_iter(line) {
            let path = &capture[1];
            let found =
                repository().join(path).exists() || crate_root.is_some_and(|root| root.join(path).exists());
            if !found {
                missing.push((number + 1, path.to_string()));
            }
        }
    }
    missing
}

#[test]
fn every_path_a_comment_or_document_names_exists() {
    let mut files: Vec<PathBuf> = ROOT_FILES.iter().map(|name| repository().join(name)).collect();
    for folder in TOP_LEVEL {
        text_files(&repository().join(folder), &mut files);
    }
    assert!(files.len() > 100, "only {} files read", files.len());
    let mut missing = Vec::new();
    // This file's own example of a missing path is deliberate.
    for file in files.iter().filter(|file| !file.ends_with("tests/repository_paths.rs")) {
        let text = fs::read_to_string(file).unwrap_or_default();
        for (line, path) in missing_paths(&text, file) {
            missing.push(format!("{}:{line}: {path}", file.strip_prefix(repository()).unwrap().display()));
        }
    }
    assert!(missing.is_empty(), "paths that do not exist:\n{}", missing.join("\n"));
}

#[test]
fn a_path_that_does_not_exist_is_reported() {
    let file = repository().join("src/lib.rs");
    let text = "//! See `src/pmu/events.rs` and src/pmu/no_such_module.rs, (tests/gone.rs) but not target/x/src/y.rs.";
    assert_eq!(
        missing_paths(text, &file),
        [(1, "src/pmu/no_such_module.rs".to_string()), (1, "tests/gone.rs".to_string())]
    );
}

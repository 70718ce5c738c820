//! The rules of the source tree, for the driver (`src/`) and every host crate (`crates/*/src`) alike:
//! every module starts with a `//!` comment that says what it is for, and why, in at most 20 lines
//! (longer reasoning and its sources belong in `docs/`, for the PMU logic `docs/pmu.md`, where a
//! comment can point to it); no source file runs past 600 lines; and no import circle joins more than
//! two files (`imports`). Test modules (`tests.rs`, `*_tests.rs`) are aside from every rule.

mod imports;

use std::fs;
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 20;

/// Most lines a source file may have: past it, a module is doing more than one job.
const MAX_FILE_LINES: usize = 600;

/// Files the length rule does not read, and why. The goldens (`crates/*/tests/golden/`) and the CPUID
/// dumps of cloud machines (`crates/cpuid-dumps/cloud/`) are not under any `src/`, and the walk reads
/// only `.rs` files; this one is the CPUID dumps themselves as a Rust table, data that grows by one
/// entry per CPU model the double runs, not a module doing jobs (it keeps the comment rules).
const LENGTH_EXCEPTIONS: &[&str] = &["crates/cpuid-dumps/src/lib.rs"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn is_test_module(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name.to_string_lossy().ends_with("tests.rs"))
}

fn sources(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display())).flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") && !is_test_module(&path) {
            files.push(path);
        }
    }
}

/// The `src/` folders the rules read: the driver's and every crate's under `crates/` of `root`.
fn source_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![root.join("src")];
    let mut crates: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .expect("crates/")
        .flatten()
        .map(|entry| entry.path().join("src"))
        .filter(|src| src.is_dir())
        .collect();
    crates.sort();
    dirs.extend(crates);
    dirs
}

/// Every source file the rules read, as paths relative to `root`.
fn all_sources(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in source_dirs(root) {
        sources(&dir, &mut files);
    }
    files.iter().map(|file| file.strip_prefix(root).expect("under the root").to_path_buf()).collect()
}

/// The number of `//!` lines a file starts with.
fn module_comment_lines(text: &str) -> usize {
    text.lines().take_while(|line| line.starts_with("//!")).count()
}

/// Whether a file starts with its module comment: `//!` lines, or a `#![doc = ...]` attribute (a crate
/// whose README is its documentation).
fn starts_with_module_comment(text: &str) -> bool {
    text.starts_with("//!") || text.starts_with("#![doc")
}

/// The files of `files` (relative to `root`) over `MAX_FILE_LINES`, but for `LENGTH_EXCEPTIONS`.
fn over_long(root: &Path, files: &[PathBuf]) -> Vec<String> {
    files
        .iter()
        .filter(|file| !LENGTH_EXCEPTIONS.iter().any(|exception| Path::new(exception) == file.as_path()))
        .filter_map(|file| {
            let lines = fs::read_to_string(root.join(file)).ok()?.lines().count();
            (lines > MAX_FILE_LINES).then(|| format!("{}: {lines} lines", file.display()))
        })
        .collect()
}

#[test]
fn the_rules_read_the_driver_and_every_crate() {
    let files = all_sources(root());
    assert!(files.len() > 150, "only {} source files", files.len());
    for crate_dir in
        ["src", "crates/kernel-double/src", "crates/counter-manifest/src", "crates/pdh-harness/src"]
    {
        assert!(files.iter().any(|file| file.starts_with(crate_dir)), "no file of {crate_dir} read");
    }
    assert!(files.iter().all(|file| !is_test_module(file)), "test modules are aside");
    assert!(files.iter().any(|file| file.ends_with("cpu/cpuid.rs")), "nested modules are read");
}

#[test]
fn every_module_starts_with_its_comment() {
    let bare: Vec<String> = all_sources(root())
        .iter()
        .filter(|file| {
            !starts_with_module_comment(&fs::read_to_string(root().join(file)).unwrap_or_default())
        })
        .map(|file| file.display().to_string())
        .collect();
    assert!(bare.is_empty(), "modules that do not start with a //! comment:\n{}", bare.join("\n"));
}

#[test]
fn every_module_comment_is_at_most_twenty_lines() {
    let long: Vec<String> = all_sources(root())
        .iter()
        .filter_map(|file| {
            let lines = module_comment_lines(&fs::read_to_string(root().join(file)).ok()?);
            (lines > MAX_LINES).then(|| format!("{}: {lines} lines", file.display()))
        })
        .collect();
    assert!(long.is_empty(), "module comments over {MAX_LINES} lines:\n{}", long.join("\n"));
}

#[test]
fn a_long_module_comment_is_counted() {
    let text = "//! a\n".repeat(21) + "\nfn main() {}\n//! not the module comment\n";
    assert_eq!(module_comment_lines(&text), 21);
    assert!(starts_with_module_comment(&text));
    assert!(!starts_with_module_comment("use std::fs;\n//! late\n"));
}

#[test]
fn no_source_file_is_over_six_hundred_lines() {
    let long = over_long(root(), &all_sources(root()));
    assert!(long.is_empty(), "source files over {MAX_FILE_LINES} lines:\n{}", long.join("\n"));
}

#[test]
fn a_long_file_in_a_crate_is_found_and_a_test_module_is_not() {
    let root = std::env::temp_dir().join(format!("pmupcw-rules-{}", std::process::id()));
    let src = root.join("crates/some-crate/src");
    fs::create_dir_all(&src).unwrap();
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(src.join("long.rs"), "//! long\n".to_string() + &"fn f() {}\n".repeat(MAX_FILE_LINES)).unwrap();
    fs::write(src.join("long_tests.rs"), "fn f() {}\n".repeat(MAX_FILE_LINES + 1)).unwrap();
    let files = all_sources(&root);
    let long = over_long(&root, &files);
    fs::remove_dir_all(&root).unwrap();
    assert_eq!(files, [PathBuf::from("crates/some-crate/src/long.rs")]);
    assert_eq!(long, [format!("crates/some-crate/src/long.rs: {} lines", MAX_FILE_LINES + 1)]);
}

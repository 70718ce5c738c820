//! The driver's module comments say what each module is for, and why, in at most 20 lines (and no
//! source file runs past 600 lines); longer reasoning and its sources belong in `docs/` (for the PMU
//! logic, `docs/pmu.md`), where a comment can point to it.

use std::fs;
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 20;

fn sources(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src/").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs")
            && !path.file_name().is_some_and(|name| name.to_string_lossy().ends_with("tests.rs"))
        {
            files.push(path);
        }
    }
}

/// The number of `//!` lines a file starts with.
fn module_comment_lines(text: &str) -> usize {
    text.lines().take_while(|line| line.starts_with("//!")).count()
}

#[test]
fn every_module_comment_is_at_most_twenty_lines() {
    let mut files = Vec::new();
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
    assert!(files.len() > 40, "only {} source files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let lines = module_comment_lines(&fs::read_to_string(file).ok()?);
            (lines > MAX_LINES).then(|| format!("{}: {lines} lines", file.display()))
        })
        .collect();
    assert!(long.is_empty(), "module comments over {MAX_LINES} lines:\n{}", long.join("\n"));
}

#[test]
fn a_long_module_comment_is_counted() {
    let text = "//! a\n".repeat(21) + "\nfn main() {}\n//! not the module comment\n";
    assert_eq!(module_comment_lines(&text), 21);
}

/// Most lines a driver source file may have (test modules, `tests.rs` and `*_tests.rs`, aside): past it, a module is
/// doing more than one job.
const MAX_FILE_LINES: usize = 600;

#[test]
fn no_driver_source_file_is_over_six_hundred_lines() {
    let mut files = Vec::new();
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let lines = fs::read_to_string(file).ok()?.lines().count();
            (lines > MAX_FILE_LINES).then(|| format!("{}: {lines} lines", file.display()))
        })
        .collect();
    assert!(long.is_empty(), "source files over {MAX_FILE_LINES} lines:\n{}", long.join("\n"));
}

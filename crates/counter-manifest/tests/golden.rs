//! Golden tests: the output for tests/golden/small.man must equal tests/golden/small.rs and
//! tests/golden/small.rc byte for byte; the output for the driver's manifests/pmupcw.man must equal
//! tests/golden/pmupcw.rs and tests/golden/pmupcw.rc, so that a change of the generator shows in the
//! diff of what the driver really includes (and a change of that manifest is blessed like one); and the
//! output for the crate's example, examples/geometric_waves.man, tests/golden/geometric_waves.*, which
//! the README's example compiles against.
//!
//! After an intended change of the generator, rewrite the goldens and review their diff:
//!
//! ```text
//! BLESS=1 cargo test -p counter-manifest --test golden
//! git diff crates/counter-manifest/tests/golden
//! ```
//!
//! The golden Rust is also compiled into this test (module `small` below, against the crate's
//! contract/pcw.rs, which the driver includes as well), so its generated `layout_tests` run here and
//! check the generator's offsets against rustc's layout, and its typed binding is checked against the
//! module's items. The real manifest's layout tests run with the driver's own unit tests, which
//! include the generated file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use counter_manifest::{Manifest, VersionInfo, compile};

mod common;

/// The `crate::pcw` items the generated code names: the crate's contract, as the driver includes it.
mod pcw {
    include!("../contract/pcw.rs");
}

#[allow(dead_code)]
mod small {
    include!("golden/small.rs");
}

/// The crate's example manifest, whose golden the README's example compiles against.
#[allow(dead_code)]
mod waves {
    include!("golden/geometric_waves.rs");
}

/// How the goldens name their manifest (a stable, relative name).
const SMALL: &str = "tests/golden/small.man";

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Compares `actual` with the golden file, or rewrites the file under `BLESS=1`.
fn check_golden(name: &str, actual: &str) {
    let path = crate_dir().join("tests/golden").join(name);
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = read(&path);
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(e, a)| e != a)
            .map_or_else(|| expected.lines().count().min(actual.lines().count()) + 1, |i| i + 1);
        panic!(
            "{} differs from the generated output, first at line {line}:\n  golden:    {:?}\n  generated: {:?}\n\
             If the change is intended, run `BLESS=1 cargo test -p counter-manifest --test golden` and review \
             the diff.",
            path.display(),
            expected.lines().nth(line - 1).unwrap_or("<end of file>"),
            actual.lines().nth(line - 1).unwrap_or("<end of file>"),
        );
    }
}

fn small() -> counter_manifest::Generated {
    let text = read(&crate_dir().join(SMALL));
    compile(SMALL, &text, Some(&common::small_version_info("0.1.0")))
        .unwrap_or_else(|error| panic!("{error}"))
}

#[test]
fn small_manifest_rust_matches_the_golden() {
    check_golden("small.rs", &small().rust);
}

#[test]
fn small_manifest_rc_matches_the_golden() {
    check_golden("small.rc", &small().rc);
}

/// examples/geometric_waves.man, as the `generate` example compiles it (no VERSIONINFO).
fn example() -> counter_manifest::Generated {
    let name = "examples/geometric_waves.man";
    compile(name, &read(&crate_dir().join(name)), None).unwrap_or_else(|error| panic!("{error}"))
}

#[test]
fn example_manifest_matches_the_golden() {
    let example = example();
    check_golden("geometric_waves.rs", &example.rust);
    check_golden("geometric_waves.rc", &example.rc);
}

/// The README shows the example's summary table as the `generate` example prints it.
#[test]
fn the_readme_shows_the_examples_summary() {
    let readme = read(&crate_dir().join("README.md"));
    let summary = counter_manifest::summary(&example().manifest);
    assert!(readme.contains(&summary), "README.md's summary differs from:\n{summary}");
}

#[test]
fn real_manifest_rust_matches_the_golden() {
    check_golden("pmupcw.rs", &real().rust);
}

#[test]
fn real_manifest_rc_matches_the_golden() {
    check_golden("pmupcw.rc", &real().rc);
}

/// rustfmt with the project's rustfmt.toml leaves `source` as it is.
fn assert_rustfmt_clean(what: &str, source: &str) {
    let config = crate_dir().join("../../rustfmt.toml");
    let mut child = Command::new("rustfmt")
        .arg("--config-path")
        .arg(&config)
        .args(["--edition", "2024", "--emit", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rustfmt runs (rust-toolchain.toml installs the rustfmt component)");
    let mut stdin = child.stdin.take().unwrap();
    let input = source.to_owned();
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(output.status.success(), "rustfmt failed on {what}: {}", String::from_utf8_lossy(&output.stderr));
    let formatted = String::from_utf8(output.stdout).unwrap();
    if formatted != source {
        let line = formatted.lines().zip(source.lines()).position(|(f, s)| f != s).unwrap_or(0) + 1;
        panic!(
            "the Rust generated for {what} is not rustfmt-clean, first at line {line}:\n  generated: {:?}\n  \
             rustfmt:   {:?}",
            source.lines().nth(line - 1).unwrap_or_default(),
            formatted.lines().nth(line - 1).unwrap_or_default()
        );
    }
}

#[test]
fn generated_rust_is_rustfmt_clean() {
    assert_rustfmt_clean("tests/golden/small.man", &small().rust);
    assert_rustfmt_clean("manifests/pmupcw.man", &real().rust);
    assert_rustfmt_clean("examples/geometric_waves.man", &example().rust);
}

#[test]
fn the_golden_rust_compiles_and_behaves() {
    use small::{small_status, widgets};
    // The generated layout tests (small::*::layout_tests) check offsets; this checks the rest.
    assert_eq!(small::PROVIDER_NAME, "small");
    assert_eq!(widgets::NAME_UTF16, "Widgets".encode_utf16().collect::<Vec<_>>());
    assert_eq!(small_status::NAME_UTF16, "Zähler Status".encode_utf16().collect::<Vec<_>>());
    assert_eq!((widgets::MULTIPLE_INSTANCES, small_status::MULTIPLE_INSTANCES), (true, false));
    assert_eq!(widgets::id::EVENTS_TOTAL, 5);
    assert_eq!(
        widgets::DESCRIPTORS.iter().map(|d| (d.id, d.offset, d.size)).collect::<Vec<_>>(),
        [(0, 0, 8), (1, 8, 4), (2, 12, 4), (3, 16, 4), (5, 0, 8)]
    );
    // Three 4-byte fields: a reserved tail makes the block 24 bytes, a multiple of 8.
    assert_eq!(size_of::<widgets::Values>(), 24);

    let full = widgets::Values { events: 1, queue_depth: 2, hits: 3, lookups: 4, reserved: 0 };
    let mut values = full;
    values.clear_unrequested(u64::MAX);
    assert_eq!(values, full);
    values.clear_unrequested(1 << widgets::id::EVENTS_TOTAL);
    assert_eq!(values, widgets::Values { events: 1, ..Default::default() });
    let mut values = full;
    values.clear_unrequested(1 << widgets::id::HIT_PERCENT);
    assert_eq!(values, widgets::Values { hits: 3, ..Default::default() });
    let mut values = full;
    values.clear_unrequested(0);
    assert_eq!(values, widgets::Values::default());

    let atomic = small_status::AtomicValues::new();
    atomic.waits.store(7, std::sync::atomic::Ordering::Relaxed);
    use pcw::CountersetBlock;
    assert_eq!(atomic.values().waits, 7);
    assert_eq!(atomic.waits.into_inner(), 7);

    // AtomicCells: a field stored through its CELLS entry reads back as that field of the block.
    let cells = widgets::AtomicCells::new();
    for (field, cell) in widgets::CELLS.iter().enumerate() {
        let value = field as u64 + 10;
        match *cell {
            pcw::Cell::Wide(i) => {
                cells.wide[usize::from(i)].store(value, std::sync::atomic::Ordering::Relaxed)
            }
            pcw::Cell::Narrow(i) => {
                cells.narrow[usize::from(i)].store(value as u32, std::sync::atomic::Ordering::Relaxed)
            }
        }
    }
    let expected = widgets::Values { events: 10, queue_depth: 11, hits: 12, lookups: 13, reserved: 0 };
    assert_eq!((cells.values(), full.values()), (expected, full));
}

/// What registration reads from a counterset type: the name and descriptors it registers and the
/// instance kind, here as (name, descriptor count, kind).
fn registration<S: pcw::Counterset>() -> (String, usize, pcw::InstanceKind) {
    (String::from_utf16(S::NAME_UTF16).unwrap(), S::DESCRIPTORS.len(), S::INSTANCES)
}

/// The counterset a block belongs to, as registration finds it for a single instance's block.
fn registration_of<B: pcw::CountersetBlock>(_block: &B) -> (String, usize, pcw::InstanceKind) {
    registration::<B::Counterset>()
}

#[test]
fn the_golden_binding_pairs_each_countersets_items() {
    use pcw::InstanceKind::{Multiple, Single};
    use small::{small_status, widgets};
    assert_eq!(registration::<widgets::Counterset>(), ("Widgets".to_owned(), 5, Multiple));
    assert_eq!(registration::<small_status::Counterset>(), ("Zähler Status".to_owned(), 3, Single));
    assert!(std::ptr::eq(<widgets::Counterset as pcw::Counterset>::DESCRIPTORS, widgets::DESCRIPTORS));
    // Both blocks lead back to their own counterset.
    assert_eq!(registration_of(&widgets::Values::default()), registration::<widgets::Counterset>());
    assert_eq!(
        registration_of(&small_status::AtomicValues::new()),
        registration::<small_status::Counterset>()
    );
    // The binding's block is the module's Values.
    let block: <small_status::Counterset as pcw::Counterset>::Values = small_status::Values::default();
    assert_eq!(block, small_status::Values { size: 0, wait_time: 0, waits: 0 });
}

/// The VERSIONINFO build.rs gives pmupcw.sys, at version 0.1.0.
fn pmupcw_version_info() -> VersionInfo {
    VersionInfo {
        version: "0.1.0".to_owned(),
        company: "pmupcw developers".to_owned(),
        description: "pmupcw hardware performance counters driver".to_owned(),
        product: "pmupcw".to_owned(),
        copyright: "MIT OR Apache-2.0".to_owned(),
    }
}

fn real() -> counter_manifest::Generated {
    let path = crate_dir().join("../../manifests/pmupcw.man");
    compile("manifests/pmupcw.man", &read(&path), Some(&pmupcw_version_info()))
        .unwrap_or_else(|error| panic!("{error}"))
}

fn counter_count(manifest: &Manifest) -> usize {
    manifest.counter_sets.iter().map(|set| set.counters.len()).sum()
}

/// Beyond the golden text: the shape the driver's code is written against.
#[test]
fn the_real_manifest_compiles() {
    let generated = real();
    let manifest = &generated.manifest;
    assert_eq!(manifest.provider.name, "pmupcw");
    assert_eq!(manifest.counter_sets.len(), 4);
    // Counters are only ever appended (their ids are the consumers' counter mask bits): at least
    // the 21 + 9 of the first release.
    assert!(counter_count(manifest) >= 30);
    let symbols: Vec<&str> = manifest.counter_sets.iter().map(|set| set.symbol.as_str()).collect();
    assert_eq!(
        symbols,
        ["HardwareCounters", "DriverStatus", "HardwareCountersByCoreType", "MemoryController"]
    );
    assert!(generated.rust.contains("pub mod hardware_counters {"));
    assert!(generated.rust.contains("pub mod driver_status {"));
    assert!(generated.rust.contains("pub mod hardware_counters_by_core_type {"));
    assert!(generated.rust.contains("pub mod memory_controller {"));
    // Every string of the manifest is in the string table.
    for set in &manifest.counter_sets {
        assert!(generated.rc.contains(&counter_manifest::rc_string(&set.name)));
        for description in set.counters.iter().filter_map(|counter| counter.description.as_deref()) {
            assert!(generated.rc.contains(&counter_manifest::rc_string(description)));
        }
    }
    // No padding: each block is exactly its fields.
    for set in &manifest.counter_sets {
        let fields: u32 = set.layout.fields.iter().map(|f| f.size).sum();
        assert_eq!(set.layout.size, fields + if set.layout.reserved_tail { 4 } else { 0 });
        assert_eq!(set.layout.size % 8, 0);
    }
}

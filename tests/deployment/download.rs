//! The downloadable package: `cargo make package` writes target/package/pmupcw-package.zip (the
//! package folder's files at its top level, as the README's Windows quick start unpacks it) and
//! pmupcw-package.zip.sha256 (sha256sum's format), reproducibly.
//!
//! - the zip lists exactly the package folder's files, no folders, each with the bytes of the
//!   package's file, all with one modification time, and the checksum file names its SHA-256;
//! - scripts/linux/package-zip.sh's `make_zip` gives the same bytes for the same files whatever their
//!   modification times, the order they were written in and the time zone, and other bytes for
//!   another package time.
//!
//! The checker is shown to fail on a zip that lacks a file and on a checksum file that names another
//! hash.

use std::io::Read;
use std::process::Command;

use sha2::{Digest, Sha256};

use super::*;

const ZIP: &str = "pmupcw-package.zip";

/// The zip beside the package folder.
fn package_zip(dir: &Path) -> PathBuf {
    dir.parent().expect("the package folder has a parent").join(ZIP)
}

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// What is wrong with the zip at `zip` (and `zip`.sha256) as the download of the package in `dir`.
pub(super) fn zip_problems(zip: &Path, dir: &Path) -> Vec<String> {
    let bytes = match fs::read(zip) {
        Ok(bytes) => bytes,
        Err(error) => return vec![format!("{}: {error}", zip.display())],
    };
    let mut problems = Vec::new();
    let mut archive = match zip::ZipArchive::new(std::io::Cursor::new(&bytes)) {
        Ok(archive) => archive,
        Err(error) => return vec![format!("{} is not a zip: {error}", zip.display())],
    };
    let mut names = BTreeSet::new();
    let mut times = BTreeSet::new();
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).expect("a zip entry");
        let name = entry.name().to_owned();
        if entry.is_dir() || name.contains('/') || name.contains('\\') {
            problems.push(format!("{name}: not a file at the zip's top level"));
            continue;
        }
        times.insert(format!("{:?}", entry.last_modified()));
        let mut content = Vec::new();
        entry.read_to_end(&mut content).expect("the entry decompresses");
        match fs::read(dir.join(&name)) {
            Ok(file) if file == content => {}
            Ok(_) => problems.push(format!("{name}: not the bytes of the package's file")),
            Err(_) => problems.push(format!("{name}: not in the package folder")),
        }
        names.insert(name);
    }
    for missing in package_files(dir).difference(&names) {
        problems.push(format!("{missing}: in the package folder but not in the zip"));
    }
    if times.len() > 1 {
        problems.push(format!("the entries have {} modification times, not one: {times:?}", times.len()));
    }
    let name = zip.file_name().expect("a file name").to_string_lossy();
    let checksum = zip.with_file_name(format!("{name}.sha256"));
    let want = format!("{}  {name}\n", hex(&bytes));
    match fs::read_to_string(&checksum) {
        Ok(text) if text == want => {}
        Ok(text) => problems.push(format!("{}: {text:?}, not {want:?}", checksum.display())),
        Err(error) => problems.push(format!("{}: {error}", checksum.display())),
    }
    problems
}

#[test]
fn the_package_zip_lists_exactly_the_package_files_and_its_checksum_matches() {
    let dir = require_package(&package_dir());
    let problems = zip_problems(&package_zip(&package_dir()), &dir);
    assert!(problems.is_empty(), "{}:\n{}", package_zip(&package_dir()).display(), listed(&problems));
}

/// Runs package-zip.sh's make_zip on `dir` into `out` at `epoch`, with the time zone `zone`.
#[track_caller]
fn make_zip(dir: &Path, out: &Path, epoch: u64, zone: &str) {
    let script = repository().join("scripts/linux/package-zip.sh");
    let output = Command::new("bash")
        .args(["-c", r#"set -euo pipefail; source "$1"; make_zip "$2" "$3" "$4""#, "bash"])
        .arg(&script)
        .arg(dir)
        .arg(out)
        .arg(epoch.to_string())
        .env("TZ", zone)
        .output()
        .expect("bash runs make_zip");
    assert!(output.status.success(), "make_zip failed: {}", String::from_utf8_lossy(&output.stderr));
}

/// A copy of the package folder in `name` under the test's scratch folder, its files written in name
/// order or `reverse`d, each given modification time `mtime`.
fn copy_package(name: &str, reverse: bool, mtime: u64) -> PathBuf {
    let source = require_package(&package_dir());
    let copy = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&copy);
    fs::create_dir_all(&copy).unwrap();
    let mut files: Vec<String> = package_files(&source).into_iter().collect();
    if reverse {
        files.reverse();
    }
    for file in &files {
        fs::copy(source.join(file), copy.join(file)).unwrap();
        let status = Command::new("touch").arg("-d").arg(format!("@{mtime}")).arg(copy.join(file)).status();
        assert!(status.is_ok_and(|status| status.success()), "touch {file}");
    }
    copy
}

#[test]
fn the_zip_is_the_same_for_the_same_files_and_package_time() {
    let first = copy_package("zip-first", false, 1_000_000_000);
    let second = copy_package("zip-second", true, 1_500_000_000);
    let (a, b, c) =
        (first.with_extension("a.zip"), second.with_extension("b.zip"), second.with_extension("c.zip"));
    make_zip(&first, &a, 1_700_000_000, "UTC");
    make_zip(&second, &b, 1_700_000_000, "Asia/Tokyo");
    make_zip(&second, &c, 1_700_086_400, "UTC");
    let (a_bytes, b_bytes, c_bytes) = (fs::read(&a).unwrap(), fs::read(&b).unwrap(), fs::read(&c).unwrap());
    assert!(a_bytes == b_bytes, "the same files at the same package time gave different zips");
    assert!(a_bytes != c_bytes, "another package time gave the same zip: make_zip does not set the time");
    assert_eq!(zip_problems(&a, &first), Vec::<String>::new());
}

#[test]
fn zip_checker_reports_a_missing_file_and_a_wrong_checksum() {
    let dir = copy_package("zip-missing", false, 1_000_000_000);
    let full = copy_package("zip-full", false, 1_000_000_000);
    fs::remove_file(dir.join("pmupcw.cat")).unwrap();
    let out = dir.with_extension("zip");
    make_zip(&dir, &out, 1_700_000_000, "UTC");
    assert_reported(&zip_problems(&out, &full), "pmupcw.cat: in the package folder but not in the zip");
    let whole = full.with_extension("zip");
    make_zip(&full, &whole, 1_700_000_000, "UTC");
    assert_eq!(zip_problems(&whole, &full), Vec::<String>::new());
    fs::write(
        whole.with_file_name(format!("{}.sha256", whole.file_name().unwrap().to_string_lossy())),
        "0  x\n",
    )
    .unwrap();
    assert_reported(&zip_problems(&whole, &full), ".sha256: \"0  x\\n\", not");
}

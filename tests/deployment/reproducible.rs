//! Packaging an unchanged source again changes nothing.
//!
//! - scripts/linux/driver-ver.sh's `source_epoch`, the time the build number comes from when
//!   SOURCE_DATE_EPOCH is not set, is the source's time and not the clock: in a scratch git repository
//!   it is the last commit's committer time, or the modification time of a later uncommitted change
//!   (modified, untracked, deleted: its folder's), never that of an ignored file; outside a git
//!   repository it fails.
//! - scripts/linux/package.sh run again, alone and as two overlapping runs, leaves the driver build,
//!   the signed pmupcw.sys, the attestation cabinet and the downloadable zip with its checksum as
//!   they were (bytes and modification times), and every run succeeds (tests/deployment/download.rs
//!   shows the zip's bytes depend on nothing but the files and the package's time).
//!
//! The epoch checker is shown to fail on a copy of driver-ver.sh whose `source_epoch` answers the
//! clock, as package.sh's build time did before.

use std::process::{Child, Command, Output, Stdio};
use std::time::SystemTime;

use super::*;

const COMMITTED: u64 = 1_700_000_000;

/// Runs `command` in `dir`, failing the test with its stderr when it fails.
#[track_caller]
fn run(dir: &Path, command: &mut Command) -> Output {
    let output = command.current_dir(dir).output().expect("the command runs");
    assert!(output.status.success(), "{command:?} failed: {}", String::from_utf8_lossy(&output.stderr));
    output
}

fn git(dir: &Path, args: &[&str]) {
    let date = format!("@{COMMITTED} +0000");
    run(
        dir,
        Command::new("git")
            .args(["-c", "user.name=pmupcw test", "-c", "user.email=test@pmupcw.invalid"])
            .args(args)
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date),
    );
}

fn touch(path: &Path, epoch: u64) {
    run(Path::new("/"), Command::new("touch").arg("-d").arg(format!("@{epoch}")).arg(path));
}

/// What `source_epoch` of `script` says for `dir`, or why it failed.
fn source_epoch(script: &Path, dir: &Path) -> Result<u64, String> {
    let output = Command::new("bash")
        .args(["-c", r#"source "$1" && source_epoch "$2""#, "bash"])
        .arg(script)
        .arg(dir)
        .output()
        .map_err(|error| format!("cannot run bash: {error}"))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).trim().to_owned());
    }
    let text = String::from_utf8_lossy(&output.stdout);
    text.trim().parse().map_err(|_| format!("source_epoch printed {text:?}"))
}

/// What is wrong with `script`'s `source_epoch` in a scratch repository at `dir`, step by step.
fn source_epoch_problems(script: &Path, dir: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let mut expect = |what: &str, want: u64| match source_epoch(script, dir) {
        Ok(got) if got == want => {}
        Ok(got) => problems.push(format!("{what}: source_epoch is {got}, not {want}")),
        Err(error) => problems.push(format!("{what}: {error}")),
    };
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("src/a.rs"), "fn a() {}\n").unwrap();
    fs::write(dir.join("src/gone.rs"), "fn gone() {}\n").unwrap();
    git(dir, &["init", "-q"]);
    fs::write(dir.join(".git/info/exclude"), "*.log\n").unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "scratch"]);
    // The files were written now, after the commit's time: a clean tree counts by the commit.
    expect("a clean tree", COMMITTED);
    touch(&dir.join("src/a.rs"), COMMITTED - 100);
    fs::write(dir.join("build.log"), "ignored\n").unwrap();
    touch(&dir.join("build.log"), COMMITTED + 900);
    expect("an ignored file and a touch before the commit", COMMITTED);
    fs::write(dir.join("src/a.rs"), "fn a() { changed() }\n").unwrap();
    touch(&dir.join("src/a.rs"), COMMITTED + 100);
    expect("a modified file", COMMITTED + 100);
    fs::write(dir.join("src/new.rs"), "fn new() {}\n").unwrap();
    touch(&dir.join("src/new.rs"), COMMITTED + 200);
    expect("an untracked file", COMMITTED + 200);
    fs::remove_file(dir.join("src/gone.rs")).unwrap();
    touch(&dir.join("src"), COMMITTED + 300);
    expect("a deleted file (its folder)", COMMITTED + 300);
    problems
}

fn scratch(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

#[test]
fn the_build_time_is_the_source_s_time() {
    let problems =
        source_epoch_problems(&repository().join("scripts/linux/driver-ver.sh"), &scratch("epoch"));
    assert!(problems.is_empty(), "scripts/linux/driver-ver.sh:\n{}", listed(&problems));
    // Not under target/: that is inside this repository's work tree.
    let outside = env::temp_dir().join(format!("pmupcw-not-a-repository-{}", std::process::id()));
    fs::create_dir_all(&outside).unwrap();
    let error = source_epoch(&repository().join("scripts/linux/driver-ver.sh"), &outside)
        .expect_err("outside a git repository source_epoch must fail");
    fs::remove_dir_all(&outside).unwrap();
    assert!(error.contains("SOURCE_DATE_EPOCH"), "{error}");
}

#[test]
fn epoch_checker_reports_the_clock() {
    let text = read_text(&repository().join("scripts/linux/driver-ver.sh"));
    let answer = "    echo \"$epoch\"\n}";
    assert!(text.contains(answer), "source_epoch ends with {answer:?}");
    let clock = scratch("driver-ver-clock.sh");
    fs::write(&clock, text.replace(answer, "    date +%s\n}")).unwrap();
    let problems = source_epoch_problems(&clock, &scratch("epoch-clock"));
    assert!(problems.iter().any(|problem| problem.starts_with("a clean tree")), "{}", listed(&problems));
}

/// package.sh, started with the environment of a shell (cargo's variables for this test removed).
fn start_package() -> Child {
    let mut command = Command::new("bash");
    command.arg(repository().join("scripts/linux/package.sh")).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (name, _) in env::vars_os() {
        let name = name.to_string_lossy();
        if (name == "CARGO" || name.starts_with("CARGO_")) && name != "CARGO_HOME" {
            command.env_remove(name.as_ref());
        }
    }
    command.spawn().expect("bash runs package.sh")
}

#[track_caller]
fn finish(child: Child) {
    let output = child.wait_with_output().expect("package.sh finishes");
    assert!(
        output.status.success(),
        "package.sh failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Where the package link points, and each built file's bytes and modification time.
fn snapshot() -> (PathBuf, Vec<(PathBuf, Vec<u8>, SystemTime)>) {
    let root = repository().join("target");
    let link = fs::read_link(root.join("package/pmupcw")).expect("target/package/pmupcw is a link");
    let files = [
        "package/pmupcw/pmupcw.sys",
        "package/pmupcw/pmupcw.cat",
        "package/pmupcw-attestation.cab",
        "package/pmupcw-package.zip",
        "package/pmupcw-package.zip.sha256",
    ]
    .iter()
    .map(|file| root.join(file))
    .chain([root.join("x86_64-pc-windows-msvc/release/pmupcw.dll")])
    .map(|path| {
        let bytes = fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let modified = fs::metadata(&path).and_then(|meta| meta.modified()).expect("a modification time");
        (path, bytes, modified)
    })
    .collect();
    (link, files)
}

#[test]
fn packaging_again_rebuilds_and_re_signs_nothing_even_when_runs_overlap() {
    require_package(&package_dir());
    // Brings the package up to date with the source as it is now (a no-op after `cargo make package`).
    finish(start_package());
    let before = snapshot();
    finish(start_package());
    assert!(before == snapshot(), "a second package.sh run changed the package or rebuilt the driver");
    let (first, second) = (start_package(), start_package());
    finish(first);
    finish(second);
    assert!(
        before == snapshot(),
        "two overlapping package.sh runs changed the package or rebuilt the driver"
    );
}

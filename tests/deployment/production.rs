//! The last Linux step of the production path: scripts/linux/production-package.sh puts the signed
//! files Partner Center returns back into the package (docs/signing.md).
//!
//! Partner Center cannot be called from a test, so Microsoft's signature is stood in for by a
//! throwaway certificate made here: what the script is checked for is the layout it makes (the
//! package's files, Microsoft's pmupcw.sys and pmupcw.cat in place of the test-signed ones, no
//! pmupcw.cer, the zip and its checksum) and what it refuses (signed files of another build, a file
//! without a signature). Whether a signature is Microsoft's is decided on Windows by
//! Install-Pmupcw.ps1 (tests/deployment/boot_checks.rs runs that decision).

use std::process::{Command, Output};

use super::download::zip_problems;
use super::*;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

#[track_caller]
fn run(command: &mut Command) -> Output {
    let output = command.output().expect("the command runs");
    assert!(output.status.success(), "{command:?}: {}", String::from_utf8_lossy(&output.stderr));
    output
}

/// A folder like Partner Center's signed files for the package in `package`: its INF, and its
/// pmupcw.sys (test signature removed) and catalog signed with a throwaway certificate.
fn signed_files(package: &Path, name: &str) -> PathBuf {
    let dir = scratch(name);
    let key = dir.join("stand-in.key");
    let pem = dir.join("stand-in.pem");
    run(Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-sha256", "-nodes", "-days", "1"])
        .args(["-subj", "/CN=stand-in for Microsoft Windows Hardware Compatibility Publisher"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&pem));
    let signed = dir.join("pmupcw");
    fs::create_dir_all(&signed).unwrap();
    fs::copy(package.join("pmupcw.inf"), signed.join("pmupcw.inf")).unwrap();
    let unsigned = dir.join("unsigned.sys");
    run(Command::new("osslsigncode")
        .arg("remove-signature")
        .arg("-in")
        .arg(package.join("pmupcw.sys"))
        .arg("-out")
        .arg(&unsigned));
    for (input, output) in
        [(unsigned, signed.join("pmupcw.sys")), (package.join("pmupcw.cat"), signed.join("pmupcw.cat"))]
    {
        run(Command::new("osslsigncode")
            .args(["sign", "-h", "sha256", "-certs"])
            .arg(&pem)
            .arg("-key")
            .arg(&key)
            .arg("-in")
            .arg(&input)
            .arg("-out")
            .arg(&output));
    }
    signed
}

fn production_package(signed: &Path, package: &Path, out: &Path) -> Output {
    Command::new("bash")
        .arg(repository().join("scripts/linux/production-package.sh"))
        .arg(signed)
        .arg(package)
        .arg(out)
        .output()
        .expect("bash runs production-package.sh")
}

#[test]
fn the_signed_files_go_back_into_the_package_without_the_certificate() {
    let package = require_package(&package_dir());
    let signed = signed_files(&package, "production-signed");
    let out = scratch("production-out").join("pmupcw-production");
    let output = production_package(&signed, &package, &out);
    assert!(output.status.success(), "production-package.sh: {}", String::from_utf8_lossy(&output.stderr));

    let mut expected = package_files(&package);
    expected.remove("pmupcw.cer");
    assert_eq!(package_files(&out), expected, "the production package's files");
    for file in &expected {
        let from =
            if file == "pmupcw.sys" || file == "pmupcw.cat" { signed.join(file) } else { package.join(file) };
        assert!(
            fs::read(out.join(file)).unwrap() == fs::read(&from).unwrap(),
            "{file} is not {}",
            from.display()
        );
    }
    let zip = out.with_file_name("pmupcw-production-package.zip");
    assert_eq!(zip_problems(&zip, &out), Vec::<String>::new());
}

#[test]
fn production_package_refuses_another_build_and_an_unsigned_file() {
    let package = require_package(&package_dir());
    let out = scratch("production-refused").join("pmupcw-production");

    let other = signed_files(&package, "production-other-build");
    let inf = read_text(&other.join("pmupcw.inf"));
    let driver_ver = inf.lines().find(|line| line.starts_with("DriverVer")).expect("a DriverVer line");
    fs::write(other.join("pmupcw.inf"), inf.replacen(driver_ver, "DriverVer   = 01/01/2020,0.1.0.1", 1))
        .unwrap();
    let output = production_package(&other, &package, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("these signed files are of another submission"),
        "{stderr}"
    );
    assert!(!out.exists(), "a refused run left {}", out.display());

    let unsigned = signed_files(&package, "production-unsigned");
    run(Command::new("osslsigncode")
        .arg("remove-signature")
        .arg("-in")
        .arg(package.join("pmupcw.sys"))
        .arg("-out")
        .arg(unsigned.join("unsigned.sys")));
    fs::rename(unsigned.join("unsigned.sys"), unsigned.join("pmupcw.sys")).unwrap();
    let output = production_package(&unsigned, &package, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("pmupcw.sys carries no signature"), "{stderr}");
}

//! The catalog of the real package (target/package/pmupcw/, made by `cargo make package`): generated,
//! signed with osslsigncode and the package's test certificate, read back, and checked member by
//! member against hashes computed independently (sha256sum/sha1sum for flat files; for the PE image
//! hash, the digest osslsigncode recorded in the driver's own signature), and against osslsigncode's
//! own catalog verification. Only osslsigncode's exit status is read, never its wording, which
//! differs from one build to another.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use driver_catalog::catalog::{
    OID_CATALOG_LIST, OID_CATALOG_LIST_MEMBER, OID_CATALOG_LIST_MEMBER2, OID_SHA1, OID_SHA256,
    OID_SPC_CAB_DATA, OID_SPC_PE_IMAGE_DATA, SIP_GUID_FLAT, SIP_GUID_PE,
};
use driver_catalog::{
    CatalogOptions, CatalogVersion, MemberKind, ParsedCatalog, build_unsigned_catalog, members_for,
    package_files, parse_catalog,
};

const THIS_UPDATE: u64 = 1_767_225_600; // 2026-01-01 00:00:00 UTC

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn package_dir() -> PathBuf {
    let dir = root().join("target/package/pmupcw");
    for name in ["pmupcw.inf", "pmupcw.sys", "pmupcw.man"] {
        assert!(dir.join(name).is_file(), "{} is missing: run cargo make package", dir.join(name).display());
    }
    dir
}

fn cert_files() -> (PathBuf, PathBuf) {
    let dir = root().join("target/test-certificate");
    let (pem, key) = (dir.join("pmupcw-test.pem"), dir.join("pmupcw-test.key"));
    assert!(
        pem.is_file() && key.is_file(),
        "{} has no test certificate: run cargo make package",
        dir.display()
    );
    (pem, key)
}

fn run(command: &mut Command) -> Output {
    command.output().unwrap_or_else(|e| panic!("{command:?}: {e} (is osslsigncode installed?)"))
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("driver-catalog-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Generates and signs the package catalog (version 2) in `dir`; returns the signed catalog's path.
fn signed_catalog(dir: &Path) -> PathBuf {
    signed_catalog_version(dir, CatalogVersion::V2)
}

fn signed_catalog_version(dir: &Path, version: CatalogVersion) -> PathBuf {
    let package = package_dir();
    let files = package_files(&package.join("pmupcw.inf")).unwrap();
    sign_catalog_of(dir, &files, version)
}

/// Builds the catalog of `files`, signs it with the test certificate as `dir/pmupcw.cat`, and returns
/// that path.
fn sign_catalog_of(dir: &Path, files: &[PathBuf], version: CatalogVersion) -> PathBuf {
    let (pem, key) = cert_files();
    let members = members_for(files).unwrap();
    let options = CatalogOptions { this_update: THIS_UPDATE, version, ..CatalogOptions::default() };
    let unsigned = dir.join("unsigned.cat");
    std::fs::write(&unsigned, build_unsigned_catalog(&members, &options).unwrap()).unwrap();
    let signed = dir.join("pmupcw.cat");
    let output = run(Command::new("osslsigncode")
        .args(["sign", "-h", "sha256", "-certs"])
        .arg(&pem)
        .arg("-key")
        .arg(&key)
        .arg("-in")
        .arg(&unsigned)
        .arg("-out")
        .arg(&signed));
    assert!(output.status.success(), "osslsigncode sign failed:\n{}", text(&output));
    signed
}

fn verify_in_catalog(catalog: &Path, file: &Path) -> Output {
    let (pem, _) = cert_files();
    run(Command::new("osslsigncode")
        .arg("verify")
        .arg("-CAfile")
        .arg(pem)
        .arg("-catalog")
        .arg(catalog)
        .arg("-in")
        .arg(file))
}

fn checksum(tool: &str, path: &Path) -> String {
    let output = run(Command::new(tool).arg(path));
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stdout).split_whitespace().next().unwrap().to_ascii_uppercase()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

/// The Authenticode image hash of `file` with the digest `D`, after two checks that do not share its
/// code: the SHA-256 hash equals the digest osslsigncode recorded when it signed the image (read
/// from the embedded signature), and osslsigncode, computing the hash its own way, finds the image
/// in `catalog` (its exit status; its wording differs between builds and is not read).
fn image_hash<D: sha1::Digest + sha1::digest::Update>(catalog: &Path, file: &Path) -> String {
    let data = std::fs::read(file).unwrap();
    let sha256 = driver_catalog::pe::authenticode_digest::<sha2::Sha256>(&data).unwrap();
    let embedded = driver_catalog::pe::embedded_signature_digest(&data).unwrap();
    assert_eq!(hex(&sha256), hex(&embedded), "{}: image hash differs from its signature's", file.display());
    let output = verify_in_catalog(catalog, file);
    assert!(output.status.success(), "{} is not found in the catalog:\n{}", file.display(), text(&output));
    hex(&driver_catalog::pe::authenticode_digest::<D>(&data).unwrap())
}

/// What makes a tampered image fail: osslsigncode finds the original in `catalog` and not the
/// tampered copy (exit statuses), and the catalog, read by our parser, lists the original's image
/// hash and not the copy's. An error names the first check that did not hold.
fn tampered_copy_is_rejected(catalog: &Path, original: &Path, tampered: &Path) -> Result<(), String> {
    let output = verify_in_catalog(catalog, original);
    if !output.status.success() {
        return Err(format!("the original is not found in the catalog:\n{}", text(&output)));
    }
    let output = verify_in_catalog(catalog, tampered);
    if output.status.success() {
        return Err(format!("osslsigncode accepted the tampered copy:\n{}", text(&output)));
    }
    let parsed = parse_catalog(&std::fs::read(catalog).unwrap()).map_err(|e| e.to_string())?;
    let hash = |path: &Path| {
        driver_catalog::pe::authenticode_digest::<sha2::Sha256>(&std::fs::read(path).unwrap()).unwrap()
    };
    let listed = |digest: &[u8]| parsed.members.iter().any(|m| m.identifier == digest);
    if !listed(&hash(original)) {
        return Err("the catalog does not list the original's image hash".into());
    }
    if listed(&hash(tampered)) {
        return Err("the catalog lists the tampered copy's image hash".into());
    }
    Ok(())
}

/// A copy of the package's pmupcw.sys in `dir` with one byte changed inside the image (past the
/// headers), so that its image hash differs.
fn tampered_driver(dir: &Path) -> PathBuf {
    let mut image = std::fs::read(package_dir().join("pmupcw.sys")).unwrap();
    let offset = image.len() / 2;
    image[offset] ^= 0x01;
    let tampered = dir.join("tampered").join("pmupcw.sys");
    std::fs::create_dir_all(tampered.parent().unwrap()).unwrap();
    std::fs::write(&tampered, &image).unwrap();
    tampered
}

fn member_for<'a>(catalog: &'a ParsedCatalog, name: &str) -> &'a driver_catalog::catalog::ParsedMember {
    let mut found = catalog.members.iter().filter(|m| m.attribute("File") == Some(name));
    let member = found.next().unwrap_or_else(|| panic!("no member for {name}"));
    assert!(found.next().is_none(), "{name} is listed twice");
    member
}

#[test]
fn package_files_are_the_inf_and_its_source_disks_files() {
    let package = package_dir();
    let files = package_files(&package.join("pmupcw.inf")).unwrap();
    let names: Vec<_> = files.iter().map(|f| f.file_name().unwrap().to_str().unwrap().to_string()).collect();
    assert_eq!(names, ["pmupcw.inf", "pmupcw.sys", "pmupcw.man"]);
}

#[test]
fn signed_catalog_lists_each_package_file_with_its_hash() {
    let dir = scratch("parse");
    let signed = signed_catalog(&dir);
    let catalog = parse_catalog(&std::fs::read(&signed).unwrap()).unwrap();
    assert_eq!(catalog.subject_usage, [OID_CATALOG_LIST]);
    assert_eq!(catalog.subject_algorithm, OID_CATALOG_LIST_MEMBER2);
    assert_eq!(catalog.this_update, "260101000000Z");
    assert_eq!(catalog.list_identifier.len(), 16);
    assert_eq!(catalog.signer_count, 1, "osslsigncode added one signer");
    assert!(catalog.has_certificates);
    assert!(catalog.attributes.contains(&("OSAttr".to_string(), "2:10.0".to_string())));
    assert!(catalog.attributes.contains(&("OS".to_string(), "_v100_X64".to_string())));
    // Per file: a SHA-256 entry with the attributes and a SHA-1 lookup entry.
    assert_eq!(catalog.members.len(), 6);
    let ids: Vec<&[u8]> = catalog.members.iter().map(|m| m.identifier.as_slice()).collect();
    assert!(ids.is_sorted(), "entries are sorted by identifier");

    let package = package_dir();
    for name in ["pmupcw.inf", "pmupcw.sys", "pmupcw.man"] {
        let member = member_for(&catalog, name);
        assert_eq!(member.attribute("OSAttr"), Some("2:10.0"));
        assert_eq!(member.digest_algorithm, OID_SHA256);
        assert_eq!(member.identifier, member.digest, "{name}: the identifier is the digest");
        let (sha256, sha1) = if name.ends_with(".sys") {
            assert_eq!(member.data_type, OID_SPC_PE_IMAGE_DATA);
            assert_eq!(member.member_info2, Some(0));
            let sha256 = image_hash::<sha2::Sha256>(&signed, &package.join(name));
            (sha256, image_hash::<sha1::Sha1>(&signed, &package.join(name)))
        } else {
            assert_eq!(member.data_type, OID_SPC_CAB_DATA);
            assert_eq!(member.member_info2, Some(2));
            (checksum("sha256sum", &package.join(name)), checksum("sha1sum", &package.join(name)))
        };
        assert_eq!(member.tag, sha256, "{name}: hash differs from the independent one");
        let lookup = catalog
            .members
            .iter()
            .find(|m| m.tag == sha1)
            .unwrap_or_else(|| panic!("{name}: no SHA-1 entry"));
        assert_eq!(lookup.member_info2, member.member_info2);
        assert!(lookup.attributes.is_empty() && lookup.digest.is_empty());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn version_1_catalog_lists_sha1_tags() {
    let dir = scratch("v1");
    let signed = signed_catalog_version(&dir, CatalogVersion::V1);
    let catalog = parse_catalog(&std::fs::read(&signed).unwrap()).unwrap();
    assert_eq!(catalog.subject_algorithm, OID_CATALOG_LIST_MEMBER);
    assert_eq!(catalog.members.len(), 3);
    let tags: Vec<&str> = catalog.members.iter().map(|m| m.tag.as_str()).collect();
    assert!(tags.is_sorted(), "members are sorted by tag");
    let package = package_dir();
    for name in ["pmupcw.inf", "pmupcw.sys", "pmupcw.man"] {
        let member = member_for(&catalog, name);
        assert_eq!(member.digest_algorithm, OID_SHA1);
        assert_eq!(member.tag, hex(&member.digest), "{name}: the tag is the digest in hex");
        if name.ends_with(".sys") {
            assert_eq!(member.subject_guid.as_deref(), Some(SIP_GUID_PE));
            assert_eq!(member.tag, image_hash::<sha1::Sha1>(&signed, &package.join(name)));
        } else {
            assert_eq!(member.subject_guid.as_deref(), Some(SIP_GUID_FLAT));
            assert_eq!(member.tag, checksum("sha1sum", &package.join(name)));
        }
    }
    let output = verify_in_catalog(&signed, &package.join("pmupcw.sys"));
    assert!(output.status.success(), "{}", text(&output));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn osslsigncode_accepts_the_signed_catalog() {
    let dir = scratch("verify");
    let signed = signed_catalog(&dir);
    let (pem, _) = cert_files();
    let output =
        run(Command::new("osslsigncode").arg("verify").arg("-CAfile").arg(&pem).arg("-in").arg(&signed));
    assert!(output.status.success(), "catalog signature does not verify:\n{}", text(&output));

    // The unsigned catalog has no signature to verify.
    let output = run(Command::new("osslsigncode")
        .arg("verify")
        .arg("-CAfile")
        .arg(&pem)
        .arg("-in")
        .arg(dir.join("unsigned.cat")));
    assert!(!output.status.success(), "an unsigned catalog verified:\n{}", text(&output));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn osslsigncode_finds_the_driver_in_the_catalog_and_rejects_a_tampered_copy() {
    let dir = scratch("member");
    let signed = signed_catalog(&dir);
    let tampered = tampered_driver(&dir);
    tampered_copy_is_rejected(&signed, &package_dir().join("pmupcw.sys"), &tampered)
        .unwrap_or_else(|problem| panic!("{problem}"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The check above goes red when the catalog would accept the tampered image: here a signed catalog
/// that lists the tampered copy's hash too.
#[test]
fn a_catalog_listing_the_tampered_hash_fails_the_tampered_copy_check() {
    let dir = scratch("mutant");
    let tampered = tampered_driver(&dir);
    let package = package_dir();
    let mut files = package_files(&package.join("pmupcw.inf")).unwrap();
    // A member per file name: the same tampered bytes under another name.
    let listed_copy = dir.join("pmupcw-tampered.sys");
    std::fs::copy(&tampered, &listed_copy).unwrap();
    files.push(listed_copy);
    let signed = sign_catalog_of(&dir, &files, CatalogVersion::V2);
    let verdict = tampered_copy_is_rejected(&signed, &package.join("pmupcw.sys"), &tampered);
    assert!(verdict.is_err(), "a catalog that lists the tampered image passed the check");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tampered_flat_files_no_longer_match_their_members() {
    // osslsigncode cannot look up INF/manifest files in a catalog (it only knows PE, CAB and MSI), so
    // the flat members are checked here: a changed byte gives a hash that is not in the catalog.
    let dir = scratch("flat");
    let catalog = parse_catalog(&std::fs::read(signed_catalog(&dir)).unwrap()).unwrap();
    let package = package_dir();
    for name in ["pmupcw.inf", "pmupcw.man"] {
        let mut data = std::fs::read(package.join(name)).unwrap();
        let original = driver_catalog::Member::from_contents(name, &data).unwrap();
        assert!(catalog.members.iter().any(|m| m.identifier == original.sha256));
        assert!(catalog.members.iter().any(|m| m.identifier == original.sha1));
        data[0] ^= 0x20;
        let changed = driver_catalog::Member::from_contents(name, &data).unwrap();
        assert_eq!(changed.kind, MemberKind::Flat);
        assert!(
            catalog.members.iter().all(|m| m.identifier != changed.sha256 && m.identifier != changed.sha1),
            "{name}: tampered copy still listed"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pe_image_hash_matches_the_drivers_own_signature() {
    // pmupcw.sys carries an embedded SHA-256 Authenticode signature whose message digest is the image
    // hash osslsigncode computed when it signed; read back from the signature, it must be ours.
    let sys = package_dir().join("pmupcw.sys");
    let data = std::fs::read(&sys).unwrap();
    let ours: String = driver_catalog::pe::authenticode_digest::<sha2::Sha256>(&data)
        .unwrap()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    let embedded = driver_catalog::pe::embedded_signature_digest(&data).unwrap();
    assert_eq!(hex(&embedded), ours, "the digest osslsigncode signed is not the image hash we compute");
}

#[test]
fn the_binary_writes_the_same_catalog_as_the_library() {
    let dir = scratch("bin");
    let package = package_dir();
    let out = dir.join("pmupcw.cat");
    let output = run(Command::new(env!("CARGO_BIN_EXE_driver-catalog"))
        .arg("--inf")
        .arg(package.join("pmupcw.inf"))
        .arg("--out")
        .arg(&out)
        .args(["--time", &THIS_UPDATE.to_string()]));
    assert!(output.status.success(), "{}", text(&output));
    let members = members_for(&package_files(&package.join("pmupcw.inf")).unwrap()).unwrap();
    let expected = build_unsigned_catalog(
        &members,
        &CatalogOptions { this_update: THIS_UPDATE, ..CatalogOptions::default() },
    )
    .unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), expected);

    // --files names the members explicitly (the INF is always one).
    let out2 = dir.join("explicit.cat");
    let output = run(Command::new(env!("CARGO_BIN_EXE_driver-catalog"))
        .arg("--inf")
        .arg(package.join("pmupcw.inf"))
        .arg("--files")
        .arg(package.join("pmupcw.sys"))
        .arg(package.join("pmupcw.man"))
        .arg("--out")
        .arg(&out2)
        .args(["--time", &THIS_UPDATE.to_string()]));
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(std::fs::read(&out2).unwrap(), expected);

    let output =
        run(Command::new(env!("CARGO_BIN_EXE_driver-catalog")).arg("--inf").arg(package.join("pmupcw.inf")));
    assert!(!output.status.success(), "--out is required");
    let _ = std::fs::remove_dir_all(&dir);
}

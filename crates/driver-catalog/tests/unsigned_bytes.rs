//! Pins the unsigned catalog's bytes for a fixed input, so that a change to how the CTL is encoded
//! (rather than to what it says) shows up as a difference here before osslsigncode or Windows sees it.
//!
//! The members carry made-up hashes, so no file is read and the output depends on the encoder alone.
//! To accept a deliberate change of layout, rerun with `PIN_CATALOG_BYTES=write` and review the diff
//! of tests/golden/*.cat (for example with `dumpasn1` or `openssl asn1parse -inform DER`).

use std::path::PathBuf;

use driver_catalog::{
    CatalogOptions, CatalogVersion, Member, MemberKind, build_unsigned_catalog, parse_catalog,
};

/// Two PE images and two flat files, with names that need UTF-16 beyond ASCII, enough entries that
/// the trusted-subject list needs a multi-byte length, and hashes whose sort order differs from the
/// member order (the CTL is sorted by subjectIdentifier).
fn members() -> Vec<Member> {
    let member = |name: &str, kind, seed: u8| Member {
        file_name: name.to_string(),
        kind,
        sha1: (0..20).map(|i| seed.wrapping_mul(37).wrapping_add(i * 11)).collect(),
        sha256: (0..32).map(|i| seed.wrapping_mul(91).wrapping_add(i * 7)).collect(),
    };
    vec![
        member("pmupcw.inf", MemberKind::Flat, 9),
        member("pmupcw.sys", MemberKind::Pe, 3),
        member("pmupcw.man", MemberKind::Flat, 200),
        member("Zählerdienst.dll", MemberKind::Pe, 128),
    ]
}

fn options(version: CatalogVersion) -> CatalogOptions {
    // 2024-02-29 12:34:56 UTC.
    CatalogOptions { version, this_update: 1_709_210_096, ..CatalogOptions::default() }
}

fn check_pinned(name: &str, version: CatalogVersion) {
    let bytes = build_unsigned_catalog(&members(), &options(version)).expect("the catalog encodes");
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var("PIN_CATALOG_BYTES").as_deref() == Ok("write") {
        std::fs::write(&golden, &bytes).expect("write the golden catalog");
    }
    let expected = std::fs::read(&golden).unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
    if let Some(offset) = bytes.iter().zip(&expected).position(|(a, b)| a != b) {
        panic!(
            "{name}: byte {offset} is {:#04x}, the pinned catalog has {:#04x} ({} bytes built, {} pinned)",
            bytes[offset],
            expected[offset],
            bytes.len(),
            expected.len()
        );
    }
    assert_eq!(bytes.len(), expected.len(), "{name}: same prefix, different length");
    // The pinned bytes are a catalog the reader understands, not just any bytes.
    let parsed = parse_catalog(&expected).expect("the pinned catalog parses");
    let entries_per_member = if version == CatalogVersion::V2 { 2 } else { 1 };
    assert_eq!(parsed.members.len(), members().len() * entries_per_member);
}

#[test]
fn version_2_catalog_bytes_are_pinned() {
    check_pinned("unsigned_v2.cat", CatalogVersion::V2);
}

#[test]
fn version_1_catalog_bytes_are_pinned() {
    check_pinned("unsigned_v1.cat", CatalogVersion::V1);
}

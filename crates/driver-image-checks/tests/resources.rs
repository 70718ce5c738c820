//! The resource readers on a DLL built at test time from tests/fixtures/resources.rc (compiled by
//! llvm-rc, linked by rustup's rust-lld), on images without resources, and on corrupted resources.

// tests/rules.rs uses the rest of the synthetic images.
#[allow(dead_code)]
mod synthetic;

use std::collections::BTreeMap;
use std::env;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{self, Command};
use std::sync::OnceLock;

use counter_manifest::{compile_rc, find_llvm_rc};
use driver_image_checks::{
    Expectations, ResourceError, Rule, VersionInfo, check_rule, section_file_range, string_table,
    version_info,
};
use synthetic::{Spec, build};

const RESOURCES_RC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/resources.rc");
/// What [`check_rule`] needs besides the image; the rules run here do not read it.
const NO_IMPORTS: Expectations = Expectations { allowed_modules: &[], imports: &[], forbidden_imports: &[] };
const SETUP: &str = "run scripts/linux/setup.sh, which installs Debian's llvm package";

/// The resource-only DLL linked from [`RESOURCES_RC`], built once per test binary.
fn fixture() -> &'static [u8] {
    static FIXTURE: OnceLock<Vec<u8>> = OnceLock::new();
    FIXTURE.get_or_init(build_fixture)
}

fn build_fixture() -> Vec<u8> {
    let llvm_rc = find_llvm_rc(env::var_os("LLVM_RC")).unwrap_or_else(|| {
        panic!("llvm-rc is not installed (neither LLVM_RC nor llvm-rc[-<version>]): {SETUP}")
    });
    let rust_lld = rust_lld();
    // One directory per process: other test runs may build the fixture at the same time.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("resources-{}", process::id()));
    fs::create_dir_all(&dir).expect("create the fixture directory");
    let res = dir.join("resources.res");
    let dll = dir.join("resources.dll");
    // The driver build's own way of running llvm-rc (UTF-8 code page, no preprocessor).
    compile_rc(&llvm_rc, Path::new(RESOURCES_RC), &res).unwrap_or_else(|error| panic!("{error}"));
    let mut link = Command::new(rust_lld);
    link.args(["-flavor", "link", "/DLL", "/NOENTRY", "/MACHINE:X64", "/NODEFAULTLIB", "/Brepro"]);
    link.arg(format!("/OUT:{}", dll.display())).arg(&res);
    run(link);
    let bytes = fs::read(&dll).expect("read the linked fixture");
    fs::remove_dir_all(&dir).expect("remove the fixture directory");
    bytes
}

/// rustup's rust-lld, which links the driver too.
fn rust_lld() -> PathBuf {
    let sysroot = rustc_print("sysroot");
    let host = rustc_print("host-tuple");
    let lld = Path::new(&sysroot).join("lib/rustlib").join(host).join("bin/rust-lld");
    assert!(lld.is_file(), "{} is missing: run scripts/linux/setup.sh (rustup)", lld.display());
    lld
}

fn rustc_print(what: &str) -> String {
    let output = Command::new("rustc").args(["--print", what]).output().expect("run rustc");
    assert!(output.status.success(), "rustc --print {what} failed: {output:?}");
    String::from_utf8(output.stdout).expect("UTF-8 output").trim().to_string()
}

/// Runs `command`, failing the test with its output if it cannot run or fails.
fn run(mut command: Command) {
    let output = match command.output() {
        Ok(output) => output,
        Err(error) if error.kind() == ErrorKind::NotFound => {
            panic!("{} is not installed: {SETUP}", command.get_program().display())
        }
        Err(error) => panic!("cannot run {command:?}: {error}"),
    };
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
}

fn expected_strings() -> BTreeMap<u32, String> {
    let strings = [
        // English, not the German listed before it.
        (1000, "Counter set"),
        // 𝄞 is outside the BMP: two UTF-16 code units, counted as such by the block's length.
        (1001, "Grüße, 世界 — 𝄞 say \"hi\""),
        // German and French only: the first listed, German.
        (1002, "nur auf Deutsch"),
        (1015, "last but one of block 64"),
        (1016, "the ninth of block 64"),
        (1033, "Help text of block 65."),
    ];
    strings.into_iter().map(|(id, string)| (id, string.to_string())).collect()
}

fn expected_version_info() -> VersionInfo {
    let strings = [
        ("CompanyName", "Example Co"),
        ("FileDescription", "Résumé of a \"driver\""),
        ("FileVersion", "1.2.3.4"),
        ("Comments", ""),
        ("PrivateKey", "not one of the twelve well-known keys"),
    ];
    VersionInfo {
        file_version: [1, 2, 3, 4],
        product_version: [5, 6, 7, 8],
        file_os: 0x40004,
        file_type: 3,
        file_subtype: 7,
        strings: strings.into_iter().map(|(key, value)| (key.to_string(), value.to_string())).collect(),
    }
}

#[test]
fn string_table_holds_every_string_of_every_block_and_language() {
    assert_eq!(string_table(fixture()), Ok(expected_strings()));
}

#[test]
fn version_info_holds_the_fixed_info_and_the_first_string_table() {
    assert_eq!(version_info(fixture()), Ok(expected_version_info()));
}

/// Resources do not make the image unparseable for the rules (which leave them to these readers).
#[test]
fn rules_can_parse_an_image_with_resources() {
    assert_eq!(check_rule(fixture(), &NO_IMPORTS, Rule::NoTls), []);
}

#[test]
fn images_without_resources_have_no_strings_and_no_version() {
    let synthetic = build(&Spec::baseline()).bytes;
    let linked = include_bytes!("fixtures/lld-release.sys");
    for image in [&synthetic[..], linked] {
        assert_eq!(string_table(image), Ok(BTreeMap::new()));
        assert_eq!(version_info(image), Err(ResourceError::NoVersionInfo));
    }
}

#[test]
fn resources_without_a_version_resource_have_no_version() {
    let mut bytes = fixture().to_vec();
    // Renumber the root directory's RT_VERSION entry (its id entries follow the 16-byte header,
    // sorted: RT_STRING, then RT_VERSION) to RT_DLGINCLUDE.
    let rsrc = rsrc(&bytes).start;
    let version_entry = rsrc + 16 + 8;
    assert_eq!(u32_at(&bytes, version_entry), 16, "the second root entry is RT_VERSION");
    bytes[version_entry..version_entry + 4].copy_from_slice(&17u32.to_le_bytes());
    assert_eq!(version_info(&bytes), Err(ResourceError::NoVersionInfo));
    assert_eq!(string_table(&bytes), Ok(expected_strings()));
}

#[test]
fn truncated_resources_are_an_error() {
    let rsrc = rsrc(fixture());
    let bytes = &fixture()[..rsrc.start + 0x40];
    let (rva, size) = resource_directory(fixture());
    let error = ResourceError::Malformed(format!(
        "the resource directory at rva {rva:#x} (size {size:#x}) lies outside the file"
    ));
    assert_eq!(string_table(bytes), Err(error.clone()));
    assert_eq!(version_info(bytes), Err(error));
}

#[test]
fn root_directory_with_too_many_entries_is_an_error() {
    let mut bytes = fixture().to_vec();
    let number_of_id_entries = rsrc(&bytes).start + 14;
    bytes[number_of_id_entries..number_of_id_entries + 2].copy_from_slice(&0xfff0u16.to_le_bytes());
    for result in [string_table(&bytes).map(drop), version_info(&bytes).map(drop)] {
        let Err(ResourceError::Malformed(error)) = result else { panic!("not malformed: {result:?}") };
        assert!(error.starts_with("the resource directory: "), "{error}");
    }
    // The rules do not read resources: broken ones are the readers' to report, not every rule's.
    assert_eq!(check_rule(&bytes, &NO_IMPORTS, Rule::NoTls), []);
}

#[test]
fn string_longer_than_its_block_is_an_error() {
    let mut bytes = fixture().to_vec();
    let length = find_utf16(&bytes, "Counter set") - 2;
    assert_eq!(u16::from_le_bytes([bytes[length], bytes[length + 1]]), 11);
    bytes[length..length + 2].copy_from_slice(&0x7fffu16.to_le_bytes());
    let error = ResourceError::Malformed("string-table block 63 ends within string 1000".into());
    assert_eq!(error.to_string(), "malformed resources: string-table block 63 ends within string 1000");
    assert_eq!(string_table(&bytes), Err(error));
}

#[test]
fn string_that_is_not_utf16_is_an_error() {
    let mut bytes = fixture().to_vec();
    // A lone low surrogate in place of the "C" of "Counter set".
    let string = find_utf16(&bytes, "Counter set");
    bytes[string..string + 2].copy_from_slice(&0xdc00u16.to_le_bytes());
    let Err(ResourceError::Malformed(error)) = string_table(&bytes) else { panic!("not malformed") };
    assert!(error.starts_with("string 1000: "), "{error}");
}

#[test]
fn version_with_a_bad_fixed_info_signature_is_an_error() {
    let mut bytes = fixture().to_vec();
    let signature = find(&bytes, &0xfeef_04bdu32.to_le_bytes());
    bytes[signature] ^= 0xff;
    let error = "VS_FIXEDFILEINFO's signature is 0xfeef0442, not 0xfeef04bd";
    assert_eq!(version_info(&bytes), Err(ResourceError::Malformed(error.into())));
}

#[test]
fn version_node_longer_than_its_parent_is_an_error() {
    let mut bytes = fixture().to_vec();
    // wLength of StringFileInfo, 6 bytes before its key.
    let length = find_utf16(&bytes, "StringFileInfo") - 6;
    bytes[length..length + 2].copy_from_slice(&0xfff0u16.to_le_bytes());
    let Err(ResourceError::Malformed(error)) = version_info(&bytes) else { panic!("not malformed") };
    assert!(error.ends_with("is 65520 bytes long, past the end of VS_VERSIONINFO"), "{error}");
}

/// Every single-byte corruption of the resource section gives a result or an error, never a panic
/// (nor a hang); every truncation of the resource directory, which holds the resources, is an error.
#[test]
fn no_corruption_of_the_resource_section_panics() {
    let rsrc = rsrc(fixture());
    let (_, size) = resource_directory(fixture());
    for offset in rsrc.clone() {
        for flip in [0x01, 0x80, 0xff] {
            let mut bytes = fixture().to_vec();
            bytes[offset] ^= flip;
            let _ = string_table(&bytes);
            let _ = version_info(&bytes);
        }
        if offset >= rsrc.start + size as usize {
            continue;
        }
        let truncated = &fixture()[..offset];
        assert!(string_table(truncated).is_err(), "truncated at {offset:#x}");
        assert!(version_info(truncated).is_err(), "truncated at {offset:#x}");
    }
}

fn rsrc(bytes: &[u8]) -> std::ops::Range<usize> {
    section_file_range(bytes, ".rsrc").expect("a .rsrc section")
}

/// The RVA and size of the resource directory: data directory 2 of the PE32+ optional header (after
/// the signature, the COFF header and the optional header's 112 bytes of fields).
fn resource_directory(bytes: &[u8]) -> (u32, u32) {
    let directory = u32_at(bytes, 0x3c) as usize + 4 + 20 + 112 + 2 * 8;
    (u32_at(bytes, directory), u32_at(bytes, directory + 4))
}

fn u32_at(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes(bytes[offset..offset + 4].try_into().expect("4 bytes"))
}

fn find_utf16(bytes: &[u8], text: &str) -> usize {
    let utf16: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    find(bytes, &utf16)
}

fn find(bytes: &[u8], needle: &[u8]) -> usize {
    bytes.windows(needle.len()).position(|window| window == needle).expect("in the fixture")
}

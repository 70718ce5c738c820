//! End to end: llvm-rc compiles the generated script of tests/golden/small.man, and the .res holds
//! every string under the id the generator assigned, and the VERSIONINFO the driver needs.
//!
//! llvm-rc is required, as it is for the driver build: scripts/linux/setup.sh installs it (Debian's
//! `llvm` package); `LLVM_RC` may name another one.

use std::collections::BTreeMap;
use std::path::PathBuf;

use counter_manifest::{RcTool, compile, compile_rc, find_llvm_rc, string_resources};

mod common;

const RT_STRING: u16 = 6;
const RT_VERSION: u16 = 16;

fn llvm_rc() -> RcTool {
    find_llvm_rc(std::env::var_os("LLVM_RC")).unwrap_or_else(|| {
        panic!(
            "llvm-rc is missing: run scripts/linux/setup.sh (it installs Debian's llvm package) or set LLVM_RC \
             to an llvm-rc program"
        )
    })
}

/// One resource of a .res file.
struct Resource {
    ty: u16,
    name: u16,
    language: u16,
    data: Vec<u8>,
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// The resources of a .res file (RESOURCEHEADER records; types and names are ordinals here).
fn resources(res: &[u8]) -> Vec<Resource> {
    let mut resources = Vec::new();
    let mut at = 0;
    while at + 8 <= res.len() {
        let data_size = u32_at(res, at) as usize;
        let header_size = u32_at(res, at + 4) as usize;
        let header = &res[at + 8..at + header_size];
        assert_eq!(u16_at(header, 0), 0xFFFF, "type is an ordinal");
        assert_eq!(u16_at(header, 4), 0xFFFF, "name is an ordinal");
        let (ty, name) = (u16_at(header, 2), u16_at(header, 6));
        // DataVersion (4), MemoryFlags (2), LanguageId (2), after the two ordinals.
        let language = u16_at(header, 8 + 6);
        let data_start = at + header_size;
        let data = res[data_start..data_start + data_size].to_vec();
        if !(ty == 0 && data_size == 0) {
            // The first, empty record only marks the file as 32-bit.
            resources.push(Resource { ty, name, language, data });
        }
        at = (data_start + data_size + 3) & !3;
    }
    resources
}

/// id → string of every STRINGTABLE block: block n holds ids (n-1)*16 .. n*16-1, each a u16 length and
/// that many UTF-16 units.
fn string_table(resources: &[Resource]) -> BTreeMap<u32, String> {
    let mut strings = BTreeMap::new();
    for block in resources.iter().filter(|r| r.ty == RT_STRING) {
        assert_eq!(block.language, 0x0409, "strings are U.S. English");
        let mut at = 0;
        for index in 0..16u32 {
            let len = usize::from(u16_at(&block.data, at));
            at += 2;
            let units: Vec<u16> = (0..len).map(|i| u16_at(&block.data, at + 2 * i)).collect();
            at += 2 * len;
            if len > 0 {
                let id = (u32::from(block.name) - 1) * 16 + index;
                strings.insert(id, String::from_utf16(&units).unwrap());
            }
        }
    }
    strings
}

fn utf16le(text: &str) -> Vec<u8> {
    text.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

#[test]
fn llvm_rc_compiles_the_generated_script() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(dir.join("tests/golden/small.man")).unwrap();
    let generated =
        compile("tests/golden/small.man", &text, Some(&common::small_version_info("1.2.3"))).unwrap();

    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("llvm_rc_e2e");
    std::fs::create_dir_all(&out).unwrap();
    let (rc, res) = (out.join("small.rc"), out.join("small.res"));
    std::fs::write(&rc, &generated.rc).unwrap();
    let _ = std::fs::remove_file(&res);
    compile_rc(&llvm_rc(), &rc, &res).unwrap_or_else(|error| panic!("{error}"));
    let bytes = std::fs::read(&res).unwrap();

    // Every string, under its id, exactly (quotes, backslashes, the line break, non-ASCII).
    let expected: BTreeMap<u32, String> =
        string_resources(&generated.manifest).into_iter().map(|s| (s.id, s.text)).collect();
    let resources = resources(&bytes);
    assert_eq!(string_table(&resources), expected);
    assert!(expected.values().any(|s| s == "Zähler Status"));
    assert!(expected.values().any(|s| s.contains("\"small\" driver at C:\\drivers\\small.sys")));
    assert!(expected.values().any(|s| s.contains('\n')));
    for text in expected.values() {
        assert!(bytes.windows(utf16le(text).len()).any(|w| w == utf16le(text)), "{text:?} as UTF-16LE");
    }

    // VERSIONINFO 1: VS_FIXEDFILEINFO and the StringFileInfo values.
    let version: Vec<&Resource> = resources.iter().filter(|r| r.ty == RT_VERSION).collect();
    assert_eq!(version.len(), 1);
    assert_eq!(version[0].name, 1);
    let data = &version[0].data;
    let fixed = data.windows(4).position(|w| w == 0xFEEF_04BDu32.to_le_bytes()).expect("VS_FIXEDFILEINFO");
    let field = |i: usize| u32_at(data, fixed + 4 * i);
    assert_eq!((field(2), field(3)), (0x0001_0002, 0x0003_0000), "FILEVERSION 1,2,3,0");
    assert_eq!((field(4), field(5)), (0x0001_0002, 0x0003_0000), "PRODUCTVERSION 1,2,3,0");
    assert_eq!(field(8), 0x0004_0004, "FILEOS VOS_NT_WINDOWS32");
    assert_eq!(field(9), 3, "FILETYPE VFT_DRV");
    assert_eq!(field(10), 7, "FILESUBTYPE VFT2_DRV_SYSTEM");
    for text in [
        "040904B0",
        "CompanyName",
        "small developers",
        "small test driver",
        "1.2.3.0",
        "small.sys",
        "MIT OR Apache-2.0",
        "Translation",
    ] {
        assert!(data.windows(utf16le(text).len()).any(|w| w == utf16le(text)), "{text} in VERSIONINFO");
    }
    let translation = [0x09, 0x04, 0xB0, 0x04]; // 0x409, 1200
    assert!(data.windows(4).any(|w| w == translation), "Translation 0x409, 1200");
}

/// llvm-rc takes `/` as an option prefix on every host, so an absolute input path that begins like one
/// of its joined options (`/D`efine, `/C`odepage, `/U`ndefine, `/I`nclude) must still be read as the
/// input. A CI clone once lived under /check and failed the build this way. Here the scratch folder
/// is reached through `/dev/..` (the root), so its path begins with `/D` wherever the target is.
#[test]
fn llvm_rc_takes_absolute_paths_that_look_like_options() {
    let scratch =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("llvm-rc-paths-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let scratch = scratch.canonicalize().unwrap();
    let dir = std::path::Path::new("/dev/..").join(scratch.strip_prefix("/").unwrap());
    assert!(dir.is_dir(), "{} reaches the scratch folder", dir.display());
    let (rc, res) = (dir.join("t.rc"), dir.join("t.res"));
    std::fs::write(&rc, "STRINGTABLE\n{\n  1, \"one\"\n}\n").unwrap();
    let result = compile_rc(&llvm_rc(), &rc, &res);
    let bytes = std::fs::read(&res);
    std::fs::remove_dir_all(&dir).unwrap();
    result.unwrap_or_else(|error| panic!("{error}"));
    let strings: BTreeMap<u32, String> = string_table(&resources(&bytes.unwrap()));
    assert_eq!(strings, BTreeMap::from([(1, "one".to_string())]));
}

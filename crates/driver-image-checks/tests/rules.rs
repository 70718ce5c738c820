//! Every rule fails on a synthetic image that differs from a passing baseline in one respect, and
//! reports exactly that difference. The images are built in memory (tests/synthetic), so these
//! tests need neither the driver build nor any external tool.

mod synthetic;

use driver_image_checks::{
    Expectations, ForbiddenImport, Rule, Violation, check_image, check_rule, compute_checksum,
    recompute_checksum, section_file_range,
};
use object::pe;
use synthetic::{
    IMAGE_DLLCHARACTERISTICS_EX_CET_COMPAT, IMAGE_DLLCHARACTERISTICS_EX_FORWARD_CFI_COMPAT, Spec,
    TEST_IMPORTS, Thunk, WIN_CERT_TYPE_X509, build, by_name,
};

const EXPECTED: Expectations = Expectations {
    allowed_modules: &["ntoskrnl.exe", "HAL.dll"],
    imports: &[("ntoskrnl.exe", &TEST_IMPORTS)],
    forbidden_imports: &[NEWER_ROUTINE],
};

const NEWER_ROUTINE: ForbiddenImport =
    ForbiddenImport { module: "ntoskrnl.exe", name: "ExAllocatePool2", why: "a supported build lacks it" };

/// The violations of the image built from `spec`.
fn violations(spec: Spec) -> Vec<Violation> {
    check_image(&build(&spec).bytes, &EXPECTED)
}

fn with_imports(imports: Vec<(&'static str, Vec<Thunk>)>) -> Spec {
    Spec { imports, ..Spec::baseline() }
}

fn ntoskrnl_imports_plus(extra: Thunk) -> Vec<(&'static str, Vec<Thunk>)> {
    let mut thunks = by_name(&TEST_IMPORTS);
    thunks.push(extra);
    vec![("ntoskrnl.exe", thunks)]
}

#[test]
fn baseline_passes_every_rule() {
    assert_eq!(violations(Spec::baseline()), []);
}

#[test]
fn unsigned_baseline_fails_only_the_signature_rule() {
    let spec = Spec { certificate_type: None, ..Spec::baseline() };
    assert_eq!(violations(spec), [Violation::NoSignature]);
}

// Rule::Format

#[test]
fn pe32_image_is_not_pe32_plus() {
    let spec = Spec { is_64: false, ..Spec::baseline() };
    assert_eq!(violations(spec), [Violation::NotPe32Plus { magic: 0x10b }]);
}

#[test]
fn i386_machine_is_reported() {
    let spec = Spec { machine: pe::IMAGE_FILE_MACHINE_I386, ..Spec::baseline() };
    assert_eq!(violations(spec), [Violation::WrongMachine { machine: 0x14c }]);
}

#[test]
fn console_subsystem_is_reported() {
    let spec = Spec { subsystem: pe::IMAGE_SUBSYSTEM_WINDOWS_CUI, ..Spec::baseline() };
    assert_eq!(violations(spec), [Violation::WrongSubsystem { subsystem: 3 }]);
}

// Rule::EntryPoint

#[test]
fn entry_point_off_driver_entry_is_reported() {
    // One byte into DriverEntry: still in INIT, so only this rule fails.
    let built = build(&Spec { entry_point_delta: 1, ..Spec::baseline() });
    let expected = Violation::EntryPointNotDriverEntry {
        entry: built.driver_entry + 1,
        driver_entry: Some(built.driver_entry),
    };
    assert_eq!(check_image(&built.bytes, &EXPECTED), [expected]);
}

#[test]
fn entry_point_without_driver_entry_export_is_reported() {
    let built = build(&Spec { export_name: "StartDriver", ..Spec::baseline() });
    let expected = Violation::EntryPointNotDriverEntry { entry: built.driver_entry, driver_entry: None };
    assert_eq!(check_image(&built.bytes, &EXPECTED), [expected]);
}

// Rule::InitSection

#[test]
fn driver_entry_in_text_is_reported() {
    let spec = Spec { driver_entry_in_init: false, ..Spec::baseline() };
    let text = pe::IMAGE_SCN_CNT_CODE | pe::IMAGE_SCN_MEM_EXECUTE | pe::IMAGE_SCN_MEM_READ;
    let expected = Violation::EntryOutsideInit { section: Some(".text".into()), characteristics: text };
    assert_eq!(violations(spec), [expected]);
}

#[test]
fn init_section_that_is_not_discardable_is_reported() {
    let init = pe::IMAGE_SCN_CNT_CODE | pe::IMAGE_SCN_MEM_EXECUTE | pe::IMAGE_SCN_MEM_READ;
    let spec = Spec { init_characteristics: init, ..Spec::baseline() };
    let expected = Violation::EntryOutsideInit { section: Some("INIT".into()), characteristics: init };
    assert_eq!(violations(spec), [expected]);
}

// Rule::Imports

#[test]
fn import_from_a_disallowed_module_is_reported() {
    let mut imports = vec![("ntoskrnl.exe", by_name(&TEST_IMPORTS))];
    imports.push(("ntdll.dll", by_name(&["RtlZeroMemory"])));
    let expected =
        Violation::DisallowedModule { module: "ntdll.dll".into(), names: vec!["RtlZeroMemory".into()] };
    assert_eq!(violations(with_imports(imports)), [expected]);
}

#[test]
fn unexpected_extra_name_is_reported() {
    let spec = with_imports(ntoskrnl_imports_plus(Thunk::Name("ZwClose")));
    let expected = Violation::UnexpectedImport { module: "ntoskrnl.exe".into(), name: "ZwClose".into() };
    assert_eq!(violations(spec), [expected]);
}

#[test]
fn missing_expected_name_is_reported() {
    let spec = with_imports(vec![("ntoskrnl.exe", by_name(&["DbgPrintEx", "KeBugCheckEx"]))]);
    let expected = Violation::MissingImport { module: "ntoskrnl.exe".into(), name: "memset".into() };
    assert_eq!(violations(spec), [expected]);
}

#[test]
fn forbidden_import_is_reported_with_why() {
    let spec = with_imports(ntoskrnl_imports_plus(Thunk::Name("ExAllocatePool2")));
    let (module, name) = ("ntoskrnl.exe".to_string(), "ExAllocatePool2".to_string());
    let unexpected = Violation::UnexpectedImport { module: module.clone(), name: name.clone() };
    let forbidden = Violation::ForbiddenImport { module, name, why: NEWER_ROUTINE.why };
    assert_eq!(violations(spec), [unexpected, forbidden]);
}

/// Listing a forbidden routine among the expected imports does not make importing it pass.
#[test]
fn forbidden_import_is_reported_even_when_expected() {
    const NAMES: [&str; 4] = ["DbgPrintEx", "ExAllocatePool2", "KeBugCheckEx", "memset"];
    let expected = Expectations { imports: &[("NTOSKRNL.EXE", &NAMES)], ..EXPECTED };
    let image = build(&with_imports(vec![("ntoskrnl.exe", by_name(&NAMES))]));
    let forbidden = Violation::ForbiddenImport {
        module: "ntoskrnl.exe".into(),
        name: "ExAllocatePool2".into(),
        why: NEWER_ROUTINE.why,
    };
    assert_eq!(check_image(&image.bytes, &expected), [forbidden]);
}

#[test]
fn import_by_ordinal_is_reported() {
    let spec = with_imports(ntoskrnl_imports_plus(Thunk::Ordinal(5)));
    let expected = Violation::ImportByOrdinal { module: "ntoskrnl.exe".into(), ordinal: 5 };
    assert_eq!(violations(spec), [expected]);
}

#[test]
fn import_from_an_allowed_but_unlisted_module_is_unexpected() {
    // HAL.dll is allowed, but no HAL import is expected: a new one must be added to the list.
    let mut imports = vec![("ntoskrnl.exe", by_name(&TEST_IMPORTS))];
    imports.push(("hal.dll", by_name(&["KeStallExecutionProcessor"])));
    let expected =
        Violation::UnexpectedImport { module: "hal.dll".into(), name: "KeStallExecutionProcessor".into() };
    assert_eq!(violations(with_imports(imports)), [expected]);
}

#[test]
fn module_names_compare_case_insensitively() {
    let spec = with_imports(vec![("NTOSKRNL.EXE", by_name(&TEST_IMPORTS))]);
    assert_eq!(violations(spec), []);
}

#[test]
fn image_without_imports_misses_every_expected_name() {
    let missing = TEST_IMPORTS
        .map(|name| Violation::MissingImport { module: "ntoskrnl.exe".into(), name: name.into() });
    assert_eq!(violations(with_imports(Vec::new())), missing);
}

// Rule::NoTls

#[test]
fn tls_directory_is_reported() {
    let found = violations(Spec { tls_directory: true, ..Spec::baseline() });
    assert!(
        matches!(found.as_slice(), [Violation::TlsDirectory { rva, size: 40 }] if *rva != 0),
        "{found:?}"
    );
}

// Rule::NoWritableExecutable

#[test]
fn writable_executable_section_is_reported() {
    let data = pe::IMAGE_SCN_CNT_INITIALIZED_DATA
        | pe::IMAGE_SCN_MEM_READ
        | pe::IMAGE_SCN_MEM_WRITE
        | pe::IMAGE_SCN_MEM_EXECUTE;
    let spec = Spec { data_characteristics: data, ..Spec::baseline() };
    let expected = Violation::WritableExecutableSection { name: ".data".into(), characteristics: data };
    assert_eq!(violations(spec), [expected]);
}

// Rule::Checksum

#[test]
fn unset_checksum_is_reported() {
    let bytes = build(&Spec { checksum: false, ..Spec::baseline() }).bytes;
    let computed = compute_checksum(&bytes).unwrap();
    assert_eq!(check_image(&bytes, &EXPECTED), [Violation::BadChecksum { stored: 0, computed }]);
}

#[test]
fn stale_checksum_is_reported() {
    let mut bytes = build(&Spec::baseline()).bytes;
    let stored = compute_checksum(&bytes).unwrap();
    let text = section_file_range(&bytes, ".text").expect("a .text section");
    bytes[text.start] ^= 0xff;
    let computed = compute_checksum(&bytes).unwrap();
    assert_ne!(stored, computed);
    assert_eq!(check_image(&bytes, &EXPECTED), [Violation::BadChecksum { stored, computed }]);
}

/// An oracle independent of this crate: an image linked by lld-link /RELEASE, which stores the PE
/// checksum. Made from tests/fixtures/lld-release.s with (LLD 22.1.2, the 1.95.0 toolchain's):
///   llvm-mc -filetype=obj -triple=x86_64-pc-windows-msvc lld-release.s -o lld-release.obj
///   rust-lld -flavor link /RELEASE /DRIVER /SUBSYSTEM:NATIVE /ENTRY:DriverEntry /NODEFAULTLIB
///            /Brepro /OUT:lld-release.sys lld-release.obj
#[test]
fn checksum_matches_lld_link_release() {
    let bytes = include_bytes!("fixtures/lld-release.sys");
    assert_eq!(compute_checksum(bytes).unwrap(), 0x7cd9);
    assert_eq!(check_rule(bytes, &EXPECTED, Rule::Checksum), []);
}

#[test]
fn recompute_checksum_stores_the_linker_checksum() {
    let mut bytes = include_bytes!("fixtures/lld-release.sys").to_vec();
    let checksum_field = 0x78 + 24 + 64; // e_lfanew (0x78 here) + signature + file header + offset in optional header
    bytes[checksum_field..checksum_field + 4].fill(0);
    recompute_checksum(&mut bytes).unwrap();
    assert_eq!(bytes, include_bytes!("fixtures/lld-release.sys"));
}

// Rule::ForceIntegrity

#[test]
fn missing_force_integrity_is_reported() {
    let flags = pe::IMAGE_DLLCHARACTERISTICS_HIGH_ENTROPY_VA
        | pe::IMAGE_DLLCHARACTERISTICS_DYNAMIC_BASE
        | pe::IMAGE_DLLCHARACTERISTICS_NX_COMPAT;
    let spec = Spec { dll_characteristics: flags, ..Spec::baseline() };
    assert_eq!(violations(spec), [Violation::NoForceIntegrity { dll_characteristics: flags }]);
}

// Rule::Signature

#[test]
fn x509_certificate_is_not_an_authenticode_signature() {
    let spec = Spec { certificate_type: Some(WIN_CERT_TYPE_X509), ..Spec::baseline() };
    assert_eq!(violations(spec), [Violation::WrongCertificateType { found: WIN_CERT_TYPE_X509 }]);
}

#[test]
fn unknown_certificate_type_is_malformed() {
    let found = violations(Spec { certificate_type: Some(0x7777), ..Spec::baseline() });
    assert!(matches!(found.as_slice(), [Violation::MalformedSignature(_)]), "{found:?}");
}

#[test]
fn security_directory_past_the_end_of_the_file_is_reported() {
    // A truncated download: the directory still claims the certificate's last 8 bytes.
    let mut bytes = build(&Spec::baseline()).bytes;
    let file_len = bytes.len() - 8;
    bytes.truncate(file_len);
    recompute_checksum(&mut bytes).unwrap();
    let found = check_image(&bytes, &EXPECTED);
    assert!(
        matches!(found.as_slice(), [Violation::SignatureOutsideFile { offset, size, file_len: len }]
            if *len == file_len && *offset as usize + *size as usize == file_len + 8),
        "{found:?}"
    );
}

// Rule::CetCompatible

#[test]
fn image_without_a_debug_directory_is_not_cet_compatible() {
    let spec = Spec { ex_dll_characteristics: None, ..Spec::baseline() };
    assert_eq!(violations(spec), [Violation::NotCetCompatible { ex_dll_characteristics: None }]);
}

#[test]
fn extended_characteristics_without_cet_compat_are_reported() {
    let flags = IMAGE_DLLCHARACTERISTICS_EX_FORWARD_CFI_COMPAT;
    let spec = Spec { ex_dll_characteristics: Some(flags), ..Spec::baseline() };
    assert_eq!(violations(spec), [Violation::NotCetCompatible { ex_dll_characteristics: Some(flags) }]);
}

#[test]
fn cet_compat_among_other_extended_characteristics_passes() {
    let flags = IMAGE_DLLCHARACTERISTICS_EX_CET_COMPAT | IMAGE_DLLCHARACTERISTICS_EX_FORWARD_CFI_COMPAT;
    let spec = Spec { ex_dll_characteristics: Some(flags), ..Spec::baseline() };
    assert_eq!(violations(spec), []);
}

/// A real lld-link image linked without /CETCOMPAT (the fixture above) has no such entry.
#[test]
fn lld_link_output_without_cetcompat_is_reported() {
    let bytes = include_bytes!("fixtures/lld-release.sys");
    assert_eq!(
        check_rule(bytes, &EXPECTED, Rule::CetCompatible),
        [Violation::NotCetCompatible { ex_dll_characteristics: None }]
    );
}

// Whole-image behaviour

#[test]
fn unparseable_image_fails_every_rule() {
    let garbage = b"MZ but nothing else".as_slice();
    for rule in Rule::ALL {
        let found = check_rule(garbage, &EXPECTED, rule);
        assert!(matches!(found.as_slice(), [Violation::Unparseable(_)]), "{rule:?}: {found:?}");
    }
}

#[test]
fn check_rule_reports_only_its_own_rule() {
    // Unsigned and without FORCE_INTEGRITY: each rule sees only its own violation.
    let spec = Spec {
        certificate_type: None,
        dll_characteristics: pe::IMAGE_DLLCHARACTERISTICS_NX_COMPAT,
        ..Spec::baseline()
    };
    let bytes = build(&spec).bytes;
    assert_eq!(check_rule(&bytes, &EXPECTED, Rule::Signature), [Violation::NoSignature]);
    assert_eq!(
        check_rule(&bytes, &EXPECTED, Rule::ForceIntegrity),
        [Violation::NoForceIntegrity { dll_characteristics: 0x100 }]
    );
    assert_eq!(check_rule(&bytes, &EXPECTED, Rule::Imports), []);
}

#[test]
fn violations_display_their_details() {
    let missing = Violation::MissingImport { module: "ntoskrnl.exe".into(), name: "memset".into() };
    assert_eq!(missing.to_string(), "expected import ntoskrnl.exe!memset is missing");
    let checksum = Violation::BadChecksum { stored: 0x1234, computed: 0x5678 };
    assert_eq!(checksum.to_string(), "stored PE checksum 0x1234 differs from the computed 0x5678");
    let forbidden = Violation::ForbiddenImport {
        module: "ntoskrnl.exe".into(),
        name: "ExAllocatePool2".into(),
        why: NEWER_ROUTINE.why,
    };
    assert_eq!(
        forbidden.to_string(),
        "imports ntoskrnl.exe!ExAllocatePool2, which the driver must not: a supported build lacks it"
    );
}

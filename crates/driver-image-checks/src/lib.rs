//! Structural checks a Windows kernel driver image (`.sys`) must pass before it ships.
//!
//! The image is parsed with goblin; the only hand-written binary logic is the PE checksum, which no
//! parsing library computes. Each [`Rule`] is a small function that returns the [`Violation`]s it
//! finds, so a failing check says exactly what is wrong (which section, which import, which values).
//!
//! [`verify_signature`] complements rule [`Rule::Signature`]: the rule only proves that an
//! Authenticode signature is embedded, `osslsigncode verify` proves that it matches the image.
//!
//! [`string_table`] and [`version_info`] read the image's resources, so that a test can prove the
//! driver holds the strings perfmon loads from it and its version information.
//!
//! [`handler_cost`] decodes a code section holding one interrupt-time routine and counts its
//! instructions per loop iteration, calls and locked instructions; [`resident_code_section`] checks
//! that the section can be neither paged out nor discarded.
//!
//! [`stack_frames`] reads how much stack each function reserves, from the image's unwind information
//! and its PDB's names; [`functions`] how many code bytes each one takes.
#![forbid(unsafe_code)]

mod checksum;
mod frames;
mod handler;
mod resources;
mod signature;

pub use checksum::{compute_checksum, recompute_checksum};
pub use frames::{Frame, Function, functions, stack_frames};

pub use handler::{
    HandlerCost, PAGEABLE_SECTION_PREFIX, handler_cost, resident_code_section, section_listing,
};
pub use resources::{
    LANG_ENGLISH_US, ResourceError, STRING_FILE_INFO_KEY, STRINGS_PER_BLOCK, VersionInfo, string_table,
    version_info,
};
pub use signature::verify_signature;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;

use goblin::error::Error;
use goblin::pe::PE;
use goblin::pe::certificate_table::{AttributeCertificate, AttributeCertificateType};
use goblin::pe::debug::{IMAGE_DEBUG_TYPE_EX_DLLCHARACTERISTICS, IMAGE_DLLCHARACTERISTICS_EX_CET_COMPAT};
use goblin::pe::dll_characteristic::IMAGE_DLLCHARACTERISTICS_FORCE_INTEGRITY;
use goblin::pe::header::COFF_MACHINE_X86_64;
use goblin::pe::import::SyntheticImportLookupTableEntry;
use goblin::pe::optional_header::{MAGIC_64, OptionalHeader};
use goblin::pe::options::ParseOptions;
use goblin::pe::section_table::{
    IMAGE_SCN_MEM_DISCARDABLE, IMAGE_SCN_MEM_EXECUTE, IMAGE_SCN_MEM_READ, IMAGE_SCN_MEM_WRITE, SectionTable,
};
use goblin::pe::subsystem::IMAGE_SUBSYSTEM_NATIVE;

/// The export the kernel's loader calls: a WDM driver's entry point.
pub const DRIVER_ENTRY: &str = "DriverEntry";
/// The section that holds the driver's initialization code, which the kernel discards once
/// `DriverEntry` has returned.
pub const INIT_SECTION: &str = "INIT";
/// The flags [`INIT_SECTION`] needs: code the loader can run, then throw away.
pub const INIT_CHARACTERISTICS: u32 = IMAGE_SCN_MEM_EXECUTE | IMAGE_SCN_MEM_READ | IMAGE_SCN_MEM_DISCARDABLE;

/// What the image of one particular driver is expected to contain.
#[derive(Clone, Copy, Debug)]
pub struct Expectations {
    /// Modules the driver may import from, compared case-insensitively (the kernel's loader does).
    pub allowed_modules: &'static [&'static str],
    /// The exact set of names imported from each module. A module of `allowed_modules` that is
    /// missing here is expected to contribute no import at all.
    pub imports: &'static [(&'static str, &'static [&'static str])],
    /// Routines the driver must never import, even if `imports` lists them: the kernel's loader
    /// refuses an image whose imports it does not export, so importing a routine that some Windows
    /// build the driver supports lacks keeps the driver from loading there.
    pub forbidden_imports: &'static [ForbiddenImport],
}

/// A routine the driver must not import, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForbiddenImport {
    pub module: &'static str,
    pub name: &'static str,
    /// Where the image would not load, e.g. "Windows 10 builds before 19041 do not export it".
    pub why: &'static str,
}

/// One check of [`check_image`]; [`check_rule`] runs a single one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// PE32+, machine AMD64, subsystem NATIVE.
    Format,
    /// AddressOfEntryPoint is the RVA of the exported [`DRIVER_ENTRY`].
    EntryPoint,
    /// The entry point lies in [`INIT_SECTION`], which has [`INIT_CHARACTERISTICS`].
    InitSection,
    /// Imports come from allowed modules, by name, match [`Expectations::imports`] exactly and name
    /// none of [`Expectations::forbidden_imports`].
    Imports,
    /// No TLS directory: kernel images cannot have thread-local storage (the kernel's loader neither
    /// allocates it nor runs TLS callbacks).
    NoTls,
    /// No section is both writable and executable.
    NoWritableExecutable,
    /// The stored PE checksum is set and correct ("The operating system requires the Checksum for
    /// device drivers": <https://learn.microsoft.com/cpp/build/reference/release-set-the-checksum>).
    Checksum,
    /// DllCharacteristics has FORCE_INTEGRITY, so the kernel refuses the image unless signed.
    ForceIntegrity,
    /// An Authenticode signature (WIN_CERT_TYPE_PKCS_SIGNED_DATA) is embedded.
    Signature,
    /// The debug directory has an IMAGE_DEBUG_TYPE_EX_DLLCHARACTERISTICS entry with
    /// IMAGE_DLLCHARACTERISTICS_EX_CET_COMPAT, which link.exe and lld-link write for /CETCOMPAT
    /// (PE format, "Extended DLL Characteristics"): the image declares itself compatible with CET
    /// shadow stacks, without which Kernel-mode Hardware-enforced Stack Protection counts a driver as
    /// incompatible.
    CetCompatible,
}

impl Rule {
    /// Every rule, in the order [`check_image`] reports them.
    pub const ALL: [Rule; 10] = [
        Rule::Format,
        Rule::EntryPoint,
        Rule::InitSection,
        Rule::Imports,
        Rule::NoTls,
        Rule::NoWritableExecutable,
        Rule::Checksum,
        Rule::ForceIntegrity,
        Rule::Signature,
        Rule::CetCompatible,
    ];
}

/// Something wrong with the image, grouped by the [`Rule`] that finds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// goblin cannot parse the image at all; no rule can be checked.
    Unparseable(String),
    // Rule::Format
    NotPe32Plus {
        magic: u16,
    },
    WrongMachine {
        machine: u16,
    },
    WrongSubsystem {
        subsystem: u16,
    },
    // Rule::EntryPoint
    EntryPointNotDriverEntry {
        entry: u32,
        driver_entry: Option<u32>,
    },
    // Rule::InitSection
    EntryOutsideInit {
        section: Option<String>,
        characteristics: u32,
    },
    // Rule::Imports
    DisallowedModule {
        module: String,
        names: Vec<String>,
    },
    ImportByOrdinal {
        module: String,
        ordinal: u16,
    },
    UnexpectedImport {
        module: String,
        name: String,
    },
    MissingImport {
        module: String,
        name: String,
    },
    ForbiddenImport {
        module: String,
        name: String,
        why: &'static str,
    },
    // Rule::NoTls
    TlsDirectory {
        rva: u32,
        size: u32,
    },
    // Rule::NoWritableExecutable
    WritableExecutableSection {
        name: String,
        characteristics: u32,
    },
    // Rule::Checksum
    BadChecksum {
        stored: u32,
        computed: u32,
    },
    // Rule::ForceIntegrity
    NoForceIntegrity {
        dll_characteristics: u16,
    },
    // Rule::Signature
    NoSignature,
    SignatureOutsideFile {
        offset: u32,
        size: u32,
        file_len: usize,
    },
    MalformedSignature(String),
    WrongCertificateType {
        found: u16,
    },
    // Rule::CetCompatible
    /// The extended DLL characteristics the debug directory holds, or `None` without such an entry.
    NotCetCompatible {
        ex_dll_characteristics: Option<u32>,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Unparseable(error) => write!(f, "not a parseable PE image: {error}"),
            Violation::NotPe32Plus { magic } => {
                write!(f, "optional header magic is {magic:#x}, not {MAGIC_64:#x} (PE32+)")
            }
            Violation::WrongMachine { machine } => {
                write!(f, "machine is {machine:#x}, not {COFF_MACHINE_X86_64:#x} (AMD64)")
            }
            Violation::WrongSubsystem { subsystem } => {
                write!(f, "subsystem is {subsystem}, not {IMAGE_SUBSYSTEM_NATIVE} (NATIVE)")
            }
            Violation::EntryPointNotDriverEntry { entry, driver_entry: Some(rva) } => {
                write!(f, "entry point is {entry:#x} but {DRIVER_ENTRY} is exported at {rva:#x}")
            }
            Violation::EntryPointNotDriverEntry { entry, driver_entry: None } => {
                write!(f, "entry point is {entry:#x} but {DRIVER_ENTRY} is not exported")
            }
            Violation::EntryOutsideInit { section, characteristics } => write!(
                f,
                "entry point lies in section {} with characteristics {characteristics:#x}, not in \
                 {INIT_SECTION} with {INIT_CHARACTERISTICS:#x} (execute, read, discardable)",
                section.as_deref().unwrap_or("<none>"),
            ),
            Violation::DisallowedModule { module, names } => {
                write!(f, "imports {names:?} from {module}, which is not an allowed module")
            }
            Violation::ImportByOrdinal { module, ordinal } => {
                write!(f, "imports ordinal {ordinal} from {module}; drivers import by name")
            }
            Violation::UnexpectedImport { module, name } => {
                write!(f, "unexpected import {module}!{name} (not in the expected list)")
            }
            Violation::MissingImport { module, name } => {
                write!(f, "expected import {module}!{name} is missing")
            }
            Violation::ForbiddenImport { module, name, why } => {
                write!(f, "imports {module}!{name}, which the driver must not: {why}")
            }
            Violation::TlsDirectory { rva, size } => {
                write!(f, "has a TLS directory (rva {rva:#x}, size {size:#x})")
            }
            Violation::WritableExecutableSection { name, characteristics } => write!(
                f,
                "section {name} is both writable and executable (characteristics {characteristics:#x})"
            ),
            Violation::BadChecksum { stored: 0, computed } => {
                write!(f, "PE checksum is not set (the image's checksum is {computed:#x})")
            }
            Violation::BadChecksum { stored, computed } => {
                write!(f, "stored PE checksum {stored:#x} differs from the computed {computed:#x}")
            }
            Violation::NoForceIntegrity { dll_characteristics } => write!(
                f,
                "DllCharacteristics {dll_characteristics:#x} lacks FORCE_INTEGRITY \
                 ({IMAGE_DLLCHARACTERISTICS_FORCE_INTEGRITY:#x})"
            ),
            Violation::NoSignature => write!(f, "no Authenticode signature (security directory is empty)"),
            Violation::SignatureOutsideFile { offset, size, file_len } => write!(
                f,
                "security directory [{offset:#x}, +{size:#x}) extends past the end of the file ({file_len:#x} bytes)"
            ),
            Violation::MalformedSignature(error) => write!(f, "malformed WIN_CERTIFICATE: {error}"),
            Violation::WrongCertificateType { found } => write!(
                f,
                "WIN_CERTIFICATE type is {found}, not {} (WIN_CERT_TYPE_PKCS_SIGNED_DATA)",
                AttributeCertificateType::PkcsSignedData as u16
            ),
            Violation::NotCetCompatible { ex_dll_characteristics: None } => write!(
                f,
                "not CET compatible: the debug directory has no extended DLL characteristics entry \
                 (type {IMAGE_DEBUG_TYPE_EX_DLLCHARACTERISTICS}; link with /CETCOMPAT)"
            ),
            Violation::NotCetCompatible { ex_dll_characteristics: Some(flags) } => write!(
                f,
                "not CET compatible: extended DLL characteristics {flags:#x} lack CET_COMPAT \
                 ({IMAGE_DLLCHARACTERISTICS_EX_CET_COMPAT:#x}; link with /CETCOMPAT)"
            ),
        }
    }
}

/// Runs every [`Rule`] on `bytes`.
pub fn check_image(bytes: &[u8], expected: &Expectations) -> Vec<Violation> {
    check_rules(bytes, expected, &Rule::ALL)
}

/// Runs one [`Rule`] on `bytes`. An unparseable image is a violation of every rule, so a per-rule
/// check never passes just because the image could not be read.
pub fn check_rule(bytes: &[u8], expected: &Expectations, rule: Rule) -> Vec<Violation> {
    check_rules(bytes, expected, &[rule])
}

fn check_rules(bytes: &[u8], expected: &Expectations, rules: &[Rule]) -> Vec<Violation> {
    let image = match Image::parse(bytes) {
        Ok(image) => image,
        Err(error) => return vec![Violation::Unparseable(error.to_string())],
    };
    rules.iter().flat_map(|&rule| image.check(rule, expected)).collect()
}

/// A parsed image and the headers every rule reads.
struct Image<'a> {
    bytes: &'a [u8],
    pe: PE<'a>,
    optional: OptionalHeader,
}

impl<'a> Image<'a> {
    fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let mut options = ParseOptions::default();
        // Rule::Signature reads the certificate table itself, so that a broken table is reported
        // as a signature violation instead of making every other rule unanswerable.
        options.parse_attribute_certificates = false;
        // No rule reads resources, and malformed ones are for string_table and version_info to
        // report: goblin's reading of them would make every rule unanswerable.
        options.parse_resources = false;
        let pe = PE::parse_with_opts(bytes, &options)?;
        let optional = pe
            .header
            .optional_header
            .ok_or_else(|| Error::Malformed("no optional header: an object file, not an image".into()))?;
        Ok(Image { bytes, pe, optional })
    }

    fn check(&self, rule: Rule, expected: &Expectations) -> Vec<Violation> {
        match rule {
            Rule::Format => self.format(),
            Rule::EntryPoint => self.entry_point(),
            Rule::InitSection => self.init_section(),
            Rule::Imports => self.imports(expected),
            Rule::NoTls => self.no_tls(),
            Rule::NoWritableExecutable => self.no_writable_executable(),
            Rule::Checksum => self.checksum(),
            Rule::ForceIntegrity => self.force_integrity(),
            Rule::Signature => self.signature(),
            Rule::CetCompatible => self.cet_compatible(),
        }
    }

    fn format(&self) -> Vec<Violation> {
        let magic = self.optional.standard_fields.magic;
        let machine = self.pe.header.coff_header.machine;
        let subsystem = self.optional.windows_fields.subsystem;
        let mut violations = Vec::new();
        if magic != MAGIC_64 {
            violations.push(Violation::NotPe32Plus { magic });
        }
        if machine != COFF_MACHINE_X86_64 {
            violations.push(Violation::WrongMachine { machine });
        }
        if subsystem != IMAGE_SUBSYSTEM_NATIVE {
            violations.push(Violation::WrongSubsystem { subsystem });
        }
        violations
    }

    fn entry_point(&self) -> Vec<Violation> {
        let entry = self.pe.entry;
        let driver_entry = self.pe.exports.iter().find(|export| export.name == Some(DRIVER_ENTRY));
        let driver_entry = driver_entry.map(|export| export.rva as u32);
        if driver_entry == Some(entry) {
            return Vec::new();
        }
        vec![Violation::EntryPointNotDriverEntry { entry, driver_entry }]
    }

    fn init_section(&self) -> Vec<Violation> {
        let entry = self.pe.entry;
        let section = self.pe.sections.iter().find(|section| {
            entry.wrapping_sub(section.virtual_address) < section.virtual_size.max(section.size_of_raw_data)
        });
        let name = section.map(section_name);
        let characteristics = section.map_or(0, |section| section.characteristics);
        if name.as_deref() == Some(INIT_SECTION)
            && characteristics & INIT_CHARACTERISTICS == INIT_CHARACTERISTICS
        {
            return Vec::new();
        }
        vec![Violation::EntryOutsideInit { section: name, characteristics }]
    }

    fn imports(&self, expected: &Expectations) -> Vec<Violation> {
        let (imported, mut violations) = self.imported_names();
        for (module, names) in imported.values() {
            violations.extend(module_violations(module, names, expected));
        }
        violations.extend(missing_imports(&imported, expected));
        violations.extend(forbidden_imports(&imported, expected));
        violations
    }

    /// The names imported from each module, keyed by lower-case module name: a module may be
    /// spelled differently by different import libraries (windows-sys says hal.dll, the WDK
    /// HAL.dll) and may appear in several import descriptors. Ordinal imports are violations.
    fn imported_names(&self) -> (BTreeMap<String, ImportedModule>, Vec<Violation>) {
        let mut imported: BTreeMap<String, ImportedModule> = BTreeMap::new();
        let mut ordinals = Vec::new();
        for descriptor in self.pe.import_data.iter().flat_map(|data| &data.import_data) {
            let module = descriptor.name;
            let (_, names) = imported
                .entry(module.to_ascii_lowercase())
                .or_insert_with(|| (module.to_string(), BTreeSet::new()));
            for thunk in descriptor.import_lookup_table.iter().flatten() {
                match thunk {
                    SyntheticImportLookupTableEntry::OrdinalNumber(ordinal) => ordinals
                        .push(Violation::ImportByOrdinal { module: module.to_string(), ordinal: *ordinal }),
                    SyntheticImportLookupTableEntry::HintNameTableRVA((_, hint_name)) => {
                        names.insert(hint_name.name.to_string());
                    }
                }
            }
        }
        (imported, ordinals)
    }

    fn no_tls(&self) -> Vec<Violation> {
        match self.optional.data_directories.get_tls_table() {
            None => Vec::new(),
            Some(tls) => vec![Violation::TlsDirectory { rva: tls.virtual_address, size: tls.size }],
        }
    }

    fn no_writable_executable(&self) -> Vec<Violation> {
        const WRITE_EXECUTE: u32 = IMAGE_SCN_MEM_WRITE | IMAGE_SCN_MEM_EXECUTE;
        let writable_executable = self
            .pe
            .sections
            .iter()
            .filter(|section| section.characteristics & WRITE_EXECUTE == WRITE_EXECUTE);
        writable_executable
            .map(|section| Violation::WritableExecutableSection {
                name: section_name(section),
                characteristics: section.characteristics,
            })
            .collect()
    }

    fn checksum(&self) -> Vec<Violation> {
        let stored = self.optional.windows_fields.check_sum;
        let computed = match compute_checksum(self.bytes) {
            Ok(computed) => computed,
            Err(error) => return vec![Violation::Unparseable(error.to_string())],
        };
        // A zero checksum is "not set" rather than a valid value: the computed sum includes the
        // file length, so it is never zero.
        if stored == computed {
            return Vec::new();
        }
        vec![Violation::BadChecksum { stored, computed }]
    }

    fn force_integrity(&self) -> Vec<Violation> {
        let dll_characteristics = self.optional.windows_fields.dll_characteristics;
        if dll_characteristics & IMAGE_DLLCHARACTERISTICS_FORCE_INTEGRITY != 0 {
            return Vec::new();
        }
        vec![Violation::NoForceIntegrity { dll_characteristics }]
    }

    fn signature(&self) -> Vec<Violation> {
        match self.first_certificate() {
            Ok(certificate) if certificate.certificate_type == AttributeCertificateType::PkcsSignedData => {
                Vec::new()
            }
            Ok(certificate) => {
                vec![Violation::WrongCertificateType { found: certificate.certificate_type as u16 }]
            }
            Err(violation) => vec![violation],
        }
    }

    fn cet_compatible(&self) -> Vec<Violation> {
        let debug_data = self.pe.debug_data.as_ref();
        let ex_dll_characteristics =
            debug_data.and_then(|data| data.ex_dll_characteristics_info).map(|info| info.characteristics_ex);
        if ex_dll_characteristics.is_some_and(|flags| flags & IMAGE_DLLCHARACTERISTICS_EX_CET_COMPAT != 0) {
            return Vec::new();
        }
        vec![Violation::NotCetCompatible { ex_dll_characteristics }]
    }

    /// The first WIN_CERTIFICATE of the security directory, whose "virtual address" is, unlike
    /// every other directory's, a file offset (the certificates are not mapped into memory).
    fn first_certificate(&self) -> Result<AttributeCertificate<'a>, Violation> {
        let Some(table) = self.optional.data_directories.get_certificate_table() else {
            return Err(Violation::NoSignature);
        };
        let (offset, size) = (table.virtual_address, table.size);
        if size == 0 {
            return Err(Violation::NoSignature);
        }
        let end = u64::from(offset) + u64::from(size);
        if end > self.bytes.len() as u64 {
            return Err(Violation::SignatureOutsideFile { offset, size, file_len: self.bytes.len() });
        }
        let table_bytes = &self.bytes[..end as usize];
        AttributeCertificate::parse(table_bytes, &mut (offset as usize))
            .map_err(|error| Violation::MalformedSignature(error.to_string()))
    }
}

/// A module as the image spells it, and the names imported from it.
type ImportedModule = (String, BTreeSet<String>);

/// Whether the driver may import from `module` at all, and if so, the names it imports beyond the
/// expected list.
fn module_violations(module: &str, names: &BTreeSet<String>, expected: &Expectations) -> Vec<Violation> {
    let Some(allowed) = expected_names(expected, module) else {
        let names = names.iter().cloned().collect();
        return vec![Violation::DisallowedModule { module: module.to_string(), names }];
    };
    let unexpected = names.iter().filter(|name| !allowed.contains(&name.as_str()));
    unexpected
        .map(|name| Violation::UnexpectedImport { module: module.to_string(), name: name.clone() })
        .collect()
}

/// Expected names the image does not import.
fn missing_imports(imported: &BTreeMap<String, ImportedModule>, expected: &Expectations) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (module, names) in expected.imports {
        let found = imported.get(&module.to_ascii_lowercase()).map(|(_, found)| found);
        for name in names.iter().filter(|name| !found.is_some_and(|found| found.contains(**name))) {
            violations.push(Violation::MissingImport { module: module.to_string(), name: name.to_string() });
        }
    }
    violations
}

/// Imports of [`Expectations::forbidden_imports`], named as the image spells the module.
fn forbidden_imports(imported: &BTreeMap<String, ImportedModule>, expected: &Expectations) -> Vec<Violation> {
    let found = expected.forbidden_imports.iter().filter_map(|forbidden| {
        let (module, names) = imported.get(&forbidden.module.to_ascii_lowercase())?;
        names.contains(forbidden.name).then(|| Violation::ForbiddenImport {
            module: module.clone(),
            name: forbidden.name.to_string(),
            why: forbidden.why,
        })
    });
    found.collect()
}

/// The names `module` may export to the driver: its entry of [`Expectations::imports`], none if it
/// is allowed but not listed there, or `None` if it is not allowed at all.
fn expected_names(expected: &Expectations, module: &str) -> Option<&'static [&'static str]> {
    if !expected.allowed_modules.iter().any(|allowed| allowed.eq_ignore_ascii_case(module)) {
        return None;
    }
    let listed = expected.imports.iter().find(|(listed, _)| listed.eq_ignore_ascii_case(module));
    Some(listed.map_or(&[], |(_, names)| names))
}

fn section_name(section: &SectionTable) -> String {
    section.name().unwrap_or("<unnamed>").to_string()
}

/// The file bytes of the section called `name`, or `None` if the image has no such section or
/// cannot be parsed. Tests use it to corrupt a section's contents.
pub fn section_file_range(bytes: &[u8], name: &str) -> Option<Range<usize>> {
    let image = Image::parse(bytes).ok()?;
    let section = image.pe.sections.iter().find(|section| section.name().ok() == Some(name))?;
    let start = section.pointer_to_raw_data as usize;
    Some(start..start + section.size_of_raw_data as usize)
}

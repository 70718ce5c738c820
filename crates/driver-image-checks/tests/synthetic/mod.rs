//! Builds small driver-like PE images in memory, so that every rule can be shown to fail on an
//! image that differs from a passing one in exactly one respect.
//!
//! `object::write::pe::Writer` lays out the DOS header, NT headers, section table, file and section
//! alignment and the certificate table; what it has no builder for (the export and import
//! directories, a TLS directory, the debug directory) is assembled here into the `.rdata` section. Building each variant
//! from a [`Spec`], rather than patching bytes of one image, keeps every variant a well-formed image
//! (sizes, RVAs and the checksum stay consistent), so only the property under test changes.

use driver_image_checks::recompute_checksum;
use object::pe;

/// IMAGE_DEBUG_TYPE_EX_DLLCHARACTERISTICS (winnt.h; Microsoft Learn, "PE Format", Debug Type): the
/// debug entry /CETCOMPAT writes.
const IMAGE_DEBUG_TYPE_EX_DLLCHARACTERISTICS: u32 = 20;
use object::write::pe::{NtHeaders, Writer};

pub const TEST_IMPORTS: [&str; 3] = ["DbgPrintEx", "KeBugCheckEx", "memset"];

/// The extended DLL characteristic /CETCOMPAT sets (PE format, "Extended DLL Characteristics":
/// https://learn.microsoft.com/windows/win32/debug/pe-format#extended-dll-characteristics).
pub const IMAGE_DLLCHARACTERISTICS_EX_CET_COMPAT: u32 = 0x1;
/// Another one, FORWARD_CFI_COMPAT, for an entry that says something other than CET_COMPAT.
pub const IMAGE_DLLCHARACTERISTICS_EX_FORWARD_CFI_COMPAT: u32 = 0x40;

/// One entry of an import lookup table.
#[derive(Clone, Copy, Debug)]
pub enum Thunk {
    Name(&'static str),
    Ordinal(u16),
}

pub fn by_name(names: &[&'static str]) -> Vec<Thunk> {
    names.iter().map(|&name| Thunk::Name(name)).collect()
}

/// Everything a test can vary. [`Spec::baseline`] passes every rule.
#[derive(Clone, Debug)]
pub struct Spec {
    pub is_64: bool,
    pub machine: u16,
    pub subsystem: u16,
    pub dll_characteristics: u16,
    /// Where DriverEntry's code and export are: INIT (true) or .text.
    pub driver_entry_in_init: bool,
    /// The name under which DriverEntry's code is exported.
    pub export_name: &'static str,
    /// Added to DriverEntry's RVA to give AddressOfEntryPoint.
    pub entry_point_delta: u32,
    pub init_characteristics: u32,
    pub data_characteristics: u32,
    pub imports: Vec<(&'static str, Vec<Thunk>)>,
    pub tls_directory: bool,
    /// wCertificateType of the embedded WIN_CERTIFICATE, or no certificate table at all.
    pub certificate_type: Option<u16>,
    /// Whether to store the checksum, as lld-link /RELEASE does.
    pub checksum: bool,
    /// A further section after `.data`, such as the driver's `.pmi`.
    pub extra_section: Option<Section>,
    /// The flags of the debug directory's IMAGE_DEBUG_TYPE_EX_DLLCHARACTERISTICS entry, or no debug
    /// directory at all.
    pub ex_dll_characteristics: Option<u32>,
}

/// A section of chosen name, characteristics and contents. Its virtual size is the length of the
/// contents; its raw data is that padded with zeros to the file alignment.
#[derive(Clone, Debug)]
pub struct Section {
    pub name: &'static str,
    pub characteristics: u32,
    pub contents: Vec<u8>,
}

impl Spec {
    pub fn baseline() -> Spec {
        Spec {
            is_64: true,
            machine: pe::IMAGE_FILE_MACHINE_AMD64,
            subsystem: pe::IMAGE_SUBSYSTEM_NATIVE,
            // What lld-link gives the real driver (/DYNAMICBASE /NXCOMPAT /INTEGRITYCHECK).
            dll_characteristics: pe::IMAGE_DLLCHARACTERISTICS_HIGH_ENTROPY_VA
                | pe::IMAGE_DLLCHARACTERISTICS_DYNAMIC_BASE
                | pe::IMAGE_DLLCHARACTERISTICS_FORCE_INTEGRITY
                | pe::IMAGE_DLLCHARACTERISTICS_NX_COMPAT,
            driver_entry_in_init: true,
            export_name: "DriverEntry",
            entry_point_delta: 0,
            init_characteristics: pe::IMAGE_SCN_CNT_CODE
                | pe::IMAGE_SCN_MEM_EXECUTE
                | pe::IMAGE_SCN_MEM_READ
                | pe::IMAGE_SCN_MEM_DISCARDABLE,
            data_characteristics: pe::IMAGE_SCN_CNT_INITIALIZED_DATA
                | pe::IMAGE_SCN_MEM_READ
                | pe::IMAGE_SCN_MEM_WRITE,
            imports: vec![("ntoskrnl.exe", by_name(&TEST_IMPORTS))],
            tls_directory: false,
            certificate_type: Some(WIN_CERT_TYPE_PKCS_SIGNED_DATA),
            checksum: true,
            extra_section: None,
            // What lld-link /CETCOMPAT gives the real driver.
            ex_dll_characteristics: Some(IMAGE_DLLCHARACTERISTICS_EX_CET_COMPAT),
        }
    }
}

pub const WIN_CERT_TYPE_X509: u16 = 1;
pub const WIN_CERT_TYPE_PKCS_SIGNED_DATA: u16 = 2;
const WIN_CERT_REVISION_2_0: u16 = 0x0200;

/// A built image and the RVA of its DriverEntry.
pub struct Built {
    pub bytes: Vec<u8>,
    pub driver_entry: u32,
}

/// `xor eax, eax; ret`: DriverEntry returning STATUS_SUCCESS. Three bytes, so that an entry point
/// one byte further still lies inside it.
const DRIVER_ENTRY_CODE: [u8; 3] = [0x31, 0xc0, 0xc3];
/// `ret` followed by int3 padding: the driver's other code.
const TEXT_CODE: [u8; 16] =
    [0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc];
const DATA: [u8; 16] = [0x11; 16];
const FILE_ALIGNMENT: u64 = 0x200;
/// Stands in for the PKCS#7 SignedData blob: the structural rule only looks at the header.
const FAKE_SIGNED_DATA: [u8; 24] = [0x30; 24];

pub fn build(spec: &Spec) -> Built {
    let mut bytes = Vec::new();
    let mut writer = Writer::new(spec.is_64, 0x1000, FILE_ALIGNMENT as u32, &mut bytes);
    writer.reserve_dos_header_and_stub();
    writer.reserve_nt_headers(pe::IMAGE_NUMBEROF_DIRECTORY_ENTRIES);
    writer.reserve_section_headers(4 + u16::from(spec.extra_section.is_some()));
    let text = writer.reserve_text_section(TEXT_CODE.len() as u32);
    let init_len = DRIVER_ENTRY_CODE.len() as u32;
    let init = writer.reserve_section(*b"INIT\0\0\0\0", spec.init_characteristics, init_len, init_len);
    let data = writer.reserve_section(
        *b".data\0\0\0",
        spec.data_characteristics,
        DATA.len() as u32,
        DATA.len() as u32,
    );
    let extra = spec.extra_section.as_ref().map(|section| {
        let mut name = [0; 8];
        name[..section.name.len()].copy_from_slice(section.name.as_bytes());
        let len = section.contents.len() as u32;
        (writer.reserve_section(name, section.characteristics, len, len), &section.contents)
    });

    let driver_entry = if spec.driver_entry_in_init { init.virtual_address } else { text.virtual_address };
    // The next section starts at the next file-aligned offset: the debug directory records it.
    let rdata_file_offset = writer.reserved_len().next_multiple_of(FILE_ALIGNMENT as u32);
    let rdata = Rdata::build(spec, writer.virtual_len(), rdata_file_offset, driver_entry);
    let rdata_range = writer.reserve_rdata_section(rdata.bytes.len() as u32);
    assert_eq!(rdata_range.virtual_address, rdata.rva, ".rdata was laid out for another address");
    assert_eq!(rdata_range.file_offset, rdata_file_offset, ".rdata was laid out for another offset");
    writer.set_data_directory(pe::IMAGE_DIRECTORY_ENTRY_EXPORT, rdata.export.0, rdata.export.1);
    if let Some((rva, size)) = rdata.import {
        writer.set_data_directory(pe::IMAGE_DIRECTORY_ENTRY_IMPORT, rva, size);
    }
    if let Some((rva, size)) = rdata.tls {
        writer.set_data_directory(pe::IMAGE_DIRECTORY_ENTRY_TLS, rva, size);
    }
    if let Some((rva, size)) = rdata.debug {
        writer.set_data_directory(pe::IMAGE_DIRECTORY_ENTRY_DEBUG, rva, size);
    }
    let certificate = spec.certificate_type.map(win_certificate);
    if let Some(certificate) = &certificate {
        writer.reserve_certificate_table(certificate.len() as u32);
    }

    writer.write_dos_header_and_stub().expect("DOS header");
    writer.write_nt_headers(nt_headers(spec, driver_entry + spec.entry_point_delta));
    writer.write_section_headers();
    writer.write_section(text.file_offset, &TEXT_CODE);
    writer.write_section(init.file_offset, &DRIVER_ENTRY_CODE);
    writer.write_section(data.file_offset, &DATA);
    if let Some((range, contents)) = extra {
        writer.write_section(range.file_offset, contents);
    }
    writer.write_section(rdata_range.file_offset, &rdata.bytes);
    if let Some(certificate) = &certificate {
        writer.write_certificate_table(certificate);
    }

    if spec.checksum {
        recompute_checksum(&mut bytes).expect("a PE image");
    }
    Built { bytes, driver_entry }
}

fn nt_headers(spec: &Spec, address_of_entry_point: u32) -> NtHeaders {
    NtHeaders {
        machine: spec.machine,
        time_date_stamp: 0,
        characteristics: pe::IMAGE_FILE_EXECUTABLE_IMAGE
            | pe::IMAGE_FILE_LARGE_ADDRESS_AWARE
            | pe::IMAGE_FILE_DLL,
        major_linker_version: 14,
        minor_linker_version: 0,
        address_of_entry_point,
        image_base: 0x1_4000_0000,
        major_operating_system_version: 10,
        minor_operating_system_version: 0,
        major_image_version: 0,
        minor_image_version: 0,
        major_subsystem_version: 10,
        minor_subsystem_version: 0,
        subsystem: spec.subsystem,
        dll_characteristics: spec.dll_characteristics,
        size_of_stack_reserve: 0x10_0000,
        size_of_stack_commit: 0x1000,
        size_of_heap_reserve: 0x10_0000,
        size_of_heap_commit: 0x1000,
    }
}

/// A WIN_CERTIFICATE: dwLength, wRevision, wCertificateType, then the certificate.
fn win_certificate(certificate_type: u16) -> Vec<u8> {
    let length = 8 + FAKE_SIGNED_DATA.len() as u32;
    let mut bytes = length.to_le_bytes().to_vec();
    bytes.extend(WIN_CERT_REVISION_2_0.to_le_bytes());
    bytes.extend(certificate_type.to_le_bytes());
    bytes.extend(FAKE_SIGNED_DATA);
    bytes
}

/// The `.rdata` section: export directory, import directory, optional TLS and debug directories.
/// Tables are written before the directories that point at them, so no address is needed before it
/// is known.
struct Rdata {
    rva: u32,
    file_offset: u32,
    is_64: bool,
    bytes: Vec<u8>,
    export: (u32, u32),
    import: Option<(u32, u32)>,
    tls: Option<(u32, u32)>,
    debug: Option<(u32, u32)>,
}

impl Rdata {
    fn build(spec: &Spec, rva: u32, file_offset: u32, driver_entry: u32) -> Rdata {
        let mut rdata = Rdata {
            rva,
            file_offset,
            is_64: spec.is_64,
            bytes: Vec::new(),
            export: (0, 0),
            import: None,
            tls: None,
            debug: None,
        };
        rdata.export = rdata.exports(spec.export_name, driver_entry);
        if !spec.imports.is_empty() {
            rdata.import = Some(rdata.imports(&spec.imports));
        }
        if spec.tls_directory {
            rdata.tls = Some(rdata.tls_directory());
        }
        if let Some(flags) = spec.ex_dll_characteristics {
            rdata.debug = Some(rdata.ex_dll_characteristics_directory(flags));
        }
        rdata
    }

    /// A debug directory of one IMAGE_DEBUG_DIRECTORY, of type IMAGE_DEBUG_TYPE_EX_DLLCHARACTERISTICS,
    /// whose data is the 4-byte `flags`: what /CETCOMPAT adds.
    fn ex_dll_characteristics_directory(&mut self, flags: u32) -> (u32, u32) {
        self.align(4);
        let data = self.u32(flags);
        let data_file_offset = self.file_offset + (data - self.rva);
        let directory = self.here();
        // IMAGE_DEBUG_DIRECTORY: Characteristics, TimeDateStamp, Major+MinorVersion, Type, SizeOfData,
        // AddressOfRawData, PointerToRawData (a file offset).
        let debug_type = IMAGE_DEBUG_TYPE_EX_DLLCHARACTERISTICS;
        for field in [0, 0, 0, debug_type, 4, data, data_file_offset] {
            self.u32(field);
        }
        (directory, self.here() - directory)
    }

    /// An export directory with the single export `name` at `rva`.
    fn exports(&mut self, name: &str, rva: u32) -> (u32, u32) {
        let module_name = self.c_string("driver.sys");
        let export_name = self.c_string(name);
        self.align(4);
        let functions = self.u32(rva);
        let names = self.u32(export_name);
        let ordinals = self.here();
        self.bytes.extend(0u16.to_le_bytes());
        self.align(4);
        // IMAGE_EXPORT_DIRECTORY: Characteristics, TimeDateStamp, Major+MinorVersion, Name, Base,
        // NumberOfFunctions, NumberOfNames, AddressOfFunctions, AddressOfNames, AddressOfNameOrdinals.
        let directory = self.here();
        for field in [0, 0, 0, module_name, 1, 1, 1, functions, names, ordinals] {
            self.u32(field);
        }
        (directory, self.here() - directory)
    }

    /// Import descriptors, each with its lookup table, address table, hint/name entries and name.
    fn imports(&mut self, modules: &[(&str, Vec<Thunk>)]) -> (u32, u32) {
        let mut descriptors = Vec::new();
        for (module, thunks) in modules {
            let name = self.c_string(module);
            let mut entries = Vec::new();
            for thunk in thunks {
                entries.push(match *thunk {
                    Thunk::Name(name) => u64::from(self.hint_name(name)),
                    Thunk::Ordinal(ordinal) => self.ordinal_flag() | u64::from(ordinal),
                });
            }
            let lookup_table = self.thunk_table(&entries);
            let address_table = self.thunk_table(&entries);
            // IMAGE_IMPORT_DESCRIPTOR: OriginalFirstThunk, TimeDateStamp, ForwarderChain, Name, FirstThunk.
            descriptors.push([lookup_table, 0, 0, name, address_table]);
        }
        self.align(4);
        let directory = self.here();
        for field in descriptors.iter().flatten().chain(&[0; 5]) {
            self.u32(*field);
        }
        (directory, self.here() - directory)
    }

    /// An all-zero IMAGE_TLS_DIRECTORY: enough for the directory entry to be present and parse.
    fn tls_directory(&mut self) -> (u32, u32) {
        self.align(8);
        let directory = self.here();
        let size = if self.is_64 { 40 } else { 24 };
        self.bytes.resize(self.bytes.len() + size, 0);
        (directory, size as u32)
    }

    fn ordinal_flag(&self) -> u64 {
        if self.is_64 { pe::IMAGE_ORDINAL_FLAG64 } else { u64::from(pe::IMAGE_ORDINAL_FLAG32) }
    }

    /// A zero-terminated table of pointer-sized entries.
    fn thunk_table(&mut self, entries: &[u64]) -> u32 {
        self.align(8);
        let table = self.here();
        for &entry in entries.iter().chain(&[0]) {
            if self.is_64 {
                self.bytes.extend(entry.to_le_bytes());
            } else {
                self.bytes.extend((entry as u32).to_le_bytes());
            }
        }
        table
    }

    fn hint_name(&mut self, name: &str) -> u32 {
        self.align(2);
        let entry = self.here();
        self.bytes.extend(0u16.to_le_bytes());
        self.c_string(name);
        entry
    }

    fn c_string(&mut self, text: &str) -> u32 {
        let at = self.here();
        self.bytes.extend(text.as_bytes());
        self.bytes.push(0);
        at
    }

    /// Appends `value`, returning its RVA.
    fn u32(&mut self, value: u32) -> u32 {
        let at = self.here();
        self.bytes.extend(value.to_le_bytes());
        at
    }

    fn align(&mut self, alignment: usize) {
        self.bytes.resize(self.bytes.len().next_multiple_of(alignment), 0);
    }

    fn here(&self) -> u32 {
        self.rva + self.bytes.len() as u32
    }
}

//! The PE loader: maps a driver image at a base other than its preferred one, applies its base
//! relocations, binds every import by name to the double's exports, protects each section according to
//! its characteristics (never writable and executable at once) and, after DriverEntry, makes the
//! discardable INIT section inaccessible, as Driver Verifier does.
//!
//! **Force IRQL Checking** (Driver Verifier): the image's pageable sections (named `PAGE*`) are trimmed,
//! made inaccessible, whenever a virtual processor raises its IRQL to DISPATCH_LEVEL or above (any IRQL
//! change goes through the KPCR: `mov cr8`, spin locks, broadcast workers, overflow interrupts; see
//! `irql_changed`), and made accessible again when no processor is at DISPATCH_LEVEL or above. A
//! fault on a trimmed page (`pageable_fault`) is a violation when the faulting processor's IRQL is
//! DISPATCH_LEVEL or above (Windows would bug-check 0xD1/0xA; the trap handler reports the RVA and
//! aborts); below it, the page is simply paged back in and the instruction retried, as the memory
//! manager would. A driver without `PAGE*` sections pays nothing.

use crate::exports::Registry;
use crate::image_map::{self, Section};
use goblin::pe::PE;
use std::fmt;

const IMAGE_SCN_MEM_EXECUTE: u32 = 0x2000_0000;
const IMAGE_SCN_MEM_READ: u32 = 0x4000_0000;
const IMAGE_SCN_MEM_WRITE: u32 = 0x8000_0000;
const IMAGE_REL_BASED_ABSOLUTE: u16 = 0;
const IMAGE_REL_BASED_DIR64: u16 = 10;
const PAGE: usize = 4096;

/// Why an image could not be loaded.
#[derive(Debug, PartialEq, Eq)]
pub enum LoadError {
    /// The file is not a PE32+ image the loader can map.
    Malformed(String),
    /// Imports no export of the registry provides, every one of them, as `module!name`.
    UnresolvedImports(Vec<String>),
    /// A section asks to be writable and executable at once.
    WritableAndExecutable(String),
    /// mmap or mprotect failed.
    Os(String),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Malformed(why) => write!(f, "malformed image: {why}"),
            LoadError::UnresolvedImports(names) => write!(f, "unresolved imports: {}", names.join(", ")),
            LoadError::WritableAndExecutable(name) => write!(f, "section {name} is writable and executable"),
            LoadError::Os(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for LoadError {}

/// A mapped, relocated, bound and protected image.
#[derive(Debug)]
pub struct Image {
    base: usize,
    size: usize,
    entry_rva: usize,
    preferred_base: u64,
    sections: Vec<Section>,
    /// RVAs of the `cpuid` instructions rewritten to `ud2` (see [`crate::cpu::cpuid`]).
    cpuid_sites: Vec<usize>,
    /// RVAs of 0F A2 byte pairs that decoding found inside other instructions (not `cpuid`).
    embedded_cpuid_pairs: Vec<usize>,
    unmap_on_drop: bool,
}

fn bad(why: impl Into<String>) -> LoadError {
    LoadError::Malformed(why.into())
}

impl Image {
    /// Loads the image in `bytes`, binding its imports to `registry`.
    pub fn load(bytes: &[u8], registry: &Registry) -> Result<Image, LoadError> {
        let pe = PE::parse(bytes).map_err(|error| bad(error.to_string()))?;
        if !pe.is_64 {
            return Err(bad("not a PE32+ image"));
        }
        let optional = pe.header.optional_header.ok_or_else(|| bad("no optional header"))?;
        let fields = optional.windows_fields;
        if !(fields.section_alignment as usize).is_multiple_of(PAGE) {
            return Err(bad(format!(
                "section alignment {:#x} is not a multiple of a page",
                fields.section_alignment
            )));
        }
        let size = (fields.size_of_image as usize).div_ceil(PAGE) * PAGE;
        let headers = fields.size_of_headers as usize;
        if headers > size || headers > bytes.len() {
            return Err(bad("headers larger than the image"));
        }
        let base = map_anywhere_but(size, pe.image_base)?;
        let mut image = Image {
            base,
            size,
            entry_rva: pe.entry as usize,
            preferred_base: pe.image_base,
            sections: Vec::new(),
            cpuid_sites: Vec::new(),
            embedded_cpuid_pairs: Vec::new(),
            unmap_on_drop: true,
        };
        // SAFETY: the mapping is `size` writable bytes and `headers` <= size, <= bytes.len().
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), base as *mut u8, headers) };
        for section in &pe.sections {
            let name = section.name().unwrap_or("?").to_string();
            let rva = section.virtual_address as usize;
            // Raw data beyond VirtualSize is file padding; a VirtualSize of 0 means the raw size.
            let raw = match section.virtual_size {
                0 => section.size_of_raw_data,
                virtual_size => section.size_of_raw_data.min(virtual_size),
            } as usize;
            let virtual_size = (section.virtual_size as usize).max(raw);
            let file_offset = section.pointer_to_raw_data as usize;
            if !rva.is_multiple_of(PAGE) || rva + virtual_size > size || file_offset + raw > bytes.len() {
                return Err(bad(format!("section {name} lies outside the image or the file")));
            }
            // SAFETY: both ranges were bounds-checked just above; the mapping is writable.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr().add(file_offset), (base + rva) as *mut u8, raw)
            };
            let characteristics = section.characteristics;
            let (read, write, execute) = (
                characteristics & IMAGE_SCN_MEM_READ != 0,
                characteristics & IMAGE_SCN_MEM_WRITE != 0,
                characteristics & IMAGE_SCN_MEM_EXECUTE != 0,
            );
            if write && execute {
                return Err(LoadError::WritableAndExecutable(name));
            }
            let protection = match (read || execute, write, execute) {
                (_, true, _) => libc::PROT_READ | libc::PROT_WRITE,
                (_, _, true) => libc::PROT_READ | libc::PROT_EXEC,
                (true, _, _) => libc::PROT_READ,
                _ => libc::PROT_NONE,
            };
            image.sections.push(Section {
                name,
                rva,
                length: virtual_size.div_ceil(PAGE) * PAGE,
                protection,
                discarded: false,
            });
        }
        let delta = (base as u64).wrapping_sub(pe.image_base);
        if let Some(directory) = optional.data_directories.get_base_relocation_table() {
            image.relocate(directory.virtual_address as usize, directory.size as usize, delta)?;
        }
        if let Some(directory) = optional.data_directories.get_import_table() {
            image.bind(directory.virtual_address as usize, directory.size as usize, registry)?;
        }
        image.rewrite_cpuid(&pe)?;
        image.protect()?;
        image_map::install(base, size, &image.sections);
        Ok(image)
    }

    pub fn base(&self) -> usize {
        self.base
    }

    pub fn size(&self) -> usize {
        self.size
    }

    pub fn preferred_base(&self) -> u64 {
        self.preferred_base
    }

    /// The entry point's address (DriverEntry).
    pub fn entry_point(&self) -> usize {
        self.base + self.entry_rva
    }

    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// RVAs of the `cpuid` instructions rewritten to `ud2`, in address order.
    pub fn cpuid_sites(&self) -> &[usize] {
        &self.cpuid_sites
    }

    /// 0F A2 byte pairs left in executable sections after rewriting, other than those the decoding of
    /// `.pdata`'s functions found inside another instruction (a displacement or immediate that happens
    /// to hold those bytes): 0 when every `cpuid` was found through `.pdata`.
    pub fn cpuid_bytes_left(&self) -> usize {
        self.sections
            .iter()
            .filter(|section| section.protection & libc::PROT_EXEC != 0 && !section.discarded)
            .map(|section| {
                // SAFETY: an executable section is mapped readable for its whole length.
                let code = unsafe {
                    std::slice::from_raw_parts((self.base + section.rva) as *const u8, section.length)
                };
                let embedded = self
                    .embedded_cpuid_pairs
                    .iter()
                    .filter(|&&rva| rva >= section.rva && rva < section.rva + section.length)
                    .count();
                crate::cpu::cpuid::unlisted_cpuid_bytes(code) - embedded
            })
            .sum()
    }

    /// Rewrites every `cpuid` (0F A2) in the functions `.pdata` lists into `ud2` (0F 0B), decoding each
    /// RUNTIME_FUNCTION range with iced-x86. Runs while the mapping is still writable.
    fn rewrite_cpuid(&mut self, pe: &PE) -> Result<(), LoadError> {
        use iced_x86::{Code, Decoder, DecoderOptions};
        let Some(exceptions) = pe.exception_data.as_ref() else { return Ok(()) };
        let mut sites = Vec::new();
        let mut embedded = Vec::new();
        for function in exceptions.functions() {
            let function = function.map_err(|error| bad(format!(".pdata: {error}")))?;
            let (begin, end) = (function.begin_address as usize, function.end_address as usize);
            if begin >= end {
                continue;
            }
            self.check_range(begin, end - begin)?;
            let executable = self.sections.iter().any(|section| {
                section.protection & libc::PROT_EXEC != 0
                    && begin >= section.rva
                    && end <= section.rva + section.length
            });
            if !executable {
                return Err(bad(format!(
                    ".pdata range {begin:#x}..{end:#x} is not in an executable section"
                )));
            }
            // SAFETY: in bounds (checked); the mapping is readable and writable while loading.
            let code = unsafe { std::slice::from_raw_parts((self.base + begin) as *const u8, end - begin) };
            let mut decoder = Decoder::with_ip(64, code, (self.base + begin) as u64, DecoderOptions::NONE);
            for instruction in &mut decoder {
                let rva = instruction.ip() as usize - self.base;
                if instruction.code() == Code::Cpuid {
                    sites.push(rva);
                    continue;
                }
                let bytes = &code[rva - begin..rva - begin + instruction.len()];
                for (offset, pair) in bytes.windows(2).enumerate() {
                    if pair == [0x0F, 0xA2] {
                        embedded.push(rva + offset);
                    }
                }
            }
        }
        sites.sort_unstable();
        sites.dedup();
        for &rva in &sites {
            // SAFETY: a decoded 2-byte instruction inside the image; the mapping is writable.
            unsafe { std::ptr::copy_nonoverlapping([0x0F, 0x0B].as_ptr(), (self.base + rva) as *mut u8, 2) };
            crate::cpu::cpuid::add_site((self.base + rva) as u64);
        }
        self.cpuid_sites = sites;
        embedded.sort_unstable();
        embedded.dedup();
        self.embedded_cpuid_pairs = embedded;
        Ok(())
    }

    /// Keeps the mapping after this value is dropped (when driver code may still run).
    pub fn leak_on_drop(&mut self) {
        self.unmap_on_drop = false;
    }

    fn check_range(&self, rva: usize, length: usize) -> Result<(), LoadError> {
        if rva.checked_add(length).is_none_or(|end| end > self.size) {
            return Err(bad(format!("range {rva:#x}+{length:#x} outside the image")));
        }
        Ok(())
    }

    fn read_u32(&self, rva: usize) -> Result<u32, LoadError> {
        self.check_range(rva, 4)?;
        // SAFETY: in bounds of the mapping (checked), which is readable and writable while loading.
        Ok(unsafe { std::ptr::read_unaligned((self.base + rva) as *const u32) })
    }

    fn read_u64(&self, rva: usize) -> Result<u64, LoadError> {
        self.check_range(rva, 8)?;
        // SAFETY: as in read_u32.
        Ok(unsafe { std::ptr::read_unaligned((self.base + rva) as *const u64) })
    }

    fn write_u64(&self, rva: usize, value: u64) -> Result<(), LoadError> {
        self.check_range(rva, 8)?;
        // SAFETY: as in read_u32.
        unsafe { std::ptr::write_unaligned((self.base + rva) as *mut u64, value) };
        Ok(())
    }

    fn c_string(&self, rva: usize) -> Result<String, LoadError> {
        let mut text = Vec::new();
        for offset in rva..self.size {
            // SAFETY: offset < size: inside the mapping.
            let byte = unsafe { *((self.base + offset) as *const u8) };
            if byte == 0 {
                return Ok(String::from_utf8_lossy(&text).into_owned());
            }
            text.push(byte);
        }
        Err(bad(format!("unterminated string at {rva:#x}")))
    }

    /// Applies the base relocation blocks at `rva` (IMAGE_BASE_RELOCATION + 16-bit entries).
    fn relocate(&self, rva: usize, length: usize, delta: u64) -> Result<(), LoadError> {
        let end = rva + length;
        let mut block = rva;
        while block + 8 <= end {
            let page = self.read_u32(block)? as usize;
            let block_size = self.read_u32(block + 4)? as usize;
            if block_size < 8 || block + block_size > end {
                return Err(bad(format!("bad relocation block at {block:#x}")));
            }
            for entry in (block + 8..block + block_size).step_by(2) {
                self.check_range(entry, 2)?;
                // SAFETY: in bounds (checked).
                let entry = unsafe { std::ptr::read_unaligned((self.base + entry) as *const u16) };
                match entry >> 12 {
                    IMAGE_REL_BASED_ABSOLUTE => {}
                    IMAGE_REL_BASED_DIR64 => {
                        let target = page + usize::from(entry & 0xFFF);
                        self.write_u64(target, self.read_u64(target)?.wrapping_add(delta))?;
                    }
                    other => return Err(bad(format!("unsupported relocation type {other}"))),
                }
            }
            block += block_size;
        }
        Ok(())
    }

    /// Binds every import by name; fails listing every name the registry lacks.
    fn bind(&self, rva: usize, _length: usize, registry: &Registry) -> Result<(), LoadError> {
        let mut missing = Vec::new();
        for descriptor in (rva..).step_by(20) {
            let lookup = self.read_u32(descriptor)? as usize;
            let name = self.read_u32(descriptor + 12)? as usize;
            let address_table = self.read_u32(descriptor + 16)? as usize;
            if lookup == 0 && name == 0 && address_table == 0 {
                break;
            }
            let module = self.c_string(name)?;
            let lookup = if lookup == 0 { address_table } else { lookup };
            for index in 0.. {
                let thunk = self.read_u64(lookup + 8 * index)?;
                if thunk == 0 {
                    break;
                }
                if thunk & (1 << 63) != 0 {
                    missing.push(format!("{module}!#{} (by ordinal)", thunk & 0xFFFF));
                    continue;
                }
                // IMAGE_IMPORT_BY_NAME: a 16-bit hint, then the name.
                let routine = self.c_string((thunk & 0x7FFF_FFFF) as usize + 2)?;
                match registry.resolve(&module, &routine) {
                    Some(address) => self.write_u64(address_table + 8 * index, address as u64)?,
                    None => missing.push(format!("{module}!{routine}")),
                }
            }
        }
        if missing.is_empty() { Ok(()) } else { Err(LoadError::UnresolvedImports(missing)) }
    }

    fn protect(&self) -> Result<(), LoadError> {
        mprotect(self.base, PAGE, libc::PROT_READ, "headers")?;
        for section in &self.sections {
            mprotect(self.base + section.rva, section.length, section.protection, &section.name)?;
        }
        Ok(())
    }

    /// Makes the INIT section inaccessible (after DriverEntry has returned). Returns whether there was one.
    pub fn discard_init(&mut self) -> Result<bool, LoadError> {
        let mut found = false;
        for section in self.sections.iter_mut().filter(|section| section.name == "INIT") {
            mprotect(self.base + section.rva, section.length, libc::PROT_NONE, "INIT")?;
            section.discarded = true;
            found = true;
        }
        image_map::update_sections(self.base, &self.sections);
        Ok(found)
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        image_map::remove(self.base);
        if self.unmap_on_drop {
            crate::cpu::cpuid::remove_sites(self.base as u64, self.size as u64);
            // SAFETY: the mapping was made by map_anywhere_but with this size and nothing refers to it
            // (the owner decided no driver code can run any more).
            unsafe { libc::munmap(self.base as *mut libc::c_void, self.size) };
        }
    }
}

/// Maps `size` bytes of zeroed, read-write memory at an address other than `preferred`.
fn map_anywhere_but(size: usize, preferred: u64) -> Result<usize, LoadError> {
    // SAFETY: an anonymous private mapping with no address hint: touches no existing memory.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(LoadError::Os(format!("mmap: {}", std::io::Error::last_os_error())));
    }
    // Kernel images prefer an address in the upper half, which user space never gets; still check.
    if base as u64 == preferred {
        return Err(LoadError::Os("mmap returned the preferred base".into()));
    }
    Ok(base as usize)
}

fn mprotect(address: usize, length: usize, protection: libc::c_int, what: &str) -> Result<(), LoadError> {
    // SAFETY: the range lies inside the image mapping this loader owns (rounded to pages).
    let result = unsafe { libc::mprotect(address as *mut libc::c_void, length, protection) };
    if result != 0 {
        return Err(LoadError::Os(format!("mprotect({what}): {}", std::io::Error::last_os_error())));
    }
    Ok(())
}

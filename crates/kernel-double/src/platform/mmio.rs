//! The memory controller's registers as the driver sees them through MmMapIoSpaceEx: host pages kept
//! PROT_NONE, so every access faults; the trap handler ([`crate::cpu::mmio`]) decodes the instruction
//! and calls `read` or `write` here, which answer from the traffic model ([`super::traffic`]) and
//! record what a driver must never do: write a counter register, read outside the whitelisted offsets,
//! or read with another width than the register's.
//!
//! A read of any width returns the bytes the registers hold there (little-endian, 0 between
//! registers), as the hardware would: a 64-bit read of Skylake's 32-bit DATA_READS returns
//! DATA_WRITES in its upper half (Linux `snb_uncore_imc_read_counter`: "SNB IMC counters are 32-bit
//! and are laid out back to back", hence `readl`).

use super::{Platform, current, traffic};
use crate::poison::IgnorePoison;
use crate::{image_map, violations};
use std::sync::RwLock;

/// Where a violation on the mapped page is reported.
const AT: &str = "memory controller MMIO";
const PAGE: u64 = 0x1000;

/// One MmMapIoSpaceEx mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// What the driver passed: PhysicalAddress and NumberOfBytes, and Protect.
    pub physical: u64,
    pub bytes: usize,
    pub protect: u32,
    /// What it got back.
    pub virtual_address: usize,
    /// The host pages behind it: their start and length.
    pages: (usize, usize),
}

static MAPPINGS: RwLock<Vec<Mapping>> = RwLock::new(Vec::new());

/// Every mapping still held.
pub fn mappings() -> Vec<Mapping> {
    MAPPINGS.read().ignore_poison().clone()
}

/// Where `physical .. physical + bytes` lies on `platform`: (controller, offset of `physical` from its
/// base), or why it is not the memory controller's device memory.
pub fn locate(platform: &Platform, physical: u64, bytes: u64) -> Result<(u32, u64), String> {
    let Some(bridge) = &platform.bridge else { return Err("there is no device at 00:00.0".into()) };
    let Some(memory) = platform.memory else {
        return Err(format!(
            "device {:04x}:{:04x} at 00:00.0 has no memory controller behind it on this machine (an unknown \
             device ID, or a virtual machine's emulated bridge)",
            bridge.vendor, bridge.device
        ));
    };
    if bridge.mchbar & super::MCHBAR_ENABLE == 0 {
        return Err(format!("MCHBAR ({:#x}) is disabled: its enable bit is clear", bridge.mchbar));
    }
    (0..memory.controllers)
        .filter_map(|index| Some((index, platform.controller_base(index)?)))
        .find(|&(_, base)| physical >= base && physical + bytes <= base + memory.window)
        .map(|(index, base)| (index, physical - base))
        .ok_or_else(|| {
            format!(
                "physical {physical:#x}..{:#x} is not device memory of the memory controller \
                 (MCHBAR {:#x}, {} controller(s) of {:#x} bytes {:#x} apart)",
                physical + bytes,
                bridge.mchbar_base(),
                memory.controllers,
                memory.window,
                memory.stride
            )
        })
}

/// Maps `bytes` at `physical` as PROT_NONE host pages and records the mapping; returns the address
/// for `physical`, or null if the host has no room.
pub(crate) fn map(physical: u64, bytes: usize, protect: u32) -> *mut u8 {
    crate::cpu::mmio::set_device(crate::cpu::mmio::Device { contains, read, write });
    let first = physical & !(PAGE - 1);
    let length = ((physical + bytes as u64).next_multiple_of(PAGE) - first) as usize;
    // SAFETY: a fresh anonymous private mapping the double owns; no existing memory is touched.
    let pages = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            length,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if pages == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    let virtual_address = pages as usize + (physical - first) as usize;
    let mapping = Mapping { physical, bytes, protect, virtual_address, pages: (pages as usize, length) };
    MAPPINGS.write().ignore_poison().push(mapping);
    virtual_address as *mut u8
}

/// Unmaps the mapping MmMapIoSpaceEx returned at `address`, if its size is `bytes`; else why not.
pub(crate) fn unmap(address: usize, bytes: usize) -> Result<(), String> {
    let mut mappings = MAPPINGS.write().ignore_poison();
    let Some(position) = mappings.iter().position(|mapping| mapping.virtual_address == address) else {
        return Err(format!("{address:#x} is not an address MmMapIoSpaceEx returned, or it was unmapped"));
    };
    if mappings[position].bytes != bytes {
        return Err(format!(
            "NumberOfBytes {bytes:#x}, but {address:#x} was mapped with {:#x}",
            mappings[position].bytes
        ));
    }
    let (start, length) = mappings.remove(position).pages;
    // SAFETY: the pages this mapping created, no longer recorded, so no fault is answered from them.
    unsafe { libc::munmap(start as *mut libc::c_void, length) };
    Ok(())
}

/// The physical address behind host address `address`, if a mapping covers it.
fn physical_of(address: u64) -> Option<u64> {
    let mappings = MAPPINGS.read().ignore_poison();
    mappings.iter().find_map(|mapping| {
        let (start, length) = (mapping.pages.0 as u64, mapping.pages.1 as u64);
        (address >= start && address < start + length)
            .then(|| (mapping.physical & !(PAGE - 1)) + (address - start))
    })
}

fn contains(address: u64) -> bool {
    physical_of(address).is_some()
}

/// A load of `width` bytes at host address `address` by the instruction at `rip`.
fn read(address: u64, width: u32, rip: u64) -> u64 {
    let platform = current();
    let Some(physical) = physical_of(address) else { return 0 };
    let Ok((controller, offset)) = locate(platform, physical, u64::from(width)) else {
        violations::record(
            AT,
            image_map::rva_of(rip),
            format!("read at physical {physical:#x}: no register"),
        );
        return 0;
    };
    let Some(memory) = platform.memory else { return 0 };
    match memory.register_at(offset) {
        Some(_) if width * 8 == memory.width => {}
        Some(register) => violations::record(
            AT,
            image_map::rva_of(rip),
            format!(
                "{}-bit read of the {}-bit {:?} register at MCHBAR + {:#x}",
                width * 8,
                memory.width,
                register.counter,
                physical - platform.controller_base(0).unwrap_or(0)
            ),
        ),
        None => violations::record(
            AT,
            image_map::rva_of(rip),
            format!(
                "{}-bit read at controller {controller} + {offset:#x}, outside the whitelisted offsets",
                width * 8
            ),
        ),
    }
    bytes_at(platform, controller, offset, width)
}

/// The `width` bytes at `offset` of controller `controller`'s registers, little-endian.
fn bytes_at(platform: &Platform, controller: u32, offset: u64, width: u32) -> u64 {
    let Some(memory) = platform.memory else { return 0 };
    let register_bytes = u64::from(memory.width / 8);
    (0..u64::from(width)).fold(0u64, |value, index| {
        let at = offset + index;
        let byte = memory
            .registers
            .iter()
            .find(|register| at >= register.offset && at < register.offset + register_bytes)
            .map_or(0, |register| {
                let counted = register_value(controller, register.counter, memory.width);
                (counted >> (8 * (at - register.offset))) & 0xFF
            });
        value | byte << (8 * index)
    })
}

/// What `counter` of controller `controller` reads: its count modulo 2^`width`.
pub fn register_value(controller: u32, counter: super::Counter, width: u32) -> u64 {
    let count = traffic::count(controller as usize, counter);
    if width >= 64 { count } else { count & ((1 << width) - 1) }
}

/// A store to the mapped page: never allowed (the counters are read-only, and a write to another
/// register of the memory controller could change how memory works). The store is dropped.
fn write(address: u64, width: u32, value: u64, rip: u64) {
    let physical = physical_of(address).unwrap_or(0);
    violations::record(
        AT,
        image_map::rva_of(rip),
        format!("{}-bit write of {value:#x} to physical {physical:#x}: the page is read-only", width * 8),
    );
}

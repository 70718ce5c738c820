//! The memory controller's rules, each broken once and caught, and Skylake's 32-bit counters read
//! exactly across their wraps by a poll of the kind the driver needs.

use super::*;
use crate::cpu::{DISPATCH_LEVEL, HIGH_LEVEL, PASSIVE_LEVEL};
use crate::report::Report;

const MMIO: &str = "memory controller MMIO";

/// Skylake's MCHBAR page that holds the 32-bit counters (MCHBAR + 0x5000), mapped read-only and
/// uncached, and its address.
fn skylake_counter_page() -> (u64, *mut u8) {
    let platform = choose("skylake");
    let physical = platform.controller_base(0).unwrap() + 0x5000;
    let page = map(physical, 0x1000, PAGE_READONLY | PAGE_NOCACHE);
    assert!(!page.is_null());
    (physical, page)
}

/// At 60 GB/s (36 read, 24 write) Skylake's 32-bit DATA_READS wraps every 7.6 virtual seconds: every
/// 10-minute sample crosses dozens of wraps, so the raw register difference is wrong, while a poll
/// every virtual second extends both counters to exactly the bytes moved.
#[test]
fn skylake_is_exact_across_32_bit_wraps_at_60_gb_per_second() {
    let (_, page) = skylake_counter_page();
    memory::set_traffic(36_000_000_000, 24_000_000_000);
    let read = |offset: usize| load(page.wrapping_add(offset), 4);
    let (mut raw, mut extended) = ([read(0x50), read(0x54)], [0u64; 2]);
    for sample in 1..=6u64 {
        let before = raw;
        for _ in 0..600 {
            hal::advance_clock(hal::PERFORMANCE_FREQUENCY);
            let now = [read(0x50), read(0x54)];
            for counter in 0..2 {
                extended[counter] += now[counter].wrapping_sub(raw[counter]) & 0xFFFF_FFFF;
            }
            raw = now;
        }
        let truth = memory::truth(0);
        assert_eq!(extended[0] * 64, truth.read, "sample {sample}: extended reads");
        assert_eq!(extended[1] * 64, truth.write, "sample {sample}: extended writes");
        assert_eq!(truth.read, sample * 600 * 36_000_000_000, "the traffic model's own count");
        assert_eq!(raw[0], (truth.read / 64) & 0xFFFF_FFFF, "the register is the count modulo 2^32");
        let naive = raw[0].wrapping_sub(before[0]) & 0xFFFF_FFFF;
        assert_ne!(naive * 64, 600 * 36_000_000_000, "one difference per sample loses the wraps");
    }
    assert_eq!(violations::all(), []);
}

#[test]
fn a_write_to_the_page_is_caught_and_dropped() {
    let (_, page) = skylake_counter_page();
    memory::set_traffic(6_400, 0);
    hal::advance_clock(hal::PERFORMANCE_FREQUENCY);
    // SAFETY: a mapped device page: the store faults and the trap handler emulates it.
    unsafe { std::ptr::write_volatile(page.wrapping_add(0x50).cast::<u32>(), 0) };
    let caught = found(MMIO);
    assert_eq!(caught.len(), 1, "{caught:?}");
    assert!(caught[0].contains("32-bit write of 0x0") && caught[0].contains("read-only"), "{}", caught[0]);
    assert_eq!(load(page.wrapping_add(0x50), 4), 100, "the register kept its count");
}

#[test]
fn reads_outside_the_whitelist_or_of_the_wrong_width_are_caught() {
    let (_, page) = skylake_counter_page();
    memory::set_traffic(64 * 0x1_0203, 64 * 0x40);
    hal::advance_clock(hal::PERFORMANCE_FREQUENCY);
    assert_eq!(load(page.wrapping_add(0x58), 4), 0, "nothing is at 0x5058 on Skylake");
    assert_eq!(load(page.wrapping_add(0x50), 8), 0x40 << 32 | 0x1_0203, "DATA_WRITES follows DATA_READS");
    assert_eq!(load(page.wrapping_add(0x51), 1), 0x02);
    let caught = found(MMIO);
    assert_eq!(caught.len(), 3, "{caught:?}");
    assert!(
        caught[0].contains("32-bit read at controller 0 + 0x5058, outside the whitelisted"),
        "{}",
        caught[0]
    );
    assert!(
        caught[1].contains("64-bit read of the 32-bit DataReads register at MCHBAR + 0x5050"),
        "{}",
        caught[1]
    );
    assert!(caught[2].contains("8-bit read at controller 0 + 0x5051"), "{}", caught[2]);
}

/// Loads into 8-, 16-, 32- and 64-bit destinations land as the processor lands them.
#[test]
fn loads_fill_their_destination_as_the_processor_does() {
    let (_, page) = skylake_counter_page();
    memory::set_traffic(64 * 0x1234_5678, 0);
    hal::advance_clock(hal::PERFORMANCE_FREQUENCY);
    let at = page.wrapping_add(0x50);
    let (mut rax, mut rcx, mut r9, mut r10) = (u64::MAX, u64::MAX, u64::MAX, u64::MAX);
    // SAFETY: each load faults on the device page and is emulated; only the named registers change.
    unsafe {
        std::arch::asm!(
            "mov ah, byte ptr [rsi]",
            "movzx ecx, word ptr [rsi]",
            "mov r9w, word ptr [rsi]",
            "mov r10d, dword ptr [rsi]",
            in("rsi") at,
            inout("rax") rax, inout("rcx") rcx, inout("r9") r9, inout("r10") r10,
            options(nostack),
        );
    }
    assert_eq!(rax, 0xFFFF_FFFF_FFFF_78FF, "AH takes the byte, the rest stays");
    assert_eq!(rcx, 0x5678, "movzx zero-extends, and a 32-bit destination clears the upper half");
    assert_eq!(r9, 0xFFFF_FFFF_FFFF_5678, "a 16-bit destination merges");
    assert_eq!(r10, 0x1234_5678);
    assert_eq!(found(MMIO).len(), 3, "the 8- and 16-bit reads are the wrong width");
}

#[test]
fn mapping_anything_but_the_controller_uncached_is_caught() {
    let platform = choose("skylake");
    let base = platform.controller_base(0).unwrap();
    assert!(map(base + 0x6000, 4, PAGE_READONLY | PAGE_NOCACHE).is_null(), "past the 0x6000 window");
    assert!(map(base - 0x1000, 0x2000, PAGE_READONLY | PAGE_NOCACHE).is_null(), "straddles the start");
    assert!(map(base + 0x5050, 0, PAGE_READONLY | PAGE_NOCACHE).is_null());
    assert!(map(base + 0x5050, 4, PAGE_NOCACHE).is_null(), "no access flag");
    assert!(map(base + 0x5050, 4, PAGE_READONLY | PAGE_NOCACHE | PAGE_WRITECOMBINE).is_null());
    let cached = map(base + 0x5050, 4, PAGE_READONLY);
    assert!(!cached.is_null(), "Windows makes a cached mapping");
    let caught = found("MmMapIoSpaceEx");
    assert_eq!(caught.len(), 6, "{caught:?}");
    assert!(caught[0].contains("is not device memory of the memory controller"), "{}", caught[0]);
    assert!(caught[1].contains("is not device memory"), "{}", caught[1]);
    assert!(caught[2].contains("NumberOfBytes 0"), "{}", caught[2]);
    assert!(caught[3].contains("not one access flag"), "{}", caught[3]);
    assert!(caught[4].contains("not one access flag"), "{}", caught[4]);
    assert!(caught[5].contains("without PAGE_NOCACHE"), "{}", caught[5]);
    unmap(cached, 4);
    crate::cpu::current().set_irql(HIGH_LEVEL);
    let raised = map(base + 0x5050, 4, PAGE_READONLY | PAGE_NOCACHE);
    unmap(raised, 4);
    crate::cpu::current().set_irql(PASSIVE_LEVEL);
    let caught = found("MmMapIoSpaceEx");
    assert!(caught[6].contains("called at IRQL 15, above its maximum 2"), "{}", caught[6]);
    assert!(found("MmUnmapIoSpace")[0].contains("above its maximum 2"));
}

/// On platform `name`, mapping MCHBAR's counters fails with a violation that says `why`.
fn mapping_is_refused(name: &str, why: &str) {
    let platform = choose(name);
    let base = platform.bridge.as_ref().unwrap().mchbar_base();
    assert!(map(base + 0x5050, 4, PAGE_READONLY | PAGE_NOCACHE).is_null());
    let caught = found("MmMapIoSpaceEx");
    assert!(caught.len() == 1 && caught[0].contains(why), "{caught:?}");
}

#[test]
fn mapping_while_mchbar_is_disabled_is_caught() {
    mapping_is_refused("skylake-mchbar-disabled", "MCHBAR (0xfed10000) is disabled");
}

#[test]
fn mapping_behind_an_unknown_device_id_is_caught() {
    mapping_is_refused("skylake-unknown-bridge", "8086:19ff at 00:00.0 has no memory controller");
}

#[test]
fn mapping_in_a_guest_that_mirrors_the_host_bridge_is_caught() {
    mapping_is_refused("hyperv-guest-mirrored-bridge", "8086:4660 at 00:00.0 has no memory controller");
}

#[test]
fn unmapping_what_is_not_mapped_or_with_another_size_is_caught() {
    let (_, page) = skylake_counter_page();
    unmap(page, 0x2000);
    assert_eq!(memory::mappings().len(), 1, "a wrong size unmaps nothing");
    unmap(page, 0x1000);
    unmap(page, 0x1000);
    let caught = found("MmUnmapIoSpace");
    assert_eq!(caught.len(), 2, "{caught:?}");
    assert!(caught[0].contains("NumberOfBytes 0x2000, but"), "{}", caught[0]);
    assert!(caught[1].contains("is not an address MmMapIoSpaceEx returned"), "{}", caught[1]);
}

#[test]
fn a_page_still_mapped_is_in_the_unload_report() {
    let (physical, page) = skylake_counter_page();
    let report = Report::now();
    assert_eq!(report.io_mappings, [(physical, 0x1000)]);
    assert!(!report.is_clean());
    assert!(report.to_string().contains("I/O space still mapped: 1 mapping(s)"), "{report}");
    unmap(page, 0x1000);
    assert!(Report::now().io_mappings.is_empty());
}

#[test]
fn hal_get_bus_data_by_offset_checks_its_arguments() {
    choose("skylake");
    // SAFETY: a NULL buffer is what the check is about; the double writes nothing through it.
    let null = unsafe { hal_get_bus_data_by_offset(PCI_CONFIGURATION, 0, 0, std::ptr::null_mut(), 0, 4) };
    assert_eq!(null, 0);
    assert_eq!(config(0, 0, 0xFC, 8).0, 0, "past the 256-byte header");
    assert_eq!(config(0, 1 << 8, 0, 4).0, 0, "reserved slot bits");
    let mut buffer = [0u8; 4];
    // SAFETY: the buffer holds 4 bytes.
    let cmos = unsafe { hal_get_bus_data_by_offset(1, 0, 0, buffer.as_mut_ptr(), 0, 4) };
    assert_eq!(cmos, 0, "only PCIConfiguration");
    crate::cpu::current().set_irql(DISPATCH_LEVEL);
    assert_eq!(config(0, 0, 0, 2), (2, vec![0x86, 0x80]), "DISPATCH_LEVEL is allowed");
    crate::cpu::current().set_irql(HIGH_LEVEL);
    config(0, 0, 0, 2);
    crate::cpu::current().set_irql(PASSIVE_LEVEL);
    let caught = found("HalGetBusDataByOffset");
    assert_eq!(caught.len(), 5, "{caught:?}");
    for (message, expected) in caught.iter().zip([
        "NULL Buffer",
        "runs past the 256-byte header",
        "reserved bits",
        "only PCIConfiguration (4)",
        "called at IRQL 15, above its maximum 2",
    ]) {
        assert!(message.contains(expected), "{message}");
    }
}

/// A rate change applies from the moment it is made: what was moved before stays counted at the
/// old rate, to the line.
#[test]
fn a_rate_change_applies_from_its_moment() {
    let (_, page) = skylake_counter_page();
    memory::set_traffic(6_400, 3_200);
    hal::advance_clock(hal::PERFORMANCE_FREQUENCY);
    memory::set_traffic(12_800 + 32, 0);
    hal::advance_clock(hal::PERFORMANCE_FREQUENCY / 2);
    assert_eq!(memory::truth(0), memory::Bytes { read: 64 * (100 + 100), write: 64 * 50 });
    assert_eq!(load(page.wrapping_add(0x50), 4), 200, "6 400 + 6 416 bytes: 200 whole lines");
    assert_eq!(load(page.wrapping_add(0x54), 4), 50);
}

//! The platform's unit tests: every named platform through HalGetBusDataByOffset and MmMapIoSpaceEx
//! as the driver calls them, the mapped page read with volatile loads, and each violation caught.
//! One platform per test: the choice is per process, and nextest runs each test in its own.

use super::*;
use crate::control::{hal, memory};
use crate::exports::hal::pci::{PCI_CONFIGURATION, hal_get_bus_data_by_offset};
use crate::exports::mm::io_space::*;
use crate::violations;

/// Chooses platform `name` (with its CPU model), enters processor 0 and stops the host's clock.
pub(super) fn choose(name: &str) -> &'static Platform {
    let (model, platform) = named(name).unwrap_or_else(|| panic!("no platform {name}"));
    cpuid::set_model(model);
    set(platform);
    crate::cpu::enter(0);
    hal::stop_host_clock();
    platform
}

/// HalGetBusDataByOffset(PCIConfiguration, bus, slot, ..): (its return, the buffer).
pub(super) fn config(bus: u32, slot: u32, offset: u32, length: usize) -> (u32, Vec<u8>) {
    let mut buffer = vec![0x5Au8; length];
    // SAFETY: the buffer holds `length` bytes, as the routine requires.
    let read = unsafe {
        hal_get_bus_data_by_offset(PCI_CONFIGURATION, bus, slot, buffer.as_mut_ptr(), offset, length as u32)
    };
    (read, buffer)
}

pub(super) fn map(physical: u64, bytes: usize, protect: u32) -> *mut u8 {
    // SAFETY: the routine takes any arguments; the double checks them.
    unsafe { mm_map_io_space_ex(physical as i64, bytes, protect) }
}

pub(super) fn unmap(address: *mut u8, bytes: usize) {
    // SAFETY: as above.
    unsafe { mm_unmap_io_space(address, bytes) }
}

/// The messages of the violations recorded at `at` so far.
pub(super) fn found(at: &str) -> Vec<String> {
    violations::all()
        .into_iter()
        .filter(|violation| violation.at == at)
        .map(|violation| violation.message)
        .collect()
}

/// A volatile load of `width` bytes at `address`, as the driver reads a register.
pub(super) fn load(address: *const u8, width: u32) -> u64 {
    // SAFETY: `address` is a mapped device page: the load faults and the trap handler emulates it.
    unsafe {
        match width {
            8 => std::ptr::read_volatile(address.cast::<u64>()),
            4 => u64::from(std::ptr::read_volatile(address.cast::<u32>())),
            2 => u64::from(std::ptr::read_volatile(address.cast::<u16>())),
            _ => u64::from(std::ptr::read_volatile(address)),
        }
    }
}

const READ_BYTES_PER_SECOND: u64 = 6_400_000_000;
const WRITE_BYTES_PER_SECOND: u64 = 3_200_000_000;

/// What `counter` of controller `index` counts after one second at (index + 1) x the rates above,
/// computed from the rates alone: the model's answer is checked against this, not against itself.
fn expected_after_one_second(index: u32, counter: Counter) -> u64 {
    let reads = u64::from(index + 1) * READ_BYTES_PER_SECOND / 64;
    let writes = u64::from(index + 1) * WRITE_BYTES_PER_SECOND / 64;
    match counter {
        Counter::DataReads => reads,
        Counter::DataWrites => writes,
        Counter::DataTotal | Counter::IaRequests => reads + writes,
        Counter::GtRequests | Counter::IoRequests => 0,
    }
}

/// Everything platform `name` presents: device 00:00.0's header and MCHBAR, the empty slots and
/// buses, and either each controller's counters advancing exactly with the traffic through a mapped,
/// uncached, read-only page, or no mapping at all.
fn presents(name: &str) {
    let platform = choose(name);
    let (read, header) = config(0, 0, 0, 4);
    match &platform.bridge {
        Some(bridge) => {
            assert_eq!(read, 4);
            assert_eq!(header, [bridge.vendor.to_le_bytes(), bridge.device.to_le_bytes()].concat());
            let (read, mchbar) = config(0, 0, MCHBAR_OFFSET as u32, 8);
            assert_eq!((read, u64::from_le_bytes(mchbar.try_into().unwrap())), (8, bridge.mchbar));
            let (_, high) = config(0, 0, MCHBAR_OFFSET as u32 + 4, 4);
            assert_eq!(u32::from_le_bytes(high.try_into().unwrap()), (bridge.mchbar >> 32) as u32);
        }
        None => assert_eq!((read, &header[..2]), (2, &[0xFF, 0xFF][..]), "an empty slot"),
    }
    assert_eq!(config(0, 1, 0, 4).0, 2, "device 1 is empty");
    assert_eq!(config(0, 1 << 5, 0, 4).0, 2, "function 1 of device 0 is empty");
    assert_eq!(config(1, 0, 0, 4).0, 0, "bus 1 does not exist");
    assert_eq!(config(1 << 8, 0, 0, 4).0, 0, "segment 1 does not exist");
    match (platform.memory, platform.controller_base(0)) {
        (Some(memory), Some(_)) => counts_exactly(platform, memory),
        _ => maps_nothing(platform),
    }
    assert!(memory::mappings().is_empty());
    assert_eq!(violations::all(), [], "{name}: the driver's way of reading breaks no rule");
}

/// Each register of each controller, mapped alone as the driver maps it, reads the traffic exactly.
fn counts_exactly(platform: &Platform, memory: &MemoryController) {
    for index in 0..memory.controllers {
        let scale = u64::from(index + 1);
        memory::set_controller_traffic(index, scale * READ_BYTES_PER_SECOND, scale * WRITE_BYTES_PER_SECOND);
    }
    hal::advance_clock(hal::PERFORMANCE_FREQUENCY);
    for index in 0..memory.controllers {
        let base = platform.controller_base(index).unwrap();
        for register in memory.registers {
            let width = memory.width / 8;
            let page = map(base + register.offset, width as usize, PAGE_READONLY | PAGE_NOCACHE);
            assert!(!page.is_null(), "{}: controller {index} + {:#x}", platform.name, register.offset);
            let value = load(page, width);
            assert_eq!(value, expected_after_one_second(index, register.counter), "{:?}", register.counter);
            assert_eq!(Some(value), memory::register(index, register.counter));
            unmap(page, width as usize);
        }
        let truth = memory::truth(index);
        assert_eq!(truth.read, expected_after_one_second(index, Counter::DataReads) * 64);
        assert_eq!(truth.write, expected_after_one_second(index, Counter::DataWrites) * 64);
    }
}

/// No range of the bridge's MCHBAR (or of a Skylake's, where there is no bridge) maps.
fn maps_nothing(platform: &Platform) {
    let base = platform.bridge.as_ref().map_or(0xFED1_0000, HostBridge::mchbar_base);
    let page = map(base + 0x5050, 4, PAGE_READONLY | PAGE_NOCACHE);
    assert!(page.is_null(), "{}: nothing is device memory", platform.name);
    let refused = violations::take();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].at, "MmMapIoSpaceEx");
}

macro_rules! every_platform {
    ($($test:ident: $name:literal,)*) => {
        $( #[test] fn $test() { presents($name) } )*

        /// The tests above cover [`PLATFORMS`], every one.
        #[test]
        fn every_platform_has_its_test() {
            let tested = [$($name),*];
            let named: Vec<&str> = PLATFORMS.iter().map(|(name, _, _)| *name).collect();
            assert_eq!(named, tested);
        }
    };
}

every_platform! {
    skylake: "skylake",
    skylake_unknown_bridge: "skylake-unknown-bridge",
    skylake_mchbar_disabled: "skylake-mchbar-disabled",
    ice_lake: "ice-lake",
    tiger_lake_u: "tiger-lake-u",
    alder_lake: "alder-lake",
    alder_lake_hybrid: "alder-lake-hybrid",
    meteor_lake_hybrid: "meteor-lake-hybrid",
    sapphire_rapids: "sapphire-rapids",
    zen4: "zen4",
    hyperv_root_alder_lake: "hyperv-root-alder-lake",
    hyperv_guest_alder_lake_pmu: "hyperv-guest-alder-lake-pmu",
    hyperv_guest_mirrored_bridge: "hyperv-guest-mirrored-bridge",
    hyperv_no_pmu: "hyperv-no-pmu",
    kvm_emerald_rapids_no_pmu: "kvm-emerald-rapids-no-pmu",
    kvm_genoa_no_pmu: "kvm-genoa-no-pmu",
}

/// The Hyper-V root (whose Windows owns the real host bridge) and a guest differ in the partition
/// privilege CreatePartitions, CPUID 0x40000003 EBX bit 0 (Hypervisor Top-Level Functional
/// Specification, "Partition Privilege Flags"), under the same "Microsoft Hv" signature.
#[test]
fn the_hyperv_root_and_guests_differ_in_create_partitions() {
    let create_partitions = |name: &str| {
        let (model, _) = named(name).unwrap();
        let signature = cpuid_dumps::lookup(model.leaves, 0x4000_0000, 0);
        assert_eq!(signature[1..], cpuid_dumps::MICROSOFT_HV, "{name}");
        cpuid_dumps::lookup(model.leaves, 0x4000_0003, 0)[1] & 1 != 0
    };
    assert!(create_partitions("hyperv-root-alder-lake"));
    for guest in ["hyperv-guest-alder-lake-pmu", "hyperv-guest-mirrored-bridge", "hyperv-no-pmu"] {
        assert!(!create_partitions(guest), "{guest}");
    }
}

/// Each violation of the PCI and MMIO rules, and the 32-bit wrap.
mod caught_tests;

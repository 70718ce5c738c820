//! The machine around the processors: device 00:00.0's PCI configuration space (the host bridge,
//! read through HalGetBusDataByOffset) and, behind its MCHBAR, the memory controller's free-running
//! DRAM counters (mapped through MmMapIoSpaceEx, read by [`mmio`], advanced by [`traffic`]).
//!
//! A [`Platform`] is chosen once per process ([`set`]) or follows the CPU model
//! ([`crate::cpu::cpuid::set_model`]: [`of_model`]), so every existing model keeps its behaviour and
//! gains the bridge its machine has. [`PLATFORMS`] names the combinations tests and `pmupcw-run` use.
//! The models, their sources and what each presents: `docs/kernel-double.md`, "PCI configuration
//! space and the memory controller's MMIO".

pub mod control;
pub mod mmio;
mod models;
pub mod traffic;

#[cfg(test)]
mod tests;

use crate::cpu::cpuid::{self, CpuModel};
pub use models::*;
use std::sync::OnceLock;

/// PCI vendor IDs (the PCI-SIG's assignments, as Linux's `include/linux/pci_ids.h` spells them).
pub const VENDOR_INTEL: u16 = 0x8086;
pub const VENDOR_AMD: u16 = 0x1022;
/// The offset of MCHBAR, a 64-bit register, in the host bridge's configuration space (Linux
/// `SNB_UNCORE_PCI_IMC_BAR_OFFSET`, `arch/x86/events/intel/uncore_snb.c`); bit 0 enables it
/// (`uncore_get_box_mmio_addr`: "BAR 0x%x is disabled" when clear).
pub const MCHBAR_OFFSET: usize = 0x48;
/// MCHBAR's enable bit.
pub const MCHBAR_ENABLE: u64 = 1;

/// Device 00:00.0 as its configuration space's header presents it.
#[derive(Debug)]
pub struct HostBridge {
    pub vendor: u16,
    pub device: u16,
    /// The 64-bit value at [`MCHBAR_OFFSET`] (0 where the device has no such register).
    pub mchbar: u64,
}

impl HostBridge {
    /// The first 256 bytes of its configuration space (PCI_COMMON_CONFIG): vendor and device IDs,
    /// class code 06/00/00 (a host bridge), header type 0, MCHBAR; every other byte reads 0.
    pub fn config_space(&self) -> [u8; 256] {
        let mut space = [0u8; 256];
        space[0..2].copy_from_slice(&self.vendor.to_le_bytes());
        space[2..4].copy_from_slice(&self.device.to_le_bytes());
        space[0x0B] = 0x06;
        space[MCHBAR_OFFSET..MCHBAR_OFFSET + 8].copy_from_slice(&self.mchbar.to_le_bytes());
        space
    }

    /// MCHBAR's address (the enable bit cleared).
    pub fn mchbar_base(&self) -> u64 {
        self.mchbar & !MCHBAR_ENABLE
    }
}

/// What a free-running counter counts, in 64-byte units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// Reads from DRAM (64-byte lines).
    DataReads,
    /// Writes to DRAM.
    DataWrites,
    /// Reads and writes.
    DataTotal,
    /// Requests from the graphics engine, the cores and I/O (64-byte requests; Skylake's split of
    /// the same traffic by agent).
    GtRequests,
    IaRequests,
    IoRequests,
}

/// A counter's register: its offset from the controller's base, and what it counts.
#[derive(Clone, Copy, Debug)]
pub struct Register {
    pub offset: u64,
    pub counter: Counter,
}

/// A memory controller layout: where each controller's counters are behind MCHBAR, and how wide.
#[derive(Debug)]
pub struct MemoryController {
    pub name: &'static str,
    /// Controllers; controller i's registers are at MCHBAR + i x [`stride`](Self::stride).
    pub controllers: u32,
    pub stride: u64,
    /// Bytes from each controller's base that are device memory (what Linux maps, see each layout).
    pub window: u64,
    /// Every register's width in bits (32 or 64); a counter wraps at 2^width.
    pub width: u32,
    /// The readable registers: every other offset, and another width, is outside the whitelist.
    pub registers: &'static [Register],
}

impl MemoryController {
    /// The register at `offset` from a controller's base, if any.
    pub fn register_at(&self, offset: u64) -> Option<&Register> {
        self.registers.iter().find(|register| register.offset == offset)
    }
}

/// A machine: the device at 00:00.0 (`None`: the slot is empty) and the memory controller behind its
/// MCHBAR (`None`: none that the double models, whatever the bridge's registers say).
#[derive(Debug)]
pub struct Platform {
    pub name: &'static str,
    pub bridge: Option<HostBridge>,
    pub memory: Option<&'static MemoryController>,
}

impl Platform {
    /// Controller `index`'s base address, where MCHBAR is enabled and the memory is modelled.
    pub fn controller_base(&self, index: u32) -> Option<u64> {
        let bridge = self.bridge.as_ref()?;
        let memory = self.memory?;
        (bridge.mchbar & MCHBAR_ENABLE != 0 && index < memory.controllers)
            .then(|| bridge.mchbar_base() + u64::from(index) * memory.stride)
    }
}

static CHOSEN: OnceLock<&'static Platform> = OnceLock::new();

/// Chooses the platform of this process, instead of the CPU model's own ([`of_model`]). Call before
/// loading the driver; a second, different choice panics (the machine is per process).
pub fn set(platform: &'static Platform) {
    let chosen = *CHOSEN.get_or_init(|| platform);
    assert!(std::ptr::eq(chosen, platform), "the platform is already {}", chosen.name);
}

/// The platform in effect: the one chosen, else the CPU model's.
pub fn current() -> &'static Platform {
    CHOSEN.get().copied().unwrap_or_else(|| of_model(cpuid::model()))
}

/// Every named combination of a CPU model and a platform: the models of `--cpu-model` with their own
/// machines, and the machines a driver must refuse (an unknown bridge, MCHBAR disabled, a guest that
/// sees a real bridge's IDs).
pub static PLATFORMS: [(&str, &CpuModel, &Platform); 16] = [
    ("skylake", &cpuid::SKYLAKE, &SKYLAKE_S),
    ("skylake-unknown-bridge", &cpuid::SKYLAKE, &UNKNOWN_INTEL_BRIDGE),
    ("skylake-mchbar-disabled", &cpuid::SKYLAKE, &MCHBAR_DISABLED),
    ("ice-lake", &cpuid::ICE_LAKE, &ICE_LAKE_U),
    ("tiger-lake-u", &cpuid::TIGER_LAKE_U, &TIGER_LAKE_U),
    ("alder-lake", &cpuid::ALDER_LAKE_P, &ALDER_LAKE_S),
    ("alder-lake-hybrid", &cpuid::ALDER_LAKE_HYBRID, &ALDER_LAKE_S),
    ("meteor-lake-hybrid", &cpuid::METEOR_LAKE_HYBRID, &METEOR_LAKE),
    ("sapphire-rapids", &cpuid::SAPPHIRE_RAPIDS, &SERVER_MESH2IIO),
    ("zen4", &cpuid::ZEN4, &AMD_RAPHAEL_ROOT),
    ("hyperv-root-alder-lake", &cpuid::HYPERV_ROOT_ALDER_LAKE, &ALDER_LAKE_S),
    ("hyperv-guest-alder-lake-pmu", &cpuid::HYPERV_GUEST_ALDER_LAKE_PMU, &HYPERV_GEN1),
    ("hyperv-guest-mirrored-bridge", &cpuid::HYPERV_GUEST_ALDER_LAKE_PMU, &GUEST_MIRRORED_BRIDGE),
    ("hyperv-no-pmu", &cpuid::HYPERV_GUEST_NO_PMU, &HYPERV_GEN1),
    ("kvm-emerald-rapids-no-pmu", &cpuid::KVM_GUEST_EMERALD_RAPIDS, &QEMU_Q35),
    ("kvm-genoa-no-pmu", &cpuid::KVM_GUEST_EPYC_GENOA, &QEMU_I440FX),
];

/// The platform named `name` in [`PLATFORMS`], with its CPU model.
pub fn named(name: &str) -> Option<(&'static CpuModel, &'static Platform)> {
    PLATFORMS.iter().find(|(known, _, _)| *known == name).map(|(_, model, platform)| (*model, *platform))
}

/// The machine a CPU model of the double comes in: its own host bridge and memory controller.
pub fn of_model(model: &'static CpuModel) -> &'static Platform {
    let is = |other: &CpuModel| std::ptr::eq(model, other);
    if is(&cpuid::SKYLAKE) || is(&cpuid::SKYLAKE_NO_HT) || is(&cpuid::NO_PMU) {
        &SKYLAKE_S
    } else if is(&cpuid::ICE_LAKE) {
        &ICE_LAKE_U
    } else if is(&cpuid::TIGER_LAKE_U) {
        &TIGER_LAKE_U
    } else if is(&cpuid::ALDER_LAKE_P)
        || is(&cpuid::ALDER_LAKE_HYBRID)
        || is(&cpuid::HYBRID_OWN_LEAF_A)
        || is(&cpuid::HYPERV_ROOT_ALDER_LAKE)
    {
        &ALDER_LAKE_S
    } else if is(&cpuid::METEOR_LAKE_HYBRID) {
        &METEOR_LAKE
    } else if is(&cpuid::SAPPHIRE_RAPIDS) {
        &SERVER_MESH2IIO
    } else if is(&cpuid::ZEN3) {
        &AMD_MATISSE_ROOT
    } else if is(&cpuid::ZEN4) || is(&cpuid::ZEN5) {
        &AMD_RAPHAEL_ROOT
    } else if is(&cpuid::HYPERV_GUEST_NO_PMU) || is(&cpuid::HYPERV_GUEST_ALDER_LAKE_PMU) {
        &HYPERV_GEN1
    } else if is(&cpuid::KVM_GUEST_EMERALD_RAPIDS) {
        &QEMU_Q35
    } else if is(&cpuid::KVM_GUEST_EPYC_GENOA) || is(&cpuid::KVM_GUEST_ZEN2_PMU_WITHOUT_MPERF) {
        &QEMU_I440FX
    } else {
        &EMPTY_SLOT
    }
}

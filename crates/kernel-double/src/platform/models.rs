//! The platforms and memory controller layouts, each with its source. Device IDs of memory
//! controllers are from Linux `arch/x86/events/intel/uncore_snb.c` (`desktop_imc_pci_ids`, whose
//! parts use the 32-bit `snb_uncore_imc_freerunning` counters, and `tgl_uncore_pci_ids`, whose parts
//! use the 64-bit free-running counters of `tgl_l_uncore_mmio_init`, `tgl_uncore_mmio_init` or
//! `adl_uncore_mmio_init` by CPU model, `arch/x86/events/intel/uncore.c`). MCHBAR's address is the
//! double's choice (a page-aligned address below 4 GiB, as firmware places it).

use super::{Counter, HostBridge, MemoryController, Platform, Register, VENDOR_AMD, VENDOR_INTEL};

const fn register(offset: u64, counter: Counter) -> Register {
    Register { offset, counter }
}

/// Sandy Bridge to Comet Lake client, Ice Lake-U and Rocket Lake: one controller, 32-bit counters
/// at MCHBAR + 0x5040 (GT requests), 0x5044 (IA), 0x5048 (IO), 0x5050 (DATA_READS), 0x5054
/// (DATA_WRITES), one count per 64 bytes (Linux `snb_uncore_imc_freerunning`, width 32; the event
/// scale 6.103515625e-5 MiB is 64 bytes). Linux maps `SNB_UNCORE_PCI_IMC_MAP_SIZE` (0x6000) bytes.
pub static CLIENT_32_BIT: MemoryController = MemoryController {
    name: "client IMC, 32-bit free-running counters",
    controllers: 1,
    stride: 0,
    window: 0x6000,
    width: 32,
    registers: &[
        register(0x5040, Counter::GtRequests),
        register(0x5044, Counter::IaRequests),
        register(0x5048, Counter::IoRequests),
        register(0x5050, Counter::DataReads),
        register(0x5054, Counter::DataWrites),
    ],
};

/// Tiger Lake-U (`tgl_l_uncore_imc_freerunning`): two controllers 0x10000 apart
/// (`TGL_UNCORE_MMIO_IMC_MEM_OFFSET`), each with 64-bit counters at + 0x5040 (total), 0x5058 (read),
/// 0x50A0 (write); Linux maps `TGL_UNCORE_PCI_IMC_MAP_SIZE` (0xE000) bytes of each.
pub static TIGER_LAKE_U_IMC: MemoryController = MemoryController {
    name: "Tiger Lake-U IMC, 2 controllers, 64-bit free-running counters",
    controllers: 2,
    stride: 0x10000,
    window: 0xE000,
    width: 64,
    registers: &[
        register(0x5040, Counter::DataTotal),
        register(0x5058, Counter::DataReads),
        register(0x50A0, Counter::DataWrites),
    ],
};

/// Tiger Lake-H, Alder, Raptor and Meteor Lake (`tgl_uncore_imc_freerunning`, and
/// `adl_uncore_imc_freerunning` at `ADL_UNCORE_IMC_FREERUNNING_BASE` 0xD800): two controllers 0x10000
/// apart, 64-bit counters at + 0xD840 (total), 0xD858 (read), 0xD8A0 (write). Linux maps up to
/// 0xDB00 (`ADL_UNCORE_IMC_BASE` + `ADL_UNCORE_IMC_MAP_SIZE`); the double serves 0xE000, as for
/// Tiger Lake-U.
pub static ALDER_LAKE_IMC: MemoryController = MemoryController {
    name: "Alder Lake IMC, 2 controllers, 64-bit free-running counters",
    controllers: 2,
    stride: 0x10000,
    window: 0xE000,
    width: 64,
    registers: &[
        register(0xD840, Counter::DataTotal),
        register(0xD858, Counter::DataReads),
        register(0xD8A0, Counter::DataWrites),
    ],
};

/// A client host bridge with MCHBAR enabled at `base`.
const fn intel_bridge(device: u16, base: u64) -> Option<HostBridge> {
    Some(HostBridge { vendor: VENDOR_INTEL, device, mchbar: base | super::MCHBAR_ENABLE })
}

/// A bridge without MCHBAR (the register reads 0).
const fn bridge(vendor: u16, device: u16) -> Option<HostBridge> {
    Some(HostBridge { vendor, device, mchbar: 0 })
}

/// Core i7-6700K's machine: device 0x191F, `PCI_DEVICE_ID_INTEL_SKL_SQ_IMC` ("6th Gen Core S Quad
/// Core" in `desktop_imc_pci_ids`).
pub static SKYLAKE_S: Platform = Platform {
    name: "Skylake-S host bridge 8086:191F",
    bridge: intel_bridge(0x191F, 0xFED1_0000),
    memory: Some(&CLIENT_32_BIT),
};

/// Core i7-1065G7's machine: 0x8A12, `PCI_DEVICE_ID_INTEL_ICL_U2_IMC` (`desktop_imc_pci_ids`, with
/// the 32-bit counters: `icl_uncore_pci_ids` uses `snb_pci_uncores`).
pub static ICE_LAKE_U: Platform = Platform {
    name: "Ice Lake-U host bridge 8086:8A12",
    bridge: intel_bridge(0x8A12, 0xFED1_0000),
    memory: Some(&CLIENT_32_BIT),
};

/// Core i5-1135G7's machine (Tiger Lake-UP3, family 6 model 0x8C, `tgl_l_uncore_init`): 0x9A14,
/// `PCI_DEVICE_ID_INTEL_TGL_U4_IMC` in `tgl_uncore_pci_ids`.
pub static TIGER_LAKE_U: Platform = Platform {
    name: "Tiger Lake-U host bridge 8086:9A14",
    bridge: intel_bridge(0x9A14, 0xFEDC_0000),
    memory: Some(&TIGER_LAKE_U_IMC),
};

/// Core i9-12900K's machine: 0x4660, `PCI_DEVICE_ID_INTEL_ADL_1_IMC` in `tgl_uncore_pci_ids`
/// (Alder Lake uses `adl_uncore_mmio_init`). The Hyper-V root partition sees the same bridge: the
/// root owns the physical devices.
pub static ALDER_LAKE_S: Platform = Platform {
    name: "Alder Lake-S host bridge 8086:4660",
    bridge: intel_bridge(0x4660, 0xFEDC_0000),
    memory: Some(&ALDER_LAKE_IMC),
};

/// Meteor Lake's machine: 0x7D01, `PCI_DEVICE_ID_INTEL_MTL_2_IMC` in `tgl_uncore_pci_ids`
/// (`mtl_uncore_init` uses `adl_uncore_mmio_init`).
pub static METEOR_LAKE: Platform = Platform {
    name: "Meteor Lake host bridge 8086:7D01",
    bridge: intel_bridge(0x7D01, 0xFEDC_0000),
    memory: Some(&ALDER_LAKE_IMC),
};

/// A server's 00:00.0 (Sapphire Rapids): Intel, but no client memory controller. The double presents
/// 0x09A2, the Mesh2IIO device Linux reads on Ice Lake-SP and Snow Ridge (`uncore_snbep.c`, commit
/// "perf/x86/intel/uncore: Get I/O stack id for SNR and ICX" names "Mesh2IIO device with 0x09a2
/// DID"), an Intel device ID on no client list.
pub static SERVER_MESH2IIO: Platform =
    Platform { name: "server Mesh2IIO 8086:09A2", bridge: bridge(VENDOR_INTEL, 0x09A2), memory: None };

/// *Synthetic*: a Skylake machine whose bridge has a device ID on no list (0x19FF): a driver that
/// checks only the vendor would map what may be no memory controller.
pub static UNKNOWN_INTEL_BRIDGE: Platform = Platform {
    name: "synthetic: Intel host bridge 8086:19FF (unknown device ID)",
    bridge: intel_bridge(0x19FF, 0xFED1_0000),
    memory: None,
};

/// *Synthetic*: [`SKYLAKE_S`] with MCHBAR's enable bit clear (firmware left it disabled).
pub static MCHBAR_DISABLED: Platform = Platform {
    name: "synthetic: Skylake-S host bridge 8086:191F, MCHBAR disabled",
    bridge: Some(HostBridge { vendor: VENDOR_INTEL, device: 0x191F, mchbar: 0xFED1_0000 }),
    memory: Some(&CLIENT_32_BIT),
};

/// A Hyper-V Generation 1 guest: the emulated Intel 440BX host bridge, 0x7192
/// (`PCI_DEVICE_ID_INTEL_82443BX_2` in Linux `include/linux/pci_ids.h`; lspci in such guests shows
/// "440BX/ZX/DX - 82443BX/ZX/DX Host bridge (AGP disabled)"). It has no MCHBAR.
pub static HYPERV_GEN1: Platform =
    Platform { name: "Hyper-V Gen1 440BX 8086:7192", bridge: bridge(VENDOR_INTEL, 0x7192), memory: None };

/// *Synthetic*: a guest whose VMM copies the host bridge's IDs into its emulated one (as QEMU's
/// `igd-passthrough-i440FX` does for graphics passthrough, `hw/pci-host/i440fx.c`), MCHBAR value
/// included: only the hypervisor check refuses it, and nothing is behind the address.
pub static GUEST_MIRRORED_BRIDGE: Platform = Platform {
    name: "synthetic: guest bridge mirroring Alder Lake's 8086:4660",
    bridge: intel_bridge(0x4660, 0xFEDC_0000),
    memory: None,
};

/// QEMU's Q35 machine (KVM guests): the emulated MCH, 0x29C0 (`PCI_DEVICE_ID_INTEL_Q35_MCH`,
/// QEMU `include/hw/pci/pci_ids.h`). QEMU emulates no MCHBAR. The cloud dumps do not record which
/// machine type their VMM used; the double gives the Emerald Rapids guest this one.
pub static QEMU_Q35: Platform =
    Platform { name: "QEMU Q35 8086:29C0", bridge: bridge(VENDOR_INTEL, 0x29C0), memory: None };

/// QEMU's i440FX machine (KVM guests): 0x1237 (`PCI_DEVICE_ID_INTEL_82441`, QEMU and Linux
/// `pci_ids.h`); the double gives the Genoa guest this one.
pub static QEMU_I440FX: Platform =
    Platform { name: "QEMU i440FX 8086:1237", bridge: bridge(VENDOR_INTEL, 0x1237), memory: None };

/// Zen 3 desktop (Vermeer, on Matisse's I/O die): the AMD root complex 0x1480
/// (`PCI_DEVICE_ID_AMD_17H_M30H_ROOT`, Linux `arch/x86/kernel/amd_nb.c`).
pub static AMD_MATISSE_ROOT: Platform =
    Platform { name: "AMD root complex 1022:1480", bridge: bridge(VENDOR_AMD, 0x1480), memory: None };

/// Zen 4 and Zen 5 desktop (Raphael's I/O die, which Granite Ridge reuses): 0x14D8
/// (`PCI_DEVICE_ID_AMD_19H_M60H_ROOT`, `amd_nb.c`).
pub static AMD_RAPHAEL_ROOT: Platform =
    Platform { name: "AMD root complex 1022:14D8", bridge: bridge(VENDOR_AMD, 0x14D8), memory: None };

/// No device at 00:00.0 (a model the double gives no machine).
pub static EMPTY_SLOT: Platform = Platform { name: "no device at 00:00.0", bridge: None, memory: None };

//! The client processors whose memory controllers have free-running DRAM counters, as data: per
//! CPU model (family 6), the host bridge device IDs Linux lists for it and its counter layout (how
//! many controllers, where each counter is relative to MCHBAR, how wide), and the one page per
//! controller that layout asks to map. Only the offsets listed here exist: nothing else of MCHBAR
//! is ever mapped or read.
//!
//! Source: Linux `arch/x86/events/intel/uncore_snb.c` (`desktop_imc_pci_ids`, `skl_uncore_pci_ids`,
//! `icl_uncore_pci_ids`, `tgl_uncore_pci_ids`, `snb_uncore_imc_freerunning`,
//! `tgl_l_uncore_imc_freerunning`, `tgl_uncore_imc_freerunning`, `adl_uncore_imc_freerunning`) and
//! `arch/x86/events/intel/uncore.c` (`intel_uncore_match`: which model runs which of them). Where
//! Intel PCM's `src/bw.cpp` differs, Linux is followed; the reasons: `docs/memory-controller.md`.

/// Bytes one count of DATA_READS/DATA_WRITES (and of the GT/IA/IO request counters) stands for: one
/// 64-byte cache line. Linux publishes each with the scale 6.103515625e-5 MiB (`snb_uncore_imc_events`,
/// `tgl_uncore_imc_events`), which is 64 / 2^20.
pub const BYTES_PER_COUNT: u64 = 64;

/// The size of one mapping: a 4 KiB page, the granularity MmMapIoSpaceEx maps.
pub const PAGE_SIZE: u64 = 0x1000;

/// What a free-running counter counts, each a number of 64-byte requests at the memory controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterKind {
    /// Lines read from DRAM (Linux `data_reads` / `data_read`).
    DataReads,
    /// Lines written to DRAM (Linux `data_writes` / `data_write`).
    DataWrites,
    /// Requests from the graphics engine (Linux `gt_requests`).
    GtRequests,
    /// Requests from the cores (Linux `ia_requests`).
    IaRequests,
    /// Requests from I/O, i.e. DMA (Linux `io_requests`).
    IoRequests,
}

/// One whitelisted counter: its offset from the controller's base (MCHBAR plus the controller's
/// stride) and its width in bits, 32 or 64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counter {
    pub kind: CounterKind,
    pub offset: u64,
    pub width: u8,
}

/// Where a model's counters are.
#[derive(Debug, PartialEq, Eq)]
pub struct Layout {
    /// Memory controllers, each with the same counters.
    pub controllers: u8,
    /// Distance from one controller's registers to the next (Linux `TGL_UNCORE_MMIO_IMC_MEM_OFFSET`).
    pub stride: u64,
    pub counters: &'static [Counter],
}

const fn counter(kind: CounterKind, offset: u64, width: u8) -> Counter {
    Counter { kind, offset, width }
}

/// Skylake to Comet Lake client, Ice Lake client, Rocket Lake: one controller, 32-bit counters at
/// MCHBAR + 0x5050 (reads), 0x5054 (writes), 0x5040/0x5044/0x5048 (GT, IA, IO requests): Linux
/// `snb_uncore_imc_freerunning` (`SNB_UNCORE_PCI_IMC_*_BASE`, each `{ base, 0, 0, 1, 32 }`), the one
/// box of `snb_uncore_imc` (`num_boxes = 1`). PCM's `ClientBW` reads the same two data offsets.
pub static SNB_IMC: Layout = Layout {
    controllers: 1,
    stride: 0,
    counters: &[
        counter(CounterKind::DataReads, 0x5050, 32),
        counter(CounterKind::DataWrites, 0x5054, 32),
        counter(CounterKind::GtRequests, 0x5040, 32),
        counter(CounterKind::IaRequests, 0x5044, 32),
        counter(CounterKind::IoRequests, 0x5048, 32),
    ],
};

/// Tiger Lake-U: two controllers 0x10000 apart, 64-bit reads at + 0x5058 and writes at + 0x50A0:
/// Linux `tgl_l_uncore_imc_freerunning` in `tgl_uncore_imc_free_running` (`num_boxes = 2`, step
/// `TGL_UNCORE_MMIO_IMC_MEM_OFFSET`). Its 0x5040 there is a 64-bit total, not the GT counter, and is
/// not listed: the total is reads plus writes.
pub static TGL_L_IMC: Layout = Layout {
    controllers: 2,
    stride: 0x10000,
    counters: &[counter(CounterKind::DataReads, 0x5058, 64), counter(CounterKind::DataWrites, 0x50A0, 64)],
};

/// Tiger Lake-H, Alder Lake, Raptor Lake, Meteor Lake, Lunar Lake: two controllers 0x10000 apart,
/// 64-bit reads at + 0xD858 and writes at + 0xD8A0: Linux `tgl_uncore_imc_freerunning` (0xd858,
/// 0xd8A0) and `adl_uncore_imc_freerunning` (0x58, 0xA0 from `ADL_UNCORE_IMC_FREERUNNING_BASE`
/// 0xd800, mapped by `adl_uncore_imc_freerunning_init_box`), both `num_boxes = 2`. PCM's
/// `TGLClientBW` also reads + 0x5058 on these parts; Linux does not, and neither does this driver.
pub static TGL_IMC: Layout = Layout {
    controllers: 2,
    stride: 0x10000,
    counters: &[counter(CounterKind::DataReads, 0xD858, 64), counter(CounterKind::DataWrites, 0xD8A0, 64)],
};

/// `skl_uncore_pci_ids`: Skylake, Kaby Lake, Coffee Lake, Amber Lake, Whiskey Lake and Comet Lake
/// host bridges (`PCI_DEVICE_ID_INTEL_{SKL,KBL,CFL,AML,WHL,CML}_*_IMC`), each ID once (Linux's
/// AML_YD and WHL_UQ repeat KBL_Y's 0x590c and CFL_4U's 0x3ed0).
pub static SKL_IDS: &[u16] = &[
    0x190C, 0x1904, 0x1900, 0x1910, 0x190F, 0x191F, 0x1918, // SKL Y, U, HD, HQ, SD, SQ, E3
    0x590C, 0x5904, 0x5914, 0x590F, 0x591F, 0x5910, 0x5918, // KBL Y, U, UQ, SD, SQ, HQ, WQ
    0x3ECC, 0x3ED0, 0x3E10, 0x3EC4, 0x3E0F, 0x3E1F, 0x3EC2, 0x3E30, // CFL 2U, 4U, 4H, 6H, 2S..8S D
    0x3E18, 0x3EC6, 0x3E31, 0x3E33, 0x3ECA, 0x3E32, // CFL 4S..8S W, 4S..8S S
    0x590D, 0x3E34, 0x3E35, // AML YQ, WHL 4 UQ, WHL UD
    0x9B44, 0x9B54, 0x9B64, 0x9B51, 0x9B61, 0x9B71, // CML H1..H3, U1..U3
    0x9B33, 0x9B43, 0x9B53, 0x9B63, 0x9B73, // CML S1..S5
];

/// `icl_uncore_pci_ids`: Ice Lake-U (`ICL_U`, `ICL_U2`) and Rocket Lake (`RKL_1`, `RKL_2`).
pub static ICL_IDS: &[u16] = &[0x8A02, 0x8A12, 0x4C43, 0x4C53];

/// `tgl_uncore_pci_ids`' Tiger Lake-U entries (`TGL_U1`..`TGL_U4`).
pub static TGL_U_IDS: &[u16] = &[0x9A02, 0x9A04, 0x9A12, 0x9A14];

/// `tgl_uncore_pci_ids`' Tiger Lake-H entry (`TGL_H`).
pub static TGL_H_IDS: &[u16] = &[0x9A36];

/// `tgl_uncore_pci_ids`' Alder Lake (`ADL_1`..`ADL_21`) and Raptor Lake (`RPL_1`..`RPL_25`) entries,
/// each ID once (Linux's RPL_9 and RPL_12 repeat RPL_3's 0xA706 and RPL_4's 0xA709). One list for
/// both: Linux runs `adl_uncore_init` on every Alder and Raptor Lake model, and no public source ties
/// a host bridge ID to one CPU model of the two.
pub static ADL_RPL_IDS: &[u16] = &[
    0x4660, 0x4641, 0x4601, 0x4602, 0x4609, 0x460A, 0x4621, 0x4623, 0x4629, 0x4637, 0x463B, // ADL 1-11
    0x4648, 0x4649, 0x4650, 0x4668, 0x4670, 0x4614, 0x4617, 0x4618, 0x461B, 0x461C, // ADL 12-21
    0xA700, 0xA702, 0xA706, 0xA709, 0xA701, 0xA703, 0xA704, 0xA705, 0xA707, 0xA708, // RPL 1-11
    0xA70A, 0xA70B, 0xA715, 0xA716, 0xA717, 0xA718, 0xA719, 0xA71A, 0xA71B, 0xA71C, // RPL 13-22
    0xA728, 0xA729, 0xA72A, // RPL 23-25
];

/// `tgl_uncore_pci_ids`' Meteor Lake entries (`MTL_1`..`MTL_13`).
pub static MTL_IDS: &[u16] =
    &[0x7D00, 0x7D01, 0x7D02, 0x7D05, 0x7D10, 0x7D14, 0x7D15, 0x7D16, 0x7D21, 0x7D22, 0x7D23, 0x7D24, 0x7D28];

/// Lunar Lake: Linux lists no host bridge ID (`tgl_uncore_get_mc_dev` falls back to whatever device
/// 00:00.0 is). This driver maps nothing it cannot match, so Lunar Lake reports "no device" until an
/// ID from a real machine is added here.
pub static LNL_IDS: &[u16] = &[];

/// The fastest memory a model's datasheet allows (Intel ARK "Memory Types" and "Max # of Memory
/// Channels", 64-bit channels; LPDDR4x's four 32-bit channels counted as two 64-bit ones), which
/// bounds how fast a 32-bit counter can wrap (crate::imc::extend).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeakMemory {
    /// Transfers per second, in millions (the "3200" of DDR4-3200).
    pub mega_transfers: u64,
    /// Bytes per transfer over all channels: 8 per 64-bit channel.
    pub bus_bytes: u64,
}

impl PeakMemory {
    /// Peak bandwidth in bytes per second.
    pub const fn bytes_per_second(self) -> u64 {
        self.mega_transfers * 1_000_000 * self.bus_bytes
    }
}

/// Dual-channel memory (or a 128-bit LPDDR bus) at `mega_transfers`.
const fn dual(mega_transfers: u64) -> PeakMemory {
    PeakMemory { mega_transfers, bus_bytes: 16 }
}

/// Single-channel memory at `mega_transfers`.
const fn single(mega_transfers: u64) -> PeakMemory {
    PeakMemory { mega_transfers, bus_bytes: 8 }
}

/// One CPU model with free-running DRAM counters.
#[derive(Debug)]
pub struct ClientModel {
    /// CPUID display model (family 6).
    pub model: u8,
    /// Linux's name (`arch/x86/include/asm/intel-family.h`, `INTEL_<name>`).
    pub linux_name: &'static str,
    /// Intel's marketing name of the parts.
    pub name: &'static str,
    /// Host bridge (00:00.0) device IDs this model may show.
    pub devices: &'static [u16],
    pub layout: &'static Layout,
    /// The fastest memory of the model's parts: read by the poll period's check (32-bit layouts).
    pub peak: PeakMemory,
}

const fn model(
    model: u8,
    linux_name: &'static str,
    name: &'static str,
    devices: &'static [u16],
    layout: &'static Layout,
    peak: PeakMemory,
) -> ClientModel {
    ClientModel { model, linux_name, name, devices, layout, peak }
}

/// Every model, in `intel_uncore_match` order: those that run `skl_uncore_init`, `icl_uncore_init`,
/// `rkl_uncore_init` (32-bit, one controller), `tgl_l_uncore_init`, `tgl_uncore_init`,
/// `adl_uncore_init`, `mtl_uncore_init` and `lnl_uncore_init` (64-bit, two controllers). The peak
/// memory per model: the fastest part's ARK entry, named in `docs/memory-controller.md`.
pub static MODELS: &[ClientModel] = &[
    model(0x5E, "SKYLAKE", "6th gen Core S/H (Skylake)", SKL_IDS, &SNB_IMC, dual(2133)),
    model(0x4E, "SKYLAKE_L", "6th gen Core U/Y (Skylake)", SKL_IDS, &SNB_IMC, dual(2133)),
    model(0x8E, "KABYLAKE_L", "Core U/Y 7th-10th gen (Kaby to Comet Lake)", SKL_IDS, &SNB_IMC, dual(2933)),
    model(0x9E, "KABYLAKE", "7th-9th gen Core S/H (Kaby, Coffee Lake)", SKL_IDS, &SNB_IMC, dual(2666)),
    model(0xA6, "COMETLAKE_L", "10th gen Core U (Comet Lake)", SKL_IDS, &SNB_IMC, dual(2933)),
    model(0xA5, "COMETLAKE", "10th gen Core S/H (Comet Lake)", SKL_IDS, &SNB_IMC, dual(2933)),
    model(0x7E, "ICELAKE_L", "10th gen Core U/Y (Ice Lake)", ICL_IDS, &SNB_IMC, dual(3733)),
    model(0x9D, "ICELAKE_NNPI", "Ice Lake NNP-I", ICL_IDS, &SNB_IMC, dual(3733)),
    model(0x7D, "ICELAKE", "Ice Lake client", ICL_IDS, &SNB_IMC, dual(3733)),
    model(0xA7, "ROCKETLAKE", "11th gen Core S (Rocket Lake)", ICL_IDS, &SNB_IMC, dual(3200)),
    model(0x8C, "TIGERLAKE_L", "11th gen Core U (Tiger Lake-U)", TGL_U_IDS, &TGL_L_IMC, dual(4267)),
    model(0x8D, "TIGERLAKE", "11th gen Core H (Tiger Lake-H)", TGL_H_IDS, &TGL_IMC, dual(3200)),
    model(0x97, "ALDERLAKE", "12th gen Core S (Alder Lake)", ADL_RPL_IDS, &TGL_IMC, dual(4800)),
    model(0x9A, "ALDERLAKE_L", "12th gen Core P/U/H (Alder Lake)", ADL_RPL_IDS, &TGL_IMC, dual(5200)),
    model(0xB7, "RAPTORLAKE", "13th/14th gen Core S (Raptor Lake)", ADL_RPL_IDS, &TGL_IMC, dual(5600)),
    model(0xBA, "RAPTORLAKE_P", "13th gen Core P/U/H (Raptor Lake)", ADL_RPL_IDS, &TGL_IMC, dual(6400)),
    model(0xBF, "RAPTORLAKE_S", "13th/14th gen Core S (Raptor Lake)", ADL_RPL_IDS, &TGL_IMC, dual(5600)),
    model(0xBE, "ATOM_GRACEMONT", "Core i3 N / N-series (Alder Lake-N)", ADL_RPL_IDS, &TGL_IMC, single(4800)),
    model(0xAA, "METEORLAKE_L", "Core Ultra 100 (Meteor Lake)", MTL_IDS, &TGL_IMC, dual(7467)),
    model(0xAC, "METEORLAKE", "Meteor Lake", MTL_IDS, &TGL_IMC, dual(7467)),
    model(0xBD, "LUNARLAKE_M", "Core Ultra 200V (Lunar Lake)", LNL_IDS, &TGL_IMC, dual(8533)),
];

/// The table entry of family 6 model `model`, if it has free-running DRAM counters.
pub fn find(model: u8) -> Option<&'static ClientModel> {
    MODELS.iter().find(|entry| entry.model == model)
}

/// One counter as the mapping sees it: its offset within its controller's page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageCounter {
    pub kind: CounterKind,
    pub offset_in_page: u16,
    pub width: u8,
}

/// The page one controller's counters are read through: its page-aligned physical address, and the
/// counters within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControllerPage {
    pub physical: u64,
    pub counters: [Option<PageCounter>; MAX_COUNTERS],
}

/// The most counters a layout lists.
pub const MAX_COUNTERS: usize = 5;

/// The most controllers a layout has.
pub const MAX_CONTROLLERS: usize = 2;

impl Layout {
    /// The page of controller `index` (0-based) for MCHBAR's base address `mchbar`: `mchbar + index *
    /// stride` plus the counters' common page, and each counter's offset within it. `None` for an
    /// index past the layout's controllers, or an address that overflows.
    pub fn page(&self, mchbar: u64, index: u8) -> Option<ControllerPage> {
        if index >= self.controllers {
            return None;
        }
        let base = mchbar.checked_add(self.stride.checked_mul(u64::from(index))?)?;
        let first = self.counters.first()?;
        let physical = base.checked_add(first.offset & !(PAGE_SIZE - 1))?;
        let mut counters = [None; MAX_COUNTERS];
        for (slot, counter) in counters.iter_mut().zip(self.counters) {
            let address = base.checked_add(counter.offset)?;
            if address & !(PAGE_SIZE - 1) != physical {
                return None;
            }
            let offset_in_page = (address & (PAGE_SIZE - 1)) as u16;
            *slot = Some(PageCounter { kind: counter.kind, offset_in_page, width: counter.width });
        }
        Some(ControllerPage { physical, counters })
    }

    /// Whether every counter of the layout is 64 bits wide (no polling needed).
    pub fn all_64_bit(&self) -> bool {
        self.counters.iter().all(|counter| counter.width == 64)
    }
}

#[cfg(test)]
mod tests;

//! Whether this machine's memory controller counters may be mapped, decided from raw values only:
//! the CPUID leaves the driver reads (0, 1, and the hypervisor's 0x40000000, 0x40000001, 0x40000003)
//! and the PCI configuration DWORDs of device 00:00.0 (vendor/device at 0x00, MCHBAR at 0x48/0x4C).
//! No I/O here: the driver reads, this decides, in two steps so that nothing of PCI is read unless
//! the processor passes ([`check_cpu`], then [`check_bridge`]; [`detect`] runs both).
//!
//! The rules, in order, each refusal a [`Status`]: an Intel family 6 model the table lists, else
//! unsupported model; bare metal or the Microsoft hypervisor's root partition, else under a
//! hypervisor; an Intel host bridge whose device ID the model lists, else no device; MCHBAR enabled,
//! non-zero, page-aligned and below 2^52, else MCHBAR disabled. Sources: `docs/memory-controller.md`.

use raw_cpuid::CpuIdReader;

use crate::imc::models::{ClientModel, ControllerPage, PAGE_SIZE, find};
use crate::imc::status::Status;

/// "GenuineIntel" as leaf 0 returns it in EBX, EDX, ECX (Intel SDM Vol. 2A, CPUID, leaf 0).
const GENUINE_INTEL: [u32; 3] = [0x756E_6547, 0x4965_6E69, 0x6C65_746E];
/// "Microsoft Hv" in leaf 0x40000000 EBX, ECX, EDX (Hypervisor Top-Level Functional Specification,
/// "Feature and Interface Discovery",
/// learn.microsoft.com/virtualization/hyper-v-on-windows/tlfs/feature-discovery; Linux
/// `arch/x86/kernel/cpu/mshyperv.c` `ms_hyperv_platform` compares the same 12 bytes).
const MICROSOFT_HV: [u32; 3] = [0x7263_694D, 0x666F_736F, 0x7648_2074];
/// "Hv#1" in leaf 0x40000001 EAX: the hypervisor implements Microsoft's interface (same TLFS page,
/// "Hypervisor Interface Identification": the signature, not the vendor, says which interface).
const HV_INTERFACE_HV1: u32 = 0x3123_7648;
/// CreatePartitions: bit 0 of leaf 0x40000003 EBX, bit 32 of HV_PARTITION_PRIVILEGE_MASK (TLFS,
/// learn.microsoft.com/virtualization/hyper-v-on-windows/tlfs/datatypes/hv_partition_privilege_mask,
/// whose low 32 bits are EAX and high 32 bits EBX; Linux `arch/x86/include/asm/hyperv-tlfs.h`
/// `HV_CREATE_PARTITIONS BIT(0)` among the EBX bits). Only the root partition creates partitions.
const HV_CREATE_PARTITIONS: u32 = 1 << 0;
/// CPUID.1:ECX bit 31: a hypervisor is present (reserved as 0 on real processors; Intel SDM Vol. 2A
/// Table 3-10 and every hypervisor sets it).
const HYPERVISOR_PRESENT: u32 = 1 << 31;
/// The highest physical address bit x86-64 allows (MAXPHYADDR is at most 52, Intel SDM Vol. 3A 4.1.4).
const MAX_PHYSICAL_BITS: u32 = 52;

/// The CPUID values detection reads, as the driver got them from the processor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuIdValues {
    /// Leaf 0: EAX (maximum basic leaf), EBX, ECX, EDX (the vendor string).
    pub leaf0: [u32; 4],
    /// Leaf 1 EAX: stepping, model, family.
    pub leaf1_eax: u32,
    /// Leaf 1 ECX: bit 31, hypervisor present.
    pub leaf1_ecx: u32,
    /// Leaf 0x40000000: EAX (maximum hypervisor leaf), EBX, ECX, EDX (the hypervisor's vendor).
    pub hypervisor: [u32; 4],
    /// Leaf 0x40000001 EAX: the hypervisor interface signature.
    pub interface: u32,
    /// Leaf 0x40000003 EBX: the partition's privileges, high half.
    pub privileges_high: u32,
}

impl CpuIdValues {
    /// Reads the leaves through `reader` (in the driver, the CPUID instruction). The hypervisor
    /// leaves are read only when CPUID.1:ECX\[31\] says one is present, and each only up to the
    /// maximum leaf 0x40000000 reports; any other is left 0.
    pub fn read<R: CpuIdReader>(reader: &R) -> Self {
        let leaf = |eax: u32| {
            let r = reader.cpuid2(eax, 0);
            [r.eax, r.ebx, r.ecx, r.edx]
        };
        let mut values = Self { leaf0: leaf(0), ..Self::default() };
        if values.leaf0[0] >= 1 {
            let [eax, _, ecx, _] = leaf(1);
            values.leaf1_eax = eax;
            values.leaf1_ecx = ecx;
        }
        if values.leaf1_ecx & HYPERVISOR_PRESENT != 0 {
            values.hypervisor = leaf(0x4000_0000);
            if values.hypervisor[0] >= 0x4000_0001 {
                values.interface = leaf(0x4000_0001)[0];
            }
            if values.hypervisor[0] >= 0x4000_0003 {
                values.privileges_high = leaf(0x4000_0003)[1];
            }
        }
        values
    }

    fn is_intel(&self) -> bool {
        [self.leaf0[1], self.leaf0[3], self.leaf0[2]] == GENUINE_INTEL
    }

    /// The display family and model (Intel SDM Vol. 2A, CPUID, "Version Information": the extended
    /// family is added when the family is 0xF, the extended model prefixed when it is 6 or 0xF).
    pub fn family_model(&self) -> (u32, u8) {
        let eax = self.leaf1_eax;
        let family = (eax >> 8) & 0xF;
        let model = ((eax >> 4) & 0xF) as u8;
        let extended_model = ((eax >> 16) & 0xF) as u8;
        let display_family = if family == 0xF { family + ((eax >> 20) & 0xFF) } else { family };
        let display_model = if family == 6 || family == 0xF { (extended_model << 4) | model } else { model };
        (display_family, display_model)
    }

    /// Where this code runs, by the hypervisor rule of the module comment.
    pub fn host(&self) -> Host {
        if self.leaf1_ecx & HYPERVISOR_PRESENT == 0 {
            return Host::BareMetal;
        }
        let vendor = [self.hypervisor[1], self.hypervisor[2], self.hypervisor[3]];
        if vendor != MICROSOFT_HV || self.interface != HV_INTERFACE_HV1 {
            Host::OtherHypervisor
        } else if self.privileges_high & HV_CREATE_PARTITIONS != 0 {
            Host::MicrosoftRoot
        } else {
            Host::MicrosoftGuest
        }
    }
}

/// Where the driver runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Host {
    /// No hypervisor (CPUID.1:ECX\[31\] clear).
    BareMetal,
    /// The Microsoft hypervisor's root partition (Windows with VBS or memory integrity, or a Hyper-V
    /// host): it owns the real host bridge.
    MicrosoftRoot,
    /// A Microsoft hypervisor child partition (a Hyper-V guest): its host bridge is emulated.
    MicrosoftGuest,
    /// Any other hypervisor (KVM, VMware, Xen, ...), or one that does not identify as "Hv#1".
    OtherHypervisor,
}

/// The processor step: the table entry of a listed model on bare metal or the root partition.
pub fn check_cpu(cpu: &CpuIdValues) -> Result<&'static ClientModel, Status> {
    let (family, model) = cpu.family_model();
    if !cpu.is_intel() || family != 6 {
        return Err(Status::UnsupportedModel);
    }
    let entry = find(model).ok_or(Status::UnsupportedModel)?;
    match cpu.host() {
        Host::BareMetal | Host::MicrosoftRoot => Ok(entry),
        Host::MicrosoftGuest | Host::OtherHypervisor => Err(Status::UnderHypervisor),
    }
}

/// PCI configuration offset of the vendor (low 16 bits) and device (high 16 bits) IDs.
pub const PCI_ID_OFFSET: u32 = 0x00;
/// PCI configuration offset of MCHBAR's low DWORD in device 00:00.0 (Linux
/// `SNB_UNCORE_PCI_IMC_BAR_OFFSET`); its high DWORD follows at 0x4C.
pub const MCHBAR_OFFSET: u32 = 0x48;
/// Intel's PCI vendor ID.
pub const INTEL_VENDOR_ID: u16 = 0x8086;

/// The configuration DWORDs of bus 0, device 0, function 0. A read that failed or found no device
/// is passed as all ones, what PCI returns for a missing function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostBridge {
    /// Offset 0x00: vendor ID (low half), device ID (high half).
    pub id: u32,
    /// Offset 0x48: MCHBAR bits 31:0, bit 0 the enable.
    pub mchbar_low: u32,
    /// Offset 0x4C: MCHBAR bits 63:32.
    pub mchbar_high: u32,
}

/// A usable memory controller: its model and MCHBAR's base address.
#[derive(Clone, Copy, Debug)]
pub struct Found {
    pub model: &'static ClientModel,
    pub mchbar: u64,
}

impl Found {
    /// The page of controller `index` to map (see crate::imc::models::Layout::page).
    pub fn page(&self, index: u8) -> Option<ControllerPage> {
        self.model.layout.page(self.mchbar, index)
    }
}

/// The host bridge step, for a model [`check_cpu`] accepted.
pub fn check_bridge(model: &'static ClientModel, bridge: &HostBridge) -> Result<Found, Status> {
    let vendor = bridge.id as u16;
    let device = (bridge.id >> 16) as u16;
    if vendor != INTEL_VENDOR_ID || !model.devices.contains(&device) {
        return Err(Status::NoDevice);
    }
    let raw = (u64::from(bridge.mchbar_high) << 32) | u64::from(bridge.mchbar_low);
    if raw & 1 == 0 {
        return Err(Status::MchbarDisabled);
    }
    // Linux masks bit 0 (`bar &= ~BIT(0)`, uncore_get_box_mmio_addr); any other low bit set means
    // the value is not an address this table's offsets apply to.
    let mchbar = raw & !1;
    if mchbar == 0 || !mchbar.is_multiple_of(PAGE_SIZE) || mchbar >> MAX_PHYSICAL_BITS != 0 {
        return Err(Status::MchbarDisabled);
    }
    let found = Found { model, mchbar };
    // Below 2^52 no controller's page overflows; checked anyway, so a page is never missing later.
    if (0..model.layout.controllers).any(|index| found.page(index).is_none()) {
        return Err(Status::MchbarDisabled);
    }
    Ok(found)
}

/// Both steps: `read_bridge` (the driver's configuration reads) runs only for a listed model on bare
/// metal or the root partition.
pub fn detect(cpu: &CpuIdValues, read_bridge: impl FnOnce() -> HostBridge) -> Result<Found, Status> {
    let model = check_cpu(cpu)?;
    check_bridge(model, &read_bridge())
}

#[cfg(test)]
mod tests;

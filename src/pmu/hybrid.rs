//! Hybrid processors: which kind of core each logical processor is, and what every kind can count.
//!
//! A hybrid Intel processor (Alder Lake and later client parts) mixes performance cores and efficient
//! cores whose PMUs differ: an i9-12900K's Golden Cove cores have 8 general-purpose and 4 fixed
//! counters with IA32_PERF_METRICS, its Gracemont cores 6 and 3 without it (Linux
//! `arch/x86/events/intel/core.c`, the Alder Lake case of `intel_pmu_init` and `init_hybrid_pmu`).
//! The driver therefore describes every processor on that processor (CPUID and
//! IA32_PERF_CAPABILITIES are per logical processor) and counts only what all of them have
//! ([`Machine::of`]): one HAL allocation and one plan serve every processor, so a counter that one
//! core type lacks is never programmed anywhere. What the processor reports differs by generation:
//! an i9-12900K reports the common counters in leaf 0xA on every core (InstLatx64 dump
//! GenuineIntel0090672_AlderLake_01_LC_BC_CPUID.txt), while IA32_PERF_CAPABILITIES' PERF_METRICS bit
//! is set only on its performance cores; either way the intersection is what every core can do.
//!
//! Sources: hybrid flag `CPUID.(EAX=07H,ECX=0):EDX[15]`, core type `CPUID.1AH:EAX[31:24]` (20H Intel Atom,
//! 40H Intel Core), Intel SDM Vol. 2A, CPUID, "Hybrid Information Enumeration Leaf (EAX = 1AH)".

use super::model::{Detection, PmuModel};
use raw_cpuid::CpuIdReader;

/// Which kind of core a logical processor is: the value of the "Core Type" counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum CoreType {
    /// Not a hybrid processor, or a core type this driver does not know.
    #[default]
    Uniform = 0,
    /// A performance core (Intel Core, leaf 1AH core type 40H).
    Performance = 1,
    /// An efficient core (Intel Atom, leaf 1AH core type 20H).
    Efficient = 2,
}

/// `CPUID.1AH:EAX[31:24]` of an Intel Atom core.
const CORE_TYPE_ATOM: u32 = 0x20;
/// `CPUID.1AH:EAX[31:24]` of an Intel Core core.
const CORE_TYPE_CORE: u32 = 0x40;
/// `CPUID.(EAX=07H,ECX=0):EDX[15]`, Hybrid.
const HYBRID_FLAG: u32 = 1 << 15;
/// The hybrid information leaf.
const HYBRID_INFORMATION_LEAF: u32 = 0x1A;

impl CoreType {
    /// The core type of the processor `reader` executes CPUID on. raw-cpuid 11 decodes neither the
    /// hybrid flag nor leaf 1AH, so both are read raw, once the maximum basic leaf covers them.
    pub fn detect<R: CpuIdReader>(reader: R) -> CoreType {
        let max_leaf = reader.cpuid1(0).eax;
        if max_leaf < HYBRID_INFORMATION_LEAF || reader.cpuid2(7, 0).edx & HYBRID_FLAG == 0 {
            return CoreType::Uniform;
        }
        match reader.cpuid2(HYBRID_INFORMATION_LEAF, 0).eax >> 24 {
            CORE_TYPE_CORE => CoreType::Performance,
            CORE_TYPE_ATOM => CoreType::Efficient,
            _ => CoreType::Uniform,
        }
    }

    /// Every core type, in the order of their counter values.
    #[cfg(test)]
    pub const ALL: [CoreType; 3] = [CoreType::Uniform, CoreType::Performance, CoreType::Efficient];
}

/// One logical processor as it describes itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessorDescription {
    pub core_type: CoreType,
    /// Its PMU, with IA32_PERF_CAPABILITIES read on it.
    pub detection: Detection,
}

/// The machine's PMU as every processor can use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    /// What every processor can count: the first unusable detection, or the intersection of all.
    pub detection: Detection,
    /// Some processor has top-down slots with IA32_PERF_METRICS, but not every one.
    pub topdown_metrics_on_some: bool,
}

impl Machine {
    /// The machine of `processors` (at least one; with none, nothing is usable).
    pub fn of(processors: impl IntoIterator<Item = ProcessorDescription>) -> Machine {
        let mut detection = None;
        let mut any_topdown_metrics = false;
        for processor in processors {
            if let Detection::Usable(model) = processor.detection {
                any_topdown_metrics |= model.topdown_metrics();
            }
            detection = Some(match detection {
                None => processor.detection,
                Some(so_far) => common(so_far, processor.detection),
            });
        }
        let detection = detection.unwrap_or(Detection::Unusable(super::model::Unusable::UnknownVendor));
        let topdown_metrics_on_all = matches!(detection, Detection::Usable(model) if model.topdown_metrics());
        Machine { detection, topdown_metrics_on_some: any_topdown_metrics && !topdown_metrics_on_all }
    }
}

/// A machine whose processors all detected the same PMU.
impl From<Detection> for Machine {
    fn from(detection: Detection) -> Machine {
        Machine { detection, topdown_metrics_on_some: false }
    }
}

/// What two processors can both do.
fn common(left: Detection, right: Detection) -> Detection {
    match (left, right) {
        (Detection::Usable(left), Detection::Usable(right)) => Detection::Usable(common_model(left, right)),
        (Detection::Unusable(reason), _) | (_, Detection::Unusable(reason)) => Detection::Unusable(reason),
    }
}

/// The PMU two processors of one machine share: as many counters as the smaller has, as wide as the
/// narrower, the events either lacks marked unavailable, a feature only where both have it. Vendor,
/// family, model and version are the first's (one package reports the same signature on every core).
fn common_model(left: PmuModel, right: PmuModel) -> PmuModel {
    PmuModel {
        gp_counters: left.gp_counters.min(right.gp_counters),
        gp_width: left.gp_width.min(right.gp_width),
        fixed_counters: left.fixed_counters.min(right.fixed_counters),
        fixed_width: left.fixed_width.min(right.fixed_width),
        unavailable: left.unavailable.union(right.unavailable),
        amd_core_extended: left.amd_core_extended && right.amd_core_extended,
        amd_perfmon_v2: left.amd_perfmon_v2 && right.amd_perfmon_v2,
        overflow_interrupt: left.overflow_interrupt && right.overflow_interrupt,
        topdown_slots: left.topdown_slots && right.topdown_slots,
        perf_capabilities: left.perf_capabilities && right.perf_capabilities,
        perf_metrics: left.perf_metrics && right.perf_metrics,
        aperf_mperf: left.aperf_mperf && right.aperf_mperf,
        ..left
    }
}

#[cfg(test)]
#[path = "hybrid_tests.rs"]
mod tests;

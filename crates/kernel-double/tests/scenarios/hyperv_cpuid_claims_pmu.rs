//! A Hyper-V guest whose CPUID (wrongly) claims a PMU, architectural perfmon v4 in leaf 0xA and
//! PerformanceMonitorsAvailable (0x40000003 EDX bit 2), while the partition has no counters:
//! HalAllocateHardwareCounters "succeeds" with nothing behind the handle, as Hyper-V's does. On the
//! real machine every access to a PMU MSR would #GP (a bug check in kernel mode); the double records
//! each access to a PMU register the model lacks as a violation, reads it as 0 and drops the write.
//!
//! What the driver does (asserted here): it trusts CPUID, owns the counters on the first AddCounter,
//! reports PMU State active with 7 counters owned, and programs them: wrmsr to registers that do not
//! exist on every processor; each collect then rdmsr's them (reading 0, so the counters read 0) and
//! repairs what it takes for lost programming (rdpmc, wrmsr); the release at unload writes them again
//! to stop and clear them. Nothing else breaks: no leak, no
//! registration or thread left, the HAL handle freed. There is no way for a driver to probe an MSR
//! safely in kernel mode without structured exception handling, so the driver cannot do better than
//! trust CPUID and the hypervisor's feature leaf here; this documents the failure mode.

use crate::common;

use common::cpu_models::ACTIVE;
use common::*;
use kernel_double::control::{hal, pcw};
use kernel_double::cpu::cpuid::{self, CpuModel, PmuKind};
use kernel_double::cpu::{msr, pmu};
use kernel_double::report::Report;
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;

const GENUINE_INTEL: [u32; 3] = [0x756E6547, 0x6C65746E, 0x49656E69];
const MICROSOFT_HV: [u32; 3] = [0x7263694D, 0x666F736F, 0x76482074];

/// *Synthetic*: the Hyper-V guest of cpuid::HYPERV_GUEST_NO_PMU with Skylake's leaf 0xA and
/// 0x40000003 EDX bit 2 set (as in the driver's HYPERV_ROOT_XEON_W1290P entry), but no counters.
static LYING_HYPERV_GUEST: CpuModel = CpuModel {
    perf_capabilities: 0,
    name: "Hyper-V guest whose CPUID claims a PMU it does not have",
    leaves: &[
        (0, 0, [0x16, GENUINE_INTEL[0], GENUINE_INTEL[1], GENUINE_INTEL[2]]),
        (0x1, 0, [0x000A0654, 0x00200800, 0xFEFAF387, 0xBFEBFBFF]),
        (0xA, 0, [0x07300404, 0x00000000, 0x00000000, 0x00000603]),
        (0x4000_0000, 0, [0x4000000B, MICROSOFT_HV[0], MICROSOFT_HV[1], MICROSOFT_HV[2]]),
        (0x4000_0001, 0, [0x31237648, 0, 0, 0]),
        (0x4000_0003, 0, [0x00003FFF, 0x002BB9FE, 0x00000002, 0x19FFFBF6]),
        (0x8000_0000, 0, [0x80000008, 0, 0, 0]),
        (0x8000_0001, 0, [0x00000000, 0x00000000, 0x00000121, 0x2C100800]),
    ],
    pmu: PmuKind::None,
    other_cores: None,
};

#[test]
fn hyperv_cpuid_claims_a_pmu_the_hal_cannot_give() {
    cpuid::set_model(&LYING_HYPERV_GUEST);
    let mut driver = load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
    assert_eq!(violations::all(), [], "DriverEntry touched the PMU");
    assert_eq!(hal::allocation_calls(), 0);

    assert_eq!(pcw::add_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert_eq!(hal::allocation_calls(), 1, "the resource list was taken at once");
    assert!(
        matches!(hal::owner(), Some(hal::Owner::Driver { overflow_handler: Some(_), .. })),
        "{:?}",
        hal::owner()
    );
    let status = driver_status();
    assert_eq!((status[0], status[1]), (ACTIVE, 7), "the driver believes it owns 7 counters");
    let programming = violations::take();
    let writes = msr::writes().len();
    assert!(writes > 0, "the driver did not program the counters");
    let wrmsr = programming.iter().filter(|violation| violation.at == "wrmsr").count();
    assert_eq!(wrmsr, writes, "every wrmsr hit a register that does not exist");
    for violation in &programming {
        assert!(["wrmsr", "rdmsr"].contains(&violation.at), "{violation}");
        assert!(violation.message.contains("does not exist"), "{violation}");
        assert!(violation.caller_rva.is_some(), "{violation}: no RVA");
    }
    let per_processor = writes / 4;
    assert!(msr::writes().iter().all(|write| write.pmu_owned), "written without ownership");

    for vp in 0..4 {
        pmu::step(vp, 1000);
    }
    let (reads_before, writes_before, pmcs_before) = (msr::reads(), msr::writes().len(), pmu::pmc_reads());
    for (totals, overflows) in collect_totals() {
        assert_eq!((totals, overflows), ([0; 7], 0), "counts from counters that do not exist");
    }
    let reads = msr::reads() - reads_before;
    let writes_of_collect = msr::writes().len() - writes_before;
    let pmcs = (pmu::pmc_reads() - pmcs_before) as usize;
    let reading = violations::take();
    assert!(reads > 0, "a collect read no MSR");
    // Counters that read back unprogrammed are repaired (stopped, read, programmed again): those
    // rdpmc and wrmsr fault too.
    assert_eq!(
        reading.len(),
        reads + writes_of_collect + pmcs,
        "every rdmsr, rdpmc and wrmsr of a collect hit a register that does not exist"
    );
    assert!(reading.iter().all(|violation| violation.message.contains("does not exist")), "{reading:?}");

    assert_eq!(pcw::remove_counter(HARDWARE_COUNTERS, u64::MAX), Some(STATUS_SUCCESS));
    assert!(driver.unload());
    let releasing = violations::take();
    assert!(!releasing.is_empty(), "the release did not stop the counters");
    assert!(releasing.iter().all(|violation| violation.message.contains("does not exist")), "{releasing:?}");
    println!(
        "CPUID claims a PMU the partition lacks: {} violations programming ({wrmsr} wrmsr, \
         {per_processor} per processor), {} per collect (rdmsr), {} releasing; PMU State active, \
         counters read 0",
        programming.len(),
        reading.len(),
        releasing.len()
    );
    // Apart from the violations just taken, everything is clean.
    let report = Report::now();
    assert!(report.is_clean(), "{report}");
}

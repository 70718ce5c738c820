//! The double's DPC, thread-affinity and KeGetCurrentThread models run a real image: the well-behaved
//! probe driver of tests/faulty-drivers/kernel-services-probe, on 72 virtual processors in two groups.
//! The probe checks what it sees itself (DriverEntry fails with the step that went wrong); the test
//! checks the double's side: one DPC ran on every processor, at DISPATCH_LEVEL, in the image's code;
//! nothing is left behind and nothing was violated.

use crate::faulty_support;

use faulty_support::*;
use kernel_double::control::{dbg, dpc};
use kernel_double::cpu::{DISPATCH_LEVEL, topology};
use kernel_double::report::Report;
use kernel_double::status::STATUS_SUCCESS;

#[test]
fn dpcs_affinity_and_current_thread_behave_as_documented_on_72_processors() {
    topology::configure(72, 36);
    let mut driver = load(KERNEL_SERVICES_PROBE);
    let status = driver.driver_entry();
    let lines: Vec<String> = dbg::lines().into_iter().map(|line| line.text).collect();
    assert_eq!(status, STATUS_SUCCESS, "probe failed ({status:#x}): {lines:?}");
    assert_eq!(
        lines,
        ["probe: 72 DPCs ran on their processors at DISPATCH_LEVEL; affinity reached processor 71; \
          KeGetCurrentThread is the system thread's object\n"]
    );

    let text = section(&driver, ".text");
    let runs = dpc::executions();
    let mut processors: Vec<u32> = runs.iter().map(|run| run.processor).collect();
    processors.sort_unstable();
    assert_eq!(processors, (0..72).collect::<Vec<_>>(), "one DPC per processor");
    for run in &runs {
        assert_eq!(run.irql, DISPATCH_LEVEL, "{run:?}");
        let rva = (run.routine - driver.image().base()) as u64;
        assert!(contains(&text, rva), "{run:?}: the routine is in the probe's .text");
    }

    assert!(driver.unload());
    let report = Report::now();
    assert!(report.is_clean(), "{report}");
}

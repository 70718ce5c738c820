//! INIT is discarded after DriverEntry (PROT_NONE, as Driver Verifier frees it): running code there
//! afterwards is reported with its RVA and section and kills the process, instead of looping or passing.
//! The scenario runs in a child process (this test binary re-run on this test alone), whose death the
//! parent checks.

use crate::common;

use common::death::{is_child, run_child};
use kernel_double::status::STATUS_SUCCESS;

const TEST: &str = concat!(module_path!(), "::", "calling_discarded_init_is_fatal_and_named");

#[test]
fn calling_discarded_init_is_fatal_and_named() {
    if is_child() {
        let mut driver = common::load();
        assert_eq!(driver.driver_entry(), STATUS_SUCCESS);
        let entry = driver.image().entry_point();
        eprintln!("child: calling DriverEntry again at {entry:#x}, in the discarded INIT");
        // SAFETY: deliberately calls into the discarded INIT section; the fault handler aborts.
        let entry: extern "win64" fn(usize, usize) -> i32 = unsafe { std::mem::transmute(entry) };
        entry(0, 0);
        unreachable!("DriverEntry ran after INIT was discarded");
    }
    let (_, stderr) = run_child(TEST);
    assert!(stderr.contains("kernel-double: FATAL FAULT"), "{stderr}");
    assert!(stderr.contains("in INIT, discarded after DriverEntry"), "{stderr}");
    assert!(stderr.contains("image RVA 0x"), "{stderr}");
}

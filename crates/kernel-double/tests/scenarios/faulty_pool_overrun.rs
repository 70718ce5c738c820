//! The special pool checker catches a purpose-built faulty driver (tests/faulty-drivers/pool-overrun):
//! DriverEntry allocates 32 bytes tagged "Ovrn" and writes the byte after them. Special pool places the
//! block against a no-access guard page, so the write faults at once; the double reports an access
//! past the end of that allocation, with its tag and size and the RVA of the driver's store, and aborts
//! (Driver Verifier's bug check 0xCD). The scenario runs in a child process, whose report the parent
//! checks.

use crate::faulty_support;

use faulty_support::*;

const TEST: &str =
    concat!(module_path!(), "::", "faulty_write_past_the_end_of_an_allocation_is_fatal_and_named");

#[test]
fn faulty_write_past_the_end_of_an_allocation_is_fatal_and_named() {
    if is_child() {
        let mut driver = load(POOL_OVERRUN);
        let text = section(&driver, ".text");
        eprintln!("child: .text at RVA {:#x}, {:#x} bytes", text.rva, text.length);
        driver.driver_entry();
        unreachable!("the write past the end of the allocation did not fault");
    }
    let (_, stderr) = run_child(TEST);
    assert!(stderr.contains("kernel-double: VIOLATION special pool (called from RVA 0x"), "{stderr}");
    assert!(
        stderr.contains(
            "kernel-double: FATAL FAULT: special pool: access past the end of a 32-byte \
                         allocation tagged \"Ovrn\""
        ),
        "{stderr}"
    );
    assert!(stderr.contains("(0 bytes past its end, in the guard page)"), "{stderr}");
    // The faulting store is the driver's, in .text.
    let text_rva = hex_after(&stderr, "child: .text at RVA ").expect(".text's RVA");
    let rip_rva = hex_after(&stderr, "(image RVA ").expect("the faulting RIP as an RVA");
    assert!(rip_rva >= text_rva && rip_rva < text_rva + 0x1000, "RIP RVA {rip_rva:#x}\n{stderr}");
    assert!(stderr.contains(" in .text)"), "{stderr}");
    assert_eq!(hex_after(&stderr, "VIOLATION special pool (called from RVA "), Some(rip_rva), "{stderr}");
}

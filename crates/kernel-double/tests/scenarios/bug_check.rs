//! KeBugCheckEx stops the run with a clear message: the code, the parameters, the caller and, for the
//! driver's panic code "PMUP", the panic's source location. It runs in a child process (this test
//! binary re-run on this test alone), whose abort the parent checks.

use crate::common;

use common::death::{is_child, run_child};
use kernel_double::cpu;

const TEST: &str = concat!(module_path!(), "::", "bug_check_aborts_with_code_and_panic_location");

#[test]
fn bug_check_aborts_with_code_and_panic_location() {
    if is_child() {
        cpu::enter(2);
        let file = "src/session/client.rs";
        let code = u32::from_be_bytes(*b"PMUP");
        // SAFETY: the parameters pmupcw's panic handler passes: the file name's address and length,
        // line and column.
        unsafe {
            kernel_double::exports::dbg::ke_bug_check_ex(code, file.as_ptr() as usize, file.len(), 123, 45)
        };
    }
    let (_, stderr) = run_child(TEST);
    assert!(stderr.contains("kernel-double: BUG CHECK 0x504d5550"), "{stderr}");
    assert!(stderr.contains("on processor 2"), "{stderr}");
    assert!(stderr.contains("Rust panic at src/session/client.rs:123:45"), "{stderr}");
}

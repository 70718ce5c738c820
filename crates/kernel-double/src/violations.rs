//! What the double's checks found: rules Windows or Driver Verifier would enforce, recorded instead of
//! bug-checking so that a test can assert there are none (or that a purpose-built fault was caught).

use crate::poison::IgnorePoison;
use std::fmt;
use std::sync::Mutex;

/// One broken rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The export (or emulated instruction) that detected it.
    pub at: &'static str,
    /// The driver's return address (or faulting instruction) as an RVA of the image, when known.
    pub caller_rva: Option<u64>,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.caller_rva {
            Some(rva) => write!(f, "{} (called from RVA {rva:#x}): {}", self.at, self.message),
            None => write!(f, "{}: {}", self.at, self.message),
        }
    }
}

static VIOLATIONS: Mutex<Vec<Violation>> = Mutex::new(Vec::new());

/// Records a violation and echoes it to stderr at once (so it shows even if the test later hangs).
pub fn record(at: &'static str, caller_rva: Option<u64>, message: String) {
    let violation = Violation { at, caller_rva, message };
    eprintln!("kernel-double: VIOLATION {violation}");
    lock().push(violation);
}

/// Every violation so far.
pub fn all() -> Vec<Violation> {
    lock().clone()
}

/// Every violation so far, removing them.
pub fn take() -> Vec<Violation> {
    std::mem::take(&mut *lock())
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Violation>> {
    VIOLATIONS.lock().ignore_poison()
}

//! Test control of the fake dbg exports: what tests and tools call to steer and inspect them.
//! A child of the exports module, so it reaches its state; the driver calls none of it.

use super::*;

/// Every line printed so far.
pub fn lines() -> Vec<DebugLine> {
    LINES.lock().ignore_poison().clone()
}

//! Fault injection, shared by every export that supports it (pool, HAL counters, PCW, threads and
//! object references): each export counts its calls and fails those a test chose by 0-based sequence
//! number, each with its own status, as the real routine fails when the system runs out of a resource
//! or refuses an argument. A driver must survive every such failure (Driver Verifier's low resources
//! simulation does the same at random:
//! <https://learn.microsoft.com/windows-hardware/drivers/devtest/low-resources-simulation>).

use crate::poison::IgnorePoison;
use std::sync::Mutex;

/// One export's call count and the failures injected into it.
pub(crate) struct FaultPlan {
    state: Mutex<Plan>,
}

struct Plan {
    calls: u64,
    /// (sequence number, status) of each failure not yet taken.
    failures: Vec<(u64, i32)>,
}

impl FaultPlan {
    pub(crate) const fn new() -> FaultPlan {
        FaultPlan { state: Mutex::new(Plan { calls: 0, failures: Vec::new() }) }
    }

    /// Counts a call; returns the status to fail it with, if one was injected for it.
    pub(crate) fn next(&self) -> Option<i32> {
        let mut plan = self.state.lock().ignore_poison();
        let index = plan.calls;
        plan.calls += 1;
        let position = plan.failures.iter().position(|&(at, _)| at == index)?;
        Some(plan.failures.swap_remove(position).1)
    }

    /// Makes call `index` (0-based, counting every call so far) fail with `status`.
    pub(crate) fn fail(&self, index: u64, status: i32) {
        assert!(status < 0, "an injected failure needs an error status, not {status:#x}");
        self.state.lock().ignore_poison().failures.push((index, status));
    }

    /// Forgets every injected failure not yet taken.
    pub(crate) fn clear(&self) {
        self.state.lock().ignore_poison().failures.clear();
    }

    /// Calls made so far.
    pub(crate) fn calls(&self) -> u64 {
        self.state.lock().ignore_poison().calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_PARAMETER};

    #[test]
    fn fails_the_chosen_calls_once_each() {
        let plan = FaultPlan::new();
        plan.fail(1, STATUS_INSUFFICIENT_RESOURCES);
        plan.fail(3, STATUS_INVALID_PARAMETER);
        plan.fail(4, STATUS_INVALID_PARAMETER);
        assert_eq!(plan.next(), None);
        assert_eq!(plan.next(), Some(STATUS_INSUFFICIENT_RESOURCES));
        assert_eq!(plan.next(), None);
        assert_eq!(plan.next(), Some(STATUS_INVALID_PARAMETER));
        plan.clear();
        assert_eq!(plan.next(), None, "a cleared failure is not taken");
        assert_eq!(plan.calls(), 5);
    }
}

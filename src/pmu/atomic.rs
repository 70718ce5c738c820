//! The atomics the overflow fold and the polling reader share with their readers: core's in the
//! driver and in ordinary tests, loom's when built with `--cfg loom` for the model checker. The one
//! place that choice is made for `pmu` (as tokio's `src/loom` makes it for tokio).

#[cfg(loom)]
pub use loom::sync::atomic::{AtomicU64, Ordering};

#[cfg(not(loom))]
pub use core::sync::atomic::{AtomicU64, Ordering};

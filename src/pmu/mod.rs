//! The PMU client: which counters this processor has, what to program, and how to turn overflowing
//! W-bit counters into exact 64-bit counts.
//!
//! Pure, host-tested logic: `model` (CPUID detection), `layout` (where a model's registers are), `msr` (register numbers), `encoding`
//! (event-select bits), `events` (the event table and each vendor's encodings), `placement` (the
//! counter plan), `program` (MSR sequences), `extend`, `fold` and `poll` (width extension and the overflow
//! handler/reader protocol, model-checked with loom), `topdown` (level 1 from fixed counter 3 and
//! IA32_PERF_METRICS), `frequency` (APERF/MPERF), `processor` (one processor's state). The
//! ownership session (`crate::session`) drives them.
#![deny(unsafe_code)]

pub mod encoding;
pub mod events;
pub mod extend;
pub mod fold;
pub mod frequency;
pub mod hybrid;
pub mod layout;
pub mod model;
pub mod msr;
pub mod placement;
pub mod poll;
pub mod processor;
pub mod profile;
pub mod program;
pub mod topdown;

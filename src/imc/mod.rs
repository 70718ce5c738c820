//! The memory controller source's pure logic, the second counter source beside the core PMU: which
//! client processors have free-running DRAM counters and where they are (`models`), whether this
//! machine's may be mapped, from raw CPUID and PCI configuration values (`detect`), 64-bit counts
//! from 32-bit counters by polling (`extend`), and the status the source publishes (`status`).
//! No I/O and no unsafe code: the kernel layer reads CPUID and configuration space, maps the pages
//! and loads the counters; this decides what to map and what the values mean. Design, sources and
//! the plan for servers: `docs/memory-controller.md`.
#![deny(unsafe_code)]

pub mod detect;
pub mod extend;
pub mod models;
pub mod status;

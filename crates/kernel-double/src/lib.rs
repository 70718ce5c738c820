//! A kernel double: runs the real `pmupcw.sys` inside a Linux process.
//!
//! * [`loader`] maps the PE image, relocates it, binds its imports by name to the fake exports of
//!   [`exports`], protects each section and discards `INIT` after DriverEntry; [`image_map`] keeps where
//!   the image is and what Force IRQL Checking trimmed, below [`cpu`], which the fake kernel above it
//!   hands what it needs (a KTHREAD, special pool's guard pages) as hooks at load.
//! * [`cpu`] gives every host thread that runs driver code a virtual processor (index, group, number,
//!   IRQL) behind a fake KPCR reached through GS, and [`cpu::trap`] emulates the privileged
//!   instructions (cr8, rdmsr, wrmsr, rdpmc, cli, sti, and the rewritten cpuid) that fault in user mode,
//!   against a chosen CPU model and a virtual PMU per processor.
//! * [`exports`] implements the ntoskrnl and HAL routines the driver imports (and the DPC and thread
//!   affinity routines a driver of its kind may import), each checking the maximum IRQL it is
//!   documented for; [`violations`] collects what the checks find. What tests call to steer and inspect
//!   the double (fault injection, the other PMU client, sleep and resume, registry values, PCW's
//!   consumer side, counts) is in [`control`], each export module's `control` child in one place.
//! * [`platform`] is device 00:00.0 and the memory controller behind it; [`kernel_build`] chooses the Windows build presented (what ntoskrnl.exe exports); [`driver`] calls DriverEntry and DriverUnload; [`report`] gathers the end-of-run state; [`consumer`] reads the
//!   countersets as PDH does (the `pmupcw-run` binary, `cargo make run`).
//!
//! The double's state is per process (signal handler, GS, CPU model, the fake kernel's tables), so the
//! scenarios (tests/scenarios/) run with cargo-nextest, one process per test (not plain `cargo test`).

// The double's host-side FFI (signal handlers, ucontext, process_vm_readv, the fake exports' raw
// arguments) groups the calls of one setup in one unsafe block, each block with its SAFETY comment;
// the driver holds itself to one unsafe operation per block.
#![allow(clippy::multiple_unsafe_ops_per_block)]
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

pub mod consumer;
pub mod control;
pub mod cpu;
pub mod driver;
pub mod exports;
pub mod image_map;
pub mod kernel_build;
pub mod loader;
pub mod platform;
pub mod poison;
pub mod report;
pub mod status;
pub mod violations;

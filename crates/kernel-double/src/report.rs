//! The end-of-run state: what Driver Verifier and the kernel would complain about at unload.

use crate::control::{callback, dpc, hal, memory, pcw, pool, ps, registry};
use crate::cpu::msr;
use crate::violations::{self, Violation};
use std::fmt;

#[derive(Clone, Debug)]
pub struct Report {
    pub leaked_pool: Vec<pool::Allocation>,
    pub registrations: Vec<pcw::CountersetInfo>,
    pub live_system_threads: usize,
    /// DPCs queued or running.
    pub pending_dpcs: usize,
    pub open_handles: usize,
    /// Registry key handles still open (ZwOpenKey without ZwClose).
    pub open_keys: usize,
    pub live_objects: usize,
    /// Callback registrations and callback object references still held (ExRegisterCallback,
    /// ExCreateCallback).
    pub callbacks: usize,
    pub hal_owner: Option<hal::Owner>,
    /// Every HAL allocation granted during the run: its processors (`None`: all) and counters
    /// (IA32_PERF_GLOBAL_CTRL bits; `None`: the whole PMU).
    pub hal_allocations: Vec<(Option<Vec<u32>>, Option<u64>)>,
    pub msr_writes: usize,
    /// MmMapIoSpaceEx mappings still held: (PhysicalAddress, NumberOfBytes).
    pub io_mappings: Vec<(u64, usize)>,
    pub violations: Vec<Violation>,
}

impl Report {
    /// The state now.
    pub fn now() -> Report {
        Report {
            leaked_pool: pool::outstanding(),
            registrations: pcw::registrations(),
            live_system_threads: ps::live_system_threads(),
            pending_dpcs: dpc::outstanding(),
            open_handles: ps::open_handles(),
            open_keys: registry::open_handles(),
            live_objects: ps::live_objects(),
            callbacks: callback::outstanding(),
            hal_owner: hal::owner(),
            hal_allocations: hal::allocation_log()
                .into_iter()
                .map(|allocation| {
                    (allocation.processors.map(|set| set.into_iter().collect()), allocation.counters)
                })
                .collect(),
            msr_writes: msr::writes().len(),
            io_mappings: memory::mappings()
                .into_iter()
                .map(|mapping| (mapping.physical, mapping.bytes))
                .collect(),
            violations: violations::all(),
        }
    }

    /// Whether nothing is left behind and nothing was violated.
    pub fn is_clean(&self) -> bool {
        self.leaked_pool.is_empty()
            && self.registrations.is_empty()
            && self.live_system_threads == 0
            && self.pending_dpcs == 0
            && self.open_handles == 0
            && self.open_keys == 0
            && self.live_objects == 0
            && self.callbacks == 0
            && self.hal_owner.is_none()
            && self.io_mappings.is_empty()
            && self.violations.is_empty()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "leaked pool: {} allocations", self.leaked_pool.len())?;
        for allocation in &self.leaked_pool {
            writeln!(
                f,
                "  {:#x}: {} bytes, tag {:?}",
                allocation.address,
                allocation.size,
                allocation.tag_text()
            )?;
        }
        writeln!(f, "registrations left: {:?}", self.registrations)?;
        writeln!(f, "live system threads: {}", self.live_system_threads)?;
        writeln!(f, "pending DPCs: {}", self.pending_dpcs)?;
        writeln!(f, "open handles: {}, referenced objects: {}", self.open_handles, self.live_objects)?;
        writeln!(f, "open registry keys: {}", self.open_keys)?;
        writeln!(f, "callback registrations and references: {}", self.callbacks)?;
        writeln!(f, "HAL counters owner: {:?}", self.hal_owner)?;
        for (processors, counters) in &self.hal_allocations {
            let processors = match processors {
                None => "every processor".to_owned(),
                Some(list) => format!("processors {}", ranges(list)),
            };
            let counters = counters.map_or("the whole PMU".to_owned(), |bits| format!("counters {bits:#x}"));
            writeln!(f, "HAL allocation: {counters} on {processors}")?;
        }
        writeln!(f, "MSR writes: {}", self.msr_writes)?;
        if !self.io_mappings.is_empty() {
            writeln!(f, "I/O space still mapped: {} mapping(s)", self.io_mappings.len())?;
            for (physical, bytes) in &self.io_mappings {
                writeln!(f, "  physical {physical:#x}, {bytes:#x} bytes")?;
            }
        }
        writeln!(f, "violations: {}", self.violations.len())?;
        for violation in &self.violations {
            writeln!(f, "  {violation}")?;
        }
        Ok(())
    }
}

/// `list` (ascending) as ranges: "0-15, 17".
fn ranges(list: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut start = None;
    for (position, &value) in list.iter().enumerate() {
        let first = *start.get_or_insert(value);
        if list.get(position + 1) != Some(&(value + 1)) {
            parts.push(if first == value { format!("{value}") } else { format!("{first}-{value}") });
            start = None;
        }
    }
    parts.join(", ")
}

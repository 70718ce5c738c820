//! Extending the memory controller's counters to 64 bits by polling, with crate::pmu::extend's
//! `advance` (the same modular difference the core counters use), and the poll period as a figure
//! computed from the model table.
//!
//! A 32-bit DATA_READS counter wraps after 2^32 lines, 2^38 bytes (274.9 GB). The fastest memory of
//! any 32-bit model in the table is Ice Lake's LPDDR4x-3733 on a 128-bit bus, 59.7 GB/s, which wraps
//! it in 4.6 s; [`POLL_PERIOD_100NS`], 1 s, is under a quarter of that (crate::pmu::poll's safety
//! factor 4), so even a poll late by three periods sees at most one wrap. The 64-bit counters of
//! Tiger Lake and later need no poll: 2^64 lines take 374 years at 100 GB/s. Why 1 s, and what
//! an overclocked machine does to the margin: `docs/memory-controller.md`.

use crate::imc::models::{BYTES_PER_COUNT, ClientModel};
use crate::pmu::extend::advance;
use crate::pmu::poll::{DEFAULT_SAFETY, poll_period_100ns};

/// How often the housekeeping thread reads a 32-bit layout's counters while a query is active, in
/// 100 ns units (KeSetTimerEx's unit): 1 s.
pub const POLL_PERIOD_100NS: i64 = 10_000_000;

/// Counts per second a model's counter advances at its peak memory bandwidth (one count per line).
pub fn peak_counts_per_second(model: &ClientModel) -> u64 {
    model.peak.bytes_per_second() / BYTES_PER_COUNT
}

/// The longest poll period that keeps `model`'s counters exact with crate::pmu::poll's safety factor
/// to spare, in 100 ns units (for a 64-bit layout more than 50 years: never needed).
pub fn safe_poll_period_100ns(model: &ClientModel) -> i64 {
    let width = model.layout.counters.iter().map(|counter| counter.width).min().unwrap_or(64);
    poll_period_100ns(width, peak_counts_per_second(model), DEFAULT_SAFETY)
}

/// One counter's 64-bit count since it was first read: the last raw value and the running total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extended {
    width: u8,
    last_raw: u64,
    total: u64,
}

impl Extended {
    /// Starts at 0 from the counter's first reading `raw`, `width` bits wide (32 or 64).
    pub const fn start(width: u8, raw: u64) -> Self {
        Self { width, last_raw: raw, total: 0 }
    }

    /// Takes a new reading and returns the count since the start: exact while fewer than 2^width
    /// counts separate two readings (at most one wrap in between, which the poll period ensures).
    pub fn update(&mut self, raw: u64) -> u64 {
        self.total = self.total.wrapping_add(advance(self.last_raw, raw, self.width));
        self.last_raw = raw;
        self.total
    }

    /// The count since the start, as of the last reading.
    pub const fn total(&self) -> u64 {
        self.total
    }
}

#[cfg(test)]
mod tests;

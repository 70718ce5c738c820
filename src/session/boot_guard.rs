//! No boot loop: the marker the driver keeps in its `Parameters` key around each source's first touch
//! of its hardware (the PMU's first programming, the memory controllers' first mapping), what a start
//! makes of a marker it finds ([`start_mode`]), and when the marker is set and cleared ([`BootGuard`]).
//! A start that finds it set (the previous start stopped between a first touch and its first clean
//! read: a bug check, a reset) touches no hardware until an administrator deletes it. The registry
//! writes are the platform's; this is pure and host-tested. Reasoning, sources and the re-enable
//! command: `docs/internals.md`, "No boot loop".

use crate::pcw::driver_status::{DriverStatus, HardwareGuard};
use crate::settings::{REG_DWORD, Setting};
use crate::sync::unmodelled::AtomicU32;
use crate::sync::{Ordering, SessionLock};

/// The marker's value name in the service's `Parameters` key: a REG_DWORD, [`MARKER_SET`] while a
/// first touch has not been read back cleanly.
pub const MARKER: &str = "HardwareGuard";
/// The marker's data while set.
pub const MARKER_SET: u32 = 1;

/// What a start does with the hardware, from the marker it finds at load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartMode {
    /// No marker (or 0): the hardware is used, guarded.
    Normal,
    /// A marker: nothing is touched, and the status says why ([`HardwareGuard::HeldOff`] or
    /// [`HardwareGuard::HeldOffUnreadable`]).
    HeldOff(HardwareGuard),
}

/// The start mode the marker `found` at load selects. Anything but a missing value or a REG_DWORD 0
/// holds the hardware off: a marker the driver did not write in that form, or one it cannot read, is
/// no proof that the last start ended well (an unreadable one holds off this start only).
pub fn start_mode(found: Setting<'_>) -> StartMode {
    match found {
        Setting::Missing => StartMode::Normal,
        Setting::Value { kind: REG_DWORD, units: [0, 0], odd: false } => StartMode::Normal,
        Setting::Value { kind: REG_DWORD, units: [_, _], odd: false } => {
            StartMode::HeldOff(HardwareGuard::HeldOff)
        }
        Setting::Value { .. } | Setting::TooLong | Setting::Failed(_) => {
            StartMode::HeldOff(HardwareGuard::HeldOffUnreadable)
        }
    }
}

/// In [`BootGuard::pending`]: this start holds the hardware off.
const HELD_OFF: u32 = 1 << 31;

/// A counter source that touches hardware.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    CorePmu = 0,
    MemoryController = 1,
}

impl Source {
    const fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// The guard's state in this load: which sources have touched their hardware and not yet read it
/// back (pending), which have (proven), and whether the marker is in the registry.
#[derive(Debug, Default)]
struct State {
    held_off: bool,
    marker_set: bool,
    pending: u32,
    proven: u32,
}

/// The marker's life in one load. Set (and flushed) before a source first touches its hardware; once
/// every source that did has read its hardware cleanly, cleared (and flushed). A source proven once
/// is not guarded again in this load (a later acquisition is not a first touch). Writes are made
/// under the guard's lock, at PASSIVE_LEVEL (the callers' contract).
pub struct BootGuard {
    state: SessionLock<State>,
    /// The sources pending, and [`HELD_OFF`], for the collect path's checks without the lock.
    pending: AtomicU32,
}

impl Default for BootGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl BootGuard {
    /// Armed: no marker written, nothing pending.
    pub fn new() -> Self {
        BootGuard { state: SessionLock::new(State::default()), pending: AtomicU32::new(0) }
    }

    /// For the whole load: nothing is touched (the start found the marker).
    pub fn hold_off(&self) {
        self.state.write().held_off = true;
        self.pending.fetch_or(HELD_OFF, Ordering::Relaxed);
    }

    /// Whether this start holds the hardware off (one relaxed load).
    pub fn held_off(&self) -> bool {
        self.pending.load(Ordering::Relaxed) & HELD_OFF != 0
    }

    /// Before `source` touches its hardware: `true` if it may. The first time in this load the marker
    /// is set first, through `write_marker(true)` (which writes and flushes it, returning whether it
    /// did); if that fails, `false` and [`HardwareGuard::MarkerNotWritten`]: nothing unguarded is
    /// touched, and the next attempt tries again. PASSIVE_LEVEL.
    pub fn before_touch(
        &self,
        source: Source,
        write_marker: impl FnOnce(bool) -> bool,
        status: &DriverStatus,
    ) -> bool {
        let mut state = self.state.write();
        if state.held_off {
            return false;
        }
        if (state.proven | state.pending) & source.bit() != 0 {
            return true;
        }
        if !state.marker_set {
            if !write_marker(true) {
                status.set_hardware_guard(HardwareGuard::MarkerNotWritten);
                return false;
            }
            state.marker_set = true;
        }
        state.pending |= source.bit();
        self.pending.store(state.pending, Ordering::Relaxed);
        status.set_hardware_guard(HardwareGuard::Pending);
        true
    }

    /// Whether a clean read of `source` is still awaited (one relaxed load: the collect path's cost).
    pub fn awaits_read(&self, source: Source) -> bool {
        self.pending.load(Ordering::Relaxed) & source.bit() != 0
    }

    /// After `source` read every processor or controller it touched, and returned: proven. Once no
    /// source is pending, the marker is cleared through `write_marker(false)`; if that fails, the
    /// marker stays (the next start holds off: the safe side) and the next clean read tries again.
    /// PASSIVE_LEVEL.
    pub fn after_clean_read(
        &self,
        source: Source,
        write_marker: impl FnOnce(bool) -> bool,
        status: &DriverStatus,
    ) {
        let mut state = self.state.write();
        if state.pending & source.bit() == 0 {
            return;
        }
        if state.pending == source.bit() {
            if !write_marker(false) {
                return;
            }
            state.marker_set = false;
            status.set_hardware_guard(HardwareGuard::Clear);
        }
        state.pending &= !source.bit();
        state.proven |= source.bit();
        self.pending.store(state.pending, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;

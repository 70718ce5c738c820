use super::*;
use std::cell::RefCell;

fn dword(value: u32) -> [u16; 2] {
    [value as u16, (value >> 16) as u16]
}

fn guard_status(status: &DriverStatus) -> u32 {
    status.block().hardware_guard.load(Ordering::Relaxed)
}

#[test]
fn only_a_missing_marker_or_a_zero_dword_starts_normally() {
    let zero = dword(0);
    let set = dword(MARKER_SET);
    let other = dword(0x1_0000);
    let text = [u16::from(b'1'), 0];
    let cases: [(Setting<'_>, StartMode); 8] = [
        (Setting::Missing, StartMode::Normal),
        (Setting::Value { kind: REG_DWORD, units: &zero, odd: false }, StartMode::Normal),
        (
            Setting::Value { kind: REG_DWORD, units: &set, odd: false },
            StartMode::HeldOff(HardwareGuard::HeldOff),
        ),
        (
            Setting::Value { kind: REG_DWORD, units: &other, odd: false },
            StartMode::HeldOff(HardwareGuard::HeldOff),
        ),
        (
            Setting::Value { kind: crate::settings::REG_SZ, units: &text, odd: false },
            StartMode::HeldOff(HardwareGuard::HeldOffUnreadable),
        ),
        (
            Setting::Value { kind: REG_DWORD, units: &zero[..1], odd: false },
            StartMode::HeldOff(HardwareGuard::HeldOffUnreadable),
        ),
        (Setting::TooLong, StartMode::HeldOff(HardwareGuard::HeldOffUnreadable)),
        (Setting::Failed(-1_073_741_670), StartMode::HeldOff(HardwareGuard::HeldOffUnreadable)),
    ];
    for (found, mode) in cases {
        assert_eq!(start_mode(found), mode, "{found:?}");
    }
}

/// Records the marker writes a guard asks for, answering each with `ok`.
struct Registry {
    writes: RefCell<Vec<bool>>,
    ok: bool,
}

impl Registry {
    fn new(ok: bool) -> Self {
        Registry { writes: RefCell::new(Vec::new()), ok }
    }

    fn write(&self) -> impl FnOnce(bool) -> bool + '_ {
        |set| {
            self.writes.borrow_mut().push(set);
            self.ok
        }
    }
}

#[test]
fn the_marker_is_set_before_the_first_touch_and_cleared_after_its_clean_read() {
    let (guard, status, registry) = (BootGuard::new(), DriverStatus::new(), Registry::new(true));
    assert!(!guard.awaits_read(Source::CorePmu));
    guard.after_clean_read(Source::CorePmu, registry.write(), &status);
    assert!(registry.writes.borrow().is_empty(), "a read before any touch cleared a marker never set");
    assert!(guard.before_touch(Source::CorePmu, registry.write(), &status));
    assert_eq!(*registry.writes.borrow(), [true]);
    assert_eq!(guard_status(&status), HardwareGuard::Pending as u32);
    assert!(guard.awaits_read(Source::CorePmu));
    guard.after_clean_read(Source::CorePmu, registry.write(), &status);
    assert_eq!(*registry.writes.borrow(), [true, false]);
    assert_eq!(guard_status(&status), HardwareGuard::Clear as u32);
    assert!(!guard.awaits_read(Source::CorePmu));
    // Proven in this load: a later acquisition is no first touch, and writes nothing.
    assert!(guard.before_touch(Source::CorePmu, registry.write(), &status));
    guard.after_clean_read(Source::CorePmu, registry.write(), &status);
    assert_eq!(*registry.writes.borrow(), [true, false]);
}

#[test]
fn the_marker_stays_until_every_source_that_touched_read_cleanly() {
    let (guard, status, registry) = (BootGuard::new(), DriverStatus::new(), Registry::new(true));
    assert!(guard.before_touch(Source::CorePmu, registry.write(), &status));
    assert!(guard.before_touch(Source::MemoryController, registry.write(), &status));
    assert_eq!(*registry.writes.borrow(), [true], "one marker for both sources");
    guard.after_clean_read(Source::CorePmu, registry.write(), &status);
    assert_eq!(*registry.writes.borrow(), [true], "cleared while the memory controllers were unproven");
    assert_eq!(guard_status(&status), HardwareGuard::Pending as u32);
    guard.after_clean_read(Source::MemoryController, registry.write(), &status);
    assert_eq!(*registry.writes.borrow(), [true, false]);
    // A source first touched after the marker was cleared sets it again.
    let guard = BootGuard::new();
    let registry = Registry::new(true);
    assert!(guard.before_touch(Source::CorePmu, registry.write(), &status));
    guard.after_clean_read(Source::CorePmu, registry.write(), &status);
    assert!(guard.before_touch(Source::MemoryController, registry.write(), &status));
    assert_eq!(*registry.writes.borrow(), [true, false, true]);
}

#[test]
fn no_unguarded_touch_and_no_premature_clear_when_the_registry_refuses() {
    let (guard, status, refusing) = (BootGuard::new(), DriverStatus::new(), Registry::new(false));
    assert!(!guard.before_touch(Source::CorePmu, refusing.write(), &status), "touched without a marker");
    assert_eq!(guard_status(&status), HardwareGuard::MarkerNotWritten as u32);
    let working = Registry::new(true);
    assert!(guard.before_touch(Source::CorePmu, working.write(), &status), "not retried");
    guard.after_clean_read(Source::CorePmu, refusing.write(), &status);
    assert!(guard.awaits_read(Source::CorePmu), "a failed clear counted as done");
    assert_eq!(guard_status(&status), HardwareGuard::Pending as u32);
    guard.after_clean_read(Source::CorePmu, working.write(), &status);
    assert_eq!(*working.writes.borrow(), [true, false]);
}

#[test]
fn a_held_off_start_touches_nothing_and_writes_nothing() {
    let (guard, status, registry) = (BootGuard::new(), DriverStatus::new(), Registry::new(true));
    guard.hold_off();
    assert!(guard.held_off());
    for source in [Source::CorePmu, Source::MemoryController] {
        assert!(!guard.before_touch(source, registry.write(), &status));
        guard.after_clean_read(source, registry.write(), &status);
    }
    assert!(registry.writes.borrow().is_empty(), "a held-off start changed the marker");
}

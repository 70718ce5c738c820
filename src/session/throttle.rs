//! The bound on what consumers cost: a collect closer than the minimum interval to the last fresh
//! read is served from that read, without an all-processor call, so however many consumers collect
//! however often, the driver reads every processor at most once per interval. The interval is the
//! service's `Parameters\MinimumCollectIntervalMs` (REG_DWORD, 1 to 100 ms, default 10), read at
//! each acquisition; a missing value is the default, a bad one the default and logged. At most 100 ms,
//! so that no consumer sampling at a documented period (1 s and up), however its samples jitter, gets
//! two samples from one read: PDH would show that sample's ratios as 0 with a valid status. Why, and
//! the choice of 10 ms: docs/security.md.

use super::platform::Platform;
use crate::settings::{self, HEADER_UNITS, Rejection, Setting};
use crate::sync::{AtomicU64, Ordering};

/// The default minimum interval between two fresh reads, in milliseconds.
pub const DEFAULT_INTERVAL_MS: u32 = 10;
/// The range `MinimumCollectIntervalMs` may take: up to a tenth of the shortest sample interval of
/// perfmon and typeperf (1 s), so that two of their samples come from one read only if the second
/// comes 900 ms early.
pub const INTERVAL_RANGE_MS: core::ops::RangeInclusive<u32> = 1..=100;
const HUNDRED_NS_PER_MS: u64 = 10_000;

/// When the last fresh read began, and how far apart fresh reads must be. Lock-free: every collect
/// asks it, from any number of threads.
#[derive(Debug)]
pub struct Throttle {
    interval_100ns: AtomicU64,
    /// The clock reading (100 ns) the last fresh read was granted at; 0 before the first.
    last_fresh: AtomicU64,
}

impl Throttle {
    pub fn new() -> Self {
        Throttle {
            interval_100ns: AtomicU64::new(DEFAULT_INTERVAL_MS as u64 * HUNDRED_NS_PER_MS),
            last_fresh: AtomicU64::new(0),
        }
    }

    pub fn set_interval_ms(&self, milliseconds: u32) {
        self.interval_100ns.store(u64::from(milliseconds) * HUNDRED_NS_PER_MS, Ordering::Relaxed);
    }

    /// Whether a collect at `now` reads every processor afresh. Of the collects that find the
    /// interval passed, exactly one (the first to claim it) gets `true`; the others are served.
    #[inline(always)]
    pub fn fresh_due(&self, now: u64) -> bool {
        let interval = self.interval_100ns.load(Ordering::Relaxed);
        let last = self.last_fresh.load(Ordering::Acquire);
        // A reading older than the last grant (another thread read the clock earlier) is served.
        now.checked_sub(last).is_some_and(|since| since >= interval)
            && self.last_fresh.compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    }

    /// The fresh read granted at `granted` did not happen (no session was open): the next collect
    /// reads, rather than being served from a read that never was. A later grant stays.
    pub fn withdraw(&self, granted: u64) {
        let _ = self.last_fresh.compare_exchange(granted, 0, Ordering::AcqRel, Ordering::Relaxed);
    }
}

/// The minimum interval `MinimumCollectIntervalMs` sets, in milliseconds: the value, or why it was
/// rejected (then the caller uses [`DEFAULT_INTERVAL_MS`] and logs the reason). A missing value is
/// the default, not a rejection.
pub fn interval_from(setting: Setting<'_>) -> Result<u32, Rejection> {
    Ok(settings::dword(setting, INTERVAL_RANGE_MS)?.unwrap_or(DEFAULT_INTERVAL_MS))
}

/// The interval the service's Parameters key sets now, in milliseconds; a rejected value is logged
/// and the default used. PASSIVE_LEVEL.
pub fn read_interval_ms<P: Platform>(platform: &P) -> u32 {
    // Room for a DWORD and then some: anything longer is rejected as too long.
    let mut buffer = [0u16; HEADER_UNITS + 8];
    interval_from(platform.read_setting("MinimumCollectIntervalMs", &mut buffer)).unwrap_or_else(|why| {
        platform.log(format_args!(
            "Parameters\\MinimumCollectIntervalMs rejected ({why:?}): {DEFAULT_INTERVAL_MS} ms is used"
        ));
        DEFAULT_INTERVAL_MS
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::REG_DWORD;

    const MS: u64 = HUNDRED_NS_PER_MS;

    #[test]
    fn one_fresh_read_per_interval_the_rest_served() {
        let throttle = Throttle::new();
        assert!(throttle.fresh_due(1_000 * MS), "the first collect reads");
        assert!(!throttle.fresh_due(1_000 * MS), "a second at the same time is served");
        assert!(!throttle.fresh_due(1_009 * MS), "9 ms later: served");
        assert!(throttle.fresh_due(1_010 * MS), "10 ms later: fresh");
        assert!(!throttle.fresh_due(1_005 * MS), "an older clock reading is served");
        throttle.withdraw(1_010 * MS);
        assert!(throttle.fresh_due(1_011 * MS), "a withdrawn grant serves nobody");
        assert!(!throttle.fresh_due(1_011 * MS));
        throttle.withdraw(1_010 * MS);
        assert!(!throttle.fresh_due(1_011 * MS), "withdrawing an old grant leaves the later one");
        throttle.set_interval_ms(1);
        assert!(throttle.fresh_due(1_012 * MS));
    }

    #[test]
    fn concurrent_collects_get_one_fresh_read_per_interval() {
        let throttle = Throttle::new();
        let fresh = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|scope| {
            for thread in 0..8u64 {
                let (throttle, fresh) = (&throttle, &fresh);
                scope.spawn(move || {
                    for step in 0..10_000u64 {
                        if throttle.fresh_due(MS + step * MS / 4 + thread) {
                            fresh.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        // 2,500 ms of readings: at most one fresh read per 10 ms, plus the first.
        assert!(fresh.load(Ordering::Relaxed) <= 251, "{}", fresh.load(Ordering::Relaxed));
    }

    #[test]
    fn the_registry_value_falls_back_to_the_default_when_bad() {
        let dword = |value: u32| [value as u16, (value >> 16) as u16];
        let value = |kind, units: &[u16]| interval_from(Setting::Value { kind, units, odd: false });
        assert_eq!(interval_from(Setting::Missing), Ok(DEFAULT_INTERVAL_MS));
        assert_eq!(value(REG_DWORD, &dword(25)), Ok(25));
        assert_eq!(value(REG_DWORD, &dword(1)), Ok(1));
        assert_eq!(value(REG_DWORD, &dword(100)), Ok(100));
        assert_eq!(value(REG_DWORD, &dword(101)), Err(Rejection::OutOfRange));
        assert_eq!(value(REG_DWORD, &dword(1000)), Err(Rejection::OutOfRange), "the old upper bound");
        assert_eq!(value(REG_DWORD, &dword(0)), Err(Rejection::OutOfRange));
        assert_eq!(value(REG_DWORD, &dword(70_000)), Err(Rejection::OutOfRange));
        assert_eq!(value(1, &dword(10)), Err(Rejection::WrongType { kind: 1 }));
        assert_eq!(value(REG_DWORD, &[10]), Err(Rejection::Malformed));
        assert_eq!(interval_from(Setting::TooLong), Err(Rejection::TooLong));
        assert_eq!(interval_from(Setting::Failed(-1)), Err(Rejection::ReadFailed(-1)));
    }
}

#[cfg(all(test, loom))]
mod loom_tests;

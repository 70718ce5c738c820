//! The memory controller source's reads and its policy hooks: a collect's read (throttled as the
//! core counters' are), the poll on the housekeeping thread while mapped (32-bit layouts only), the
//! demand a query makes and the release after the same idle rules as the core PMU's.

use super::{Mapping, MemoryController};
use crate::imc::extend::POLL_PERIOD_100NS;
use crate::session::boot_guard::BootGuard;
use crate::session::platform::{CounterPage, Platform};
use crate::sync::Ordering;

impl<P: Platform> MemoryController<P> {
    /// Reads every mapped counter into its 64-bit count and publishes the blocks. The caller holds
    /// the mapping (read or write side) and is the only reader.
    pub(super) fn read_pages(&self, mapping: &Mapping<P>) {
        for (index, (page, layout)) in (0u8..).zip(&mapping.pages).filter_map(|(i, p)| Some((i, p.as_ref()?)))
        {
            self.each_counter(index, &layout.counters, |counter, extension, slot| {
                if let Some(raw) = page.load(slot) {
                    Self::extend(counter, extension, raw);
                }
            });
            self.publish(index, &layout.counters);
        }
    }

    /// Reads every controller, if the pages are mapped (and not being mapped or unmapped) and no
    /// other read is running: returns whether it did. Never waits.
    pub fn read_all(&self) -> bool {
        let Some(mapping) = self.mapping.try_read() else { return false };
        let Some(mapped) = mapping.as_ref() else { return false };
        if self.reading.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return false;
        }
        self.read_pages(mapped);
        self.reading.store(false, Ordering::Release);
        true
    }

    /// A query of the counterset is active (a collect, or an AddCounter when `retry_now`): map the
    /// pages if detection found them, nothing is mapped and an attempt is due; above PASSIVE_LEVEL
    /// the housekeeping thread maps them at once.
    fn demand(&self, platform: &P, guard: &BootGuard, retry_now: bool) {
        if !self.usable() || self.is_mapped() {
            return;
        }
        let now = platform.now_100ns();
        let failed = self.status_is_map_failed();
        if failed && !(retry_now || self.schedule.retry_due(now)) {
            return;
        }
        if platform.at_passive_level() {
            self.map(platform, guard);
        } else {
            self.schedule.defer_acquire();
            platform.wake_housekeeping();
        }
    }

    fn status_is_map_failed(&self) -> bool {
        self.status.memory_controller_state() == crate::imc::status::Status::MapFailed.value()
    }

    /// A collect of the Memory Controller counterset begins: activity, a demand, and a fresh read
    /// unless one was made within the minimum collect interval (then the blocks as it left them).
    pub fn refresh(&self, platform: &P, guard: &BootGuard) {
        let now = platform.now_100ns();
        self.schedule.collect_started(now);
        self.demand(platform, guard, false);
        if !self.throttle.fresh_due(now) {
            return;
        }
        if self.read_all() {
            self.schedule.read_at(now);
        } else {
            self.throttle.withdraw(now);
        }
    }

    /// The collect that [`Self::refresh`] began has handed every instance to PCW.
    pub fn collect_done(&self, platform: &P) {
        self.schedule.collect_ended(platform.now_100ns());
    }

    /// A consumer added counters of the counterset.
    pub fn query_added(&self, platform: &P, guard: &BootGuard) {
        self.schedule.active(platform.now_100ns());
        self.demand(platform, guard, true);
    }

    /// The housekeeping thread's next wake-up for this source, in 100 ns from now: at once for a
    /// deferred mapping; while mapped, for the release and (32-bit layouts) the poll; else `None`.
    pub fn next_tick(&self, platform: &P) -> Option<u64> {
        if self.schedule.acquire_deferred() {
            return Some(0);
        }
        if !self.is_mapped() {
            return None;
        }
        let now = platform.now_100ns();
        let until_release = self.schedule.until_release(now).max(1);
        if self.polled() {
            let until_poll = self.schedule.until_read(now, POLL_PERIOD_100NS as u64).max(1);
            return Some(until_release.min(until_poll));
        }
        Some(until_release)
    }

    /// The housekeeping thread's work for this source at PASSIVE_LEVEL: a deferred mapping, the poll
    /// when due (32-bit layouts), the release once the activity stopped.
    pub fn tick(&self, platform: &P, guard: &BootGuard) {
        if self.schedule.take_deferred() && !self.is_mapped() {
            self.map(platform, guard);
        }
        let now = platform.now_100ns();
        if self.polled() && self.schedule.until_read(now, POLL_PERIOD_100NS as u64) == 0 && self.read_all() {
            self.schedule.read_at(now);
        }
        let idle = || self.schedule.until_release(platform.now_100ns()) == 0;
        if self.is_mapped() && idle() {
            self.release_if(platform, idle);
        }
    }
}

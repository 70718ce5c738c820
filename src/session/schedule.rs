//! When to own the counters: on activity, released after it stops, busy PMUs retried at a bounded
//! rate. Times are in 100 ns units from the platform's monotonic clock.

use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// How long the counters stay owned with no query activity (CollectData or AddCounter), at least
/// (2 s): a consumer that restarts its query (perfmon changing views, typeperf in a loop) does not
/// make the driver give the PMU up and take it back.
pub const RELEASE_HYSTERESIS_100NS: u64 = 20_000_000;
/// A consumer that collects every N seconds keeps the counters for 3 N without a collect (at least
/// the hysteresis, at most [`MAX_IDLE_100NS`]), so that an agent sampling every 15 or 60 s sees real
/// counts, not a PMU taken back at each sample.
pub const IDLE_INTERVALS: u64 = 3;
/// The longest the counters stay owned without a collect: 15 minutes, half again the longest sample
/// interval a consumer is expected to use (10 minutes), so that such a consumer's next collect always
/// comes before the release instead of racing it (and finding the counters given up a moment ago).
pub const MAX_IDLE_100NS: u64 = 9_000_000_000;
/// How often a busy or failed PMU is asked for again, at most (1 s), on the next query activity.
pub const RETRY_100NS: u64 = 10_000_000;

/// The activity record the decisions are made from. Lock-free: collects update it concurrently.
#[derive(Debug, Default)]
pub struct Schedule {
    /// The last CollectData or AddCounter. PCW promises no pairing of AddCounter and RemoveCounter,
    /// and registry consumers (HKEY_PERFORMANCE_DATA, WMI's raw classes) only collect, so activity,
    /// not a query count, keeps the counters owned.
    last_activity: AtomicU64,
    /// The last collect, and the interval before it.
    last_collect: AtomicU64,
    collect_interval: AtomicU64,
    /// The last acquisition attempt (rate-limits retries).
    last_attempt: AtomicU64,
    /// An acquisition handed to the housekeeping thread (activity above PASSIVE_LEVEL).
    deferred_acquire: AtomicBool,
    /// Collects running now: activity for as long as they last, however long that is (many
    /// processors, a slow hypervisor).
    collecting: AtomicU32,
    /// The last read of every processor (a collect's fresh read or the housekeeping thread's).
    last_read: AtomicU64,
    /// An idle limit that does not follow the collect interval (0: it does).
    fixed_idle_limit: u64,
}

impl Schedule {
    pub fn new() -> Self {
        Schedule {
            last_activity: AtomicU64::new(0),
            last_collect: AtomicU64::new(0),
            collect_interval: AtomicU64::new(0),
            last_attempt: AtomicU64::new(0),
            deferred_acquire: AtomicBool::new(false),
            collecting: AtomicU32::new(0),
            last_read: AtomicU64::new(0),
            fixed_idle_limit: 0,
        }
    }

    /// A schedule whose counters stay owned `idle_limit` after the last activity, whatever the
    /// collect interval: for a source that holds nothing another user may want (a memory
    /// controller's read-only mapping), where giving it up early only loses counts.
    pub fn keeping_for(idle_limit: u64) -> Self {
        Schedule { fixed_idle_limit: idle_limit, ..Schedule::new() }
    }

    /// A collect starts at `now`: activity until [`Schedule::collect_ended`], and one more interval
    /// sample.
    pub fn collect_started(&self, now: u64) {
        self.collecting.fetch_add(1, Ordering::AcqRel);
        let previous = self.last_collect.swap(now, Ordering::AcqRel);
        if previous != 0 {
            self.collect_interval.store(now.saturating_sub(previous), Ordering::Release);
        }
        self.active(now);
    }

    /// The collect that started last (or another one) ended at `now`.
    pub fn collect_ended(&self, now: u64) {
        self.active(now);
        self.collecting.fetch_sub(1, Ordering::AcqRel);
    }

    /// Query activity (a collect or an AddCounter) at `now`.
    pub fn active(&self, now: u64) {
        self.last_activity.fetch_max(now, Ordering::AcqRel);
    }

    /// An acquisition attempt starts at `now`.
    pub fn attempted(&self, now: u64) {
        self.last_attempt.store(now, Ordering::Release);
    }

    /// Whether a PMU found busy or failed may be asked for again at `now`.
    pub fn retry_due(&self, now: u64) -> bool {
        now.saturating_sub(self.last_attempt.load(Ordering::Acquire)) >= RETRY_100NS
    }

    /// How long the counters stay owned without activity: [`IDLE_INTERVALS`] collect intervals,
    /// within [`RELEASE_HYSTERESIS_100NS`]..=[`MAX_IDLE_100NS`].
    pub fn idle_limit(&self) -> u64 {
        if self.fixed_idle_limit != 0 {
            return self.fixed_idle_limit;
        }
        let interval = self.collect_interval.load(Ordering::Acquire);
        interval.saturating_mul(IDLE_INTERVALS).clamp(RELEASE_HYSTERESIS_100NS, MAX_IDLE_100NS)
    }

    /// How long until the counters are due for release at `now` (0: due); never while a collect runs.
    pub fn until_release(&self, now: u64) -> u64 {
        if self.collecting.load(Ordering::Acquire) > 0 {
            return self.idle_limit();
        }
        let idle = now.saturating_sub(self.last_activity.load(Ordering::Acquire));
        self.idle_limit().saturating_sub(idle)
    }

    /// Every processor was read at `now`.
    pub fn read_at(&self, now: u64) {
        self.last_read.fetch_max(now, Ordering::AcqRel);
    }

    /// How long until `gap` has passed at `now` since the last read (0: it has, or no read yet).
    pub fn until_read(&self, now: u64, gap: u64) -> u64 {
        match self.last_read.load(Ordering::Acquire) {
            0 => 0,
            last => gap.saturating_sub(now.saturating_sub(last)),
        }
    }

    /// Hands an acquisition to the housekeeping thread.
    pub fn defer_acquire(&self) {
        self.deferred_acquire.store(true, Ordering::Release);
    }

    pub fn acquire_deferred(&self) -> bool {
        self.deferred_acquire.load(Ordering::Acquire)
    }

    /// Takes the deferred acquisition, if one was handed over.
    pub fn take_deferred(&self) -> bool {
        self.deferred_acquire.swap(false, Ordering::AcqRel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 10_000_000;

    impl Schedule {
        /// A collect that starts and ends at `now`.
        fn collected_at(&self, now: u64) {
            self.collect_started(now);
            self.collect_ended(now);
        }
    }

    #[test]
    fn a_running_collect_is_activity_however_long_it_takes() {
        let schedule = Schedule::new();
        schedule.collect_started(10 * S);
        assert_eq!(schedule.until_release(100 * S), RELEASE_HYSTERESIS_100NS);
        schedule.collect_ended(100 * S);
        assert_eq!(schedule.until_release(101 * S), S);
    }

    #[test]
    fn the_idle_limit_follows_the_collect_interval_within_bounds() {
        let schedule = Schedule::new();
        assert_eq!(schedule.idle_limit(), RELEASE_HYSTERESIS_100NS, "no interval yet");
        schedule.collected_at(100 * S);
        schedule.collected_at(100 * S + S / 2);
        assert_eq!(schedule.idle_limit(), RELEASE_HYSTERESIS_100NS, "3 x 0.5 s is below the hysteresis");
        schedule.collected_at(101 * S);
        schedule.collected_at(116 * S);
        assert_eq!(schedule.idle_limit(), 45 * S, "a 15 s agent keeps the counters 45 s");
        schedule.collected_at(3716 * S);
        assert_eq!(schedule.idle_limit(), MAX_IDLE_100NS, "at most 15 minutes");
    }

    #[test]
    fn a_ten_minute_consumer_collects_before_the_release() {
        let schedule = Schedule::new();
        schedule.collected_at(S);
        schedule.collected_at(601 * S);
        assert!(schedule.until_release(1201 * S) > 0, "released at the next 10-minute collect");
        let keeping = Schedule::keeping_for(MAX_IDLE_100NS);
        keeping.collected_at(S);
        assert_eq!(keeping.idle_limit(), MAX_IDLE_100NS, "no interval known: the fixed limit all the same");
        assert_eq!(keeping.until_release(601 * S), MAX_IDLE_100NS - 600 * S);
    }

    #[test]
    fn release_is_due_after_the_idle_limit_from_the_last_activity() {
        let schedule = Schedule::new();
        schedule.collected_at(10 * S);
        assert_eq!(schedule.until_release(10 * S), 2 * S);
        assert_eq!(schedule.until_release(11 * S), S);
        schedule.active(11 * S);
        assert_eq!(schedule.until_release(12 * S), S, "an AddCounter is activity too");
        assert_eq!(schedule.until_release(20 * S), 0);
        // A late, older timestamp from a concurrent collect does not move activity back.
        schedule.active(5 * S);
        assert_eq!(schedule.until_release(12 * S), S);
    }

    #[test]
    fn a_read_is_due_a_gap_after_the_last_one() {
        let schedule = Schedule::new();
        assert_eq!(schedule.until_read(5 * S, 60 * S), 0, "no read yet");
        schedule.read_at(10 * S);
        assert_eq!(schedule.until_read(30 * S, 60 * S), 40 * S);
        schedule.read_at(8 * S);
        assert_eq!(schedule.until_read(30 * S, 60 * S), 40 * S, "an older read does not move it back");
        assert_eq!(schedule.until_read(70 * S, 60 * S), 0);
    }

    #[test]
    fn retries_are_at_most_one_a_second() {
        let schedule = Schedule::new();
        schedule.attempted(50 * S);
        assert!(!schedule.retry_due(50 * S + S / 2));
        assert!(schedule.retry_due(51 * S));
    }

    #[test]
    fn a_deferred_acquisition_is_taken_once() {
        let schedule = Schedule::new();
        assert!(!schedule.acquire_deferred());
        schedule.defer_acquire();
        assert!(schedule.acquire_deferred());
        assert!(schedule.take_deferred());
        assert!(!schedule.take_deferred());
    }
}

#[cfg(all(test, loom))]
mod loom_tests;

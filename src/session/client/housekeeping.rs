//! The housekeeping thread's side of the client: when it wakes next and what it does then (a
//! deferred acquisition, a poll of counters without an overflow interrupt, a read that bounds the
//! gap between two reads of IA32_PERF_METRICS, a release after the activity stops).

use super::{Check, Platform, PmuClient};
use crate::pmu::poll::{DEFAULT_SAFETY, MAX_EVENT_HZ, poll_period_100ns};
use crate::pmu::topdown::MAX_READ_GAP_100NS;
use crate::session::core_pmu::core_type_session::CoreTypeSession;
use crate::session::core_pmu::read::{Reading, TopdownReading};

impl<P: Platform> PmuClient<P> {
    /// The housekeeping thread's next wake-up, in 100 ns from now, for either source; `None` sleeps
    /// until woken.
    pub fn next_tick(&self) -> Option<u64> {
        let memory = self.memory.next_tick(&self.platform);
        match (self.pmu_next_tick(), memory) {
            (Some(pmu), Some(memory)) => Some(pmu.min(memory)),
            (pmu, memory) => pmu.or(memory),
        }
    }

    /// The core PMU's next wake-up.
    fn pmu_next_tick(&self) -> Option<u64> {
        let model = self.model()?;
        // An acquisition handed over from above PASSIVE_LEVEL starts at once.
        if self.schedule.acquire_deferred() {
            return Some(0);
        }
        // Nothing owned: sleep until woken (cheap when nobody is watching).
        let narrowest = self.narrowest()?;
        // Wake for the release; when polling, also often enough that no counter wraps twice between
        // two polls; with IA32_PERF_METRICS, when MAX_READ_GAP_100NS has passed since the last read
        // (crate::pmu::topdown).
        let now = self.platform.now_100ns();
        let until_release = self.schedule.until_release(now).max(1);
        let until_read = if self.reads_perf_metrics() {
            self.schedule.until_read(now, MAX_READ_GAP_100NS).max(1)
        } else {
            u64::MAX
        };
        if self.polling() {
            let width = if narrowest == u8::MAX { model.gp_width } else { narrowest };
            let poll = poll_period_100ns(width, MAX_EVENT_HZ, DEFAULT_SAFETY).max(1) as u64;
            return Some(poll.min(until_release).min(until_read));
        }
        Some(until_release.min(until_read))
    }

    /// The housekeeping thread's work at PASSIVE_LEVEL: a deferred acquisition, a poll (or, when no
    /// read has taken IA32_PERF_METRICS and fixed counter 3 for MAX_READ_GAP_100NS, a read), a release.
    pub fn tick(&self) {
        self.memory.tick(&self.platform, &self.guard);
        if self.schedule.take_deferred() && !self.is_open() {
            self.acquire();
        }
        let now = self.platform.now_100ns();
        let gap_due = || self.reads_perf_metrics() && self.schedule.until_read(now, MAX_READ_GAP_100NS) == 0;
        if (self.polling() || gap_due()) && self.read_all(Check::OneInTurn) {
            self.schedule.read_at(now);
        }
        let idle = || self.schedule.until_release(self.platform.now_100ns()) == 0;
        if self.is_open() && idle() {
            self.release_if(idle);
        }
    }

    /// Whether a core type of the open session has no overflow handler: its counters are polled.
    pub(super) fn polling(&self) -> bool {
        self.any_core_type(|core_type| core_type.reading == Reading::Polled)
    }

    /// Whether a core type of the open session takes top-down from IA32_PERF_METRICS.
    fn reads_perf_metrics(&self) -> bool {
        self.any_core_type(|core_type| core_type.topdown == TopdownReading::PerfMetrics)
    }

    fn any_core_type(&self, test: impl Fn(&CoreTypeSession) -> bool) -> bool {
        self.session
            .try_read()
            .is_some_and(|session| session.open().is_some_and(|(open, _)| open.each().any(&test)))
    }

    /// The narrowest counter of the open session's plans, if a session is open.
    fn narrowest(&self) -> Option<u8> {
        self.session.try_read().and_then(|session| {
            session.open().map(|(session, _)| {
                session
                    .each()
                    .flat_map(|core_type| core_type.plan.iter())
                    .map(|a| a.width)
                    .min()
                    .unwrap_or(u8::MAX)
            })
        })
    }
}

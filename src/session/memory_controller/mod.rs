//! The memory controller source's mechanics: what detection found at DriverEntry, the mapping of one
//! counter page per controller as this source's ownership (made on its own demand, a query of the
//! Memory Controller counterset; unmapped at release), and the read of every controller's counters,
//! extended to 64 bits (`crate::pmu::extend::advance`, polled every `imc::extend::POLL_PERIOD_100NS`
//! for a 32-bit layout) into the blocks the collect callback hands out. The policy that drives it
//! (demand, throttle, idle release, the housekeeping thread) is the client's
//! (`docs/memory-controller.md`).

use super::boot_guard::{BootGuard, Source};
use super::platform::{CounterPage, Platform};
use super::schedule::{MAX_IDLE_100NS, Schedule};
use super::throttle::{Throttle, read_interval_ms};
use crate::counters::memory_controller::{AtomicValues, Values};
use crate::imc::detect::Found;
use crate::imc::models::{
    BYTES_PER_COUNT, ControllerPage, CounterKind, MAX_CONTROLLERS, MAX_COUNTERS, PageCounter,
};
use crate::imc::status::Status;
use crate::pcw::driver_status::DriverStatus;
use crate::pmu::extend::advance;
use crate::sync::unmodelled;
use crate::sync::{AtomicBool, AtomicU64, Ordering, SessionLock};

mod read;

/// One counter's extension: its last raw value and its 64-bit count since the driver loaded (loom's
/// atomics under `--cfg loom`, so the model of the poll racing a collect sees every interleaving of
/// two extensions, as the single reader's flag must prevent).
#[derive(Default)]
struct Extension {
    last_raw: AtomicU64,
    total: AtomicU64,
}

/// The pages mapped, one per controller of the layout.
struct Mapping<P: Platform> {
    pages: [Option<(P::CounterPage, ControllerPage)>; MAX_CONTROLLERS],
}

/// The source: detection's answer, the mapping while a query is active, the extended counts and the
/// blocks published from them.
pub struct MemoryController<P: Platform> {
    detected: Result<Found, Status>,
    mapping: SessionLock<Option<Mapping<P>>>,
    extensions: [[Extension; MAX_COUNTERS]; MAX_CONTROLLERS],
    published: [AtomicValues; MAX_CONTROLLERS],
    /// A read in progress (a collect's or the poll's): another reader is served what it stores.
    reading: AtomicBool,
    /// Whether a mapping has been made before: a 64-bit counter's last raw value is then a real
    /// reading, and what it counted while unmapped is counted at the next mapping.
    mapped_before: AtomicBool,
    /// This source's own activity record and read throttle: its demand is its own counterset's.
    pub(super) schedule: Schedule,
    pub(super) throttle: Throttle,
    status: &'static DriverStatus,
}

impl<P: Platform> MemoryController<P> {
    /// The source as detection left it: `detected` is the model and MCHBAR, or why nothing may be
    /// mapped (published at once in the status counter). Nothing is mapped.
    pub fn new(detected: Result<Found, Status>, status: &'static DriverStatus) -> Self {
        status.set_memory_controller_state(match detected {
            Ok(_) => Status::Idle,
            Err(why) => why,
        });
        MemoryController {
            detected,
            mapping: SessionLock::new(None),
            extensions: Default::default(),
            published: [const { AtomicValues::new() }; MAX_CONTROLLERS],
            reading: AtomicBool::new(false),
            // A read-only mapping holds nothing another reader needs, so a slow consumer's first
            // interval (before its collect interval is known) is not cut at the core counters' 2 s.
            schedule: Schedule::keeping_for(MAX_IDLE_100NS),
            throttle: Throttle::new(),
            mapped_before: AtomicBool::new(false),
            status,
        }
    }

    /// The controllers detection found: their count (0 where nothing may be mapped).
    pub fn controllers(&self) -> u8 {
        self.detected.map_or(0, |found| found.model.layout.controllers)
    }

    /// Whether detection found a memory controller to map.
    pub fn usable(&self) -> bool {
        self.detected.is_ok()
    }

    /// Whether the layout's counters are 32 bits wide and need the poll.
    pub fn polled(&self) -> bool {
        self.detected.is_ok_and(|found| !found.model.layout.all_64_bit())
    }

    /// Whether the pages are mapped (a read of the lock that does not wait).
    pub fn is_mapped(&self) -> bool {
        self.mapping.try_read().is_some_and(|mapping| mapping.is_some())
    }

    /// Controller `index`'s block as of the last read: byte totals and request counts.
    pub fn values(&self, index: usize) -> Values {
        let Some(block) = self.published.get(index) else { return Values::default() };
        let load = |cell: &unmodelled::AtomicU64| cell.load(Ordering::Relaxed);
        Values {
            read_bytes: load(&block.read_bytes),
            write_bytes: load(&block.write_bytes),
            total_bytes: load(&block.total_bytes),
            gt_requests: load(&block.gt_requests),
            ia_requests: load(&block.ia_requests),
            io_requests: load(&block.io_requests),
        }
    }

    /// Maps every controller's page, if detection found them and nothing is mapped. The counters ran
    /// on while unmapped: a 64-bit counter's reading now is folded in as any read's (it cannot have
    /// wrapped), while a 32-bit counter's first reading is the base of this mapping, as it may have
    /// wrapped unseen (the totals carry on from the last mapping). On a failed mapping, nothing stays
    /// mapped and the status says so. The first mapping of a load is guarded (`guard`): the marker is
    /// set before it, and cleared once every controller's counters were read through it. PASSIVE_LEVEL.
    pub fn map(&self, platform: &P, guard: &BootGuard) {
        let Ok(found) = self.detected else { return };
        if !guard.before_touch(Source::MemoryController, |set| platform.write_guard_marker(set), self.status)
        {
            platform.log(format_args!(
                "Parameters\\HardwareGuard not written: the memory controllers stay unmapped"
            ));
            return;
        }
        // The core counters' minimum collect interval, read as they read it (before the lock: a
        // registry read may wait).
        self.throttle.set_interval_ms(read_interval_ms(platform));
        let mut mapping = self.mapping.write();
        if mapping.is_some() {
            return;
        }
        self.schedule.attempted(platform.now_100ns());
        let mut pages: [Option<(P::CounterPage, ControllerPage)>; MAX_CONTROLLERS] =
            [const { None }; MAX_CONTROLLERS];
        for (index, slot) in (0..found.model.layout.controllers).zip(pages.iter_mut()) {
            let page = found.page(index).and_then(|page| Some((platform.map_counter_page(&page)?, page)));
            let Some((mapped, page)) = page else {
                // The pages mapped so far are unmapped as `pages` drops.
                self.status.set_memory_controller_state(Status::MapFailed);
                platform.log(format_args!("MmMapIoSpaceEx refused memory controller {index}'s page"));
                return;
            };
            let carried = self.mapped_before.load(Ordering::Relaxed);
            self.each_counter(index, &page.counters, |counter, extension, slot| {
                let raw = mapped.load(slot).unwrap_or(0);
                if carried && counter.width == 64 {
                    Self::extend(counter, extension, raw);
                } else {
                    extension.last_raw.store(raw, Ordering::Relaxed);
                }
            });
            *slot = Some((mapped, page));
        }
        *mapping = Some(Mapping { pages });
        self.mapped_before.store(true, Ordering::Relaxed);
        drop(mapping);
        guard.after_clean_read(Source::MemoryController, |set| platform.write_guard_marker(set), self.status);
        self.schedule.read_at(platform.now_100ns());
        self.status.set_memory_controller_state(Status::Counting);
        platform.log(format_args!("memory controller counters mapped: {}", found.model.name));
        platform.wake_housekeeping();
    }

    /// Reads the counters a last time and unmaps every page, if `still_due` holds once no read holds
    /// the mapping. PASSIVE_LEVEL.
    pub fn release_if(&self, platform: &P, still_due: impl Fn() -> bool) {
        let mut mapping = self.mapping.write();
        if !still_due() {
            return;
        }
        let Some(mapped) = mapping.take() else { return };
        self.read_pages(&mapped);
        drop(mapped);
        drop(mapping);
        self.status.set_memory_controller_state(Status::Idle);
        platform.log(format_args!("memory controller counters unmapped"));
    }

    /// Runs `work` on each listed counter of controller `index`: the counter, its extension, its
    /// index in the page's list.
    fn each_counter(
        &self,
        index: u8,
        counters: &[Option<PageCounter>; MAX_COUNTERS],
        mut work: impl FnMut(&PageCounter, &Extension, usize),
    ) {
        let Some(extensions) = self.extensions.get(usize::from(index)) else { return };
        for (slot, (counter, extension)) in counters.iter().zip(extensions).enumerate() {
            if let Some(counter) = counter {
                work(counter, extension, slot);
            }
        }
    }

    /// Publishes controller `index`'s totals: bytes for the data counters (x 64), counts for the
    /// request counters.
    fn publish(&self, index: u8, counters: &[Option<PageCounter>; MAX_COUNTERS]) {
        let Some(block) = self.published.get(usize::from(index)) else { return };
        let (mut reads, mut writes) = (0u64, 0u64);
        self.each_counter(index, counters, |counter, extension, _| {
            let total = extension.total.load(Ordering::Relaxed);
            let (cell, value) = match counter.kind {
                CounterKind::DataReads => {
                    reads = total.wrapping_mul(BYTES_PER_COUNT);
                    (&block.read_bytes, reads)
                }
                CounterKind::DataWrites => {
                    writes = total.wrapping_mul(BYTES_PER_COUNT);
                    (&block.write_bytes, writes)
                }
                CounterKind::GtRequests => (&block.gt_requests, total),
                CounterKind::IaRequests => (&block.ia_requests, total),
                CounterKind::IoRequests => (&block.io_requests, total),
            };
            cell.store(value, Ordering::Relaxed);
        });
        block.total_bytes.store(reads.wrapping_add(writes), Ordering::Relaxed);
    }

    /// One counter's new raw value folded into its 64-bit count.
    fn extend(counter: &PageCounter, extension: &Extension, raw: u64) {
        let last = extension.last_raw.swap(raw, Ordering::Relaxed);
        let total = extension.total.load(Ordering::Relaxed);
        extension.total.store(total.wrapping_add(advance(last, raw, counter.width)), Ordering::Relaxed);
    }
}

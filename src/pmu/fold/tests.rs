//! Host tests of the fold and of the read protocol, with scripted "hardware" closures that wrap the
//! counter and run the overflow interrupt at chosen points of a read (every placement is tried).

use super::*;
use crate::pmu::extend::counter_mask;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// GP counters 0..3 and fixed counters 0..2, the usual Intel session: counters (overflow ranks) 0..3 and 4..6.
const INTEL_OWNED: u64 = 0b1111 | (0b111 << 32);

fn owned(bits: u64) -> OwnedMask {
    OwnedMask::new(bits).unwrap()
}

/// A 48-bit counter on status bit `bit`.
fn at(owned: OwnedMask, bit: u8) -> Placement {
    Placement::new(owned, bit, 48).expect("an owned bit")
}

#[test]
fn owned_mask_ranks_count_the_owned_bits_below() {
    let mask = owned(INTEL_OWNED);
    assert_eq!(mask.rank_of(0), Some(0));
    assert_eq!(mask.rank_of(3), Some(3));
    assert_eq!(mask.rank_of(32), Some(4));
    assert_eq!(mask.rank_of(34), Some(6));
    assert_eq!(mask.rank_of(4), None);
    assert_eq!(mask.rank_of(35), None);
    assert_eq!(mask.rank_of(63), None);
    assert_eq!(mask.rank_of(64), None);
    assert_eq!(mask.rank_of(255), None);
    assert_eq!(owned(1 << 63).rank_of(63), Some(0));
    // Every counter a plan can use (8 general-purpose, fixed 0-2) and fixed counter 3: 12 ranks.
    let full = owned(0xFF | (0xF << 32));
    let bits = (0..8).chain(32..36);
    assert_eq!(
        bits.map(|bit| full.rank_of(bit).unwrap()).collect::<Vec<_>>(),
        (0..COUNTERS).collect::<Vec<_>>()
    );
    assert_eq!(OwnedMask::new(0x1FFF), None);
    assert_eq!(OwnedMask::new(u64::MAX), None);
    assert_eq!(OwnedMask::EMPTY.rank_of(0), None);
}

#[test]
fn fold_counts_owned_bits_and_ignores_the_rest() {
    let counters = ProcessorCounters::new();
    let mask = owned(INTEL_OWNED);
    // Fixed counter 1 (bit 33, rank 5) plus bits the driver does not own: GP 5, the uncore (61),
    // OvfBuf (62) and CondChgd (63) bits of IA32_PERF_GLOBAL_STATUS.
    counters.fold((1 << 33) | (1 << 5) | (0b111 << 61), mask);
    let by_rank: Vec<u64> = (0..8).map(|rank| counters.overflows(rank).unwrap()).collect();
    assert_eq!(by_rank, [0, 0, 0, 0, 0, 1, 0, 0]);
    assert_eq!(counters.overflow_interrupts(), 1);
    // Every owned bit at once, then an interrupt with nothing owned (still counted).
    counters.fold(u64::MAX, mask);
    counters.fold(1 << 40, mask);
    let by_rank: Vec<u64> = (0..8).map(|rank| counters.overflows(rank).unwrap()).collect();
    assert_eq!(by_rank, [1, 1, 1, 1, 1, 2, 1, 0]);
    assert_eq!(counters.overflow_interrupts(), 3);
    assert_eq!(counters.overflows(TABLE), None);
    // An empty mask ignores everything.
    counters.fold(u64::MAX, OwnedMask::EMPTY);
    assert_eq!(counters.overflows(5), Some(2));
}

#[test]
fn memory_per_processor() {
    // docs/pmu.md's figure: 16 overflow counts, the invocation count, 12 bases and 12 reported values.
    assert_eq!(core::mem::size_of::<ProcessorCounters>(), 328);
}

/// Something the scripted hardware does at a point of a read.
#[derive(Clone, Copy, Debug)]
enum Event {
    /// The counter counts this many events (wrapping at most once, which sets its status bit).
    Count(u64),
    /// The overflow interrupt: if the status bit is set the HAL calls the handler with it, then
    /// clears it. Only between reads: a read holds interrupts off.
    Pmi,
}

/// Points of a read: before the counter read, between it and the status read, between the status
/// read and a second counter read.
const BEFORE_RAW: usize = 0;
const BEFORE_STATUS: usize = 1;
const BEFORE_REREAD: usize = 2;

/// One processor's counter and its status bit, scripted: `script` lists events to run at each point
/// of a read.
struct Machine<'a> {
    counters: &'a ProcessorCounters,
    owned: OwnedMask,
    bit: u8,
    width: u8,
    count: Cell<u64>,
    status: Cell<bool>,
    script: Vec<(usize, Event)>,
    count_at_raw_read: Cell<u64>,
}

impl<'a> Machine<'a> {
    /// A counter that has counted `count` events, with every wrap among them delivered.
    fn new(counters: &'a ProcessorCounters, bit: u8, width: u8, count: u64) -> Self {
        for _ in 0..count >> width {
            counters.fold(1 << bit, owned(INTEL_OWNED));
        }
        Machine {
            counters,
            owned: owned(INTEL_OWNED),
            bit,
            width,
            count: Cell::new(count),
            status: Cell::new(false),
            script: Vec::new(),
            count_at_raw_read: Cell::new(u64::MAX),
        }
    }

    fn run(&self, event: Event) {
        match event {
            Event::Count(events) => {
                let before = self.count.get();
                let after = before + events;
                let wraps = (after >> self.width) - (before >> self.width);
                assert!(
                    wraps <= 1 && !(wraps == 1 && self.status.get()),
                    "the model allows one pending wrap"
                );
                if wraps == 1 {
                    self.status.set(true);
                }
                self.count.set(after);
            }
            Event::Pmi => {
                if self.status.get() {
                    // The HAL passes every set status bit (here with an unowned one), then clears.
                    self.counters.fold((1 << self.bit) | (1 << 62), self.owned);
                    self.status.set(false);
                }
            }
        }
    }

    fn point(&self, point: usize) {
        for &(at, event) in &self.script {
            if at == point {
                assert!(matches!(event, Event::Count(_)) || point == BEFORE_RAW, "no PMI inside a read");
                self.run(event);
            }
        }
    }

    fn placement(&self) -> Placement {
        Placement::new(self.owned, self.bit, self.width).expect("an owned bit")
    }

    /// One read of logical counter 0 with interrupts held off: the counter, then the status register
    /// (other bits of which change all the time; only ours matters), then the counter again if asked.
    fn read(&self) -> u64 {
        self.point(BEFORE_RAW);
        let raw = self.count.get() & counter_mask(self.width);
        self.count_at_raw_read.set(self.count.get());
        self.point(BEFORE_STATUS);
        let status = if self.status.get() { 1 << self.bit } else { 0 } | 1 << 62;
        let read_again = || {
            self.point(BEFORE_REREAD);
            self.count_at_raw_read.set(self.count.get());
            self.count.get() & counter_mask(self.width)
        };
        self.counters.report_held(0, self.placement(), raw, status, read_again).unwrap()
    }

    /// Delivers whatever is pending, then checks that a quiet read is the true count.
    fn settle_and_check(&mut self) {
        self.script.clear();
        self.run(Event::Pmi);
        assert_eq!(self.read(), self.count.get());
    }
}

#[test]
fn a_quiet_read_is_exact() {
    let counters = ProcessorCounters::new();
    let machine = Machine::new(&counters, 33, 48, 12_345);
    assert_eq!(machine.read(), 12_345);
    let mut pending = Machine::new(&counters, 33, 48, (1 << 48) - 1);
    pending.run(Event::Count(3));
    // Wrapped, interrupt not yet delivered (held off): the pending bit counts the wrap.
    let counters = ProcessorCounters::new();
    pending.counters = &counters;
    assert_eq!(pending.read(), (1 << 48) + 2);
    pending.settle_and_check();
}

#[test]
fn a_wrap_between_the_counter_and_the_status_read_is_read_again() {
    let counters = ProcessorCounters::new();
    let mut machine = Machine::new(&counters, 33, 48, (1 << 48) - 3);
    // The counter is read 3 below its wrap, then wraps before the status read: the status bit is
    // set, so the counter is read again, after the wrap, and the wrap counts.
    machine.script = vec![(BEFORE_STATUS, Event::Count(5)), (BEFORE_REREAD, Event::Count(1))];
    assert_eq!(machine.read(), (1 << 48) + 3);
    machine.settle_and_check();
}

#[test]
fn any_amount_of_counting_inside_a_read_is_exact() {
    // Unlike a test on the raw value's magnitude, the second read needs no bound on how far the
    // counter moves within a read: here 99% of its range between the two counter reads.
    for start in [1u64 << 20, (1 << 47) + 5, (1 << 48) - 2] {
        let counters = ProcessorCounters::new();
        let mut machine = Machine::new(&counters, 1, 48, start);
        let big = (1u64 << 48) / 100 * 99;
        machine.script = vec![(BEFORE_STATUS, Event::Count(big))];
        let value = machine.read();
        assert_eq!(value, machine.count_at_raw_read.get(), "start {start}");
        machine.settle_and_check();
    }
}

/// Every placement of a wrap around a read (before the counter read, between it and the status
/// read), with its interrupt delivered before the read or after it, from starts "long before the
/// wrap" to "wrapped, interrupt pending", for 48- and 40-bit counters: the value is the exact count
/// at the counter read, and a read after the interrupt agrees.
#[test]
fn every_placement_of_a_wrap_reads_exactly() {
    let mut cases = 0;
    for width in [48u8, 40] {
        for start in [(1u64 << width) - 4, (1 << width) - 1, 5 << width, 7] {
            for pending_at_start in [false, true] {
                for wrap_at in [BEFORE_RAW, BEFORE_STATUS, BEFORE_REREAD, usize::MAX] {
                    for pmi_first in [false, true] {
                        for extra_at in [usize::MAX, BEFORE_RAW, BEFORE_STATUS, BEFORE_REREAD] {
                            let counters = ProcessorCounters::new();
                            let mut machine = Machine::new(&counters, 2, width, start);
                            if pending_at_start {
                                machine.run(Event::Count((1 << width) - (start & counter_mask(width))));
                            } else {
                                machine.script.push((wrap_at, Event::Count(4)));
                            }
                            if pmi_first {
                                machine.script.insert(0, (BEFORE_RAW, Event::Pmi));
                            }
                            machine.script.push((extra_at, Event::Count(1)));
                            let value = machine.read();
                            assert_eq!(
                                value,
                                machine.count_at_raw_read.get(),
                                "{width} {start} {:?}",
                                machine.script
                            );
                            machine.settle_and_check();
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(cases > 200);
}

#[test]
fn an_unowned_bit_or_counter_out_of_range_reports_nothing() {
    let counters = ProcessorCounters::new();
    let mask = owned(INTEL_OWNED);
    let never = || -> u64 { panic!("read again without a pending wrap") };
    assert_eq!(counters.report_held(0, at(mask, 0), 500, 0, never), Some(500));
    assert_eq!(Placement::new(mask, 8, 48), None, "bit 8 is not owned");
    assert_eq!(counters.report_held(COUNTERS, at(mask, 0), 700, 0, never), None);
    assert_eq!(counters.report(COUNTERS, 1), None);
    assert_eq!(counters.snapshot().values[0], 500);
}

#[test]
fn reported_values_continue_across_release_and_reacquire() {
    let counters = ProcessorCounters::new();
    let mut reports = Vec::new();
    // Session 1: instructions (logical counter 0) on fixed counter 0 (bit 32), starting near the wrap.
    let first = owned(INTEL_OWNED);
    counters.acquire();
    let mut machine = Machine::new(&counters, 32, 48, (1 << 48) - 10);
    let read = |machine: &Machine| machine.read();
    reports.push(read(&machine));
    machine.run(Event::Count(20));
    reports.push(read(&machine)); // pending wrap
    machine.run(Event::Pmi);
    machine.run(Event::Count(5));
    reports.push(read(&machine));
    let session_1 = machine.count.get();
    assert_eq!(*reports.last().unwrap(), session_1);
    // Stop, final read, release.
    counters.release();
    assert_eq!(counters.snapshot().values[0], session_1);

    // Session 2: another counter set; the event is now on GP counter 1, counting from 0 again.
    let second = owned(0b11);
    assert_ne!(first, second);
    counters.acquire();
    assert_eq!(counters.overflows(4), Some(0));
    machine = Machine::new(&counters, 1, 48, 0);
    machine.owned = second;
    reports.push(read(&machine));
    machine.run(Event::Count(1 << 48));
    machine.run(Event::Pmi);
    machine.run(Event::Count(3));
    reports.push(read(&machine));
    assert_eq!(*reports.last().unwrap(), session_1 + (1 << 48) + 3);
    assert!(reports.windows(2).all(|pair| pair[0] <= pair[1]), "{reports:?}");
    let snapshot = counters.snapshot();
    assert_eq!(snapshot.values[0], session_1 + (1 << 48) + 3);
    assert_eq!(snapshot.overflow_interrupts, 2);
}

#[test]
fn reports_never_go_backwards() {
    let counters = ProcessorCounters::new();
    assert_eq!(counters.report(2, 100), Some(100));
    // An older value (a reader that was interrupted by a newer one) does not move it back.
    assert_eq!(counters.report(2, 90), Some(100));
    assert_eq!(counters.report(2, 101), Some(101));
}

#[test]
fn a_stale_final_read_does_not_lower_the_next_sessions_base() {
    let counters = ProcessorCounters::new();
    counters.acquire();
    assert_eq!(counters.report(1, 50), Some(50));
    // The session's final read fell back to something older: consumers already saw 50.
    assert_eq!(counters.report(1, 40), Some(50));
    counters.release();
    counters.acquire();
    // The next session counts from 0 again, on top of what was reported.
    assert_eq!(counters.report(1, 0), Some(50));
    assert_eq!(counters.report(1, 1), Some(51));
}

#[test]
fn collectors_on_other_processors_see_values_only_grow() {
    let counters = Arc::new(ProcessorCounters::new());
    let done = Arc::new(AtomicBool::new(false));
    let collector = {
        let counters = Arc::clone(&counters);
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut last = counters.snapshot();
            let mut looks = 0u64;
            while !done.load(Ordering::Acquire) || looks == 0 {
                let now = counters.snapshot();
                for counter in 0..COUNTERS {
                    assert!(now.values[counter] >= last.values[counter]);
                }
                last = now;
                looks += 1;
            }
        })
    };
    for generation in 1..=20_000u64 {
        for counter in 0..COUNTERS {
            counters.report(counter, generation * counter as u64);
        }
    }
    done.store(true, Ordering::Release);
    collector.join().unwrap();
    assert_eq!(counters.snapshot().values[7], 140_000);
}

#[test]
fn a_placements_extension_is_extend() {
    use crate::pmu::extend::extend;
    for width in [0u8, 1, 31, 32, 40, 48, 63, 64, 65, 200] {
        let at = Placement::new(owned(0b1), 0, width).unwrap();
        for (overflows, raw) in [(0u64, 0u64), (1, 5), (7, u64::MAX), (u64::MAX, 1 << 47), (3, (1 << 48) - 1)]
        {
            for pending in [false, true] {
                assert_eq!(
                    at.extend(overflows, raw, pending),
                    extend(overflows, raw, pending, width),
                    "{width}"
                );
            }
        }
    }
}

#[test]
fn own_rank_placements_give_back_what_was_set_and_refuse_another_ranks() {
    let intel = owned(INTEL_OWNED);
    let mut placements = OwnRankPlacements::filled_with(at(intel, 0));
    for (counter, bit) in [0, 1, 2, 3, 32, 33, 34].into_iter().enumerate() {
        assert!(placements.set(counter, at(intel, bit)), "counter {counter} is bit {bit}'s own");
    }
    for (counter, bit) in [0, 1, 2, 3, 32, 33, 34].into_iter().enumerate() {
        assert_eq!(placements.get(counter), at(intel, bit));
    }
    // Owning bits 0 and 2, bit 2's placement is rank 1's: set as counter 0, it is refused.
    assert!(!placements.set(0, at(owned(0b101), 2)));
    assert_eq!(placements.get(0), at(intel, 0), "nothing set");
    assert!(!placements.set(COUNTERS, at(intel, 0)), "past the counters");
}

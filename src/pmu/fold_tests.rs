//! Host tests of the fold and of the read protocol, with scripted "hardware" closures that wrap the
//! counter and run the overflow interrupt at chosen points of a read (every placement is tried).

use super::*;
use crate::pmu::extend::counter_mask;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// GP counters 0..3 and fixed counters 0..2, the usual Intel session: slots 0..3 and 4..6.
const INTEL_OWNED: u64 = 0b1111 | (0b111 << 32);

fn owned(bits: u64) -> OwnedMask {
    OwnedMask::new(bits).unwrap()
}

/// A 48-bit counter on status bit `bit`.
fn at(owned: OwnedMask, bit: u8) -> Placement {
    Placement { owned, bit, width: 48 }
}

#[test]
fn owned_mask_slots_are_ranks() {
    let mask = owned(INTEL_OWNED);
    assert_eq!(mask.slot_of(0), Some(0));
    assert_eq!(mask.slot_of(3), Some(3));
    assert_eq!(mask.slot_of(32), Some(4));
    assert_eq!(mask.slot_of(34), Some(6));
    assert_eq!(mask.slot_of(4), None);
    assert_eq!(mask.slot_of(35), None);
    assert_eq!(mask.slot_of(63), None);
    assert_eq!(mask.slot_of(64), None);
    assert_eq!(mask.slot_of(255), None);
    assert_eq!(owned(1 << 63).slot_of(63), Some(0));
    let full = owned(0xFF << 56);
    assert_eq!(
        (56..64).map(|bit| full.slot_of(bit).unwrap()).collect::<Vec<_>>(),
        (0..8).collect::<Vec<_>>()
    );
    assert_eq!(OwnedMask::new(0x1FF), None);
    assert_eq!(OwnedMask::new(u64::MAX), None);
    assert_eq!(OwnedMask::EMPTY.slot_of(0), None);
}

#[test]
fn fold_counts_owned_bits_and_ignores_the_rest() {
    let counters = ProcessorCounters::new();
    let mask = owned(INTEL_OWNED);
    // Fixed counter 1 (bit 33, slot 5) plus bits the driver does not own: GP 5, the uncore (61),
    // OvfBuf (62) and CondChgd (63) bits of IA32_PERF_GLOBAL_STATUS.
    counters.fold((1 << 33) | (1 << 5) | (0b111 << 61), mask);
    let slots: Vec<u64> = (0..SLOTS).map(|slot| counters.overflows(slot).unwrap()).collect();
    assert_eq!(slots, [0, 0, 0, 0, 0, 1, 0, 0]);
    assert_eq!(counters.overflow_interrupts(), 1);
    // Every owned bit at once, then an interrupt with nothing owned (still counted).
    counters.fold(u64::MAX, mask);
    counters.fold(1 << 40, mask);
    let slots: Vec<u64> = (0..SLOTS).map(|slot| counters.overflows(slot).unwrap()).collect();
    assert_eq!(slots, [1, 1, 1, 1, 1, 2, 1, 0]);
    assert_eq!(counters.overflow_interrupts(), 3);
    assert_eq!(counters.overflows(SLOTS), None);
    // An empty mask ignores everything.
    counters.fold(u64::MAX, OwnedMask::EMPTY);
    assert_eq!(counters.overflows(5), Some(2));
}

#[test]
fn memory_per_processor() {
    assert_eq!(core::mem::size_of::<ProcessorCounters>(), 256);
    assert_eq!(core::mem::align_of::<ProcessorCounters>(), 64);
}

/// Something the scripted hardware does at an interrupt point of a read.
#[derive(Clone, Copy, Debug)]
enum Event {
    /// The counter counts this many events (wrapping at most once, which sets its status bit).
    Count(u64),
    /// The overflow interrupt: if the status bit is set the HAL calls the handler with it, then
    /// clears it.
    Pmi,
}

/// One processor's counter and its status bit, scripted: `script` lists the events to run when the
/// read reaches each interrupt point (before and after each status read, so between every two steps
/// of an attempt: o1 | s1 | raw | s2 | o2).
struct Machine<'a> {
    counters: &'a ProcessorCounters,
    owned: OwnedMask,
    bit: u8,
    width: u8,
    count: Cell<u64>,
    status: Cell<bool>,
    point: Cell<usize>,
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
            point: Cell::new(0),
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

    fn interrupt_point(&self) {
        let point = self.point.get();
        for &(at, event) in &self.script {
            if at == point {
                self.run(event);
            }
        }
        self.point.set(point + 1);
    }

    fn read_status(&self) -> u64 {
        self.interrupt_point();
        // Other bits of the status register change all the time; only ours matters.
        let status = if self.status.get() { 1 << self.bit } else { 0 } | (self.point.get() as u64 & 1) << 62;
        self.interrupt_point();
        status
    }

    fn read_raw(&self) -> u64 {
        self.count_at_raw_read.set(self.count.get());
        self.count.get() & counter_mask(self.width)
    }

    fn placement(&self) -> Placement {
        Placement { owned: self.owned, bit: self.bit, width: self.width }
    }

    fn read(&self, max_attempts: u32) -> Result<Extended, ReadError> {
        self.counters.read_extended(self.placement(), max_attempts, || self.read_status(), || self.read_raw())
    }

    /// Drops the events the read did not reach, delivers whatever is still pending, then checks that a
    /// quiet read is the true count.
    fn settle_and_check(&mut self) {
        self.script.clear();
        self.run(Event::Pmi);
        let read = self.read(1).unwrap();
        assert_eq!(read.value, self.count.get());
    }
}

#[test]
fn a_quiet_read_is_exact_in_one_attempt() {
    let counters = ProcessorCounters::new();
    let machine = Machine::new(&counters, 33, 48, 12_345);
    assert_eq!(machine.read(1), Ok(Extended { value: 12_345, attempts: 1 }));
    let mut pending = Machine::new(&counters, 33, 48, (1 << 48) - 1);
    pending.run(Event::Count(3));
    // Wrapped, interrupt not yet delivered: the pending bit counts the wrap.
    assert_eq!(pending.read(1), Ok(Extended { value: (1 << 48) + 2, attempts: 1 }));
    pending.settle_and_check();
}

#[test]
fn a_pmi_between_the_reads_is_retried_into_the_exact_value() {
    let counters = ProcessorCounters::new();
    let mut machine = Machine::new(&counters, 1, 48, (1 << 48) - 1);
    machine.run(Event::Count(1));
    // The PMI runs after o1 was loaded, before the status read: the overflow count moves and the
    // status clears. Accepting that attempt would give 0 * 2^48 + 0; o1 != o2 rejects it.
    machine.script = vec![(0, Event::Pmi), (2, Event::Count(10))];
    let read = machine.read(DEFAULT_MAX_ATTEMPTS).unwrap();
    assert_eq!(read, Extended { value: (1 << 48) + 10, attempts: 2 });
    assert_eq!(read.value, machine.count_at_raw_read.get());
    assert_eq!(counters.overflows(1), Some(1));
}

#[test]
fn a_wrap_between_status_and_raw_is_retried_into_the_exact_value() {
    let counters = ProcessorCounters::new();
    let mut machine = Machine::new(&counters, 33, 48, (1 << 48) - 3);
    // The counter wraps after the first status read and before the raw read; the PMI comes late.
    // Without the second status read the attempt would give 0 * 2^48 + 2: 2^48 short.
    machine.script = vec![(1, Event::Count(5)), (20, Event::Pmi)];
    let read = machine.read(DEFAULT_MAX_ATTEMPTS).unwrap();
    assert_eq!(read, Extended { value: (1 << 48) + 2, attempts: 2 });
    machine.settle_and_check();
}

/// Every placement of a wrap and of its interrupt in a read (and of more counting around them), for
/// every start from "long before the wrap" to "wrapped, interrupt pending": the accepted value is
/// the exact count at its raw read, within three attempts.
#[test]
fn every_placement_of_wrap_and_pmi_reads_exactly() {
    const W: u8 = 48;
    let points = 12;
    let mut cases = 0;
    for start in [(1u64 << W) - 4, (1 << W) - 1, 5 << W] {
        for pending_at_start in [false, true] {
            for wrap_at in 0..=points {
                for pmi_at in (0..=points + 4).chain([usize::MAX]) {
                    for extra_at in [usize::MAX, 0, 1, 2, 3, 5, 6] {
                        let counters = ProcessorCounters::new();
                        let mut machine = Machine::new(&counters, 2, W, start);
                        if pending_at_start {
                            // Wrap before the read; its interrupt is one of the scripted Pmi events.
                            machine.run(Event::Count((1 << W) - (start & counter_mask(W))));
                        } else {
                            machine.script.push((wrap_at, Event::Count(4)));
                        }
                        machine.script.push((pmi_at, Event::Pmi));
                        machine.script.push((extra_at, Event::Count(1)));
                        let read =
                            machine.read(3).unwrap_or_else(|error| panic!("{error:?} {:?}", machine.script));
                        assert_eq!(read.value, machine.count_at_raw_read.get(), "{:?}", machine.script);
                        machine.settle_and_check();
                        cases += 1;
                    }
                }
            }
        }
    }
    assert!(cases > 1000);
}

#[test]
fn with_the_pmi_masked_two_attempts_always_suffice() {
    // IPI reader: no interrupt runs during the read, so only a wrap can spoil an attempt.
    for wrap_at in 0..8 {
        let counters = ProcessorCounters::new();
        let mut machine = Machine::new(&counters, 32, 48, (1 << 48) - 2);
        machine.script.push((wrap_at, Event::Count(3)));
        let read = machine.read(2).unwrap();
        assert_eq!(read.value, machine.count_at_raw_read.get());
        machine.settle_and_check();
    }
}

#[test]
fn an_unstable_read_gives_up_after_the_bound_and_falls_back() {
    let counters = ProcessorCounters::new();
    let mask = owned(INTEL_OWNED);
    assert_eq!(counters.read_counter(0, at(mask, 0), 4, || 0, || 500), Some(500));
    // A status bit that flips on every read (a broken virtual PMU): every attempt is rejected.
    let flips = Cell::new(0u64);
    let flipping = || {
        flips.set(flips.get() + 1);
        flips.get() & 1
    };
    let raw_reads = Cell::new(0);
    let raw = || {
        raw_reads.set(raw_reads.get() + 1);
        900
    };
    assert_eq!(
        counters.read_extended(at(mask, 0), 4, flipping, raw),
        Err(ReadError::Unstable { attempts: 4 })
    );
    assert_eq!(raw_reads.get(), 4);
    // read_counter reports the previous value again and counts the fallback.
    assert_eq!(counters.read_counter(0, at(mask, 0), 4, flipping, raw), Some(500));
    assert_eq!(counters.snapshot().read_fallbacks, 1);
    // No attempts allowed at all, or a bit the session does not own: the same fallback.
    assert_eq!(counters.read_extended(at(mask, 0), 0, || 0, || 1), Err(ReadError::Unstable { attempts: 0 }));
    assert_eq!(counters.read_extended(at(mask, 8), 4, || 0, || 1), Err(ReadError::NotOwned));
    assert_eq!(counters.read_counter(0, at(mask, 8), 4, || 0, || 1), Some(500));
    assert_eq!(counters.read_counter(SLOTS, at(mask, 0), 4, || 0, || 1), None);
    assert_eq!(counters.report(SLOTS, 1), None);
    let snapshot = counters.snapshot();
    assert_eq!((snapshot.read_fallbacks, snapshot.read_retries), (2, 0));
    assert_eq!(snapshot.values[0], 500);
}

#[test]
fn retries_are_counted() {
    let counters = ProcessorCounters::new();
    let mask = owned(INTEL_OWNED);
    let calls = Cell::new(0);
    // s1 = 0, s2 = 1 (a wrap during the first attempt), then 1, 1.
    let status = || {
        calls.set(calls.get() + 1);
        if calls.get() >= 2 { 1 << 32 } else { 0 }
    };
    assert_eq!(counters.read_counter(3, at(mask, 32), 4, status, || 7), Some((1 << 48) + 7));
    assert_eq!(counters.snapshot().read_retries, 1);
}

#[test]
fn reported_values_continue_across_release_and_reacquire() {
    let counters = ProcessorCounters::new();
    let mut reports = Vec::new();
    // Session 1: instructions (logical counter 0) on fixed counter 0 (bit 32), starting near the wrap.
    let first = owned(INTEL_OWNED);
    counters.acquire();
    let mut machine = Machine::new(&counters, 32, 48, (1 << 48) - 10);
    let read = |machine: &Machine| {
        counters
            .read_counter(0, machine.placement(), 4, || machine.read_status(), || machine.read_raw())
            .unwrap()
    };
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
    counters.publish();
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
    counters.publish();
    let snapshot = counters.snapshot();
    assert_eq!(snapshot.generation, 2);
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
                assert!(now.generation >= last.generation);
                for counter in 0..SLOTS {
                    assert!(now.values[counter] >= last.values[counter]);
                    // Published values are at least as new as their generation (counter k = k * g).
                    assert!(now.values[counter] >= now.generation * counter as u64);
                }
                last = now;
                looks += 1;
            }
        })
    };
    for generation in 1..=20_000u64 {
        for counter in 0..SLOTS {
            counters.report(counter, generation * counter as u64);
        }
        counters.publish();
    }
    done.store(true, Ordering::Release);
    collector.join().unwrap();
    assert_eq!(counters.snapshot().values[7], 140_000);
}

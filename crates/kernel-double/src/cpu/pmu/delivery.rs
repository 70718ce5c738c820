//! Overflow interrupts. A wrap sets the counter's global status bit; if the counter's INT/PMI bit is
//! set and the HAL has an overflow handler registered, the processor has a PMI pending. Each virtual
//! processor has an *occupancy* lock standing for "this processor is executing something at raised
//! IRQL": KeIpiGenericCall holds it while the broadcast worker runs on that processor. A pending PMI is
//! delivered between instructions of whoever occupies the processor, at the points where the double
//! regains control: after every trapped instruction (rdmsr, wrmsr, cr8, cli/sti, cpuid) and when the
//! worker returns, provided the occupant's IRQL is below PROFILE_LEVEL (15, as on x64: so a PMI *does*
//! interrupt an IPI_LEVEL (14) worker). When nobody occupies the processor, the stepping thread itself
//! takes the occupancy and delivers the PMI as that processor. Delivery runs the registered handler at
//! PROFILE_LEVEL with the processor's identity and the global status bits, then clears those status
//! bits, as the HAL does. A processor is not stepped again until its PMI has been delivered (a real PMI
//! arrives within a few hundred cycles, long before a 48-bit counter can wrap again).
//!
//! Limits: in ordinary runs the interrupt cannot land *inside* a run of driver instructions that do not
//! trap (between two plain loads, say); only at trap points. A test that single-steps the driver's
//! broadcast worker lands it between any two instructions with [`overflow_between_instructions`]
//! (tests/scenarios/common/pmi_sweep.rs does, before every instruction of the read worker).

use super::super::kpcr::{Kpcr, PROFILE_LEVEL, current};
use super::counting::advance;
use super::registers::{lock, processor as pmu_of};
use crate::poison::IgnorePoison;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// No PMI pending, one pending, one being delivered.
const PMI_NONE: u8 = 0;
const PMI_PENDING: u8 = 1;
const PMI_DELIVERING: u8 = 2;

/// One virtual processor's interrupt state.
struct Processor {
    pmi: AtomicU8,
    occupancy: Mutex<()>,
    /// The KPCR address of the thread occupying the processor, 0 if none.
    occupant: AtomicUsize,
    /// The overflow handler the HAL calls for this processor and the handle it passes (0: none): the
    /// allocation whose group affinity holds the processor.
    handler: AtomicUsize,
    handle: AtomicUsize,
}

static PROCESSORS: OnceLock<Vec<Processor>> = OnceLock::new();
static DELIVERING: AtomicUsize = AtomicUsize::new(0);
static DELIVERED: AtomicU64 = AtomicU64::new(0);
static DELIVERED_TO_OCCUPANT: AtomicU64 = AtomicU64::new(0);

fn processors() -> &'static [Processor] {
    PROCESSORS.get_or_init(|| {
        // Hot-added processors too, as their PMU registers (`super::registers`).
        (0..super::super::topology::possible_count())
            .map(|_| Processor {
                pmi: AtomicU8::new(PMI_NONE),
                occupancy: Mutex::new(()),
                occupant: AtomicUsize::new(0),
                handler: AtomicUsize::new(0),
                handle: AtomicUsize::new(0),
            })
            .collect()
    })
}

fn processor(vp: u32) -> &'static Processor {
    &processors()[vp as usize]
}

/// Runs `units` of work on virtual processor `vp` (counters advance, wraps set status bits) and
/// delivers the overflow interrupt this raises before returning (see the module docs). Called by
/// tests, from any thread that is not running driver code.
pub fn step(vp: u32, units: u64) {
    let processor = processor(vp);
    wait_delivered(vp);
    super::super::frequency::advance(vp, units);
    let pmu = pmu_of(vp);
    let pmi = advance(pmu.kind, pmu.atom, &mut lock(vp), units);
    if pmi != 0 && processor.handler.load(Ordering::Acquire) != 0 {
        processor.pmi.store(PMI_PENDING, Ordering::Release);
        wait_delivered(vp);
    } else if pmi != 0 {
        interrupt_without_handler(vp, pmi);
    }
}

/// A counter with its interrupt bit set wrapped while the HAL has no overflow handler for the owner:
/// the whole-PMU form registers none, and the AMD HAL never calls one. The interrupt reaches no
/// client, so a driver that relies on it loses the wrap.
fn interrupt_without_handler(vp: u32, bits: u64) {
    crate::violations::record(
        "virtual PMU",
        None,
        format!(
            "processor {vp}: counters {bits:#x} raised an overflow interrupt, but the HAL has no \
             overflow handler to call (whole-PMU ownership, or AMD)"
        ),
    );
}

/// Runs `units` of work on virtual processor `vp` from *between two instructions of driver code* on this
/// thread (a test's single-step trap handler), and takes the overflow interrupt this raises right there
/// if this thread occupies `vp` below PROFILE_LEVEL, as a real PMI lands between any two instructions.
/// Otherwise the interrupt stays pending for the occupant's next interruptible point (or the next
/// [`step`]). Returns whether the handler ran here. `vp` must have no PMI pending, and the interrupted
/// code must be the driver's (which never holds the double's locks).
pub fn overflow_between_instructions(vp: u32, units: u64) -> bool {
    let processor = processor(vp);
    assert_eq!(processor.pmi.load(Ordering::Acquire), PMI_NONE, "a PMI is already pending on {vp}");
    super::super::frequency::advance(vp, units);
    let pmu = pmu_of(vp);
    let pmi = advance(pmu.kind, pmu.atom, &mut lock(vp), units);
    let handler = processor.handler.load(Ordering::Acquire);
    if pmi != 0 && handler == 0 {
        interrupt_without_handler(vp, pmi);
    }
    if pmi == 0 || handler == 0 {
        return false;
    }
    processor.pmi.store(PMI_PENDING, Ordering::Release);
    let kpcr = current();
    kpcr.processor_index() == vp
        && processor.occupant.load(Ordering::Acquire) == kpcr as *const Kpcr as usize
        && deliver(vp, kpcr)
}

/// Waits until `vp` has no PMI pending, delivering it on this thread when the processor is free.
fn wait_delivered(vp: u32) {
    let processor = processor(vp);
    while processor.pmi.load(Ordering::Acquire) != PMI_NONE {
        if let Ok(_occupied) = processor.occupancy.try_lock() {
            let kpcr = current();
            let (home, irql) = (kpcr.processor_index(), kpcr.irql());
            kpcr.set_processor(vp);
            processor.occupant.store(kpcr as *const Kpcr as usize, Ordering::Release);
            deliver(vp, kpcr);
            processor.occupant.store(0, Ordering::Release);
            kpcr.set_processor(home);
            kpcr.set_irql(irql);
        } else {
            std::thread::yield_now();
        }
    }
}

/// Delivers `vp`'s pending PMI on the calling thread, which occupies `vp` (KPCR `kpcr`), if its IRQL
/// lets it through. Returns whether it ran the handler.
fn deliver(vp: u32, kpcr: &Kpcr) -> bool {
    let processor = processor(vp);
    // A maskable interrupt waits while RFLAGS.IF is clear (Intel SDM Vol. 3A, "Masking Maskable
    // Hardware Interrupts"), and while the IRQL masks PROFILE_LEVEL.
    if kpcr.irql() >= PROFILE_LEVEL || !kpcr.interrupts_enabled() {
        return false;
    }
    if processor
        .pmi
        .compare_exchange(PMI_PENDING, PMI_DELIVERING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return false;
    }
    DELIVERING.fetch_add(1, Ordering::SeqCst);
    let handler = processor.handler.load(Ordering::SeqCst);
    if handler != 0 {
        let bits = lock(vp).global_status;
        let previous = kpcr.raise_irql(PROFILE_LEVEL);
        // SAFETY: the HAL's Overflow descriptor named a PHYSICAL_COUNTER_OVERFLOW_HANDLER,
        // `VOID (*)(ULONGLONG OverflowBits, HANDLE OwningHandle)`, registered until HalFreeHardwareCounters,
        // which waits for deliveries in progress.
        let handler: extern "win64" fn(u64, usize) = unsafe { std::mem::transmute(handler) };
        handler(bits, processor.handle.load(Ordering::SeqCst));
        if kpcr.irql() != PROFILE_LEVEL {
            crate::violations::record(
                "overflow handler",
                None,
                format!("returned at IRQL {} on processor {vp}", kpcr.irql()),
            );
        }
        kpcr.set_irql(previous);
        lock(vp).global_status &= !bits;
        DELIVERED.fetch_add(1, Ordering::Relaxed);
    }
    DELIVERING.fetch_sub(1, Ordering::SeqCst);
    processor.pmi.store(PMI_NONE, Ordering::Release);
    handler != 0
}

/// A trap point or the end of a broadcast worker on the thread of `kpcr`: delivers its processor's
/// pending PMI if this thread occupies the processor and its IRQL is below PROFILE_LEVEL.
pub(crate) fn interruptible_point(kpcr: &Kpcr) {
    let Some(processors) = PROCESSORS.get() else { return };
    let vp = kpcr.processor_index();
    let Some(processor) = processors.get(vp as usize) else { return };
    if processor.pmi.load(Ordering::Acquire) == PMI_PENDING
        && processor.occupant.load(Ordering::Acquire) == kpcr as *const Kpcr as usize
        && deliver(vp, kpcr)
    {
        DELIVERED_TO_OCCUPANT.fetch_add(1, Ordering::Relaxed);
    }
}

/// Occupancy of a processor by a broadcast worker (KeIpiGenericCall).
pub(crate) struct Occupied {
    _guard: MutexGuard<'static, ()>,
    processor: &'static Processor,
}

impl Drop for Occupied {
    fn drop(&mut self) {
        self.processor.occupant.store(0, Ordering::Release);
    }
}

/// Makes the thread of `kpcr` the occupant of `vp` (waiting for another occupant to leave).
pub(crate) fn occupy(vp: u32, kpcr: &Kpcr) -> Occupied {
    let processor = processor(vp);
    let guard = processor.occupancy.lock().ignore_poison();
    processor.occupant.store(kpcr as *const Kpcr as usize, Ordering::Release);
    Occupied { _guard: guard, processor }
}

/// The HAL registers (`Some((handler, handle))`) or withdraws the overflow handler of the processors
/// `on` selects (an allocation's group affinity). Withdrawing waits for deliveries in progress: no
/// handler runs after HalFreeHardwareCounters returns.
pub(crate) fn set_overflow_handler(on: impl Fn(u32) -> bool, handler: Option<(usize, usize)>) {
    let processors = processors().iter().enumerate().filter(|(vp, _)| on(*vp as u32));
    match handler {
        Some((handler, handle)) => {
            for (_, processor) in processors {
                processor.handle.store(handle, Ordering::SeqCst);
                processor.handler.store(handler, Ordering::SeqCst);
            }
        }
        None => {
            let processors: Vec<_> = processors.map(|(_, processor)| processor).collect();
            for processor in &processors {
                processor.handler.store(0, Ordering::SeqCst);
            }
            while DELIVERING.load(Ordering::SeqCst) != 0 {
                std::thread::yield_now();
            }
            for processor in processors {
                let _ = processor.pmi.compare_exchange(
                    PMI_PENDING,
                    PMI_NONE,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }
        }
    }
}

/// Whether `vp` has an overflow interrupt waiting for delivery.
pub fn pending(vp: u32) -> bool {
    processor(vp).pmi.load(Ordering::Acquire) == PMI_PENDING
}

/// Overflow interrupts delivered to the driver's handler so far.
pub fn delivered() -> u64 {
    DELIVERED.load(Ordering::Relaxed)
}

/// Of [`delivered`], those taken by the processor's occupant (a broadcast worker, between its
/// instructions or as it returned) rather than by the stepping thread.
pub fn delivered_to_occupant() -> u64 {
    DELIVERED_TO_OCCUPANT.load(Ordering::Relaxed)
}

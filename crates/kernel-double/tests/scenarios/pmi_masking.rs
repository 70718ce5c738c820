//! When an overflow interrupt reaches a virtual processor: a broadcast worker (KeIpiGenericCall, at
//! IPI_LEVEL 14) occupies processor 2 while the workload wraps a counter there. With the worker raised
//! to PROFILE_LEVEL (15) the pending PMI is held even across trapped instructions (rdmsr, rdpmc); the
//! instant the worker lowers CR8 back to IPI_LEVEL, the PMI is taken, between two of its instructions:
//! the handler runs on processor 2 at PROFILE_LEVEL with the wrapped counter's status bit, and the HAL
//! double clears that bit afterwards.

use kernel_double::cpu::{self, cpuid, pmu};
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

const IA32_A_PMC0: u32 = 0x4C1;
const IA32_PERFEVTSEL0: u32 = 0x186;
const IA32_PERF_GLOBAL_STATUS: u32 = 0x38E;
const IA32_PERF_GLOBAL_CTRL: u32 = 0x38F;
const INSTRUCTIONS_EVTSEL: u64 = 0xC0 | 1 << 16 | 1 << 17 | 1 << 20 | 1 << 22;
const PROCESSOR: u32 = 2;

/// (processor, IRQL, bits) of every handler call.
static CALLS: Mutex<Vec<(u32, u8, u64)>> = Mutex::new(Vec::new());
static STEP_NOW: AtomicBool = AtomicBool::new(false);
/// What the worker saw on processor 2: delivered count at PROFILE_LEVEL, after lowering, and the raw
/// status bits read at PROFILE_LEVEL.
static SEEN: Mutex<Option<(u64, u64, u64, u64)>> = Mutex::new(None);

extern "win64" fn overflow_handler(bits: u64, _handle: usize) {
    let kpcr = cpu::current();
    CALLS.lock().unwrap().push((kpcr.processor_index(), kpcr.irql(), bits));
}

fn rdmsr(msr: u32) -> u64 {
    let (low, high): (u32, u32);
    // SAFETY: emulated by the trap handler; reads the virtual processor's MSR into edx:eax.
    unsafe { std::arch::asm!("rdmsr", in("ecx") msr, out("eax") low, out("edx") high, options(nostack)) };
    u64::from(high) << 32 | u64::from(low)
}

fn wrmsr(msr: u32, value: u64) {
    // SAFETY: emulated by the trap handler; writes the virtual processor's MSR.
    unsafe {
        std::arch::asm!("wrmsr", in("ecx") msr, in("eax") value as u32, in("edx") (value >> 32) as u32,
            options(nostack))
    };
}

fn rdpmc(counter: u32) -> u64 {
    let (low, high): (u32, u32);
    // SAFETY: emulated by the trap handler (CR4.PCE is clear for this process).
    unsafe { std::arch::asm!("rdpmc", in("ecx") counter, out("eax") low, out("edx") high, options(nostack)) };
    u64::from(high) << 32 | u64::from(low)
}

fn write_cr8(irql: u64) {
    // SAFETY: emulated by the trap handler: sets the virtual IRQL.
    unsafe { std::arch::asm!("mov cr8, {}", in(reg) irql, options(nostack)) };
}

/// Programs instructions on GP counter 0 with a PMI, two events before its wrap, on every processor.
extern "win64" fn program(_context: usize) -> usize {
    wrmsr(IA32_PERFEVTSEL0, INSTRUCTIONS_EVTSEL);
    wrmsr(IA32_A_PMC0, (1 << 48) - 2);
    // Read-modify-write: the other general-purpose enables stay at their power-on 1.
    wrmsr(IA32_PERF_GLOBAL_CTRL, rdmsr(IA32_PERF_GLOBAL_CTRL) | 1);
    0
}

extern "win64" fn worker(_context: usize) -> usize {
    if cpu::current().processor_index() != PROCESSOR {
        return 0;
    }
    write_cr8(15);
    STEP_NOW.store(true, Ordering::SeqCst);
    while !pmu::pending(PROCESSOR) {
        std::hint::spin_loop();
    }
    let raw = rdpmc(0);
    let status = rdmsr(IA32_PERF_GLOBAL_STATUS);
    let held = pmu::delivered();
    write_cr8(14);
    let taken = pmu::delivered();
    *SEEN.lock().unwrap() = Some((held, taken, status, raw));
    0
}

#[test]
fn a_pmi_waits_for_the_irql_to_drop_below_profile_level() {
    cpuid::set_model(&cpuid::SKYLAKE);
    cpu::enter(0);
    #[repr(C, align(8))]
    struct List {
        count: u32,
        _pad: u32,
        descriptors: [[u32; 6]; 2],
    }
    let handler = overflow_handler as *const () as usize;
    let list = List {
        count: 2,
        _pad: 0,
        descriptors: [[0, 0, 0, 0, 0, 0], [3, 0, handler as u32, (handler >> 32) as u32, 0, 0]],
    };
    let mut handle = 0usize;
    // SAFETY: a valid PHYSICAL_COUNTER_RESOURCE_LIST (counter 0 and an overflow handler) and output.
    let status = unsafe {
        kernel_double::exports::hal::hal_allocate_hardware_counters(
            0,
            0,
            (&list as *const List).cast(),
            &mut handle,
        )
    };
    assert_eq!(status, STATUS_SUCCESS);
    // SAFETY: a broadcast worker with the documented signature.
    unsafe { kernel_double::exports::ke::ke_ipi_generic_call(program as *const () as usize, 0) };

    std::thread::scope(|scope| {
        scope.spawn(|| {
            cpu::enter(0);
            while !STEP_NOW.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
            // Wraps processor 2's counter and waits until the PMI has been delivered.
            pmu::step(PROCESSOR, 1);
        });
        // SAFETY: as above.
        unsafe { kernel_double::exports::ke::ke_ipi_generic_call(worker as *const () as usize, 0) };
    });

    let (held, taken, status, raw) = SEEN.lock().unwrap().expect("the worker ran on processor 2");
    assert_eq!(raw, 14, "the counter wrapped: 2^48 - 2 + 16");
    assert_eq!(status, 1, "the wrap set IA32_PERF_GLOBAL_STATUS bit 0");
    assert_eq!(held, 0, "a PMI was delivered at PROFILE_LEVEL");
    assert_eq!(taken, 1, "lowering CR8 to IPI_LEVEL did not let the pending PMI in");
    assert_eq!(pmu::delivered_to_occupant(), 1, "the occupant did not take it");
    assert_eq!(*CALLS.lock().unwrap(), [(PROCESSOR, 15, 1)], "handler: processor, IRQL, bits");
    cpu::current().set_processor(PROCESSOR);
    assert_eq!(rdmsr(IA32_PERF_GLOBAL_STATUS), 0, "the HAL double cleared the status after the handler");
    cpu::current().set_processor(0);

    // SAFETY: the handle just allocated.
    assert_eq!(unsafe { kernel_double::exports::hal::hal_free_hardware_counters(handle) }, STATUS_SUCCESS);
    assert_eq!(violations::all(), []);
}

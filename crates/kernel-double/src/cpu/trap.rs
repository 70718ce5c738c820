//! Trap and emulate: the privileged instructions the driver executes fault in user mode (#GP, delivered
//! as SIGSEGV). The handler decodes the faulting instruction with iced-x86, emulates it against the
//! thread's virtual processor, writes the result into the saved registers and resumes after it.
//!
//! Emulated: `mov r64, cr8` / `mov cr8, r64` (the IRQL), `rdmsr` / `wrmsr` (the virtual processor's MSR
//! map; a write without PMU ownership is a violation), `rdpmc` (the virtual PMU's counters; Linux
//! leaves CR4.PCE clear for a process without perf mappings, so it faults), `cli` / `sti` (the virtual
//! interrupt flag), and
//! `cpuid`, which the loader rewrote into `ud2` (SIGILL) at the sites it found ([`super::cpuid`]): a
//! `ud2` at a recorded site answers from the chosen CPU model, any other `ud2` is the driver's own abort.
//! A load or store on a device's mapped page (PROT_NONE) goes to the device ([`super::mmio`]).
//! After each emulated instruction the virtual processor may take a pending overflow interrupt
//! (`pmu::interruptible_point`).
//! Anything else is a real crash or a touch of a discarded or protected page: the handler prints the
//! faulting RIP as an image RVA, the address touched and the instruction, and aborts the process.
//!
//! The handler runs on the faulting thread, which is executing driver code and therefore holds none of
//! the double's locks, so taking them here cannot deadlock; it may allocate for the same reason (the
//! driver's code is never inside the host's malloc).

use super::kpcr::{DISPATCH_LEVEL, Kpcr, current_if_any};
use super::{cpuid, mmio, msr, pmu};
use crate::{image_map, violations};
use iced_x86::{Code, Decoder, DecoderOptions, Instruction, Register};
use std::fmt::Write as _;
use std::sync::{Once, OnceLock};

static INSTALL: Once = Once::new();
/// siginfo's si_code for a page fault on a page whose protection refuses the access (asm-generic
/// siginfo.h; the libc crate does not export it).
const SEGV_ACCERR: libc::c_int = 2;

/// Installs the SIGSEGV and SIGILL handler for the process (once).
pub fn install() {
    INSTALL.call_once(|| {
        for signal in [libc::SIGSEGV, libc::SIGILL] {
            // SAFETY: a zeroed sigaction is a valid starting point; the handler has the SA_SIGINFO
            // signature.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_fault as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO;
                libc::sigemptyset(&mut action.sa_mask);
                let result = libc::sigaction(signal, &action, std::ptr::null_mut());
                assert_eq!(result, 0, "sigaction({signal}) failed");
            }
        }
    });
}

/// What an instruction did, for the handler to apply.
enum Emulated {
    /// Resume after the instruction.
    Done,
    /// Not an instruction the double emulates.
    Unsupported,
}

extern "C" fn on_fault(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t and ucontext_t to an SA_SIGINFO handler, for the
    // duration of the handler, and they describe this thread's interrupted state.
    let (address, context) = unsafe { ((*info).si_addr() as u64, &mut *context.cast::<libc::ucontext_t>()) };
    let registers = &mut context.uc_mcontext.gregs;
    let rip = registers[libc::REG_RIP as usize] as u64;
    // SAFETY: as above.
    let code = unsafe { (*info).si_code };
    // A page fault on a mapped page the protection refuses (not the #GP of a privileged instruction,
    // which arrives as SI_KERNEL with no address): maybe a trimmed pageable page or a guard page.
    if signal == libc::SIGSEGV && code == SEGV_ACCERR && checked_fault(rip, address) {
        // Paged back in: returning retries the instruction.
        return;
    }
    // The processor fetched the faulting instruction unless the fault is the fetch itself (an access
    // at RIP): then its bytes are readable, and the common case needs no copy through the kernel.
    let fetched = !(signal == libc::SIGSEGV && address == rip);
    let decoded = if fetched { decode_fetched(rip) } else { decode_at(rip) };
    let Some(instruction) = decoded else {
        fatal(rip, address, None, "the faulting instruction is not readable (discarded or unmapped code)");
    };
    let Some(kpcr) = current_if_any() else {
        fatal(
            rip,
            address,
            Some(&instruction),
            "privileged instruction on a thread with no virtual processor",
        );
    };
    let device_memory = signal == libc::SIGSEGV && code == SEGV_ACCERR;
    let emulated = if let Some(done) =
        device_memory.then(|| mmio::emulate(&instruction, registers, address, rip)).flatten()
    {
        match done {
            Ok(()) => Emulated::Done,
            Err(why) => fatal(rip, address, Some(&instruction), why),
        }
    } else if signal == libc::SIGILL {
        if instruction.code() == Code::Ud2 && cpuid::is_site(rip) {
            let leaf = registers[libc::REG_RAX as usize] as u32;
            let subleaf = registers[libc::REG_RCX as usize] as u32;
            let [eax, ebx, ecx, edx] = cpuid::cpuid_on(kpcr.processor_index(), leaf, subleaf);
            registers[libc::REG_RAX as usize] = i64::from(eax);
            registers[libc::REG_RBX as usize] = i64::from(ebx);
            registers[libc::REG_RCX as usize] = i64::from(ecx);
            registers[libc::REG_RDX as usize] = i64::from(edx);
            Emulated::Done
        } else {
            fatal(rip, address, Some(&instruction), "illegal instruction (a ud2 is the driver's abort)")
        }
    } else {
        emulate(&instruction, registers, kpcr, rip)
    };
    match emulated {
        Emulated::Done => {
            kpcr.count_emulated();
            registers[libc::REG_RIP as usize] = (rip + instruction.len() as u64) as i64;
            pmu::interruptible_point(kpcr);
        }
        Emulated::Unsupported => {
            fatal(rip, address, Some(&instruction), "fault not caused by an emulated instruction")
        }
    }
}

/// What a fault on a special pool guard page means, or `None` for an address on none: the pool is
/// the fake kernel's (`crate::exports::pool`), which names its describer here before the driver runs.
static GUARD_FAULTS: OnceLock<fn(u64) -> Option<String>> = OnceLock::new();

/// The fake kernel's bug check (`crate::exports::dbg::bug_check`): code, parameters, image RVA,
/// processor, IRQL.
pub type BugCheck = fn(u32, [usize; 4], Option<u64>, u32, u8) -> !;

/// The fake kernel's bug check, named here before the driver runs, as the guard fault describer is.
static BUG_CHECK: OnceLock<BugCheck> = OnceLock::new();

/// Registers the fake kernel's bug check (once; later calls are ignored).
pub fn set_bug_check(bug_check: BugCheck) {
    let _ = BUG_CHECK.set(bug_check);
}

/// A #GP the driver's code does not handle (it has no exception handlers): KiGeneralProtectionFault
/// dispatches KI_EXCEPTION_GP_FAULT, which KiPreprocessFault replaces with STATUS_ACCESS_VIOLATION
/// (Windows Research Kernel, base/ntos/ke/amd64/trap.asm and exceptn.c); unhandled in kernel mode it
/// is bug check 0x1E KMODE_EXCEPTION_NOT_HANDLED: the exception code, the faulting address, then the
/// exception's two parameters, 0 and -1 for a #GP, whose address is not known (Microsoft Learn,
/// "Bug Check 0x1E: KMODE_EXCEPTION_NOT_HANDLED").
fn unhandled_general_protection(rip: u64, kpcr: &Kpcr) -> ! {
    const KMODE_EXCEPTION_NOT_HANDLED: u32 = 0x1E;
    let bug_check = BUG_CHECK.get().expect("the fake kernel named its bug check before the driver ran");
    let code = crate::status::STATUS_ACCESS_VIOLATION as u32 as usize;
    let parameters = [code, rip as usize, 0, usize::MAX];
    bug_check(
        KMODE_EXCEPTION_NOT_HANDLED,
        parameters,
        image_map::rva_of(rip),
        kpcr.processor_index(),
        kpcr.irql(),
    )
}

/// Registers the describer of special pool guard faults (once; later calls are ignored).
pub fn set_guard_fault_describer(describe: fn(u64) -> Option<String>) {
    let _ = GUARD_FAULTS.set(describe);
}

/// The faults Driver Verifier's checks provoke on purpose: a trimmed pageable page touched (Force IRQL
/// Checking, [`image_map::pageable_fault`]: paged back in below DISPATCH_LEVEL, fatal at or above it) and
/// a special pool guard page (the fake pool's, which [`set_guard_fault_describer`] names: fatal).
/// Returns true if the page was paged back in (retry the instruction), false if the fault is neither.
fn checked_fault(rip: u64, address: u64) -> bool {
    let irql = current_if_any().map_or(super::kpcr::PASSIVE_LEVEL, Kpcr::irql);
    let (at, why) = match image_map::pageable_fault(address, irql, irql >= DISPATCH_LEVEL) {
        image_map::PageableFault::PagedIn => return true,
        image_map::PageableFault::Violation(why) => ("Force IRQL Checking", why),
        image_map::PageableFault::NotPageable => {
            match GUARD_FAULTS.get().and_then(|describe| describe(address)) {
                Some(why) => ("special pool", why),
                None => return false,
            }
        }
    };
    violations::record(at, image_map::rva_of(rip), why.clone());
    fatal(rip, address, decode_at(rip).as_ref(), &why);
}

/// Decodes the instruction the processor just fetched at `rip` (and so could read) from its own page;
/// one that may run past the page's end, whose next page may be unreadable, goes through [`decode_at`].
fn decode_fetched(rip: u64) -> Option<Instruction> {
    const LONGEST: u64 = 15;
    let left_in_page = 0x1000 - (rip & 0xFFF);
    if left_in_page < LONGEST {
        return decode_at(rip);
    }
    // SAFETY: the processor fetched an instruction at `rip` to raise this fault, so its page is mapped
    // and readable (x86 has no execute-only pages without protection keys, which the double never
    // sets), and the 15 bytes lie within that page.
    decode(unsafe { std::slice::from_raw_parts(rip as *const u8, LONGEST as usize) }, rip)
}

/// The instruction `bytes` begin with, at address `rip`, if they hold a valid one.
fn decode(bytes: &[u8], rip: u64) -> Option<Instruction> {
    let instruction = Decoder::with_ip(64, bytes, rip, DecoderOptions::NONE).decode();
    (!instruction.is_invalid()).then_some(instruction)
}

/// Decodes the instruction at `rip`, copying its bytes with process_vm_readv so that unreadable code
/// (a discarded INIT page, a wild jump) is reported instead of faulting inside the handler.
fn decode_at(rip: u64) -> Option<Instruction> {
    let mut bytes = [0u8; 15];
    let mut read = 0usize;
    // Copy page by page: process_vm_readv stops at the first unreadable page.
    while read < bytes.len() {
        let page_end = ((rip + read as u64) | 0xFFF) + 1;
        let chunk = ((page_end - (rip + read as u64)) as usize).min(bytes.len() - read);
        let local = libc::iovec { iov_base: bytes[read..].as_mut_ptr().cast(), iov_len: chunk };
        let remote = libc::iovec { iov_base: (rip as usize + read) as *mut libc::c_void, iov_len: chunk };
        // SAFETY: reads this process's memory into the local buffer, which has room for `chunk` bytes;
        // unreadable remote memory makes the call fail instead of faulting.
        let copied = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
        if copied <= 0 {
            break;
        }
        read += copied as usize;
    }
    if read == 0 {
        return None;
    }
    decode(&bytes[..read], rip)
}

fn emulate(instruction: &Instruction, registers: &mut [libc::greg_t; 23], kpcr: &Kpcr, rip: u64) -> Emulated {
    match instruction.code() {
        Code::Mov_r64_cr if instruction.op1_register() == Register::CR8 => {
            let Some(slot) = register_slot(instruction.op0_register()) else { return Emulated::Unsupported };
            registers[slot] = i64::from(kpcr.irql());
        }
        Code::Mov_cr_r64 if instruction.op0_register() == Register::CR8 => {
            let Some(slot) = register_slot(instruction.op1_register()) else { return Emulated::Unsupported };
            let value = registers[slot] as u64;
            if value > 15 {
                violations::record("mov cr8", image_map::rva_of(rip), format!("IRQL {value} written to CR8"));
            }
            kpcr.set_irql((value & 0xF) as u8);
        }
        Code::Rdmsr => {
            pmu::reader_executes(kpcr.processor_index());
            let msr = registers[libc::REG_RCX as usize] as u32;
            let processor = kpcr.processor_index();
            if let Err(why) = msr::check_exists(processor, msr) {
                violations::record(
                    "rdmsr",
                    image_map::rva_of(rip),
                    format!("MSR {msr:#x} on processor {processor}: {why}"),
                );
            }
            let value = msr::read(kpcr.processor_index(), msr);
            registers[libc::REG_RAX as usize] = i64::from(value as u32);
            registers[libc::REG_RDX as usize] = i64::from((value >> 32) as u32);
        }
        Code::Wrmsr => {
            pmu::reader_executes(kpcr.processor_index());
            let msr = registers[libc::REG_RCX as usize] as u32;
            let low = registers[libc::REG_RAX as usize] as u64 & 0xFFFF_FFFF;
            let high = registers[libc::REG_RDX as usize] as u64 & 0xFFFF_FFFF;
            if msr::write_faults(kpcr.processor_index(), msr) {
                unhandled_general_protection(rip, kpcr);
            }
            if let Err(why) = msr::write(kpcr.processor_index(), msr, high << 32 | low) {
                violations::record("wrmsr", image_map::rva_of(rip), why);
            }
        }
        Code::Rdpmc => {
            pmu::reader_executes(kpcr.processor_index());
            let ecx = registers[libc::REG_RCX as usize] as u32;
            let processor = kpcr.processor_index();
            let value = pmu::read_pmc(processor, ecx).unwrap_or_else(|| {
                // ECX bit 29 reads IA32_PERF_METRICS (Intel SDM Vol. 2B, RDPMC), intercepted like the MSR.
                let intercepted = ecx & (1 << 29) != 0 && cpuid::perf_metrics_intercepted(processor);
                let why =
                    if intercepted { "is intercepted by the Microsoft hypervisor" } else { "does not exist" };
                violations::record(
                    "rdpmc",
                    image_map::rva_of(rip),
                    format!("counter {ecx:#x} {why} on processor {processor} (#GP)"),
                );
                0
            });
            registers[libc::REG_RAX as usize] = i64::from(value as u32);
            registers[libc::REG_RDX as usize] = i64::from((value >> 32) as u32);
        }
        Code::Cli => kpcr.set_interrupts_enabled(false),
        Code::Sti => kpcr.set_interrupts_enabled(true),
        _ => return Emulated::Unsupported,
    }
    Emulated::Done
}

/// The ucontext slot of a 64-bit general register.
pub(super) fn register_slot(register: Register) -> Option<usize> {
    let slot = match register {
        Register::RAX => libc::REG_RAX,
        Register::RCX => libc::REG_RCX,
        Register::RDX => libc::REG_RDX,
        Register::RBX => libc::REG_RBX,
        Register::RSP => libc::REG_RSP,
        Register::RBP => libc::REG_RBP,
        Register::RSI => libc::REG_RSI,
        Register::RDI => libc::REG_RDI,
        Register::R8 => libc::REG_R8,
        Register::R9 => libc::REG_R9,
        Register::R10 => libc::REG_R10,
        Register::R11 => libc::REG_R11,
        Register::R12 => libc::REG_R12,
        Register::R13 => libc::REG_R13,
        Register::R14 => libc::REG_R14,
        Register::R15 => libc::REG_R15,
        _ => return None,
    };
    Some(slot as usize)
}

/// Reports a fault the double cannot emulate and aborts: a real crash must not loop or pass silently.
fn fatal(rip: u64, address: u64, instruction: Option<&Instruction>, why: &str) -> ! {
    let mut message = String::with_capacity(256);
    let _ = write!(message, "kernel-double: FATAL FAULT: {why}: RIP {rip:#x}");
    match image_map::rva_of(rip) {
        Some(rva) => {
            let _ = write!(message, " (image RVA {rva:#x}{})", image_map::section_note(rip));
        }
        None => message.push_str(" (outside the driver image)"),
    }
    let _ = write!(message, ", address {address:#x}");
    if let Some(rva) = image_map::rva_of(address) {
        let _ = write!(message, " (image RVA {rva:#x}{})", image_map::section_note(address));
    }
    if let Some(instruction) = instruction {
        let _ = write!(message, ", instruction {:?} ({} bytes)", instruction.code(), instruction.len());
    }
    message.push('\n');
    // SAFETY: write(2) of a valid buffer to stderr, then abort: both async-signal-safe.
    unsafe {
        libc::write(2, message.as_ptr().cast(), message.len());
        libc::abort();
    }
}

#[cfg(test)]
mod tests {
    use super::super::enter;

    #[test]
    fn cr8_reads_and_writes_are_emulated() {
        let kpcr = enter(0);
        kpcr.set_irql(2);
        let read: u64;
        // SAFETY: the trap handler emulates the privileged move; it changes only the output register.
        unsafe { std::arch::asm!("mov {}, cr8", out(reg) read, options(nostack)) };
        assert_eq!(read, 2);
        // SAFETY: emulated; sets the virtual IRQL only.
        unsafe { std::arch::asm!("mov cr8, {}", in(reg) 13u64, options(nostack)) };
        assert_eq!(kpcr.irql(), 13);
        kpcr.set_irql(0);
        assert!(kpcr.emulated_instructions() >= 2);
    }
}

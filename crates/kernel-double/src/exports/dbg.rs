//! DbgPrintEx (captured) and KeBugCheckEx (reported, then the process aborts).

use super::call::enter;
use crate::cpu::{HIGH_LEVEL, MAX_DEVICE_LEVEL};
use crate::poison::IgnorePoison;
use std::ffi::CStr;
use std::sync::Mutex;

/// What tests and tools use to steer and inspect this part of the double; the driver never calls it.
pub mod control;

/// One DbgPrintEx call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebugLine {
    pub component: u32,
    pub level: u32,
    pub text: String,
}

static LINES: Mutex<Vec<DebugLine>> = Mutex::new(Vec::new());

/// Reads a NUL-terminated string from driver memory.
///
/// # Safety
/// `pointer` must be null or point to a NUL-terminated string.
unsafe fn c_text(pointer: usize) -> String {
    if pointer == 0 {
        return "(null)".into();
    }
    // SAFETY: by the contract.
    unsafe { CStr::from_ptr(pointer as *const libc::c_char) }.to_string_lossy().into_owned()
}

/// Formats `format` with the variadic `arguments` as the kernel's printf does, for %s, %c, %d, %i,
/// %u, %x, %X, %p and %% with the `l`, `ll` and `I64` size prefixes.
///
/// # Safety
/// Every %s argument must be null or a NUL-terminated string.
unsafe fn format(format: &str, arguments: &[usize]) -> String {
    let mut out = String::new();
    let mut arguments = arguments.iter().copied();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        // Windows is LLP64: `l` is 32 bits, `ll` and `I64` are 64.
        let mut wide = false;
        let mut longs = 0;
        loop {
            match chars.peek() {
                Some('l') => {
                    chars.next();
                    longs += 1;
                    wide |= longs >= 2;
                }
                Some('I') => {
                    chars.next();
                    if chars.peek() == Some(&'6') {
                        chars.next();
                        chars.next();
                    }
                    wide = true;
                }
                Some('h') | Some('w') => {
                    chars.next();
                }
                _ => break,
            }
        }
        let mut next = |pointer: bool| {
            let value = arguments.next().unwrap_or(0);
            if wide || pointer { value as u64 } else { u64::from(value as u32) }
        };
        let signed = |value: u64| if wide { value as i64 } else { i64::from(value as u32 as i32) };
        match chars.next() {
            Some('%') => out.push('%'),
            Some('s') => {
                // SAFETY: %s arguments are strings by the contract.
                out.push_str(&unsafe { c_text(next(true) as usize) })
            }
            Some('c') => out.push(char::from(next(false) as u8)),
            Some('d') | Some('i') => out.push_str(&signed(next(false)).to_string()),
            Some('u') => out.push_str(&next(false).to_string()),
            Some('x') => out.push_str(&format!("{:x}", next(false))),
            Some('X') => out.push_str(&format!("{:X}", next(false))),
            Some('p') => out.push_str(&format!("{:016X}", next(true))),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// `ULONG DbgPrintEx(ULONG ComponentId, ULONG Level, PCSTR Format, ...)`, IRQL <= DIRQL.
///
/// The C variadic call on x64 Windows passes arguments as a fixed-argument call would: the first
/// variadic argument in r9, the next ones in the caller's outgoing stack slots. Declaring six trailing
/// integer parameters reads exactly those slots; only as many as the format consumes are used.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "win64" fn dbg_print_ex(
    component: u32,
    level: u32,
    format_string: usize,
    a1: usize,
    a2: usize,
    a3: usize,
    a4: usize,
    a5: usize,
    a6: usize,
) -> u32 {
    let call = enter("DbgPrintEx", MAX_DEVICE_LEVEL);
    if format_string == 0 {
        call.violation("NULL format".into());
        return 0;
    }
    // SAFETY: the driver passes a NUL-terminated format whose %s arguments are strings.
    let text = unsafe { format(&c_text(format_string), &[a1, a2, a3, a4, a5, a6]) };
    eprint!("[DbgPrintEx {component}/{level}] {text}");
    if !text.ends_with('\n') {
        eprintln!();
    }
    LINES.lock().ignore_poison().push(DebugLine { component, level, text });
    0
}

/// The last bug check, if the driver raised one (the process aborts right after recording it).
static BUG_CHECK: Mutex<Option<[u64; 5]>> = Mutex::new(None);

/// `VOID KeBugCheckEx(ULONG Code, ULONG_PTR P1..P4)`: any IRQL. Prints the code and parameters (and,
/// for pmupcw's panic code "PMUP", the panic location), then aborts the process: a bug check never
/// returns.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn ke_bug_check_ex(code: u32, p1: usize, p2: usize, p3: usize, p4: usize) -> ! {
    let call = enter("KeBugCheckEx", HIGH_LEVEL);
    bug_check(code, [p1, p2, p3, p4], call.caller_rva, call.kpcr.processor_index(), call.kpcr.irql())
}

/// A bug check raised at `caller_rva` of the image on `processor` at `irql`: by the driver
/// (KeBugCheckEx), or by the kernel for an exception the driver did not handle (the trap handler's
/// hook, `crate::cpu::trap::set_bug_check`). Reports it and aborts the process.
pub fn bug_check(
    code: u32,
    [p1, p2, p3, p4]: [usize; 4],
    caller_rva: Option<u64>,
    processor: u32,
    irql: u8,
) -> ! {
    *BUG_CHECK.lock().ignore_poison() = Some([u64::from(code), p1 as u64, p2 as u64, p3 as u64, p4 as u64]);
    let mut message = format!(
        "kernel-double: BUG CHECK {code:#010x} ({p1:#x}, {p2:#x}, {p3:#x}, {p4:#x}) from RVA {caller_rva:#x?} on processor {processor} at IRQL {irql}"
    );
    if code == u32::from_be_bytes(*b"PMUP") && p1 != 0 && p2 < 4096 {
        // SAFETY: pmupcw's panic bug check passes the source file name's address and length.
        let file = unsafe { std::slice::from_raw_parts(p1 as *const u8, p2) };
        message += &format!(": Rust panic at {}:{p3}:{p4}", String::from_utf8_lossy(file));
    }
    eprintln!("{message}");
    std::process::abort();
}

#[cfg(test)]
mod tests {
    use super::format;

    #[test]
    fn formats_the_common_specifiers() {
        let text = c"pmupcw";
        // SAFETY: the %s argument is a NUL-terminated string.
        let line = unsafe {
            format(
                "%s: %d %u %x %lu %I64x %llx %c %%",
                &[text.as_ptr() as usize, -3i64 as usize, 7, 255, 9, 1 << 40, 1 << 33, 65],
            )
        };
        assert_eq!(line, "pmupcw: -3 7 ff 9 10000000000 200000000 A %");
    }
}

//! Everything that differs between the two ways the driver is built, and nothing else.
//!
//! * Default (no WDK, any host): the runtime symbols the WDK's libraries would otherwise supply are
//!   defined here, and debug output goes straight to `DbgPrintEx`.
//! * `wdk` feature (Windows host with the WDK): wdk-build configures the link from build.rs, wdk-sys
//!   links the WDK's kernel libraries, wdk-alloc is the global allocator and `wdk` prints.
//!
//! The panic handler (kernel/bugcheck.rs) is shared: both modes bug-check on panic.

pub use mode::debug_print;

#[cfg(not(feature = "wdk"))]
mod mode {
    use crate::kernel::debug::Level;
    use core::ffi::CStr;
    use ntoskrnl_imports::{DPFLTR_IHVDRIVER_ID, DbgPrintEx};

    // The C memory functions (memcpy, memset, ...) that core calls are imported from ntoskrnl.exe by the
    // ntoskrnl-imports crate; the WDK build gets the same exports from ntoskrnl.lib.

    /// Marks the image as using floating point; MSVC-targeted code generation references it. The WDK's
    /// libraries define it, so it exists only in this build mode.
    #[unsafe(no_mangle)]
    #[used]
    pub static _fltused: i32 = 0;

    core::arch::global_asm!(include_str!("chkstk.asm"));

    /// Sends one line to the kernel debugger.
    pub fn debug_print(level: Level, line: &CStr) {
        // SAFETY: the format is a constant "%s" and the argument a NUL-terminated string that outlives
        // the call, so DbgPrintEx reads only valid memory; it is callable up to DIRQL, which callers
        // respect (see kernel/bugcheck.rs).
        unsafe { DbgPrintEx(DPFLTR_IHVDRIVER_ID, level as u32, c"%s".as_ptr(), line.as_ptr()) };
    }
}

#[cfg(feature = "wdk")]
mod mode {
    compile_error!("the wdk build mode is not wired yet");
}

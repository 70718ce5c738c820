//! Everything that differs between the two ways the driver is built, and nothing else.
//!
//! * Default (no WDK, any host): the runtime symbols the WDK's libraries would otherwise supply are
//!   defined here, and debug output goes to `DbgPrintEx` (bound to ntoskrnl.exe by ntoskrnl-imports,
//!   which also imports the C memory functions core calls).
//! * `wdk` feature (Windows host with the WDK): wdk-build configures the link from build.rs; wdk-sys
//!   links the WDK's kernel libraries and itself defines `_fltused` and the `__CxxFrameHandler*` stubs,
//!   so none of this module's symbols may exist then; wdk-alloc is the global allocator and `wdk` prints.
//!
//! The panic handler (kernel/bugcheck.rs) is shared: both modes bug-check on panic, and wdk-panic is not
//! used.

pub use mode::debug_print;

#[cfg(not(feature = "wdk"))]
mod mode {
    use crate::kernel::debug::Level;
    use crate::text::FixedCString;
    use ntoskrnl_imports::{DPFLTR_IHVDRIVER_ID, DbgPrintEx};

    /// Marks the image as using floating point; MSVC-targeted code generation references it.
    #[unsafe(no_mangle)]
    #[used]
    pub static _fltused: i32 = 0;

    // The stack probe, shared as text with its host test (tests/chkstk.rs).
    core::arch::global_asm!(include_str!("chkstk.asm"));

    /// The MSVC C++/SEH personality routine. The prebuilt `core` was compiled with unwinding, and in an
    /// unoptimised build its unwind tables still name this routine; release builds (LTO, panic=abort)
    /// drop every reference. Nothing in this driver unwinds (panics bug-check), so for any exception the
    /// kernel dispatches through such a frame the answer is what a frame without a matching handler
    /// says: ExceptionContinueSearch.
    #[cfg(debug_assertions)]
    #[unsafe(no_mangle)]
    extern "system" fn __CxxFrameHandler3(
        _exception_record: *mut core::ffi::c_void,
        _establisher_frame: *mut core::ffi::c_void,
        _context: *mut core::ffi::c_void,
        _dispatcher_context: *mut core::ffi::c_void,
    ) -> i32 {
        const EXCEPTION_CONTINUE_SEARCH: i32 = 1;
        EXCEPTION_CONTINUE_SEARCH
    }

    /// Sends one line to the kernel debugger, filtered by level under the IHVDRIVER component.
    pub fn debug_print<const N: usize>(level: Level, line: &FixedCString<N>) {
        // SAFETY: the format is a constant "%s" and the argument a NUL-terminated string that outlives
        // the call, so DbgPrintEx reads only valid memory; it is callable up to DIRQL, which callers
        // respect (see kernel/bugcheck.rs).
        unsafe { DbgPrintEx(DPFLTR_IHVDRIVER_ID, level as u32, c"%s".as_ptr(), line.as_c_str().as_ptr()) };
    }
}

#[cfg(feature = "wdk")]
mod mode {
    use crate::kernel::debug::Level;
    use crate::text::FixedCString;

    /// Pool allocations for `alloc`, through ExAllocatePool2 (non-paged). Usable up to DISPATCH_LEVEL.
    #[global_allocator]
    static GLOBAL_ALLOCATOR: wdk_alloc::WdkAllocator = wdk_alloc::WdkAllocator;

    /// Sends one line to the kernel debugger through wdk's printer (DbgPrint, from a stack buffer).
    /// DbgPrint has no level; the line's own text says what it is.
    pub fn debug_print<const N: usize>(_level: Level, line: &FixedCString<N>) {
        wdk::print!("{}", line.as_str());
    }
}

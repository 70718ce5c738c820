//! Hand-assembled Windows x64 functions run on the host, to exercise the double's trap-and-emulate with
//! the very instructions the driver executes.

/// Copies `code` into a fresh page and makes it executable; returns its address.
pub fn executable(code: &[u8]) -> usize {
    // SAFETY: an anonymous mapping, written while RW, then made RX; never unmapped (test lifetime).
    unsafe {
        let page = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(page, libc::MAP_FAILED);
        std::ptr::copy_nonoverlapping(code.as_ptr(), page.cast::<u8>(), code.len());
        assert_eq!(libc::mprotect(page, 4096, libc::PROT_READ | libc::PROT_EXEC), 0);
        page as usize
    }
}

/// A Windows x64 function of two integer arguments.
pub type Win64Fn = extern "win64" fn(u64, u64) -> u64;

/// `code` as a callable Windows x64 function.
pub fn function(code: &[u8]) -> Win64Fn {
    // SAFETY: the bytes are a complete Windows x64 function ending in `ret`.
    unsafe { std::mem::transmute::<usize, Win64Fn>(executable(code)) }
}

/// `rdmsr` as a function: `rdmsr(msr, _)` returns EDX:EAX (rdmsr (ecx) ; shl rdx, 32 ; or rax, rdx ;
/// ret).
pub fn rdmsr() -> Win64Fn {
    function(&[0x0F, 0x32, 0x48, 0xC1, 0xE2, 0x20, 0x48, 0x09, 0xD0, 0xC3])
}

/// `wrmsr` as a function: `wrmsr(msr, value)` writes `value` (mov rax, rdx ; shr rdx, 32 ; wrmsr
/// (ecx, edx:eax) ; ret).
pub fn wrmsr() -> Win64Fn {
    function(&[0x48, 0x89, 0xD0, 0x48, 0xC1, 0xEA, 0x20, 0x0F, 0x30, 0xC3])
}

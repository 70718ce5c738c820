# __chkstk: the x64 stack probe the compiler calls in the prologue of any function whose frame is a
# page (4 KiB) or larger, with the frame size in RAX. It touches every page of the new frame, from the
# caller's stack pointer downward, one page at a time, so that a frame can never step over a guard
# page into memory that is not the stack: a too-deep stack faults at its guard page instead of
# silently corrupting whatever lies below it.
#
# Contract (Microsoft x64 ABI, "x64 prolog and epilog"): RAX is returned unchanged and no register
# other than R10, R11 and the flags is modified. The probe does not move RSP; the caller subtracts
# RAX itself. Being a leaf that never touches the stack, it needs no unwind data.
#
# Shared, as text, by the driver (kernel/build_mode.rs) and by tests/chkstk.rs, which runs this exact
# code on the host against a guard-paged stack.
    .globl __chkstk
__chkstk:
    lea r10, [rsp + 8]          # the caller's RSP before it called us (skip the return address)
    mov r11, rax                # bytes still to probe
    cmp r11, 0x1000
    jb 2f
1:
    sub r10, 0x1000             # next page down
    test byte ptr [r10], 0      # read it: faults on a guard page or beyond the stack
    sub r11, 0x1000
    cmp r11, 0x1000
    jae 1b
2:
    sub r10, r11                # the last, partial page: the frame's lowest byte
    test byte ptr [r10], 0
    ret

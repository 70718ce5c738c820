//! handler_cost and resident_code_section on synthetic images whose extra section holds hand-assembled
//! code (each instruction's encoding is spelled out next to it) and chosen characteristics.

// tests/rules.rs uses the rest of the synthetic images.
#[allow(dead_code)]
mod synthetic;

use driver_image_checks::{HandlerCost, handler_cost, resident_code_section, section_listing};
use object::pe;
use synthetic::{Section, Spec, build};

/// What build.rs gives the driver's `.pmi` (lld-link `/SECTION:.pmi,ERP`): code, execute, read, not paged.
const RESIDENT_CODE: u32 =
    pe::IMAGE_SCN_CNT_CODE | pe::IMAGE_SCN_MEM_EXECUTE | pe::IMAGE_SCN_MEM_READ | pe::IMAGE_SCN_MEM_NOT_PAGED;

/// A loop over the set bits of rcx, incrementing a counter per bit, as the overflow handler does.
/// 11 instructions: 7 outside the loop (the `nop` aligning it included), 4 in it; then padding.
const BIT_LOOP: &[u8] = &[
    0x53, //                         0x00 push rbx
    0x31, 0xc0, //                   0x01 xor eax, eax
    0x48, 0x85, 0xc9, //             0x03 test rcx, rcx
    0x74, 0x0e, //                   0x06 je 0x16 (forward: not a loop)
    0x90, //                         0x08 nop
    0x48, 0x8d, 0x51, 0xff, //       0x09 lea rdx, [rcx-1]          <- loop
    0xf0, 0x49, 0xff, 0x00, //       0x0d lock inc qword [r8]
    0x48, 0x21, 0xd1, //             0x11 and rcx, rdx
    0x75, 0xf3, //                   0x14 jne 0x09                  <- back
    0x5b, //                         0x16 pop rbx
    0xc3, //                         0x17 ret
    0x0f, 0x1f, 0x00, //             0x18 nop dword [rax]  (padding)
    0xcc, 0xcc, 0xcc, //             0x1b int3 x3          (padding)
];

/// The image with `contents` in a section `name` of `characteristics`.
fn image(name: &'static str, characteristics: u32, contents: &[u8]) -> Vec<u8> {
    let section = Section { name, characteristics, contents: contents.to_vec() };
    build(&Spec { extra_section: Some(section), ..Spec::baseline() }).bytes
}

fn cost(contents: &[u8]) -> Result<HandlerCost, String> {
    handler_cost(&image(".pmi", RESIDENT_CODE, contents), ".pmi")
}

#[test]
fn bit_loop_has_a_four_instruction_body_and_seven_fixed() {
    let expected = HandlerCost {
        section_size: 30,
        instructions: 11,
        loop_body: 4,
        fixed: 7,
        calls: 0,
        indirect_jumps: 0,
        locked: 1,
        returns: 1,
        loop_span: Some((0x09, 0x14)),
    };
    assert_eq!(cost(BIT_LOOP), Ok(expected.clone()));
    assert_eq!(expected.estimate(0), 7);
    assert_eq!(expected.estimate(8), 7 + 8 * 4);
}

/// The raw data is padded with zeros to the file alignment (0x200); `00 00` decodes as
/// `add [rax], al`, so decoding the raw data would count 256 instructions in 512 bytes.
#[test]
fn only_the_virtual_size_is_decoded() {
    let bytes = image(".pmi", RESIDENT_CODE, BIT_LOOP);
    let cost = handler_cost(&bytes, ".pmi").unwrap();
    assert_eq!((cost.section_size, cost.instructions), (30, 11));
}

/// Of two loops, the one closed by the last backward branch is measured.
#[test]
fn the_last_backward_branch_closes_the_measured_loop() {
    let code = [
        0xff, 0xc9, //       0x00 dec ecx        <- first loop
        0x75, 0xfc, //       0x02 jne 0x00
        0xff, 0xca, //       0x04 dec edx        <- second loop
        0xff, 0xc0, //       0x06 inc eax
        0x75, 0xfa, //       0x08 jne 0x04
        0xc3, //             0x0a ret
    ];
    let cost = cost(&code).unwrap();
    assert_eq!((cost.instructions, cost.loop_body, cost.fixed, cost.loop_span), (6, 3, 3, Some((4, 8))));
}

/// `loop` is a conditional branch too, and a branch to itself is a loop of one instruction.
#[test]
fn a_loop_instruction_to_itself_is_a_one_instruction_loop() {
    let code = [
        0xe2, 0xfe, //       0x00 loop 0x00
        0xc3, //             0x02 ret
    ];
    let cost = cost(&code).unwrap();
    assert_eq!((cost.instructions, cost.loop_body, cost.fixed, cost.loop_span), (2, 1, 1, Some((0, 0))));
}

#[test]
fn straight_line_code_has_no_loop() {
    let code = [
        0x31, 0xc0, //       0x00 xor eax, eax
        0xeb, 0x00, //       0x02 jmp 0x04 (unconditional, direct: neither a loop nor an indirect jump)
        0xc3, //             0x04 ret
        0xcc, //             0x05 int3 (padding)
    ];
    let expected =
        HandlerCost { section_size: 6, instructions: 3, fixed: 3, returns: 1, ..HandlerCost::default() };
    assert_eq!(cost(&code), Ok(expected));
}

#[test]
fn every_kind_of_call_is_counted() {
    let code = [
        0x48, 0x83, 0xec, 0x28, //             0x00 sub rsp, 0x28
        0xe8, 0x00, 0x00, 0x00, 0x00, //       0x04 call rel32 (near, direct)
        0xff, 0x15, 0x00, 0x00, 0x00, 0x00, // 0x09 call [rip+0] (near, through memory: an import)
        0xff, 0xd0, //                         0x0f call rax (near, through a register)
        0x48, 0xff, 0x18, //                   0x11 call far [rax] (far, m16:64)
        0x48, 0x83, 0xc4, 0x28, //             0x14 add rsp, 0x28
        0xc3, //                               0x18 ret
    ];
    let cost = cost(&code).unwrap();
    assert_eq!((cost.instructions, cost.calls, cost.indirect_jumps, cost.returns), (7, 4, 0, 1));
}

/// An import thunk (`jmp [rip+x]`) and a jump through a register are indirect jumps; a direct jump is
/// not.
#[test]
fn indirect_jumps_are_counted() {
    let code = [
        0xeb, 0x00, //                         0x00 jmp 0x02
        0xff, 0xe0, //                         0x02 jmp rax
        0xff, 0x25, 0x00, 0x00, 0x00, 0x00, // 0x04 jmp [rip+0]
    ];
    let expected = HandlerCost {
        section_size: 10,
        instructions: 3,
        fixed: 3,
        indirect_jumps: 2,
        ..HandlerCost::default()
    };
    assert_eq!(cost(&code), Ok(expected));
}

#[test]
fn bytes_that_do_not_decode_are_an_error() {
    let code = [
        0x90, //             0x00 nop
        0x06, //             0x01 push es: invalid in 64-bit mode
        0xc3,
    ];
    assert_eq!(cost(&code), Err("section .pmi: no instruction decodes at offset 0x1 (bytes 06 c3)".into()));
}

#[test]
fn a_backward_branch_into_an_instruction_is_an_error() {
    let code = [
        0x48, 0x31, 0xc0, // 0x00 xor rax, rax
        0x75, 0xfc, //       0x03 jne 0x01 (the middle of the xor)
        0xc3,
    ];
    assert_eq!(
        cost(&code),
        Err("section .pmi: the backward branch at offset 0x3 goes to offset 0x1, inside an instruction"
            .into())
    );
}

#[test]
fn a_backward_branch_out_of_the_section_is_an_error() {
    let code = [
        0x75, 0xf0, //       0x00 jne -0x0e (0x10 bytes before the end of the branch)
        0xc3,
    ];
    assert_eq!(
        cost(&code),
        Err("section .pmi: the backward branch at offset 0x0 goes to 0xe bytes before the section".into())
    );
}

#[test]
fn a_missing_section_is_an_error() {
    let bytes = image(".pmi", RESIDENT_CODE, BIT_LOOP);
    assert_eq!(handler_cost(&bytes, ".isr"), Err("the image has no section named .isr".into()));
    assert_eq!(resident_code_section(&bytes, ".isr"), Err("the image has no section named .isr".into()));
}

/// Two sections of one name leave open which one is meant: the extra section named INIT beside the
/// image's own.
#[test]
fn a_duplicated_section_name_is_an_error() {
    let bytes = image("INIT", RESIDENT_CODE, BIT_LOOP);
    assert_eq!(handler_cost(&bytes, "INIT"), Err("the image has 2 sections named INIT".into()));
    assert_eq!(resident_code_section(&bytes, "INIT"), Err("the image has 2 sections named INIT".into()));
}

#[test]
fn an_unparseable_image_is_an_error() {
    let error = handler_cost(b"MZ", ".pmi").unwrap_err();
    assert!(error.starts_with("not a parseable PE image: "), "{error}");
}

#[test]
fn the_listing_marks_the_loop() {
    let listing = section_listing(&image(".pmi", RESIDENT_CODE, BIT_LOOP), ".pmi").unwrap();
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 11, "{listing}");
    let marked: Vec<&str> = lines.iter().filter(|line| line.starts_with('|')).copied().collect();
    assert_eq!(marked.len(), 4, "{listing}");
    assert!(marked[0].ends_with("lea rdx,[rcx-1]"), "{listing}");
    assert!(marked[1].ends_with("lock inc qword ptr [r8]"), "{listing}");
    assert!(marked[3].contains("f3") && marked[3].contains("jne "), "{listing}");
}

// resident_code_section

#[test]
fn execute_read_not_paged_code_is_resident() {
    assert_eq!(resident_code_section(&image(".pmi", RESIDENT_CODE, BIT_LOOP), ".pmi"), Ok(()));
}

/// `characteristics` is RESIDENT_CODE with `add` set and `remove` cleared.
#[track_caller]
fn assert_not_resident(name: &'static str, add: u32, remove: u32, error: &str) {
    let characteristics = (RESIDENT_CODE | add) & !remove;
    assert_eq!(resident_code_section(&image(name, characteristics, BIT_LOOP), name), Err(error.to_string()));
}

const NONE: u32 = 0;

#[test]
fn pageable_code_is_not_resident() {
    assert_not_resident(
        ".pmi",
        NONE,
        pe::IMAGE_SCN_MEM_NOT_PAGED,
        "section .pmi (characteristics 0x60000020) is not IMAGE_SCN_MEM_NOT_PAGED",
    );
}

#[test]
fn discardable_code_is_not_resident() {
    assert_not_resident(
        ".pmi",
        pe::IMAGE_SCN_MEM_DISCARDABLE,
        NONE,
        "section .pmi (characteristics 0x6a000020) is discardable (IMAGE_SCN_MEM_DISCARDABLE)",
    );
}

#[test]
fn writable_code_is_not_resident() {
    assert_not_resident(
        ".pmi",
        pe::IMAGE_SCN_MEM_WRITE,
        NONE,
        "section .pmi (characteristics 0xe8000020) is writable (IMAGE_SCN_MEM_WRITE)",
    );
}

#[test]
fn a_page_named_section_is_not_resident_whatever_its_flags() {
    assert_not_resident(
        "PAGEpmi",
        NONE,
        NONE,
        "section PAGEpmi (characteristics 0x68000020) is named PAGE*, which the kernel pages",
    );
}

#[test]
fn a_data_section_is_not_resident_code() {
    assert_not_resident(
        ".pmi",
        NONE,
        pe::IMAGE_SCN_MEM_EXECUTE | pe::IMAGE_SCN_MEM_READ,
        "section .pmi (characteristics 0x08000020) is not executable (no IMAGE_SCN_MEM_EXECUTE), is not \
         readable (no IMAGE_SCN_MEM_READ)",
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    assert_not_resident(
        "PAGE",
        pe::IMAGE_SCN_MEM_WRITE | pe::IMAGE_SCN_MEM_DISCARDABLE,
        pe::IMAGE_SCN_MEM_NOT_PAGED,
        "section PAGE (characteristics 0xe2000020) is writable (IMAGE_SCN_MEM_WRITE), is discardable \
         (IMAGE_SCN_MEM_DISCARDABLE), is not IMAGE_SCN_MEM_NOT_PAGED, is named PAGE*, which the kernel pages",
    );
}

/// The synthetic image's own INIT section (execute, read, discardable, not NOT_PAGED), laid out like
/// the real driver's, is code the kernel frees after DriverEntry.
#[test]
fn init_is_not_resident() {
    let bytes = image(".pmi", RESIDENT_CODE, BIT_LOOP);
    assert_eq!(
        resident_code_section(&bytes, "INIT"),
        Err("section INIT (characteristics 0x62000020) is discardable (IMAGE_SCN_MEM_DISCARDABLE), is not \
             IMAGE_SCN_MEM_NOT_PAGED"
            .into())
    );
}

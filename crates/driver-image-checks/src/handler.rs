//! Static cost of a code section that holds one interrupt-time routine, such as the driver's PMU
//! overflow handler in `.pmi`, and the checks that such a section stays resident.
//!
//! [`handler_cost`] decodes the section with iced-x86 and counts what bounds the routine's cost
//! without running it: how many instructions it has, how many of them repeat per iteration of its
//! loop, and whether it calls out (a call, or an indirect jump such as an import thunk) at all.
//! [`resident_code_section`] checks the section header: code the kernel can neither page out nor
//! discard, so that running it at raised IRQL cannot fault.

use std::fmt::Write as _;

use goblin::pe::section_table::{
    IMAGE_SCN_MEM_DISCARDABLE, IMAGE_SCN_MEM_EXECUTE, IMAGE_SCN_MEM_NOT_PAGED, IMAGE_SCN_MEM_READ,
    IMAGE_SCN_MEM_WRITE, SectionTable,
};
use iced_x86::{Decoder, DecoderOptions, FlowControl, Formatter, Instruction, IntelFormatter, Mnemonic};

use crate::Image;

/// The kernel's loader makes every section whose name starts with this pageable (`PAGE`, `PAGEKD`,
/// ...), whatever its characteristics say.
pub const PAGEABLE_SECTION_PREFIX: &str = "PAGE";

/// What [`handler_cost`] counts in a code section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HandlerCost {
    /// The section's virtual size: the bytes the linker put there, without the file alignment's
    /// padding.
    pub section_size: u32,
    /// Instructions decoded, without the int3 and nop padding after the last one.
    pub instructions: usize,
    /// Instructions of the loop that the last backward conditional branch closes, from its target to
    /// the branch itself, both included; 0 if the section has no loop.
    pub loop_body: usize,
    /// `instructions - loop_body`: an upper estimate of the instructions run once per call (a
    /// straight-line path through everything outside the loop; early exits run fewer).
    pub fixed: usize,
    /// CALL instructions of any kind: near or far, direct or indirect.
    pub calls: usize,
    /// JMPs through a register or memory (an import thunk is `jmp [rip+x]`).
    pub indirect_jumps: usize,
    /// Instructions with a LOCK prefix: the atomic read-modify-writes. (`xchg` with memory, which is
    /// locked without the prefix, is not counted.)
    pub locked: usize,
    /// Returns (`ret`, `retf`, `iret`, ...).
    pub returns: usize,
    /// Offsets in the section of the loop's first instruction and of its backward branch.
    pub loop_span: Option<(u32, u32)>,
}

impl HandlerCost {
    /// Instructions run by one call whose loop runs `iterations` times (for the overflow handler, once
    /// per set bit of the overflow mask): `fixed + iterations * loop_body`.
    pub fn estimate(&self, iterations: usize) -> usize {
        self.fixed + iterations * self.loop_body
    }
}

/// Decodes the code section `section` of `image` (its virtual size, not the padded raw data) and
/// counts its instructions, loop, calls, indirect jumps, locked instructions and returns.
///
/// Fails if the image cannot be parsed, has no section (or several) of that name, or the section
/// holds bytes that do not decode, or a backward branch whose target is not an instruction of it.
pub fn handler_cost(image: &[u8], section: &str) -> Result<HandlerCost, String> {
    let code = decode_section(image, section)?;
    let instructions = &code.instructions;
    let loop_span = innermost_loop(section, code.ip, instructions)?;
    let loop_body = loop_span.map_or(0, |(first, branch)| branch - first + 1);
    let count = |matches: fn(&Instruction) -> bool| instructions.iter().filter(|&i| matches(i)).count();
    let offset = |index: usize| (instructions[index].ip() - code.ip) as u32;
    Ok(HandlerCost {
        section_size: code.size,
        instructions: instructions.len(),
        loop_body,
        fixed: instructions.len() - loop_body,
        calls: count(|i| matches!(i.flow_control(), FlowControl::Call | FlowControl::IndirectCall)),
        indirect_jumps: count(|i| i.flow_control() == FlowControl::IndirectBranch),
        locked: count(Instruction::has_lock_prefix),
        returns: count(|i| i.flow_control() == FlowControl::Return),
        loop_span: loop_span.map(|(first, branch)| (offset(first), offset(branch))),
    })
}

/// The instructions of `section` as `objdump -d` lists them, one line each: address (image base +
/// RVA), bytes, Intel syntax. The loop [`handler_cost`] finds is marked with `|`, the trailing
/// padding is left out. For a failing check's message and the benchmark's output.
pub fn section_listing(image: &[u8], section: &str) -> Result<String, String> {
    let code = decode_section(image, section)?;
    let span = innermost_loop(section, code.ip, &code.instructions)?;
    let mut formatter = IntelFormatter::new();
    // objdump's numbers: 0x18000d11e, not 000000018000D11Eh.
    let options = formatter.options_mut();
    options.set_hex_prefix("0x");
    options.set_hex_suffix("");
    options.set_uppercase_hex(false);
    options.set_branch_leading_zeros(false);
    options.set_show_branch_size(false);
    let mut listing = String::new();
    for (index, instruction) in code.instructions.iter().enumerate() {
        let start = (instruction.ip() - code.ip) as usize;
        let bytes = &code.bytes[start..start + instruction.len()];
        let hex: Vec<String> = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        let mut text = String::new();
        formatter.format(instruction, &mut text);
        let marker = match span {
            Some((first, branch)) if (first..=branch).contains(&index) => '|',
            _ => ' ',
        };
        // 15 bytes, the longest instruction, take 44 columns.
        writeln!(listing, "{marker} {:x}:  {:<44} {text}", instruction.ip(), hex.join(" ")).unwrap();
    }
    Ok(listing)
}

/// Checks that the section `name` of `image` is code that stays in memory for as long as the driver
/// is loaded: executable, readable, not writable, not discardable, IMAGE_SCN_MEM_NOT_PAGED, and not
/// named PAGE*. On failure says everything that is wrong.
pub fn resident_code_section(image: &[u8], name: &str) -> Result<(), String> {
    let image = Image::parse(image).map_err(|error| format!("not a parseable PE image: {error}"))?;
    let section = only_section(&image, name)?;
    let characteristics = section.characteristics;
    let has = |flag: u32| characteristics & flag != 0;
    let mut problems = Vec::new();
    if !has(IMAGE_SCN_MEM_EXECUTE) {
        problems.push("is not executable (no IMAGE_SCN_MEM_EXECUTE)");
    }
    if !has(IMAGE_SCN_MEM_READ) {
        problems.push("is not readable (no IMAGE_SCN_MEM_READ)");
    }
    if has(IMAGE_SCN_MEM_WRITE) {
        problems.push("is writable (IMAGE_SCN_MEM_WRITE)");
    }
    if has(IMAGE_SCN_MEM_DISCARDABLE) {
        problems.push("is discardable (IMAGE_SCN_MEM_DISCARDABLE)");
    }
    if !has(IMAGE_SCN_MEM_NOT_PAGED) {
        problems.push("is not IMAGE_SCN_MEM_NOT_PAGED");
    }
    if name.starts_with(PAGEABLE_SECTION_PREFIX) {
        problems.push("is named PAGE*, which the kernel pages");
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(format!("section {name} (characteristics {characteristics:#010x}) {}", problems.join(", ")))
}

/// A section's bytes and their decoding.
struct DecodedSection<'a> {
    /// The address of the section's first byte: image base + RVA.
    ip: u64,
    /// The virtual size.
    size: u32,
    bytes: &'a [u8],
    /// Without the trailing padding.
    instructions: Vec<Instruction>,
}

fn decode_section<'a>(bytes: &'a [u8], name: &str) -> Result<DecodedSection<'a>, String> {
    let image = Image::parse(bytes).map_err(|error| format!("not a parseable PE image: {error}"))?;
    let section = only_section(&image, name)?;
    let raw = section.size_of_raw_data;
    // lld-link and link.exe set the virtual size; a zero one means "the raw size" (as in an object).
    let size = if section.virtual_size == 0 { raw } else { section.virtual_size };
    if size > raw {
        return Err(format!(
            "section {name}: its virtual size {size:#x} exceeds its {raw:#x} bytes in the file (the rest \
             is zero fill, not code)"
        ));
    }
    let start = section.pointer_to_raw_data as usize;
    let code = bytes.get(start..start + size as usize).ok_or_else(|| {
        format!("section {name}: its bytes [{start:#x}, +{size:#x}) extend past the end of the file")
    })?;
    let ip = image.pe.image_base + u64::from(section.virtual_address);

    let mut instructions = Vec::new();
    for instruction in Decoder::with_ip(64, code, ip, DecoderOptions::NONE).iter() {
        if instruction.is_invalid() {
            let offset = (instruction.ip() - ip) as usize;
            let rest: Vec<String> =
                code[offset..].iter().take(15).map(|byte| format!("{byte:02x}")).collect();
            return Err(format!(
                "section {name}: no instruction decodes at offset {offset:#x} (bytes {})",
                rest.join(" ")
            ));
        }
        instructions.push(instruction);
    }
    while instructions.last().is_some_and(|last| matches!(last.mnemonic(), Mnemonic::Int3 | Mnemonic::Nop)) {
        instructions.pop();
    }
    Ok(DecodedSection { ip, size, bytes: code, instructions })
}

/// The one section called `name`: two of them would leave open which one a check is about.
fn only_section<'a>(image: &'a Image<'_>, name: &str) -> Result<&'a SectionTable, String> {
    let mut named = image.pe.sections.iter().filter(|section| section.name().ok() == Some(name));
    match (named.next(), named.count()) {
        (None, _) => Err(format!("the image has no section named {name}")),
        (Some(section), 0) => Ok(section),
        (Some(_), others) => Err(format!("the image has {} sections named {name}", others + 1)),
    }
}

/// Indices of the first instruction and of the branch of the loop closed by the last backward
/// conditional branch (`jcc`, `loop`, `jrcxz` to an address at or before its own), or `None`. `ip` is
/// the address of the section's first byte.
fn innermost_loop(
    name: &str,
    ip: u64,
    instructions: &[Instruction],
) -> Result<Option<(usize, usize)>, String> {
    let backward = instructions.iter().rposition(|instruction| {
        instruction.flow_control() == FlowControl::ConditionalBranch
            && instruction.near_branch_target() <= instruction.ip()
    });
    let Some(branch) = backward else {
        return Ok(None);
    };
    let target = instructions[branch].near_branch_target();
    if let Ok(first) = instructions[..=branch].binary_search_by_key(&target, Instruction::ip) {
        return Ok(Some((first, branch)));
    }
    let at = instructions[branch].ip() - ip;
    let to = match target.checked_sub(ip) {
        Some(offset) => format!("offset {offset:#x}, inside an instruction"),
        None => format!("{:#x} bytes before the section", ip - target),
    };
    Err(format!("section {name}: the backward branch at offset {at:#x} goes to {to}"))
}

//! The exports check their documented maximum IRQL and name the driver's call site: a collect callback
//! run at DISPATCH_LEVEL (PCW calls it at PASSIVE_LEVEL; the double raises it on purpose) makes the real
//! driver call PcwAddInstance above APC_LEVEL, and the violation names PcwAddInstance and an RVA that
//! follows the driver's indirect call of the import (`call [rip+disp32]` through the import table, or
//! `call reg` where the compiler kept the import's address in a register).

use crate::common;

use kernel_double::control::pcw;
use kernel_double::cpu::{APC_LEVEL, DISPATCH_LEVEL, PASSIVE_LEVEL};
use kernel_double::report::Report;
use kernel_double::status::STATUS_SUCCESS;
use kernel_double::violations;

#[test]
fn pcw_add_instance_above_apc_level_is_caught_with_its_call_site() {
    let mut driver = common::load();
    assert_eq!(driver.driver_entry(), STATUS_SUCCESS);

    // APC_LEVEL is allowed.
    pcw::set_callback_irql(APC_LEVEL);
    let (status, instances) = pcw::collect("Hardware Counters", &pcw::Query::default()).unwrap();
    assert_eq!((status, instances.len()), (STATUS_SUCCESS, 4));
    assert_eq!(violations::all(), []);

    pcw::set_callback_irql(DISPATCH_LEVEL);
    let (_, instances) = pcw::collect("Hardware Counters", &pcw::Query::default()).unwrap();
    assert_eq!(instances.len(), 4, "the double records violations and carries on");
    pcw::set_callback_irql(PASSIVE_LEVEL);

    let found = violations::take();
    let add_instance: Vec<_> = found.iter().filter(|violation| violation.at == "PcwAddInstance").collect();
    assert_eq!(add_instance.len(), 4, "{found:#?}");
    let text = driver.image().sections().iter().find(|section| section.name == ".text").expect(".text");
    for violation in &add_instance {
        assert!(violation.message.contains("IRQL 2, above its maximum 1"), "{violation}");
        let rva = violation.caller_rva.expect("the call site is known") as usize;
        assert!(rva >= text.rva && rva < text.rva + text.length, "{violation} is not in .text");
        assert!(
            ends_with_an_indirect_call(driver.image().base(), rva),
            "{violation}: no indirect call before the return address"
        );
    }

    assert!(driver.unload());
    let report = Report::now();
    assert!(report.is_clean(), "{report}");
}

/// Whether the instruction that ends just before `rva` is an indirect near call (`FF /2`): decoded
/// from each start a call of that form can have (2 to 7 bytes back), so that the call is found
/// whatever addressing the compiler chose.
fn ends_with_an_indirect_call(image_base: usize, rva: usize) -> bool {
    use iced_x86::{Decoder, DecoderOptions, Mnemonic, OpKind};
    (2..=7).any(|length| {
        // SAFETY: rva - 7 .. rva lies in the mapped, readable .text (the checked call site is inside it,
        // past the section's first bytes).
        let bytes = unsafe { std::slice::from_raw_parts((image_base + rva - length) as *const u8, length) };
        let mut decoder = Decoder::with_ip(64, bytes, (rva - length) as u64, DecoderOptions::NONE);
        let instruction = decoder.decode();
        !instruction.is_invalid()
            && instruction.len() == length
            && instruction.mnemonic() == Mnemonic::Call
            && matches!(instruction.op0_kind(), OpKind::Register | OpKind::Memory)
    })
}

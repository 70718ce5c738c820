//! How much stack each function of an image reserves when it is entered: the prologue's pushes and
//! allocation as the image's unwind information records them (Microsoft Learn, "x64 exception
//! handling": UWOP_PUSH_NONVOL 8 bytes, UWOP_ALLOC_SMALL / UWOP_ALLOC_LARGE their size), with each
//! function's name and address from the image's PDB. Kernel stacks are small (24 KiB on x64), so a
//! function that runs in a caller's thread must keep its frame small. [`functions`] lists the same
//! procedures with their code size, for a size budget to name what the code bytes are.

use std::fs::File;
use std::path::Path;

use goblin::pe::PE;
use goblin::pe::exception::UnwindOperation;
use pdb::FallibleIterator;

/// One function and the stack its prologue reserves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The PDB's (demangled) name.
    pub name: String,
    pub rva: u32,
    /// Bytes below the return address: pushed registers and the fixed allocation.
    pub bytes: u32,
}

/// Every procedure the PDB at `pdb_path` names that has unwind information in `image`, largest frame
/// first.
pub fn stack_frames(image: &[u8], pdb_path: &Path) -> Result<Vec<Frame>, String> {
    let pe = PE::parse(image).map_err(|error| format!("image: {error}"))?;
    let exceptions = pe.exception_data.as_ref().ok_or("the image has no exception directory")?;
    let mut frames = Vec::new();
    for Function { name, rva, .. } in
        procedures(pdb_path).map_err(|error| format!("{}: {error}", pdb_path.display()))?
    {
        let Some(function) = exceptions.find_function(rva).map_err(|error| error.to_string())? else {
            continue;
        };
        if function.begin_address != rva {
            continue;
        }
        let info = exceptions.get_unwind_info(function, &pe.sections).map_err(|error| error.to_string())?;
        let mut bytes = 0;
        for code in info.unwind_codes() {
            match code.map_err(|error| error.to_string())?.operation {
                UnwindOperation::PushNonVolatile(_) => bytes += 8,
                UnwindOperation::Alloc(size) => bytes += size,
                _ => {}
            }
        }
        frames.push(Frame { name, rva, bytes });
    }
    frames.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.rva.cmp(&b.rva)));
    Ok(frames)
}

/// One procedure of the image, as its PDB describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// The PDB's (demangled) name.
    pub name: String,
    pub rva: u32,
    /// Its code's length in bytes (the procedure symbol's `len`).
    pub bytes: u32,
}

/// Every procedure the PDB at `pdb_path` names, largest first.
pub fn functions(pdb_path: &Path) -> Result<Vec<Function>, String> {
    let mut functions = procedures(pdb_path).map_err(|error| format!("{}: {error}", pdb_path.display()))?;
    functions.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.rva.cmp(&b.rva)));
    Ok(functions)
}

/// Every procedure symbol of every module of the PDB.
fn procedures(pdb_path: &Path) -> pdb::Result<Vec<Function>> {
    let mut pdb = pdb::PDB::open(File::open(pdb_path)?)?;
    let address_map = pdb.address_map()?;
    let debug_information = pdb.debug_information()?;
    let mut modules = debug_information.modules()?;
    let mut procedures = Vec::new();
    while let Some(module) = modules.next()? {
        let Some(info) = pdb.module_info(&module)? else { continue };
        let mut symbols = info.symbols()?;
        while let Some(symbol) = symbols.next()? {
            if let Ok(pdb::SymbolData::Procedure(procedure)) = symbol.parse()
                && let Some(rva) = procedure.offset.to_rva(&address_map)
            {
                let name = procedure.name.to_string().into_owned();
                procedures.push(Function { name, rva: rva.0, bytes: procedure.len });
            }
        }
    }
    Ok(procedures)
}

//! probe
use super::*;

#[test]
fn probe() {
    let text = fs::read_to_string("/tmp/probe/in.ps1").unwrap();
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&tree_sitter_powershell::LANGUAGE.into()).unwrap();
    let tree = parser.parse(&text, None).unwrap();
    fs::write("/tmp/probe/out.txt", tree.root_node().to_sexp()).unwrap();
}

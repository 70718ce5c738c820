//! No import circle joins more than two files, in the driver or any host crate: a circle of three or
//! more is a knot no module of it can be read, tested or moved without the others (two files, a
//! module and a helper that calls back, stay readable as a pair).
//!
//! The graph is of files: a file imports the file of every module it names a path into, through a
//! `use` line or a path in its code (`crate::`, `super::`, `self::`, a child module declared with
//! `mod`, or a name a `use` line bound), each resolved through the `mod` declarations (`x.rs` or
//! `x/mod.rs`, `#[path]` too) to the deepest module the path names: an item imported through a facade
//! that re-exports it is imported from the facade, so modules below a facade import each other
//! directly. A `mod` line alone draws no arrow, and test code (items under `#[cfg(test)]`) is aside.
//! A circle is a strongly connected component of the graph (Tarjan's algorithm).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    /// `::`
    Colons,
    Str(String),
    Punct(char),
}

/// Rust source as tokens, without comments, character literals and lifetimes.
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied().unwrap_or('\0');
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == '*' {
            i = skip_block_comment(&chars, i);
        } else if c == '"' {
            let (string, end) = string(&chars, i + 1);
            out.push(Token::Str(string));
            i = end;
        } else if c == '\'' {
            i = skip_quote(&chars, i);
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let ident: String = chars[start..i].iter().collect();
            if matches!(ident.as_str(), "r" | "br" | "b" | "c" | "cr")
                && matches!(chars.get(i), Some('"' | '#'))
            {
                i = skip_raw_string(&chars, i);
                out.push(Token::Str(String::new()));
            } else {
                out.push(Token::Ident(ident));
            }
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c == ':' && next == ':' {
            out.push(Token::Colons);
            i += 2;
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

fn skip_block_comment(chars: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < chars.len() {
        if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// The string whose text starts at `i` (after its `"`), and the index after its closing `"`.
fn string(chars: &[char], mut i: usize) -> (String, usize) {
    let mut text = String::new();
    while i < chars.len() && chars[i] != '"' {
        if chars[i] == '\\' {
            i += 1;
        }
        text.push(chars[i]);
        i += 1;
    }
    (text, i + 1)
}

/// Skips a raw string whose `#`s or `"` start at `i`.
fn skip_raw_string(chars: &[char], mut i: usize) -> usize {
    let hashes = chars[i..].iter().take_while(|&&c| c == '#').count();
    i += hashes + 1;
    let close: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
    while i < chars.len() && !chars[i..].starts_with(&close) {
        i += 1;
    }
    i + close.len()
}

/// Skips a character literal or a lifetime starting at the `'` at `i`.
fn skip_quote(chars: &[char], i: usize) -> usize {
    match (chars.get(i + 1), chars.get(i + 2)) {
        (Some('\\'), _) => i + 2 + chars[i + 2..].iter().position(|&c| c == '\'').map_or(0, |end| end + 1),
        (Some(_), Some('\'')) => i + 3,
        _ => i + 1,
    }
}

/// What a file says about modules and paths, each with the inline modules (`mod x { .. }`) it is in.
#[derive(Debug, Default)]
struct Scan {
    /// Child modules declared with `mod x;`: (inline modules, name, its `#[path]`).
    children: Vec<(Vec<String>, String, Option<String>)>,
    /// Inline modules (`mod x { .. }`), as their path below the file's module.
    inline: Vec<Vec<String>>,
    /// `use` paths: (inline modules, path, the name it binds).
    uses: Vec<(Vec<String>, Vec<String>, Option<String>)>,
    /// Other paths of two or more segments: (inline modules, path).
    paths: Vec<(Vec<String>, Vec<String>)>,
}

fn ident(token: Option<&Token>) -> Option<&str> {
    match token {
        Some(Token::Ident(name)) => Some(name),
        _ => None,
    }
}

/// Whether the attribute whose `#` is at `i` is `#[cfg(..)]` of test code; and the index after it.
fn attribute(tokens: &[Token], i: usize) -> (bool, Option<String>, usize) {
    let mut end = i + 2;
    let mut depth = 1;
    while end < tokens.len() && depth > 0 {
        match tokens[end] {
            Token::Punct('[') => depth += 1,
            Token::Punct(']') => depth -= 1,
            _ => {}
        }
        end += 1;
    }
    let inner = &tokens[i + 2..end.saturating_sub(1)];
    let words: Vec<&str> = inner.iter().filter_map(|token| ident(Some(token))).collect();
    let test = words.first() == Some(&"cfg")
        && words.contains(&"test")
        && !words.windows(2).any(|pair| pair == ["not", "test"]);
    let path = match inner {
        [Token::Ident(path), Token::Punct('='), Token::Str(file)] if path == "path" => Some(file.clone()),
        _ => None,
    };
    (test, path, end)
}

/// The index after the item starting at `i`: its `;` or its `{ .. }` block, whichever comes first.
fn skip_item(tokens: &[Token], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < tokens.len() {
        match tokens[i] {
            Token::Punct('(' | '[') => depth += 1,
            Token::Punct(')' | ']') => depth -= 1,
            Token::Punct(';') if depth == 0 => return i + 1,
            Token::Punct('{') if depth == 0 => return matching_brace(tokens, i) + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

fn matching_brace(tokens: &[Token], open: usize) -> usize {
    let mut depth = 0;
    for (at, token) in tokens.iter().enumerate().skip(open) {
        match token {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return at;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

/// The paths of a `use` tree starting at `i` below `prefix`, each with the name it binds.
fn use_tree(
    tokens: &[Token],
    i: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let mut path = prefix;
    loop {
        match tokens.get(*i) {
            Some(Token::Ident(name)) => {
                path.push(name.clone());
                *i += 1;
                if tokens.get(*i) == Some(&Token::Colons) {
                    *i += 1;
                    continue;
                }
                if path.last().is_some_and(|last| last == "self") {
                    path.pop();
                }
                let mut binds = path.last().cloned();
                if ident(tokens.get(*i)) == Some("as") {
                    binds = ident(tokens.get(*i + 1)).map(str::to_string);
                    *i += 2;
                }
                out.push((path, binds));
                return;
            }
            Some(Token::Punct('*')) => {
                *i += 1;
                out.push((path, None));
                return;
            }
            Some(Token::Punct('{')) => {
                *i += 1;
                while !matches!(tokens.get(*i), Some(Token::Punct('}')) | None) {
                    use_tree(tokens, i, path.clone(), out);
                    if tokens.get(*i) == Some(&Token::Punct(',')) {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            // A leading `::` names an external crate.
            _ => {
                *i += 1;
                return;
            }
        }
    }
}

fn scan(tokens: &[Token]) -> Scan {
    let mut scan = Scan::default();
    // The inline modules the scan is in, with the brace depth each closes at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let (mut depth, mut path_attribute, mut i) = (0, None, 0);
    let here = |inline: &[(String, usize)]| inline.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>();
    while i < tokens.len() {
        match &tokens[i] {
            Token::Punct('#') if matches!(tokens.get(i + 1), Some(Token::Punct('['))) => {
                let (test, path, end) = attribute(tokens, i);
                i = if test { skip_item(tokens, end) } else { end };
                path_attribute = path.or(path_attribute);
                continue;
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some(name), Some(after)) = (ident(tokens.get(i + 1)), tokens.get(i + 2)) {
                    if after == &Token::Punct(';') {
                        scan.children.push((here(&inline), name.to_string(), path_attribute.take()));
                        i += 3;
                        continue;
                    }
                    inline.push((name.to_string(), depth));
                    scan.inline.push(here(&inline));
                    i += 2;
                    continue;
                }
            }
            // A visibility's path (`pub(in crate::a)`) says who may see an item, not what it uses.
            Token::Ident(word)
                if word == "pub"
                    && tokens.get(i + 1) == Some(&Token::Punct('('))
                    && ident(tokens.get(i + 2)) == Some("in") =>
            {
                while i < tokens.len() && tokens[i] != Token::Punct(')') {
                    i += 1;
                }
            }
            Token::Ident(word) if word == "use" => {
                let mut uses = Vec::new();
                i += 1;
                use_tree(tokens, &mut i, Vec::new(), &mut uses);
                let at = here(&inline);
                scan.uses.extend(uses.into_iter().map(|(path, binds)| (at.clone(), path, binds)));
                continue;
            }
            Token::Ident(first)
                if tokens.get(i + 1) == Some(&Token::Colons)
                    && (i == 0 || tokens[i - 1] != Token::Colons) =>
            {
                let mut path = vec![first.clone()];
                while tokens.get(i + 1) == Some(&Token::Colons)
                    && let Some(next) = ident(tokens.get(i + 2))
                {
                    path.push(next.to_string());
                    i += 2;
                }
                scan.paths.push((here(&inline), path));
            }
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|(_, closes)| *closes == depth) {
                    inline.pop();
                }
            }
            Token::Punct(';') => path_attribute = None,
            _ => {}
        }
        i += 1;
    }
    scan
}

/// One crate's modules: module path -> file, and each file's module path and scan.
#[derive(Default)]
struct Crate {
    modules: HashMap<Vec<String>, PathBuf>,
    files: BTreeMap<PathBuf, (Vec<String>, Scan)>,
}

impl Crate {
    /// The crate whose root file is `root` (a `lib.rs`, `main.rs` or `bin/*.rs`).
    fn load(root: &Path) -> Crate {
        let mut krate = Crate::default();
        krate.add(root.to_path_buf(), Vec::new(), true);
        krate
    }

    fn add(&mut self, file: PathBuf, module: Vec<String>, owns_folder: bool) {
        let text = fs::read_to_string(&file).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        let scan = scan(&tokens(&text));
        self.modules.insert(module.clone(), file.clone());
        for inline in &scan.inline {
            self.modules.insert([module.clone(), inline.clone()].concat(), file.clone());
        }
        let folder = file.parent().expect("a file in a folder").to_path_buf();
        let children_folder =
            if owns_folder { folder.clone() } else { folder.join(file.file_stem().expect("a file name")) };
        for (inline, name, path) in &scan.children {
            let (child, owns) = match path {
                Some(path) => (folder.join(path), path.ends_with("mod.rs")),
                None => {
                    let below = inline.iter().fold(children_folder.clone(), |folder, name| folder.join(name));
                    let flat = below.join(format!("{name}.rs"));
                    if flat.exists() { (flat, false) } else { (below.join(name).join("mod.rs"), true) }
                }
            };
            self.add(child, [module.clone(), inline.clone(), vec![name.clone()]].concat(), owns);
        }
        self.files.insert(file, (module, scan));
    }

    /// The module path `path` names from module `at` (`bound`: names the file's `use` lines bind).
    fn absolute(
        &self,
        at: &[String],
        path: &[String],
        bound: &HashMap<String, Vec<String>>,
    ) -> Option<Vec<String>> {
        let (first, rest) = path.split_first()?;
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some([at, rest].concat()),
            "super" => {
                let supers = path.iter().take_while(|segment| *segment == "super").count();
                let base = at.get(..at.len().checked_sub(supers)?)?;
                Some([base, &path[supers..]].concat())
            }
            _ if self.modules.contains_key(&[at, std::slice::from_ref(first)].concat()) => {
                Some([at, path].concat())
            }
            _ => bound.get(first).map(|binding| [binding.as_slice(), rest].concat()),
        }
    }

    /// The file of the deepest module `path` (absolute) names.
    fn file_of(&self, path: &[String]) -> &Path {
        (0..=path.len()).rev().find_map(|len| self.modules.get(&path[..len])).expect("the crate root")
    }

    /// Each file and the files it imports.
    fn imports(&self) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
        let mut graph = BTreeMap::new();
        for (file, (module, scan)) in &self.files {
            let mut bound = HashMap::new();
            let mut targets = BTreeSet::new();
            for (inline, path, binds) in &scan.uses {
                let at = [module.as_slice(), inline].concat();
                if let Some(absolute) = self.absolute(&at, path, &bound) {
                    targets.insert(self.file_of(&absolute).to_path_buf());
                    if let Some(name) = binds {
                        bound.insert(name.clone(), absolute);
                    }
                }
            }
            for (inline, path) in &scan.paths {
                let at = [module.as_slice(), inline].concat();
                if let Some(absolute) = self.absolute(&at, path, &bound) {
                    targets.insert(self.file_of(&absolute).to_path_buf());
                }
            }
            targets.remove(file);
            graph.insert(file.clone(), targets);
        }
        graph
    }
}

/// The strongly connected components of `graph` of more than `limit` files (Tarjan's algorithm).
fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>, limit: usize) -> Vec<Vec<PathBuf>> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: HashMap<&'a Path, (usize, usize)>,
        stack: Vec<&'a Path>,
        components: Vec<Vec<PathBuf>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, file: &'a Path) -> usize {
            let order = self.index.len();
            self.index.insert(file, (order, order));
            self.stack.push(file);
            let mut low = order;
            for next in self.graph.get(file).into_iter().flatten() {
                let next_low = match self.index.get(next.as_path()) {
                    None => self.visit(next),
                    Some(&(next_order, _)) if self.stack.contains(&next.as_path()) => next_order,
                    Some(_) => continue,
                };
                low = low.min(next_low);
            }
            self.index.insert(file, (order, low));
            if low == order {
                let at = self.stack.iter().position(|&on| on == file).expect("on the stack");
                self.components
                    .push(self.stack.split_off(at).iter().map(|file| file.to_path_buf()).collect());
            }
            low
        }
    }
    let mut tarjan = Tarjan { graph, index: HashMap::new(), stack: Vec::new(), components: Vec::new() };
    for file in graph.keys() {
        if !tarjan.index.contains_key(file.as_path()) {
            tarjan.visit(file);
        }
    }
    tarjan.components.retain(|component| component.len() > limit);
    tarjan.components
}

/// The crate roots under a `src/` folder: `lib.rs`, `main.rs`, `bin/*.rs` and `bin/*/main.rs`.
fn crate_roots(src: &Path) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["lib.rs", "main.rs"].iter().map(|root| src.join(root)).collect();
    if let Ok(bins) = fs::read_dir(src.join("bin")) {
        roots.extend(
            bins.flatten()
                .map(|bin| if bin.path().is_dir() { bin.path().join("main.rs") } else { bin.path() }),
        );
    }
    roots.retain(|root| root.is_file());
    roots
}

/// Folders whose circle stands while the code is restructured elsewhere: `src/session/`, whose
/// `mod.rs` facade, `client.rs`, `platform.rs` and the `#[path]` annexes of `client.rs` import each other
/// (the circle that the session's split into ordinary modules removes). A circle is let stand only if
/// every file of it is under one of these folders, and `every_standing_circle_still_stands` fails once
/// none is: then the entry goes.
const STANDING: &[&str] = &[];

/// The circles of more than two files in the crates of every source folder, each as a line naming its
/// files: (those that break the rule, those under a `STANDING` folder).
fn circles_of(root: &Path) -> (Vec<String>, Vec<String>) {
    let (mut breaking, mut standing) = (Vec::new(), Vec::new());
    for src in super::source_dirs(root) {
        for crate_root in crate_roots(&src) {
            for circle in circles(&Crate::load(&crate_root).imports(), 2) {
                let files: Vec<String> = circle
                    .iter()
                    .map(|file| file.strip_prefix(root).unwrap_or(file).display().to_string())
                    .collect();
                let line = format!("{} files: {}", files.len(), files.join(", "));
                let stands = STANDING.iter().any(|folder| files.iter().all(|file| file.starts_with(folder)));
                if stands { standing.push(line) } else { breaking.push(line) }
            }
        }
    }
    breaking.sort();
    (breaking, standing)
}

#[test]
fn no_import_circle_joins_more_than_two_files() {
    let (circles, _) = circles_of(super::root());
    assert!(circles.is_empty(), "import circles of more than two files:\n{}", circles.join("\n"));
}

#[test]
fn every_standing_circle_still_stands() {
    let (_, standing) = circles_of(super::root());
    for folder in STANDING {
        assert!(
            standing.iter().any(|circle| circle.contains(folder)),
            "no import circle is left under {folder}: delete it from STANDING"
        );
    }
}

#[test]
fn the_graph_reads_the_double_as_it_is() {
    let double = Crate::load(&super::root().join("crates/kernel-double/src/lib.rs"));
    let graph = double.imports();
    let src = super::root().join("crates/kernel-double/src");
    let imports = |from: &str, to: &str| graph[&src.join(from)].contains(&src.join(to));
    assert!(graph.len() > 40, "only {} files", graph.len());
    // A `use` group, a path through a module a `use` bound, a `crate::` path in code, a child module
    // named in code, and a facade's re-export.
    assert!(imports("cpu/trap.rs", "cpu/kpcr.rs"));
    assert!(imports("cpu/frequency.rs", "cpu/pmu/workload.rs"));
    assert!(imports("cpu/pmu/delivery.rs", "violations.rs"));
    assert!(imports("cpu/mod.rs", "cpu/trap.rs"));
    assert!(imports("cpu/pmu/mod.rs", "cpu/pmu/delivery.rs"));
    assert!(!imports("cpu/pmu/delivery.rs", "cpu/pmu/mod.rs"));
}

/// Writes `files` (path, text) under a fresh folder and returns its circles of more than two files.
fn circles_in(name: &str, files: &[(&str, &str)]) -> Vec<Vec<String>> {
    let root = std::env::temp_dir().join(format!("pmupcw-imports-{name}-{}", std::process::id()));
    for (path, text) in files {
        fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
        fs::write(root.join(path), text).unwrap();
    }
    let found = circles(&Crate::load(&root.join("lib.rs")).imports(), 2);
    fs::remove_dir_all(&root).unwrap();
    let mut found: Vec<Vec<String>> = found
        .into_iter()
        .map(|circle| {
            let mut files: Vec<String> =
                circle.iter().map(|file| file.strip_prefix(&root).unwrap().display().to_string()).collect();
            files.sort();
            files
        })
        .collect();
    found.sort();
    found
}

#[test]
fn a_circle_of_three_files_is_named() {
    // a -> b by a `use` and a path through the name it binds, b -> c by a `super::` path, c -> a by a
    // renamed `use`; c calls its child e, which does not call back. d names a in a comment, a string
    // and test code only, so it stays out of the circle though a imports it.
    let found = circles_in(
        "three",
        &[
            ("lib.rs", "mod a;\n#[path = \"other/b_file.rs\"]\nmod b;\nmod c;\nmod d;\n"),
            ("a/mod.rs", "use crate::b;\nuse crate::d::d;\npub fn a() { b::b(); d(); }\n"),
            ("other/b_file.rs", "pub fn b() { super::c::c(); }\n"),
            ("c.rs", "mod e;\nuse crate::a::a as go;\npub fn c() { go(); e::f(); }\n"),
            ("c/e.rs", "pub fn f() {}\n"),
            (
                "d.rs",
                concat!(
                    "// crate::a::a\npub fn d() { let _ = \"crate::a::a\"; let _ = '\"'; }\n",
                    "#[cfg(test)]\nmod tests { use crate::a; }\n",
                ),
            ),
        ],
    );
    assert_eq!(found, [["a/mod.rs", "c.rs", "other/b_file.rs"]]);
}

#[test]
fn a_visibility_path_is_not_an_import() {
    // b and c each show an item to a alone and import nothing: no circle.
    let circles = circles_in(
        "visibility",
        &[
            ("lib.rs", "mod a;\n"),
            ("a/mod.rs", "mod b;\nmod c;\nuse b::B;\nuse c::C;\n"),
            ("a/b.rs", "pub(in crate::a) struct B;\nuse super::c::C;\n"),
            ("a/c.rs", "pub(in crate::a) struct C;\n"),
        ],
    );
    assert!(circles.is_empty(), "{circles:?}");
}

#[test]
fn a_module_and_its_helper_may_call_each_other() {
    let found = circles_in(
        "pair",
        &[
            ("lib.rs", "mod a;\n"),
            ("a.rs", "mod helper;\npub struct A;\npub fn a() { helper::h(); }\n"),
            ("a/helper.rs", "use super::A;\npub fn h() {}\n#[cfg(test)]\nmod tests { use crate::a; }\n"),
        ],
    );
    assert!(found.is_empty(), "{found:?}");
}

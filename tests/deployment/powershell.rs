//! The PowerShell scripts read with a real PowerShell grammar: tree-sitter-powershell (the grammar
//! Airbus CERT publishes for tree-sitter, crates.io `tree-sitter-powershell`).
//!
//! - every `.ps1`/`.psm1` in the repository parses without an error or a missing node, and a mutated
//!   copy with an unclosed brace, or with a stray token, does not. The grammar takes numeric
//!   multipliers in lower case only (`1mb`; PowerShell takes any case), so the scripts write them so;
//! - no script reads localized text: no `sc.exe query`/`qc` (its STATE label is translated), no
//!   bcdedit (its `/enum` text is translated), and no pattern match on the output of typeperf, sc.exe
//!   or bcdedit. Shown to fail on the scripts as they were (sc.exe query in PmupcwTools.psm1, a match
//!   on typeperf's "Error:" in Install-Pmupcw.ps1).
//!
//! The same trees let tests/deployment/boot_checks.rs run the install decision's functions on every
//! input: [`Script::call`] evaluates the small part of PowerShell those functions are written in
//! (`param`, `if`/`elseif`/`else`, `return`, assignment, `-eq`/`-ne`/`-and`/`-or`/`-not`, `$null`/
//! `$true`/`$false`, quoted strings with `$name` and `$(...)`, and `+` of strings) with PowerShell's
//! semantics for those, and fails, naming the line, on anything else, so that nothing it does not know
//! is skipped (about_Comparison_Operators, about_Logical_Operators, about_Quoting_Rules:
//! https://learn.microsoft.com/powershell/module/microsoft.powershell.core/about/about_quoting_rules).

use std::collections::BTreeMap;

use tree_sitter::{Node, Parser, Tree};

use super::upgrade::mutated;
use super::*;

/// A PowerShell script and its tree.
pub(crate) struct Script {
    text: String,
    tree: Tree,
}

/// A value of the evaluated subset.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Str(String),
}

impl Value {
    fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(value) => *value,
            Value::Str(text) => !text.is_empty(),
        }
    }

    /// As PowerShell expands it into a string.
    fn expanded(&self) -> String {
        match self {
            Value::Null => String::new(),
            Value::Bool(true) => "True".to_owned(),
            Value::Bool(false) => "False".to_owned(),
            Value::Str(text) => text.clone(),
        }
    }
}

/// A function's variables (names in lower case: PowerShell's are case-insensitive).
type Variables = BTreeMap<String, Value>;

/// Nodes that only wrap the one child they hold, at every precedence level of the grammar.
const WRAPPERS: &[&str] = &[
    "pipeline",
    "pipeline_chain",
    "logical_expression",
    "bitwise_expression",
    "comparison_expression",
    "additive_expression",
    "multiplicative_expression",
    "format_expression",
    "range_expression",
    "array_literal_expression",
    "unary_expression",
    "parenthesized_expression",
    "string_literal",
];

/// The statement list of a `{ }` block.
fn block_list(block: Node<'_>) -> Option<Node<'_>> {
    block.child_by_field_name("statement_list")
}

fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).filter(|child| child.kind() != "comment").collect()
}

/// The first anonymous token of `node` (an operator or a keyword), in lower case.
fn token(node: Node<'_>, text: &str) -> Option<String> {
    let mut cursor = node.walk();
    let found = node.children(&mut cursor).find(|child| !child.is_named());
    found.map(|child| text[child.byte_range()].to_ascii_lowercase())
}

/// Every node of `root`'s tree, depth first.
fn descendants(root: Node<'_>) -> Vec<Node<'_>> {
    let mut nodes = vec![root];
    let mut at = 0;
    while at < nodes.len() {
        let children = {
            let mut cursor = nodes[at].walk();
            nodes[at].children(&mut cursor).collect::<Vec<_>>()
        };
        nodes.extend(children);
        at += 1;
    }
    nodes
}

impl Script {
    pub(crate) fn parse(text: &str) -> Script {
        let mut parser = Parser::new();
        parser.set_language(&tree_sitter_powershell::LANGUAGE.into()).expect("the PowerShell grammar loads");
        let tree = parser.parse(text, None).expect("tree-sitter returns a tree");
        Script { text: text.to_owned(), tree }
    }

    fn text_of(&self, node: Node<'_>) -> &str {
        &self.text[node.byte_range()]
    }

    fn at(&self, node: Node<'_>) -> String {
        let position = node.start_position();
        format!("line {}:{}", position.row + 1, position.column + 1)
    }

    /// Every syntax error: the grammar's error nodes (text it could not fit) and missing nodes (a
    /// token it had to assume, such as a closing brace).
    pub(crate) fn syntax_errors(&self) -> Vec<String> {
        descendants(self.tree.root_node())
            .into_iter()
            .filter_map(|node| {
                if node.is_missing() {
                    Some(format!("{}: missing {:?}", self.at(node), node.kind()))
                } else if node.is_error() {
                    let text: String = self.text_of(node).chars().take(40).collect();
                    Some(format!("{}: syntax error at {text:?}", self.at(node)))
                } else {
                    None
                }
            })
            .collect()
    }

    /// Every node of the given kind, in the order of the text.
    pub(crate) fn nodes(&self, kind: &str) -> Vec<Node<'_>> {
        descendants(self.tree.root_node()).into_iter().filter(|node| node.kind() == kind).collect()
    }

    /// The text of a node.
    pub(crate) fn text(&self, node: Node<'_>) -> String {
        self.text_of(node).to_owned()
    }

    /// The `function NAME` statement, if the script defines one.
    fn function(&self, name: &str) -> Option<Node<'_>> {
        self.nodes("function_statement").into_iter().find(|function| {
            named_children(*function)
                .first()
                .is_some_and(|child| self.text_of(*child).eq_ignore_ascii_case(name))
        })
    }

    /// Calls `function name` with `arguments` (every parameter, by name), as PowerShell would, within
    /// the evaluated subset. Panics on a construct outside it, or on an argument the function does
    /// not declare or one it declares but is not given.
    pub(crate) fn call(&self, name: &str, arguments: &[(&str, Value)]) -> Value {
        let function = self.function(name).unwrap_or_else(|| panic!("the script defines no {name}"));
        let block = named_children(function)
            .into_iter()
            .find(|child| child.kind() == "script_block")
            .unwrap_or_else(|| panic!("{name} has no body"));
        let mut variables = self.bind(name, block, arguments);
        let body =
            block.child_by_field_name("script_block_body").unwrap_or_else(|| panic!("{name}: no body"));
        let list =
            body.child_by_field_name("statement_list").unwrap_or_else(|| panic!("{name}: no statements"));
        let mut output = Vec::new();
        match self.run(list, &mut variables, &mut output) {
            Some(value) => value,
            None => {
                assert!(output.len() <= 1, "{name} writes {} values, not one: {output:?}", output.len());
                output.pop().unwrap_or(Value::Null)
            }
        }
    }

    /// The function's parameters bound to `arguments`, converted to their declared types.
    fn bind(&self, name: &str, block: Node<'_>, arguments: &[(&str, Value)]) -> Variables {
        let params = self.nodes("script_parameter").into_iter().filter(|parameter| {
            parameter.byte_range().start >= block.byte_range().start
                && parameter.byte_range().end <= block.byte_range().end
        });
        let mut variables = Variables::new();
        for parameter in params {
            let children = named_children(parameter);
            let variable =
                children.iter().find(|child| child.kind() == "variable").expect("a parameter's name");
            let key = self.text_of(*variable)[1..].to_ascii_lowercase();
            let kind = children
                .iter()
                .find(|child| child.kind() == "attribute_list")
                .map(|types| self.text_of(*types).to_ascii_lowercase());
            let given = arguments
                .iter()
                .find(|(argument, _)| argument.eq_ignore_ascii_case(&key))
                .unwrap_or_else(|| panic!("{name}: no argument for its parameter ${key}"))
                .1
                .clone();
            let value = match (kind.as_deref(), given) {
                (Some("[string]"), Value::Null) => Value::Str(String::new()),
                (Some("[string]"), Value::Str(text)) => Value::Str(text),
                (Some("[bool]"), Value::Bool(value)) => Value::Bool(value),
                (None, value) => value,
                (kind, value) => panic!("{name}: ${key} of type {kind:?} given {value:?}"),
            };
            variables.insert(key, value);
        }
        for (argument, _) in arguments {
            assert!(
                variables.contains_key(&argument.to_ascii_lowercase()),
                "{name} declares no parameter ${argument}"
            );
        }
        variables
    }

    /// Runs a statement list; `Some` when a `return` ended it. Values of expression statements go to
    /// `output`, as PowerShell writes them to the function's output.
    fn run(&self, list: Node<'_>, variables: &mut Variables, output: &mut Vec<Value>) -> Option<Value> {
        for statement in named_children(list) {
            match statement.kind() {
                "if_statement" => {
                    if let Some(value) = self.run_if(statement, variables, output) {
                        return Some(value);
                    }
                }
                "flow_control_statement" => {
                    let keyword = token(statement, &self.text);
                    assert_eq!(
                        keyword.as_deref(),
                        Some("return"),
                        "{}: only return is evaluated",
                        self.at(statement)
                    );
                    let value = named_children(statement)
                        .first()
                        .map_or(Value::Null, |value| self.eval(*value, variables));
                    return Some(value);
                }
                "pipeline" => {
                    let children = named_children(statement);
                    if children.len() == 1 && children[0].kind() == "assignment_expression" {
                        self.assign(children[0], variables);
                    } else {
                        let value = self.eval(statement, variables);
                        if value != Value::Null {
                            output.push(value);
                        }
                    }
                }
                other => panic!("{}: {other} is outside the evaluated subset", self.at(statement)),
            }
        }
        None
    }

    fn run_if(
        &self,
        statement: Node<'_>,
        variables: &mut Variables,
        output: &mut Vec<Value>,
    ) -> Option<Value> {
        let mut branches = vec![statement];
        if let Some(clauses) = statement.child_by_field_name("elseif_clauses") {
            branches.extend(named_children(clauses));
        }
        for branch in branches {
            let condition = branch.child_by_field_name("condition").expect("an if's condition");
            if self.eval(condition, variables).truthy() {
                let block =
                    named_children(branch).into_iter().find(|child| child.kind() == "statement_block")?;
                return self.run(block_list(block)?, variables, output);
            }
        }
        let otherwise = statement.child_by_field_name("else_clause")?;
        let block = named_children(otherwise).into_iter().find(|child| child.kind() == "statement_block")?;
        self.run(block_list(block)?, variables, output)
    }

    fn assign(&self, assignment: Node<'_>, variables: &mut Variables) {
        let children = named_children(assignment);
        let operator = children.iter().find(|child| child.kind() == "assignement_operator");
        assert!(
            operator.is_some_and(|op| self.text_of(*op) == "="),
            "{}: only = is evaluated",
            self.at(assignment)
        );
        let target = descendants(children[0]).into_iter().find(|node| node.kind() == "variable");
        let target = target.unwrap_or_else(|| panic!("{}: assigns no variable", self.at(assignment)));
        let value = assignment.child_by_field_name("value").expect("an assignment's value");
        let value = self.eval(value, variables);
        variables.insert(self.text_of(target)[1..].to_ascii_lowercase(), value);
    }

    fn eval(&self, node: Node<'_>, variables: &Variables) -> Value {
        let children = named_children(node);
        match (node.kind(), children.len()) {
            ("variable", _) => self.variable(node, variables),
            ("verbatim_string_characters", _) => {
                let text = self.text_of(node);
                Value::Str(text[1..text.len() - 1].replace("''", "'"))
            }
            ("expandable_string_literal", _) => self.expand(node, &children, variables),
            ("sub_expression", _) => {
                let list = node.child_by_field_name("statements").expect("$( ) holds statements");
                let statements = named_children(list);
                assert_eq!(statements.len(), 1, "{}: $( ) of one expression only", self.at(node));
                self.eval(statements[0], variables)
            }
            ("expression_with_unary_operator", 1) => match token(node, &self.text).as_deref() {
                Some("-not" | "!") => Value::Bool(!self.eval(children[0], variables).truthy()),
                other => panic!("{}: unary {other:?} is outside the evaluated subset", self.at(node)),
            },
            ("comparison_expression", 3) => self.compare(node, &children, variables),
            ("logical_expression", 2) => {
                let left = self.eval(children[0], variables).truthy();
                match token(node, &self.text).as_deref() {
                    Some("-and") => Value::Bool(left && self.eval(children[1], variables).truthy()),
                    Some("-or") => Value::Bool(left || self.eval(children[1], variables).truthy()),
                    other => panic!("{}: {other:?} is outside the evaluated subset", self.at(node)),
                }
            }
            ("additive_expression", 2) => {
                assert_eq!(
                    token(node, &self.text).as_deref(),
                    Some("+"),
                    "{}: only + is evaluated",
                    self.at(node)
                );
                match (self.eval(children[0], variables), self.eval(children[1], variables)) {
                    (Value::Str(left), Value::Str(right)) => Value::Str(left + &right),
                    (left, right) => panic!("{}: {left:?} + {right:?} is not string + string", self.at(node)),
                }
            }
            (kind, 1) if WRAPPERS.contains(&kind) => self.eval(children[0], variables),
            (kind, _) => {
                panic!("{}: {kind} {:?} is outside the evaluated subset", self.at(node), self.text_of(node))
            }
        }
    }

    fn variable(&self, node: Node<'_>, variables: &Variables) -> Value {
        let name = self.text_of(node)[1..].to_ascii_lowercase();
        match name.as_str() {
            "null" => Value::Null,
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => variables
                .get(&name)
                .cloned()
                .unwrap_or_else(|| panic!("{}: ${name} is not set (strict mode fails on it)", self.at(node))),
        }
    }

    /// A double-quoted string: its text with each `$name` and `$(...)` replaced by its value; `""`
    /// is one quote. A backtick escape is outside the subset.
    fn expand(&self, node: Node<'_>, parts: &[Node<'_>], variables: &Variables) -> Value {
        let range = node.byte_range();
        let literal = |from: usize, to: usize| -> String {
            let text = &self.text[from..to];
            assert!(
                !text.contains('`'),
                "{}: backtick escapes are outside the evaluated subset",
                self.at(node)
            );
            text.replace("\"\"", "\"")
        };
        let mut out = String::new();
        let mut at = range.start + 1;
        for part in parts {
            out.push_str(&literal(at, part.start_byte()));
            out.push_str(&self.eval(*part, variables).expanded());
            at = part.end_byte();
        }
        out.push_str(&literal(at, range.end - 1));
        Value::Str(out)
    }

    /// `-eq` and `-ne` (case-insensitive for strings, as PowerShell compares by default).
    fn compare(&self, node: Node<'_>, children: &[Node<'_>], variables: &Variables) -> Value {
        let operator = self.text_of(children[1]).to_ascii_lowercase();
        let left = self.eval(children[0], variables);
        let right = self.eval(children[2], variables);
        let equal = match (&left, &right) {
            (Value::Null, _) | (_, Value::Null) => left == right,
            (Value::Str(left), Value::Str(right)) => left.eq_ignore_ascii_case(right),
            (Value::Bool(left), Value::Bool(right)) => left == right,
            _ => panic!("{}: {left:?} {operator} {right:?} mixes types", self.at(node)),
        };
        match operator.as_str() {
            "-eq" | "-ieq" => Value::Bool(equal),
            "-ne" | "-ine" => Value::Bool(!equal),
            other => panic!("{}: {other} is outside the evaluated subset", self.at(node)),
        }
    }
}

/// Every `.ps1` and `.psm1` file of the repository (outside target/ and .git/), sorted.
fn powershell_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut folders = vec![repository().to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder).unwrap_or_else(|error| panic!("{}: {error}", folder.display())) {
            let path = entry.expect("a folder entry").path();
            let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    folders.push(path);
                }
            } else if name.ends_with(".ps1") || name.ends_with(".psm1") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_powershell_file_parses_with_the_powershell_grammar() {
    let files = powershell_files();
    // Every script of scripts/windows/ is among them, and the walk found them.
    for script in repository_scripts() {
        assert!(files.contains(&script), "{} was not found", script.display());
    }
    let report = report_files(&files, |text| Script::parse(text).syntax_errors());
    assert!(report.is_empty(), "{report}");
}

#[test]
fn the_grammar_reports_an_unclosed_brace_and_a_stray_token() {
    let install = read_text(&repository().join("scripts/windows/Install-Pmupcw.ps1"));
    assert_eq!(Script::parse(&install).syntax_errors(), Vec::<String>::new());
    // The if that checks the package folder's catalog loses its closing brace.
    let unclosed = mutated(
        &install,
        "certificate you import into Root and TrustedPublisher.\")\n    }",
        "certificate you import into Root and TrustedPublisher.\")\n",
    );
    let errors = Script::parse(&unclosed).syntax_errors();
    assert!(!errors.is_empty(), "an unclosed brace parsed without an error");
    // A stray closing parenthesis in a condition.
    let stray = mutated(&install, "if ($refusal) { throw $refusal }", "if ($refusal)) { throw $refusal }");
    let errors = Script::parse(&stray).syntax_errors();
    assert!(!errors.is_empty(), "a stray ) parsed without an error");
}

// -------------------------------------------------------------------------------------------------
// No localized text

/// Tools whose output Windows localizes: the scripts may run them for their effect and exit code, but
/// never match their text.
const LOCALIZED_OUTPUT: &[&str] = &["typeperf", "sc", "bcdedit"];

/// The tool a command runs: its name (`sc.exe`, or after `&`), or for `Invoke-Tool` its first
/// argument; without `.exe`, in lower case.
fn tool_of(script: &Script, command: Node<'_>) -> Option<String> {
    let children = named_children(command);
    let name = children.iter().find(|child| matches!(child.kind(), "command_name" | "command_name_expr"))?;
    let tool = script.text_of(*name).to_ascii_lowercase();
    let tool = if tool == "invoke-tool" {
        let elements = children.iter().find(|child| child.kind() == "command_elements")?;
        let first =
            named_children(*elements).into_iter().find(|node| node.kind() != "command_argument_sep")?;
        script.text_of(first).to_ascii_lowercase()
    } else {
        tool
    };
    Some(tool.trim_end_matches(".exe").to_owned())
}

/// The variable a command's output is assigned to (`$name = Invoke-Tool ...`), if it is.
fn assigned_to(script: &Script, command: Node<'_>) -> Option<String> {
    let mut node = command.parent();
    while let Some(parent) = node {
        if parent.kind() == "assignment_expression" {
            let target =
                descendants(named_children(parent)[0]).into_iter().find(|node| node.kind() == "variable")?;
            return Some(script.text(target).to_ascii_lowercase());
        }
        node = parent.parent();
    }
    None
}

/// What in `script` reads localized text.
fn localized_text_problems(text: &str) -> Vec<String> {
    let script = Script::parse(text);
    let mut problems = Vec::new();
    let mut captured = Vec::new();
    for command in script.nodes("command") {
        let Some(tool) = tool_of(&script, command) else { continue };
        let words: Vec<String> = descendants(command)
            .into_iter()
            .filter(|word| matches!(word.kind(), "verbatim_string_characters" | "generic_token"))
            .map(|word| script.text(word).trim_matches('\'').to_ascii_lowercase())
            .collect();
        if tool == "bcdedit" {
            problems.push(format!("{}: runs bcdedit, whose text is localized", script.at(command)));
        }
        if tool == "sc" && words.iter().any(|word| ["query", "queryex", "qc"].contains(&word.as_str())) {
            problems
                .push(format!("{}: runs sc.exe query, whose STATE label is localized", script.at(command)));
        }
        if LOCALIZED_OUTPUT.contains(&tool.as_str()) {
            captured.extend(assigned_to(&script, command).map(|variable| (variable, tool.clone())));
        }
    }
    for comparison in script.nodes("comparison_expression") {
        let children = named_children(comparison);
        if children.len() != 3 {
            continue;
        }
        let operator = script.text(children[1]).to_ascii_lowercase();
        if !operator.contains("match") && !operator.contains("like") {
            continue;
        }
        let left = script.text(children[0]).to_ascii_lowercase();
        for (variable, tool) in &captured {
            if left.contains(&format!("{variable}.output")) || left == *variable {
                problems.push(format!(
                    "{}: matches the text {tool} prints ({left} {operator})",
                    script.at(comparison)
                ));
            }
        }
    }
    problems
}

#[test]
fn no_script_reads_localized_text() {
    let report = report_files(&powershell_files(), localized_text_problems);
    assert!(report.is_empty(), "{report}");
}

#[test]
fn localized_text_checker_reports_the_scripts_as_they_were() {
    let dir = repository().join("scripts/windows");
    // PmupcwTools.psm1's service state before: sc.exe query's STATE line.
    let module = read_text(&dir.join("PmupcwTools.psm1"));
    let sc = mutated(
        &module,
        "    $driver = Get-CimInstance",
        "    $query = & sc.exe query $Name 2>&1 | Out-String\n    $driver = Get-CimInstance",
    );
    assert_reported(&localized_text_problems(&sc), "runs sc.exe query");
    // Install-Pmupcw.ps1's smoke query before: typeperf's "Error:" text.
    let install = read_text(&dir.join("Install-Pmupcw.ps1"));
    let typeperf = mutated(
        &install,
        "        $null = Invoke-Tool typeperf.exe",
        "        $smoke = Invoke-Tool typeperf.exe @($SmokeCounter, '-sc', '2')\n        \
         if ($smoke.Output -match '(?i)No valid counters|Error:') { throw 'typeperf failed' }\n        \
         $null = Invoke-Tool typeperf.exe",
    );
    assert_reported(&localized_text_problems(&typeperf), "matches the text typeperf prints");
    let bcdedit = mutated(
        &install,
        "    $integrity = Get-CodeIntegrityState",
        "    $bcd = bcdedit.exe /enum\n    $integrity = Get-CodeIntegrityState",
    );
    assert_reported(&localized_text_problems(&bcdedit), "runs bcdedit");
}

// -------------------------------------------------------------------------------------------------
// One way to run the scripts

/// The form every documented run of a script takes (docs/install.md, "One way to run the scripts").
const RUN: &str = "powershell -ExecutionPolicy Bypass -File ";

/// Every run of a `.ps1` in a Markdown text that is not in the one form: a line of a fenced code block
/// whose command is a script, or an inline code span that starts with a script's path (`C:\...` or
/// `.\...`), and a `powershell` command line that runs a script in another form.
fn script_run_problems(text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut fenced = false;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let runs: Vec<&str> = if fenced {
            vec![trimmed]
        } else {
            trimmed
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|span| ["C:\\", ".\\", "powershell "].iter().any(|start| span.starts_with(start)))
                .collect()
        };
        for run in runs {
            let command = run.split_whitespace().next().unwrap_or("");
            let names_script = command.to_ascii_lowercase().ends_with(".ps1");
            let wrong_form = run.contains(".ps1") && run.starts_with("powershell") && !run.starts_with(RUN);
            if names_script || wrong_form {
                problems.push(format!("line {}: {run:?} is not run as {RUN:?}", number + 1));
            }
        }
    }
    problems
}

/// The Markdown files that tell how to run the scripts.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![repository().join("README.md")];
    let docs = repository().join("docs");
    let mut listed: Vec<PathBuf> = fs::read_dir(&docs)
        .unwrap_or_else(|error| panic!("{}: {error}", docs.display()))
        .map(|entry| entry.expect("a docs entry").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "md"))
        .collect();
    listed.sort();
    files.extend(listed);
    files
}

#[test]
fn the_documentation_runs_every_script_one_way() {
    let report = report_files(&markdown_files(), script_run_problems);
    assert!(report.is_empty(), "{report}");
}

#[test]
fn script_run_checker_reports_a_direct_run_and_another_policy() {
    let readme = read_text(&repository().join("README.md"));
    let direct = mutated(
        &readme,
        "powershell -ExecutionPolicy Bypass -File C:\\pmupcw\\Install-Pmupcw.ps1\n",
        "C:\\pmupcw\\Install-Pmupcw.ps1\n",
    );
    assert_reported(&script_run_problems(&direct), "\"C:\\\\pmupcw\\\\Install-Pmupcw.ps1\" is not run as");
    let policy = mutated(
        &readme,
        "`powershell -ExecutionPolicy Bypass -File C:\\pmupcw\\Test-Pmupcw.ps1 -Restart`",
        "`powershell -ExecutionPolicy RemoteSigned -File C:\\pmupcw\\Test-Pmupcw.ps1 -Restart` and `.\\Test-Pmupcw.ps1`",
    );
    let problems = script_run_problems(&policy);
    assert_reported(&problems, "RemoteSigned");
    assert_reported(&problems, "\".\\\\Test-Pmupcw.ps1\"");
}

//! Grafana Alloy's configuration syntax (grafana/alloy v1.18, `docs/sources/get-started/
//! configuration-syntax/`): blocks `name "label" { ... }` (a name is identifiers joined by `.`),
//! attributes `name = expression`, `//` and `/* */` comments. No Rust crate reads it, so this reads the
//! part a configuration of components uses: strings, numbers, booleans, lists and references
//! (`local.file.objects.content`). And the rules of the components used here, from Alloy's reference
//! (its page `prometheus.exporter.windows` in grafana/alloy): the exporter takes
//! `enabled_collectors` and a `performancecounter` block whose `objects` is the YAML string
//! windows_exporter's collector takes (Alloy v1.9.0 is the first to embed windows_exporter v0.30.x,
//! whose objects take `type: formatted`; `go.mod` of each tag); `prometheus.scrape` needs `targets`
//! and `forward_to`.

/// A value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    String(String),
    Number(String),
    Bool(bool),
    List(Vec<Value>),
    /// A reference to another component's export, `a.b.c`.
    Reference(String),
}

/// A block: its name, label and body.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub name: String,
    pub label: Option<String>,
    pub attributes: Vec<(String, Value)>,
    pub blocks: Vec<Block>,
}

impl Block {
    /// The attribute `name`.
    pub fn attribute(&self, name: &str) -> Option<&Value> {
        self.attributes.iter().find(|(known, _)| known == name).map(|(_, value)| value)
    }

    /// The inner blocks named `name`.
    pub fn blocks<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Block> {
        self.blocks.iter().filter(move |block| block.name == name)
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Name(String),
    String(String),
    Number(String),
    Punct(char),
}

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        if c.is_whitespace() {
            at += 1;
        } else if c == '/' && chars.get(at + 1) == Some(&'/') {
            while at < chars.len() && chars[at] != '\n' {
                at += 1;
            }
        } else if c == '/' && chars.get(at + 1) == Some(&'*') {
            let end =
                (at + 2..chars.len().saturating_sub(1)).find(|&i| chars[i] == '*' && chars[i + 1] == '/');
            at = end.ok_or("an unterminated /* comment")? + 2;
        } else if c == '"' {
            let mut value = String::new();
            at += 1;
            loop {
                match chars.get(at) {
                    None => return Err("an unterminated string".into()),
                    Some('"') => break,
                    Some('\\') => {
                        value.push(match chars.get(at + 1) {
                            Some('n') => '\n',
                            Some('t') => '\t',
                            Some(&other) => other,
                            None => return Err("an unterminated string".into()),
                        });
                        at += 2;
                    }
                    Some(&other) => {
                        value.push(other);
                        at += 1;
                    }
                }
            }
            at += 1;
            out.push(Token::String(value));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = at;
            while at < chars.len()
                && (chars[at].is_ascii_alphanumeric() || chars[at] == '_' || chars[at] == '.')
            {
                at += 1;
            }
            out.push(Token::Name(chars[start..at].iter().collect()));
        } else if c.is_ascii_digit() {
            let start = at;
            while at < chars.len() && (chars[at].is_ascii_alphanumeric() || chars[at] == '.') {
                at += 1;
            }
            out.push(Token::Number(chars[start..at].iter().collect()));
        } else if "{}[]=,".contains(c) {
            out.push(Token::Punct(c));
            at += 1;
        } else {
            return Err(format!("unexpected {c:?}"));
        }
    }
    Ok(out)
}

/// A body's attributes and blocks.
type Body = (Vec<(String, Value)>, Vec<Block>);

struct Reader {
    tokens: Vec<Token>,
    at: usize,
}

impl Reader {
    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        match self.next() {
            Some(Token::Punct(found)) if found == c => Ok(()),
            other => Err(format!("expected {c:?}, found {other:?}")),
        }
    }

    /// Statements until `}` (inside a block) or the end.
    fn body(&mut self, inside: bool) -> Result<Body, String> {
        let (mut attributes, mut blocks) = (Vec::new(), Vec::new());
        loop {
            match self.next() {
                None if !inside => return Ok((attributes, blocks)),
                Some(Token::Punct('}')) if inside => return Ok((attributes, blocks)),
                Some(Token::Name(name)) => match self.next() {
                    Some(Token::Punct('=')) => attributes.push((name, self.value()?)),
                    Some(Token::Punct('{')) => blocks.push(self.block(name, None)?),
                    Some(Token::String(label)) => {
                        self.expect('{')?;
                        blocks.push(self.block(name, Some(label))?);
                    }
                    other => return Err(format!("after {name}: unexpected {other:?}")),
                },
                other => return Err(format!("unexpected {other:?}")),
            }
        }
    }

    fn block(&mut self, name: String, label: Option<String>) -> Result<Block, String> {
        let (attributes, blocks) = self.body(true)?;
        Ok(Block { name, label, attributes, blocks })
    }

    fn value(&mut self) -> Result<Value, String> {
        match self.next() {
            Some(Token::String(text)) => Ok(Value::String(text)),
            Some(Token::Number(text)) => Ok(Value::Number(text)),
            Some(Token::Name(name)) if name == "true" || name == "false" => Ok(Value::Bool(name == "true")),
            Some(Token::Name(name)) => Ok(Value::Reference(name)),
            Some(Token::Punct('[')) => {
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(&Token::Punct(']')) {
                        self.next();
                        return Ok(Value::List(items));
                    }
                    items.push(self.value()?);
                    match self.next() {
                        Some(Token::Punct(',')) => {}
                        Some(Token::Punct(']')) => return Ok(Value::List(items)),
                        other => return Err(format!("in a list: unexpected {other:?}")),
                    }
                }
            }
            other => Err(format!("expected a value, found {other:?}")),
        }
    }
}

/// The top-level blocks of an Alloy configuration.
pub fn parse(text: &str) -> Result<Vec<Block>, String> {
    let mut reader = Reader { tokens: tokens(text)?, at: 0 };
    let (attributes, blocks) = reader.body(false)?;
    if let Some((name, _)) = attributes.first() {
        return Err(format!("top-level attribute {name:?}: only blocks belong there"));
    }
    Ok(blocks)
}

/// The component `name "label"` of `blocks`.
pub fn component<'a>(blocks: &'a [Block], name: &str, label: &str) -> Option<&'a Block> {
    blocks.iter().find(|block| block.name == name && block.label.as_deref() == Some(label))
}

/// The component a reference `a.b.label.export` points to, if it is one of `blocks`.
pub fn referenced<'a>(blocks: &'a [Block], reference: &str) -> Option<&'a Block> {
    let (component, _export) = reference.rsplit_once('.')?;
    let (name, label) = component.rsplit_once('.')?;
    self::component(blocks, name, label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_attributes_and_references_are_read() {
        let blocks = parse(
            "// c\nlocal.file \"x\" { filename = \"a/b.yml\" }\n/* d */ p.e.w \"y\" {\n list = [\"a\", \"b\",]\n inner { objects = local.file.x.content }\n n = 15 \n f = false }",
        )
        .unwrap();
        assert_eq!(blocks.len(), 2);
        let exporter = component(&blocks, "p.e.w", "y").unwrap();
        assert_eq!(
            exporter.attribute("list"),
            Some(&Value::List(vec![Value::String("a".into()), Value::String("b".into())]))
        );
        let inner = exporter.blocks("inner").next().unwrap();
        let Some(Value::Reference(reference)) = inner.attribute("objects") else { panic!() };
        assert_eq!(
            referenced(&blocks, reference).unwrap().attribute("filename"),
            Some(&Value::String("a/b.yml".into()))
        );
        assert!(parse("x = 1").is_err());
        assert!(parse("a \"b\" { c = }").is_err());
    }
}

//! The series a PromQL expression selects, read with promql-parser (a Grafana dashboard's variables
//! first given sample values), so that a query can be checked against the metrics and labels the
//! agents export.

use promql_parser::label::MatchOp;
use promql_parser::parser::{self, Expr, VectorSelector};
use promql_parser::util::{ExprVisitor, walk_expr};

/// One selector: a metric name and its label matchers as (label, operator, value).
#[derive(Clone, Debug, PartialEq)]
pub struct Selector {
    pub metric: Option<String>,
    pub matchers: Vec<(String, String, String)>,
}

struct Collect(Vec<Selector>);

fn selector(vector: &VectorSelector) -> Selector {
    let matchers = vector
        .matchers
        .matchers
        .iter()
        .filter(|matcher| matcher.name != "__name__")
        .map(|matcher| {
            let op = match &matcher.op {
                MatchOp::Equal => "=",
                MatchOp::NotEqual => "!=",
                MatchOp::Re(_) => "=~",
                MatchOp::NotRe(_) => "!~",
            };
            (matcher.name.clone(), op.to_string(), matcher.value.clone())
        })
        .collect();
    Selector { metric: vector.name.clone(), matchers }
}

impl ExprVisitor for Collect {
    type Error = String;

    fn pre_visit(&mut self, expr: &Expr) -> Result<bool, String> {
        match expr {
            Expr::VectorSelector(vector) => self.0.push(selector(vector)),
            Expr::MatrixSelector(matrix) => self.0.push(selector(&matrix.vs)),
            _ => {}
        }
        Ok(true)
    }
}

/// `expr` with Grafana's interval variables as `5m` and any other `$name` or `${name}` as `host`.
pub fn substitute_variables(expr: &str) -> String {
    let intervals =
        expr.replace("$__rate_interval", "5m").replace("$__interval", "5m").replace("$__range", "5m");
    let variable = regex::Regex::new(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?").expect("the pattern");
    variable.replace_all(&intervals, "host").into_owned()
}

/// The selectors of `expr` (Grafana variables substituted), or the parser's error.
pub fn selectors(expr: &str) -> Result<Vec<Selector>, String> {
    let parsed = parser::parse(&substitute_variables(expr))?;
    let mut collect = Collect(Vec::new());
    walk_expr(&mut collect, &parsed)?;
    Ok(collect.0)
}

/// The fenced blocks of `language` in `markdown`.
pub fn blocks(markdown: &str, language: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match &mut current {
            None if line.trim() == format!("```{language}") => current = Some(String::new()),
            Some(block) if line.trim() == "```" => {
                found.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    found
}

/// The PromQL queries of `markdown`'s `promql` blocks: one per paragraph, without its `#` comments.
pub fn guide_queries(markdown: &str) -> Vec<String> {
    blocks(markdown, "promql")
        .iter()
        .flat_map(|block| {
            block
                .split("\n\n")
                .map(|q| {
                    q.lines().filter(|l| !l.trim_start().starts_with('#')).collect::<Vec<_>>().join("\n")
                })
                .filter(|query| !query.trim().is_empty())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_are_read_from_nested_expressions() {
        let found = selectors(
            "sum by (instance) (rate(a_total{processor!=\"_Total\", instance=~\"$host\"}[$__rate_interval])) / on(instance) b{processor=\"_Total\"}",
        )
        .unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].metric.as_deref(), Some("a_total"));
        assert!(found[0].matchers.contains(&("processor".into(), "!=".into(), "_Total".into())));
        assert_eq!(found[1].matchers, [("processor".to_string(), "=".to_string(), "_Total".to_string())]);
        assert!(selectors("sum(").is_err());
    }
}

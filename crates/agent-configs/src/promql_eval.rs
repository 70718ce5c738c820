//! A small PromQL evaluator over scraped series, for the expressions `docs/fleet-collection.md` and the
//! dashboard use: selectors with `=`, `!=`, `=~`, `!~`; `rate`, `irate` and `increase` over a range;
//! `sum`, `avg`, `min`, `max`, `count` and `count_values` with `by`/`without`; arithmetic and comparisons between
//! scalars and vectors, with `on`/`ignoring`, `group_left`/`group_right`; `and`; parentheses and
//! unary minus. Parsed with promql-parser; the semantics are Prometheus's
//! (prometheus/prometheus, `promql/engine.go` `VectorBinop`, `resultMetric`, `signatureFunc`, and
//! `promql/functions.go` `extrapolatedRate`, `instantValue`), with one simplification said where it is:
//! `rate` and `increase` do not extrapolate to the window's edges (the scenarios scrape at them).

use std::collections::BTreeMap;

use promql_parser::label::Labels as GroupLabels;
use promql_parser::parser::token::{self, TokenType};
use promql_parser::parser::{
    self, AggregateExpr, BinModifier, BinaryExpr, Call, Expr, LabelModifier, VectorMatchCardinality,
    VectorSelector,
};

/// A series' labels, `__name__` among them.
pub type Labels = BTreeMap<String, String>;

/// One scraped series: its labels and its points (seconds, value), in time order.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub labels: Labels,
    pub points: Vec<(f64, f64)>,
}

/// What an expression evaluates to at one instant.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Scalar(f64),
    Vector(Vec<(Labels, f64)>),
}

/// Prometheus's default lookback for an instant selector (`--query.lookback-delta`): 5 minutes.
const LOOKBACK_SECONDS: f64 = 300.0;

/// Evaluates `expr` (Grafana variables substituted as [`crate::promql::substitute_variables`] does)
/// at time `at` (seconds) over `series`.
pub fn evaluate(expr: &str, series: &[Series], at: f64) -> Result<Value, String> {
    let parsed = parser::parse(&crate::promql::substitute_variables(expr))?;
    Evaluator { series, at }.eval(&parsed)
}

struct Evaluator<'a> {
    series: &'a [Series],
    at: f64,
}

fn matches(selector: &VectorSelector, labels: &Labels) -> bool {
    let name_ok = selector.name.as_ref().is_none_or(|name| labels.get("__name__") == Some(name));
    name_ok
        && selector.matchers.matchers.iter().all(|matcher| {
            let value = labels.get(&matcher.name).map_or("", String::as_str);
            matcher.is_match(value)
        })
}

impl Evaluator<'_> {
    fn eval(&self, expr: &Expr) -> Result<Value, String> {
        match expr {
            Expr::NumberLiteral(number) => Ok(Value::Scalar(number.val)),
            Expr::Paren(paren) => self.eval(&paren.expr),
            Expr::Unary(unary) => Ok(match self.eval(&unary.expr)? {
                Value::Scalar(value) => Value::Scalar(-value),
                Value::Vector(vector) => Value::Vector(
                    vector.into_iter().map(|(labels, value)| (drop_name(labels), -value)).collect(),
                ),
            }),
            Expr::VectorSelector(selector) => Ok(Value::Vector(self.instant(selector))),
            Expr::Call(call) => self.call(call),
            Expr::Aggregate(aggregate) => self.aggregate(aggregate),
            Expr::Binary(binary) => self.binary(binary),
            other => Err(format!("not evaluated here: {other}")),
        }
    }

    /// Each matching series' last point within the lookback (`instantValue`'s selection).
    fn instant(&self, selector: &VectorSelector) -> Vec<(Labels, f64)> {
        self.series
            .iter()
            .filter(|series| matches(selector, &series.labels))
            .filter_map(|series| {
                let point = series.points.iter().rev().find(|(time, _)| *time <= self.at)?;
                (point.0 > self.at - LOOKBACK_SECONDS).then(|| (series.labels.clone(), point.1))
            })
            .collect()
    }

    fn call(&self, call: &Call) -> Result<Value, String> {
        let name = call.func.name;
        let Some(Expr::MatrixSelector(matrix)) = call.args.args.first().map(|arg| arg.as_ref()) else {
            return Err(format!("{name}: only over a range selector here"));
        };
        let range = matrix.range.as_secs_f64();
        let mut out = Vec::new();
        for series in self.series.iter().filter(|series| matches(&matrix.vs, &series.labels)) {
            let points: Vec<(f64, f64)> = series
                .points
                .iter()
                .copied()
                .filter(|(time, _)| *time > self.at - range && *time <= self.at)
                .collect();
            if points.len() < 2 {
                continue;
            }
            let value = match name {
                // Counter resets (a value below the last) count from 0, as `extrapolatedRate` does.
                "rate" | "increase" => {
                    let increase = increase(&points);
                    let span = points[points.len() - 1].0 - points[0].0;
                    if name == "rate" { increase / span } else { increase }
                }
                "irate" => {
                    let (before, last) = (points[points.len() - 2], points[points.len() - 1]);
                    let delta = if last.1 < before.1 { last.1 } else { last.1 - before.1 };
                    delta / (last.0 - before.0)
                }
                other => return Err(format!("function {other} is not evaluated here")),
            };
            out.push((drop_name(series.labels.clone()), value));
        }
        Ok(Value::Vector(out))
    }

    fn aggregate(&self, aggregate: &AggregateExpr) -> Result<Value, String> {
        let Value::Vector(vector) = self.eval(&aggregate.expr)? else {
            return Err("an aggregation needs a vector".into());
        };
        // count_values("label", v): the values become a label, each group counting its samples.
        let value_label = match (aggregate.op.id(), aggregate.param.as_deref()) {
            (token::T_COUNT_VALUES, Some(Expr::StringLiteral(label))) => Some(label.val.clone()),
            (token::T_COUNT_VALUES, _) => return Err("count_values needs a label name".into()),
            _ => None,
        };
        let mut groups: BTreeMap<Labels, Vec<f64>> = BTreeMap::new();
        for (labels, value) in vector {
            let mut key = grouping(&labels, aggregate.modifier.as_ref());
            if let Some(label) = &value_label {
                key.insert(label.clone(), value.to_string());
            }
            groups.entry(key).or_default().push(value);
        }
        let op = aggregate.op.id();
        let fold = |values: &[f64]| -> Result<f64, String> {
            Ok(match op {
                token::T_SUM => values.iter().sum(),
                token::T_AVG => values.iter().sum::<f64>() / values.len() as f64,
                token::T_MIN => values.iter().copied().fold(f64::INFINITY, f64::min),
                token::T_MAX => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                token::T_COUNT | token::T_COUNT_VALUES => values.len() as f64,
                _ => return Err(format!("aggregation {} is not evaluated here", aggregate.op)),
            })
        };
        let out = groups
            .iter()
            .map(|(labels, values)| Ok((labels.clone(), fold(values)?)))
            .collect::<Result<_, String>>()?;
        Ok(Value::Vector(out))
    }

    fn binary(&self, binary: &BinaryExpr) -> Result<Value, String> {
        let (lhs, rhs) = (self.eval(&binary.lhs)?, self.eval(&binary.rhs)?);
        let op = binary.op;
        let keep = op.is_comparison_operator();
        match (lhs, rhs) {
            (Value::Scalar(a), Value::Scalar(b)) => Ok(Value::Scalar(apply(op, a, b)?.unwrap_or(f64::NAN))),
            (Value::Vector(vector), Value::Scalar(b)) => {
                Ok(Value::Vector(scalar_side(vector, keep, |a| apply(op, a, b))?))
            }
            (Value::Scalar(a), Value::Vector(vector)) => {
                Ok(Value::Vector(scalar_side(vector, keep, |b| apply(op, a, b))?))
            }
            (Value::Vector(left), Value::Vector(right)) => {
                vector_binop(op, binary.modifier.as_ref(), left, right)
            }
        }
    }
}

/// The increase of a counter over `points`, a value below the one before it counting from 0.
fn increase(points: &[(f64, f64)]) -> f64 {
    points.windows(2).map(|pair| if pair[1].1 < pair[0].1 { pair[1].1 } else { pair[1].1 - pair[0].1 }).sum()
}

fn drop_name(mut labels: Labels) -> Labels {
    labels.remove("__name__");
    labels
}

/// An aggregation's group key: `by` keeps the labels named, `without` drops them (and `__name__`).
fn grouping(labels: &Labels, modifier: Option<&LabelModifier>) -> Labels {
    match modifier {
        None => Labels::new(),
        Some(LabelModifier::Include(names)) => names
            .labels
            .iter()
            .filter_map(|name| labels.get(name).map(|value| (name.clone(), value.clone())))
            .collect(),
        Some(LabelModifier::Exclude(names)) => {
            drop_name(labels.clone()).into_iter().filter(|(name, _)| !names.labels.contains(name)).collect()
        }
    }
}

/// `a op b`: Some(value), or None where a comparison filters the element out.
fn apply(op: TokenType, a: f64, b: f64) -> Result<Option<f64>, String> {
    Ok(match op.id() {
        token::T_ADD => Some(a + b),
        token::T_SUB => Some(a - b),
        token::T_MUL => Some(a * b),
        token::T_DIV => Some(a / b),
        token::T_EQLC => (a == b).then_some(a),
        token::T_NEQ => (a != b).then_some(a),
        token::T_GTR => (a > b).then_some(a),
        token::T_LSS => (a < b).then_some(a),
        token::T_GTE => (a >= b).then_some(a),
        token::T_LTE => (a <= b).then_some(a),
        _ => return Err(format!("operator {op} is not evaluated here")),
    })
}

/// A vector against a scalar: a comparison keeps the sample (and its name) as it is; arithmetic
/// drops the name.
fn scalar_side(
    vector: Vec<(Labels, f64)>,
    keep: bool,
    op: impl Fn(f64) -> Result<Option<f64>, String>,
) -> Result<Vec<(Labels, f64)>, String> {
    let mut out = Vec::new();
    for (labels, value) in vector {
        if let Some(result) = op(value)? {
            out.push((if keep { labels } else { drop_name(labels) }, if keep { value } else { result }));
        }
    }
    Ok(out)
}

/// The labels two samples are matched on (`signatureFunc`): those `on` names, or all but `__name__`
/// and those `ignoring` names.
fn signature(labels: &Labels, matching: Option<&LabelModifier>) -> Labels {
    match matching {
        Some(LabelModifier::Include(names)) => grouping(labels, Some(&LabelModifier::Include(names.clone()))),
        Some(LabelModifier::Exclude(names)) => grouping(labels, Some(&LabelModifier::Exclude(names.clone()))),
        None => drop_name(labels.clone()),
    }
}

fn vector_binop(
    op: TokenType,
    modifier: Option<&BinModifier>,
    left: Vec<(Labels, f64)>,
    right: Vec<(Labels, f64)>,
) -> Result<Value, String> {
    let matching = modifier.and_then(|modifier| modifier.matching.as_ref());
    if op.id() == token::T_LAND {
        let keys: Vec<Labels> = right.iter().map(|(labels, _)| signature(labels, matching)).collect();
        return Ok(Value::Vector(
            left.into_iter().filter(|(labels, _)| keys.contains(&signature(labels, matching))).collect(),
        ));
    }
    let card = modifier.map_or(&VectorMatchCardinality::OneToOne, |modifier| &modifier.card);
    // group_right is group_left with the sides swapped.
    let (many, one, swapped, include) = match card {
        VectorMatchCardinality::OneToMany(include) => (right, left, true, Some(include)),
        VectorMatchCardinality::ManyToOne(include) => (left, right, false, Some(include)),
        _ => (left, right, false, None),
    };
    let mut index: BTreeMap<Labels, (Labels, f64)> = BTreeMap::new();
    for (labels, value) in one {
        let key = signature(&labels, matching);
        if index.insert(key.clone(), (labels, value)).is_some() {
            return Err(format!("many-to-many matching on {key:?}: the \"one\" side has duplicates"));
        }
    }
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (labels, value) in many {
        let key = signature(&labels, matching);
        let Some((one_labels, one_value)) = index.get(&key) else { continue };
        let (a, b) = if swapped { (*one_value, value) } else { (value, *one_value) };
        let Some(result) = apply(op, a, b)? else { continue };
        let mut result_labels = result_metric(&labels, matching, include, op.is_comparison_operator());
        if let Some(include) = include {
            copy_included(&mut result_labels, one_labels, include);
        }
        if include.is_none() && !seen.insert(result_labels.clone()) {
            return Err(format!("many-to-one matching on {key:?} needs group_left or group_right"));
        }
        out.push((result_labels, if op.is_comparison_operator() { a } else { result }));
    }
    Ok(Value::Vector(out))
}

/// `resultMetric`: arithmetic drops the name; one-to-one matching `on` keeps only those labels.
fn result_metric(
    labels: &Labels,
    matching: Option<&LabelModifier>,
    include: Option<&GroupLabels>,
    comparison: bool,
) -> Labels {
    let mut labels = if comparison { labels.clone() } else { drop_name(labels.clone()) };
    if include.is_none() {
        match matching {
            Some(LabelModifier::Include(names)) => labels.retain(|name, _| names.labels.contains(name)),
            Some(LabelModifier::Exclude(names)) => labels.retain(|name, _| !names.labels.contains(name)),
            None => {}
        }
    }
    labels
}

/// `group_left(l...)`: the "one" side's labels named are copied to the result.
fn copy_included(labels: &mut Labels, one: &Labels, include: &GroupLabels) {
    for name in &include.labels {
        match one.get(name) {
            Some(value) => labels.insert(name.clone(), value.clone()),
            None => labels.remove(name),
        };
    }
}

#[cfg(test)]
mod tests;

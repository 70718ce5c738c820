use super::*;

fn series(name: &str, labels: &[(&str, &str)], points: &[(f64, f64)]) -> Series {
    let mut all: Labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    all.insert("__name__".into(), name.into());
    Series { labels: all, points: points.to_vec() }
}

fn vector(value: Value) -> Vec<(Labels, f64)> {
    match value {
        Value::Vector(vector) => vector,
        Value::Scalar(scalar) => panic!("a scalar {scalar}"),
    }
}

#[test]
fn rate_sum_by_and_division_give_the_ratio_of_the_deltas() {
    let data = [
        series("i_total", &[("instance", "a"), ("processor", "0,0")], &[(0.0, 100.0), (10.0, 1100.0)]),
        series("i_total", &[("instance", "a"), ("processor", "0,1")], &[(0.0, 0.0), (10.0, 3000.0)]),
        series("c_total", &[("instance", "a"), ("processor", "0,0")], &[(0.0, 0.0), (10.0, 2000.0)]),
        series("c_total", &[("instance", "a"), ("processor", "0,1")], &[(0.0, 0.0), (10.0, 2000.0)]),
    ];
    let ipc = vector(
        evaluate(
            "sum by (instance) (rate(i_total[1m])) / sum by (instance) (rate(c_total[1m]))",
            &data,
            10.0,
        )
        .unwrap(),
    );
    assert_eq!(ipc, [(Labels::from([("instance".into(), "a".into())]), 1.0)]);
    let per = vector(evaluate("sum by (instance, processor) (rate(i_total[1m]))", &data, 10.0).unwrap());
    assert_eq!(per.iter().map(|(_, value)| *value).collect::<Vec<_>>(), [100.0, 300.0]);
    // A counter reset counts from 0.
    let reset = [series("x_total", &[], &[(0.0, 50.0), (10.0, 70.0), (20.0, 5.0)])];
    assert_eq!(vector(evaluate("increase(x_total[1m])", &reset, 20.0).unwrap())[0].1, 25.0);
    assert_eq!(vector(evaluate("irate(x_total[1m])", &reset, 20.0).unwrap())[0].1, 0.5);
}

#[test]
fn comparisons_filter_and_group_left_copies_labels() {
    let data = [
        series("state", &[("instance", "a")], &[(0.0, 1.0)]),
        series("state", &[("instance", "b")], &[(0.0, 2.0)]),
        series("select", &[("instance", "a"), ("event", "0")], &[(0.0, 4_407_854.0)]),
        series("count", &[("instance", "a"), ("event", "0"), ("processor", "0,0")], &[(0.0, 7.0)]),
    ];
    let busy = vector(evaluate("state != 1", &data, 1.0).unwrap());
    assert_eq!(busy.len(), 1);
    assert_eq!(busy[0].0["instance"], "b");
    let joined =
        vector(evaluate("count + on (instance, event) group_left () (0 * select)", &data, 1.0).unwrap());
    assert_eq!(
        joined,
        [(
            Labels::from([
                ("instance".into(), "a".into()),
                ("event".into(), "0".into()),
                ("processor".into(), "0,0".into())
            ]),
            7.0
        )]
    );
    let and = vector(evaluate("count and on (instance) (state == 1)", &data, 1.0).unwrap());
    assert_eq!(and.len(), 1);
    assert!(evaluate("sum(", &data, 1.0).is_err());
    // count_values turns the value into a label (Go's shortest decimal), which group_left copies.
    let labelled = vector(
        evaluate(
            "count * on (instance, event) group_left (select) count_values by (instance, event) (\"select\", select)",
            &data,
            1.0,
        )
        .unwrap(),
    );
    assert_eq!(labelled.len(), 1);
    assert_eq!(labelled[0].0["select"], "4407854");
    assert_eq!(labelled[0].1, 7.0);
}

//! `--format json`: the totals and every case, as one document on stdout.

use std::time::Duration;

use serde_json::{Value, json};

use crate::agent_test::outcome::{CaseReport, Totals};

pub fn json_report(cases: &[CaseReport], totals: &Totals, elapsed: Duration) -> Value {
    let cases: Vec<Value> = cases
        .iter()
        .map(|case| {
            let mut value = serde_json::to_value(case).unwrap_or(Value::Null);
            value["pass_rate"] = json!(case.pass_rate());
            value
        })
        .collect();
    json!({
        "passed": totals.passed,
        "failed": totals.failed,
        "skipped": totals.skipped,
        "filtered_out": totals.filtered_out,
        "duration_ms": elapsed.as_millis() as u64,
        "cases": cases,
    })
}

//! GitLab Code Quality reports checked against `tests/fixtures/gitlab-code-quality.schema.json`
//! (GitLab's documented format as a JSON Schema), fingerprints unique as GitLab needs them.

use serde_json::Value;

use super::root;

/// The issues of `json`, after the schema and fingerprint checks pass (else the test fails).
pub fn checked(json: &str) -> Vec<Value> {
    let report: Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("not JSON ({e}):\n{json}"));
    let schema_file = root().join("tests/fixtures/gitlab-code-quality.schema.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(&schema_file).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&report)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{json}");
    let issues = report.as_array().unwrap().clone();
    let mut fingerprints: Vec<&str> = issues
        .iter()
        .map(|i| i["fingerprint"].as_str().unwrap())
        .collect();
    fingerprints.sort();
    fingerprints.dedup();
    assert_eq!(
        fingerprints.len(),
        issues.len(),
        "a fingerprint twice:\n{json}"
    );
    issues
}

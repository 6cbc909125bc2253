//! A linked Page's forms and the rules that turn a form lead's answers into
//! the board's column, stage and label (LEADADS.md §3, LA-17).
//!
//! Rules per form: `{column?, stage?: "new" | "qualified", label?,
//! qualifyWhen?: [{key, anyOf}]}`. A lead is qualified when `stage` says so
//! or when every condition of `qualifyWhen` holds (an answer equal to one of
//! its values, case and surrounding spaces aside). The label is a template
//! over question keys (`"{interesse} · {melhor_horario}"`); it may name only
//! the form's own questions that are not contact fields, since a label is
//! stored and a person's name, phone or e-mail never is (LA-08). The same
//! [`apply`] serves `simulateMetaFormRules` and the Page's actor, so a
//! simulation is what a real lead becomes.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::meta::graph::Question;
use crate::store::leads::board as board_store;
use crate::store::meta::lead_ads::FormRow;

const MAX_LABEL: usize = 200;
const MAX_CONDITIONS: usize = 20;
const MAX_VALUES: usize = 50;

/// The stage a rule may set: a form lead never arrives won or lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RuleStage {
    New,
    Qualified,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Condition {
    /// A question key of the form.
    pub key: String,
    /// The answers that meet the condition.
    pub any_of: Vec<String>,
}

/// A form's rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FormRules {
    /// A column key the site's pipeline declares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<RuleStage>,
    /// A template over the form's non-contact question keys: `"{interesse}"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Every condition must hold for the lead to be qualified.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub qualify_when: Vec<Condition>,
}

/// Meta's question types that carry who the person is: never in a label.
const CONTACT_TYPES: &[&str] = &[
    "FULL_NAME",
    "FIRST_NAME",
    "LAST_NAME",
    "EMAIL",
    "PHONE",
    "WORK_EMAIL",
    "WORK_PHONE_NUMBER",
    "DOB",
    "STREET_ADDRESS",
    "ZIP",
    "POST_CODE",
    "ID_CPF",
    "NATIONAL_ID",
    "MILITARY_STATUS",
];

pub fn questions(form: &FormRow) -> Vec<Question> {
    serde_json::from_str(&form.questions).unwrap_or_default()
}

pub fn rules_of(form: &FormRow) -> Option<FormRules> {
    form.rules.as_deref().and_then(|r| serde_json::from_str(r).ok())
}

/// The `{key}` placeholders of a label template; None when a brace is unbalanced.
fn placeholders(template: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find(['{', '}']) {
        if rest.as_bytes()[open] == b'}' {
            return None;
        }
        let after = &rest[open + 1..];
        let close = after.find('}')?;
        let key = &after[..close];
        if key.contains('{') {
            return None;
        }
        out.push(key);
        rest = &after[close + 1..];
    }
    Some(out)
}

/// Refuses rules naming an undeclared column or a question the form does not have (LA-17).
pub fn check(conn: &mut AnyConnection, site_id: &str, form: &FormRow, rules: &FormRules) -> Result<()> {
    let qs = questions(form);
    let known = |key: &str| qs.iter().find(|q| q.key == key);
    if let Some(column) = &rules.column {
        crate::service::validate::text("rules.column", column, 1, 64)?;
        if !board_store::is_declared(conn, site_id, column)? {
            return Err(Error::invalid(format!("rules.column: the site's pipeline declares no column {column:?}")));
        }
    }
    if let Some(label) = &rules.label {
        crate::service::validate::text("rules.label", label, 1, MAX_LABEL)?;
        let keys = placeholders(label).ok_or_else(|| Error::invalid("rules.label: unbalanced braces"))?;
        for key in keys {
            let q =
                known(key).ok_or_else(|| Error::invalid(format!("rules.label: the form has no question {key:?}")))?;
            if CONTACT_TYPES.contains(&q.kind.as_str()) {
                return Err(Error::invalid(format!(
                    "rules.label: {key:?} is a contact field; a label is stored and a person's contact never is"
                )));
            }
        }
    }
    if rules.qualify_when.len() > MAX_CONDITIONS {
        return Err(Error::invalid(format!("rules.qualifyWhen: at most {MAX_CONDITIONS} conditions")));
    }
    for c in &rules.qualify_when {
        if known(&c.key).is_none() {
            return Err(Error::invalid(format!("rules.qualifyWhen: the form has no question {:?}", c.key)));
        }
        if c.any_of.is_empty() || c.any_of.len() > MAX_VALUES {
            return Err(Error::invalid(format!("rules.qualifyWhen: anyOf takes 1 to {MAX_VALUES} values")));
        }
        for v in &c.any_of {
            crate::service::validate::text("rules.qualifyWhen.anyOf", v, 1, 200)?;
        }
    }
    Ok(())
}

/// What a lead with some answers becomes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub column: Option<String>,
    pub stage: RuleStage,
    pub label: Option<String>,
    pub qualified: bool,
}

fn same(a: &str, b: &str) -> bool {
    a.trim().to_lowercase() == b.trim().to_lowercase()
}

/// Applies `rules` (None: a new lead, no column, no label) to the answers.
pub fn apply(rules: Option<&FormRules>, answers: &[(String, String)]) -> Outcome {
    let Some(r) = rules else {
        return Outcome { column: None, stage: RuleStage::New, label: None, qualified: false };
    };
    let answer = |key: &str| answers.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    let met = !r.qualify_when.is_empty()
        && r.qualify_when.iter().all(|c| answer(&c.key).is_some_and(|v| c.any_of.iter().any(|x| same(x, v))));
    let qualified = r.stage == Some(RuleStage::Qualified) || met;
    let label = r.label.as_ref().map(|t| render(t, &answer)).filter(|l| !l.is_empty());
    Outcome {
        column: r.column.clone(),
        stage: if qualified { RuleStage::Qualified } else { RuleStage::New },
        label,
        qualified,
    }
}

/// The template with each `{key}` replaced by its answer (empty when unanswered).
fn render<'a>(template: &str, answer: &impl Fn(&str) -> Option<&'a str>) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        out.push_str(answer(&after[..close]).unwrap_or_default());
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    let collapsed = out.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed.chars().take(256).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    // rule: LA-17
    #[test]
    fn rules_qualify_when_every_condition_holds_and_render_the_label() {
        let rules = FormRules {
            column: Some("orcamento".into()),
            label: Some("{interesse} · {cidade}".into()),
            qualify_when: vec![
                Condition { key: "interesse".into(), any_of: vec!["Sofá".into(), "Mesa".into()] },
                Condition { key: "prazo".into(), any_of: vec!["este mês".into()] },
            ],
            ..FormRules::default()
        };
        let met = apply(Some(&rules), &a(&[("interesse", " sofá "), ("prazo", "Este mês"), ("cidade", "Santos")]));
        assert_eq!(met.stage, RuleStage::Qualified);
        assert_eq!(met.label.as_deref(), Some("sofá · Santos"));
        assert_eq!(met.column.as_deref(), Some("orcamento"));
        let unmet = apply(Some(&rules), &a(&[("interesse", "Sofá"), ("prazo", "ano que vem")]));
        assert!(!unmet.qualified);
        assert_eq!(unmet.label.as_deref(), Some("Sofá ·"));
        assert_eq!(apply(None, &a(&[("interesse", "Sofá")])).stage, RuleStage::New);
        let forced = FormRules { stage: Some(RuleStage::Qualified), ..FormRules::default() };
        assert!(apply(Some(&forced), &[]).qualified);
    }

    #[test]
    fn placeholders_need_balanced_braces() {
        assert_eq!(placeholders("{a} e {b}"), Some(vec!["a", "b"]));
        assert_eq!(placeholders("sem chaves"), Some(vec![]));
        assert_eq!(placeholders("{a"), None);
        assert_eq!(placeholders("a}"), None);
        assert_eq!(placeholders("{{a}}"), None);
    }
}

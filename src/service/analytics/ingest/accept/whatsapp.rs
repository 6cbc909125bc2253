//! A tap on the site's WhatsApp link (docs/whatsapp.md, WA-01, WA-02): the
//! tracker's custom event `whatsapp_click` carries the business number and
//! the reference it wrote into the prefilled message. Acceptance keeps a
//! reference of the right shape (upper-cased) and binds it to the click;
//! a `ref` of any other shape leaves the event, which is kept.

use serde_json::{Map, Value};

/// The custom event the tracker sends for a tap (rule WA-01).
pub const WHATSAPP_CLICK: &str = "whatsapp_click";

/// The references' alphabet: no 0/O, 1/I/L, so a reference read off a
/// message and retyped is still itself.
pub const REF_ALPHABET: &str = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/// The longest business number kept (E.164 numbers have at most 15 digits).
const MAX_NUMBER_DIGITS: usize = 20;

/// `reference` upper-cased when it is 6 characters of the alphabet in any
/// case (rule WA-02), else None.
pub fn reference(reference: &str) -> Option<String> {
    let upper = reference.to_ascii_uppercase();
    (upper.len() == 6 && upper.chars().all(|c| REF_ALPHABET.contains(c))).then_some(upper)
}

/// What a tap binds: its reference and the business number tapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tap {
    pub reference: String,
    /// Digits only; empty when the event named no number of that shape.
    pub number: String,
}

/// A `whatsapp_click`'s properties as stored, and its tap when it carries a
/// valid reference: the reference is stored upper-cased, a `ref` of any
/// other shape (or type) is dropped from them (rule WA-02).
pub fn tap(properties: &mut Option<Map<String, Value>>) -> Option<Tap> {
    let props = properties.as_mut()?;
    let valid = match props.get("ref") {
        None => return None,
        Some(Value::String(s)) => reference(s),
        Some(_) => None,
    };
    let Some(reference) = valid else {
        props.remove("ref");
        if props.is_empty() {
            *properties = None;
        }
        return None;
    };
    props.insert("ref".into(), Value::String(reference.clone()));
    let number = match props.get("number") {
        Some(Value::String(s))
            if (1..=MAX_NUMBER_DIGITS).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()) =>
        {
            s.clone()
        }
        _ => String::new(),
    };
    Some(Tap { reference, number })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn props(v: Value) -> Option<Map<String, Value>> {
        v.as_object().cloned()
    }

    // rule: WA-02
    #[test]
    fn a_reference_is_six_characters_of_the_alphabet_in_any_case() {
        assert_eq!(reference("r7k2qx").as_deref(), Some("R7K2QX"));
        assert_eq!(reference("W4ZAP2").as_deref(), Some("W4ZAP2"));
        // 0, O, 1, I and L are not in the alphabet; 5 or 7 characters are not a reference.
        for bad in ["R7K2Q0", "R7K2QO", "R7K2Q1", "R7K2QI", "R7K2QL", "R7K2Q", "R7K2QXA", "", "R7K2Q-", "R7K2QÉ"] {
            assert_eq!(reference(bad), None, "{bad}");
        }
        assert_eq!(REF_ALPHABET.len(), 31);
    }

    // rule: WA-02
    #[test]
    fn a_bad_ref_is_dropped_and_a_good_one_upper_cased() {
        let mut p = props(json!({"number": "5511999990000", "ref": "r7k2qx", "extra": 1}));
        let t = tap(&mut p).unwrap();
        assert_eq!(t, Tap { reference: "R7K2QX".into(), number: "5511999990000".into() });
        assert_eq!(p, props(json!({"number": "5511999990000", "ref": "R7K2QX", "extra": 1})));
        for bad in [json!("R7K2Q0"), json!(123456), json!(true), json!("")] {
            let mut p = props(json!({"number": "5511999990000", "ref": bad}));
            assert_eq!(tap(&mut p), None, "{bad}");
            assert_eq!(p, props(json!({"number": "5511999990000"})), "{bad}");
        }
        // Nothing left: no properties at all.
        let mut p = props(json!({"ref": "nope"}));
        assert_eq!((tap(&mut p), p), (None, None));
        // No ref (data-whatsapp-ref="off"): the event as it came.
        let mut p = props(json!({"number": "5511999990000"}));
        assert_eq!(tap(&mut p), None);
        assert_eq!(p, props(json!({"number": "5511999990000"})));
        assert_eq!(tap(&mut None), None);
        // A number that is not digits binds none.
        let mut p = props(json!({"number": "+55 11", "ref": "R7K2QX"}));
        assert_eq!(tap(&mut p).unwrap().number, "");
        let mut p = props(json!({"number": 5511, "ref": "R7K2QX"}));
        assert_eq!(tap(&mut p).unwrap().number, "");
    }
}

//! `closed_set!`: an enum whose every variant is stored or sent as one fixed
//! string, written once in the invocation (the way `codes.rs` spells the
//! failure codes). The macro gives `ALL`, `as_str`, `parse` (the exact string
//! back), `Display`, and serde and schema derives renamed to the strings, so a
//! row, an argument or an answer carries the enum and the wire text stays
//! byte-identical. Each set's module tests that `parse(as_str(v)) == v`.
//!
//! It lives at the crate root, below every layer, because the sets belong to
//! different layers: the dashboard audience to `config`, the conversion
//! statuses to `store`, the analytics words to `service::analytics`.

#[macro_export]
macro_rules! closed_set {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant, )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The stored and wire string.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }

            /// The variant spelled exactly `text`.
            pub fn parse(text: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|v| v.as_str() == text)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }
    };
}

/// Asserts that every variant of a `closed_set!` reads back from its string
/// and that no two share one.
#[cfg(test)]
#[macro_export]
macro_rules! assert_round_trip {
    ($name:ident) => {{
        let mut seen = std::collections::HashSet::new();
        for &v in $name::ALL {
            assert_eq!($name::parse(v.as_str()), Some(v), "{} reads back", v.as_str());
            assert!(seen.insert(v.as_str()), "{} is spelled twice in {}", v.as_str(), stringify!($name));
            let json = serde_json::to_value(v).unwrap();
            assert_eq!(json, serde_json::Value::String(v.as_str().to_string()), "serde writes the string");
            assert_eq!(serde_json::from_value::<$name>(json).unwrap(), v, "serde reads it back");
        }
        assert_eq!($name::parse("not one of them"), None);
    }};
}

//! The dashboard's operators, their sessions and sign-in limits.

diesel::table! {
    dashboard_signin_failures (id) {
        id -> BigInt,
        key_hash -> Text,
        at -> BigInt,
    }
}

diesel::table! {
    operator_known_clients (operator_id, client_hash) {
        operator_id -> Text,
        client_hash -> Text,
        last_at -> BigInt,
    }
}

diesel::table! {
    operator_sessions (id_hash) {
        id_hash -> Text,
        operator_id -> Text,
        csrf_token -> Text,
        created_at -> BigInt,
        expires_at -> BigInt,
    }
}

diesel::table! {
    operators (id) {
        id -> Text,
        name -> Text,
        password_hash -> Text,
        can_configure -> Bool,
        owner_key -> Text,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

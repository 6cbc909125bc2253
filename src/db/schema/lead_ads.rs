//! Meta Lead Ads (README, "Meta Lead Ads"): linked Pages, forms, receipts, handlers.

diesel::table! {
    meta_form_handlers (site_id) {
        site_id -> Text,
        url -> Text,
        sealed_secret -> Text,
        updated_at -> BigInt,
    }
}

diesel::table! {
    meta_forms (page_id, form_id) {
        page_id -> Text,
        form_id -> Text,
        site_id -> Text,
        name -> Text,
        status -> Text,
        questions -> Text,
        rules -> Nullable<Text>,
        watermark -> Nullable<BigInt>,
        listed_at -> BigInt,
    }
}

diesel::table! {
    meta_lead_receipts (id) {
        id -> Text,
        leadgen_id -> Text,
        site_id -> Text,
        page_id -> Text,
        form_id -> Nullable<Text>,
        ad_id -> Nullable<Text>,
        created_time -> Nullable<BigInt>,
        received_at -> BigInt,
        source -> Text,
        status -> Text,
        attempts -> BigInt,
        next_attempt_at -> BigInt,
        last_error -> Nullable<Text>,
        lead_id -> Nullable<Text>,
        updated_at -> BigInt,
    }
}

diesel::table! {
    meta_page_links (page_id) {
        page_id -> Text,
        site_id -> Text,
        owner_key -> Text,
        name -> Text,
        subscribed -> Bool,
        last_error -> Nullable<Text>,
        last_webhook_at -> Nullable<BigInt>,
        last_reconciled_at -> Nullable<BigInt>,
        lease_owner -> Nullable<Text>,
        lease_until -> Nullable<BigInt>,
        linked_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    meta_pages (owner_key, page_id) {
        owner_key -> Text,
        page_id -> Text,
        name -> Text,
        can_retrieve_leads -> Bool,
        sealed_token -> Text,
        listed_at -> BigInt,
    }
}

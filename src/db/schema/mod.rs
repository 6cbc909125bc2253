//! Written by hand: `print-schema` differs per backend, and SQLite would truncate
//! a BIGINT read as Integer. Every id and time is BigInt here.
//!
//! One file per context's tables beyond the leads' and Meta's below; each is
//! checked against the migrated database of both backends
//! (`tests/it/ops/schema.rs`).

mod analytics;
mod dashboard;
mod lead_ads;

pub use analytics::*;
pub use dashboard::*;
pub use lead_ads::*;

diesel::table! {
    sites (id) {
        id -> Text,
        name -> Text,
        currency -> Text,
        timezone -> Text,
        owner_id -> Text,
        domains -> Text,
        route_patterns -> Text,
        cookieless -> Bool,
        send_lead_event -> Bool,
        created_at -> BigInt,
        updated_at -> BigInt,
        send_click_ids -> Bool,
        whatsapp_business_account_id -> Nullable<Text>,
    }
}

diesel::table! {
    leads (id) {
        id -> Text,
        site_id -> Text,
        lead_key -> Text,
        label -> Nullable<Text>,
        origin -> Text,
        campaign_id -> Text,
        adset_id -> Text,
        ad_id -> Text,
        campaign_name -> Nullable<Text>,
        adset_name -> Nullable<Text>,
        ad_name -> Nullable<Text>,
        click_id -> Nullable<Text>,
        first_at -> BigInt,
        cohort_day -> BigInt,
        stage -> Text,
        stage_at -> BigInt,
        ever_qualified -> Bool,
        ever_won -> Bool,
        revenue_cents -> BigInt,
        won_at -> Nullable<BigInt>,
        column_key -> Nullable<Text>,
        column_at -> Nullable<BigInt>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    lead_events (id) {
        id -> BigInt,
        lead_id -> Text,
        site_id -> Text,
        event_id -> Text,
        stage -> Nullable<Text>,
        column_key -> Nullable<Text>,
        revenue_cents -> Nullable<BigInt>,
        occurred_at -> BigInt,
        recorded_at -> BigInt,
    }
}

diesel::table! {
    pipeline_columns (site_id, key) {
        site_id -> Text,
        key -> Text,
        position -> Integer,
        name -> Text,
        color -> Nullable<Text>,
        group_name -> Nullable<Text>,
        event -> Nullable<Text>,
    }
}

diesel::table! {
    lead_rollups (site_id, day, origin, campaign_id, adset_id, ad_id) {
        site_id -> Text,
        day -> BigInt,
        origin -> Text,
        campaign_id -> Text,
        adset_id -> Text,
        ad_id -> Text,
        leads -> BigInt,
        qualified -> BigInt,
        won -> BigInt,
        revenue_cents -> BigInt,
    }
}

diesel::table! {
    ad_labels (site_id, level, object_id) {
        site_id -> Text,
        level -> Text,
        object_id -> Text,
        name -> Text,
        updated_at -> BigInt,
    }
}

diesel::joinable!(leads -> sites (site_id));
diesel::joinable!(lead_events -> leads (lead_id));
diesel::allow_tables_to_appear_in_same_query!(sites, leads, lead_events, pipeline_columns, lead_rollups, ad_labels);

diesel::table! {
    meta_connections (owner_key) {
        owner_key -> Text,
        sealed_token -> Text,
        token_version -> BigInt,
        source -> Text,
        authorized_by_id -> Nullable<Text>,
        authorized_by_name -> Nullable<Text>,
        authorized_at -> BigInt,
        expires_at -> Nullable<BigInt>,
        expiring_soon -> Bool,
        invalid_since -> Nullable<BigInt>,
        last_error -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    meta_listed_accounts (owner_key, ad_account_id) {
        owner_key -> Text,
        ad_account_id -> Text,
        name -> Text,
        currency -> Text,
        timezone -> Text,
        account_status -> Nullable<BigInt>,
        position -> Integer,
    }
}

diesel::table! {
    meta_listed_pixels (owner_key, pixel_id) {
        owner_key -> Text,
        pixel_id -> Text,
        name -> Text,
        ad_account_id -> Text,
    }
}

diesel::table! {
    site_ad_accounts (ad_account_id) {
        ad_account_id -> Text,
        site_id -> Text,
        owner_key -> Text,
        name -> Text,
        currency -> Text,
        timezone -> Text,
        stopped_reason -> Nullable<Text>,
        last_error -> Nullable<Text>,
        linked_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    site_pixels (site_id) {
        site_id -> Text,
        pixel_id -> Text,
        name -> Nullable<Text>,
        source -> Text,
        owner_key -> Nullable<Text>,
        sealed_token -> Nullable<Text>,
        token_version -> BigInt,
        enabled -> Bool,
        test_event_code -> Nullable<Text>,
        stopped_reason -> Nullable<Text>,
        last_error -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::allow_tables_to_appear_in_same_query!(
    sites,
    meta_connections,
    meta_listed_accounts,
    meta_listed_pixels,
    site_ad_accounts,
    site_pixels
);

diesel::table! {
    account_syncs (ad_account_id) {
        ad_account_id -> Text,
        site_id -> Text,
        next_run_at -> BigInt,
        backfill_from -> Nullable<BigInt>,
        backfill_until -> Nullable<BigInt>,
        backfill_done -> Integer,
        backfill_total -> Integer,
        first_synced_at -> Nullable<BigInt>,
        synced_through -> Nullable<BigInt>,
        last_live_at -> Nullable<BigInt>,
        last_daily_day -> Nullable<BigInt>,
        last_weekly_day -> Nullable<BigInt>,
        last_sync_at -> Nullable<BigInt>,
        last_error -> Nullable<Text>,
        fail_count -> Integer,
        lease_run_id -> Nullable<Text>,
        lease_until -> Nullable<BigInt>,
        sync_requested -> Bool,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    ad_spend (ad_account_id, day, ad_id) {
        ad_account_id -> Text,
        site_id -> Text,
        day -> BigInt,
        ad_id -> Text,
        adset_id -> Text,
        campaign_id -> Text,
        spend_cents -> BigInt,
        impressions -> BigInt,
        clicks -> BigInt,
    }
}

diesel::table! {
    ad_catalog (ad_id) {
        ad_id -> Text,
        ad_account_id -> Text,
        name -> Nullable<Text>,
        adset_id -> Text,
        adset_name -> Nullable<Text>,
        campaign_id -> Text,
        campaign_name -> Nullable<Text>,
        ad_status -> Nullable<Text>,
        creative_type -> Nullable<Text>,
        thumbnail -> Nullable<Text>,
        updated_at -> BigInt,
    }
}

diesel::allow_tables_to_appear_in_same_query!(account_syncs, ad_spend, ad_catalog, site_ad_accounts);

diesel::table! {
    federation_grants (connection_id) {
        connection_id -> Text,
        organization_id -> Text,
        owner_id -> Text,
        site_ids -> Text,
        permissions -> Text,
        revoked_at -> Nullable<BigInt>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    conversions (event_id) {
        event_id -> Text,
        site_id -> Text,
        lead_id -> Nullable<Text>,
        event_name -> Text,
        event_time -> BigInt,
        value_cents -> Nullable<BigInt>,
        currency -> Nullable<Text>,
        status -> Text,
        attempts -> BigInt,
        due_at -> Nullable<BigInt>,
        lease_owner -> Nullable<Text>,
        lease_until -> Nullable<BigInt>,
        ph -> Nullable<Text>,
        external_id -> Nullable<Text>,
        last_error -> Nullable<Text>,
        created_at -> BigInt,
        sent_at -> Nullable<BigInt>,
        updated_at -> BigInt,
        meta_lead_id -> Nullable<Text>,
        crm_event_name -> Nullable<Text>,
        web_conversion_id -> Nullable<Text>,
        web_session_id -> Nullable<Text>,
        sent_event_id -> Nullable<Text>,
    }
}

// Meta told by click id (docs/whatsapp.md §4): a session's sealed landing fbclid.
diesel::table! {
    web_click_ids (site_id, session_id) {
        site_id -> Text,
        session_id -> Text,
        sealed_fbclid -> Text,
        landed_at -> BigInt,
        sealed_user_agent -> Nullable<Text>,
    }
}

diesel::table! {
    conversion_days (site_id, day, event_name) {
        site_id -> Text,
        day -> BigInt,
        event_name -> Text,
        sent -> BigInt,
    }
}

// Web analytics: the configure scope's definitions (migration 9).

diesel::table! {
    web_goals (id) {
        id -> Text,
        site_id -> Text,
        key -> Text,
        name -> Text,
        matcher_kind -> Text,
        matcher_value -> Text,
        value_cents -> Nullable<BigInt>,
        active -> Bool,
        created_at -> BigInt,
        updated_at -> BigInt,
        removed_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    web_funnels (id) {
        id -> Text,
        site_id -> Text,
        key -> Text,
        name -> Text,
        window_ms -> BigInt,
        steps -> Text,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    web_affiliates (id) {
        id -> Text,
        site_id -> Text,
        slug -> Text,
        name -> Text,
        commission_bps -> BigInt,
        window_days -> BigInt,
        created_at -> BigInt,
        updated_at -> BigInt,
        removed_at -> Nullable<BigInt>,
        active -> Bool,
    }
}

// Web analytics: tracked links (migration 10).

diesel::table! {
    web_links (id) {
        id -> Text,
        site_id -> Text,
        slug -> Text,
        destination -> Text,
        platform -> Text,
        channel -> Text,
        campaign -> Nullable<Text>,
        disabled -> Bool,
        created_by -> Text,
        created_at -> BigInt,
        updated_at -> BigInt,
        clicks_total -> BigInt,
        bot_hits_total -> BigInt,
    }
}

diesel::table! {
    web_link_days (link_id, day) {
        link_id -> Text,
        site_id -> Text,
        day -> BigInt,
        clicks -> BigInt,
        bot_hits -> BigInt,
    }
}

// The WhatsApp bridge (docs/whatsapp.md): the visit a lead came from, and the
// ledger conversions of sessions that came from a Meta ad.
diesel::table! {
    lead_visits (lead_id) {
        lead_id -> Text,
        site_id -> Text,
        visitor_id -> Text,
        session_id -> Text,
        source -> Text,
        medium -> Text,
        campaign -> Nullable<Text>,
        landing_path -> Text,
        affiliate_id -> Nullable<Text>,
        clicked_at -> BigInt,
        clicked_path -> Text,
        lead_at -> BigInt,
    }
}

diesel::table! {
    web_ad_conversions (conversion_id) {
        conversion_id -> Text,
        site_id -> Text,
        occurred_at -> BigInt,
        campaign_id -> Text,
        adset_id -> Text,
        ad_id -> Text,
        value_cents -> BigInt,
    }
}

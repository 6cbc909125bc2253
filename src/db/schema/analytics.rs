//! Web analytics' tables (migrations 8 onwards): visitors, sessions, events,
//! the rollups the report actors keep, definitions' counters, people, the
//! site map and vitals, jobs. Read and written through the query builder, or
//! through [`crate::db::row`] where a dialect needs raw SQL.

diesel::table! {
    web_affiliate_days (site_id, day, affiliate_id) {
        site_id -> Text,
        day -> BigInt,
        affiliate_id -> Text,
        sessions -> BigInt,
        conversions -> BigInt,
        revenue_cents -> BigInt,
        commission_cents -> BigInt,
    }
}

diesel::table! {
    web_aliases (site_id, alias_id) {
        site_id -> Text,
        alias_id -> Text,
        visitor_id -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    web_breakdowns (site_id, tier, bucket, dim, key) {
        site_id -> Text,
        tier -> Text,
        bucket -> BigInt,
        dim -> Text,
        key -> Text,
        count -> BigInt,
    }
}

diesel::table! {
    web_conversions (id) {
        id -> Text,
        site_id -> Text,
        conversion_key -> Text,
        name -> Text,
        occurred_at -> BigInt,
        value_cents -> BigInt,
        currency -> Text,
        visitor_id -> Nullable<Text>,
        session_id -> Nullable<Text>,
        affiliate_id -> Nullable<Text>,
        commission_cents -> BigInt,
        properties -> Nullable<Text>,
        created_at -> BigInt,
    }
}

diesel::table! {
    web_counters (site_id, tier, bucket) {
        site_id -> Text,
        tier -> Text,
        bucket -> BigInt,
        sessions -> BigInt,
        bounces -> BigInt,
        duration_sum -> BigInt,
        pageviews -> BigInt,
        custom_events -> BigInt,
        engaged_sum -> BigInt,
        engaged_count -> BigInt,
        conversions -> BigInt,
        revenue_cents -> BigInt,
        commission_cents -> BigInt,
    }
}

diesel::table! {
    web_events (id) {
        id -> Text,
        site_id -> Text,
        session_id -> Text,
        visitor_id -> Text,
        kind -> Text,
        name -> Nullable<Text>,
        path -> Text,
        route -> Text,
        occurred_at -> BigInt,
        pageview_id -> Nullable<Text>,
        properties -> Nullable<Text>,
        engaged_ms -> Nullable<BigInt>,
        lcp -> Nullable<BigInt>,
        inp -> Nullable<BigInt>,
        cls -> Nullable<BigInt>,
        fcp -> Nullable<BigInt>,
        ttfb -> Nullable<BigInt>,
    }
}

diesel::table! {
    web_funnel_rebuilds (funnel_id) {
        funnel_id -> Text,
        site_id -> Text,
        after_at -> BigInt,
        after_id -> Text,
    }
}

diesel::table! {
    web_funnel_days (funnel_id, day, visitor_id) {
        funnel_id -> Text,
        day -> BigInt,
        visitor_id -> Text,
        site_id -> Text,
        first_at -> BigInt,
        entries -> Binary,
    }
}

diesel::table! {
    web_goal_counters (site_id, tier, bucket, goal_id) {
        site_id -> Text,
        tier -> Text,
        bucket -> BigInt,
        goal_id -> Text,
        completions -> BigInt,
        sessions -> BigInt,
    }
}

diesel::table! {
    web_goal_hits (site_id, goal_id, at, event_id) {
        site_id -> Text,
        goal_id -> Text,
        at -> BigInt,
        event_id -> Text,
    }
}

diesel::table! {
    web_identities (owner_id, external_hash) {
        owner_id -> Text,
        external_hash -> Text,
        visitor_id -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    web_imports (site_id, import_id) {
        site_id -> Text,
        import_id -> Text,
        body_sha256 -> Text,
        answer -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    web_keys (name) {
        name -> Text,
        secret -> Binary,
    }
}

diesel::table! {
    web_map_imported (site_id) {
        site_id -> Text,
        earliest -> BigInt,
    }
}

diesel::table! {
    web_map_routes (site_id, day, route) {
        site_id -> Text,
        day -> BigInt,
        route -> Text,
        views -> BigInt,
        entries -> BigInt,
        continuations -> BigInt,
    }
}

diesel::table! {
    web_map_transitions (site_id, day, from_route, to_route) {
        site_id -> Text,
        day -> BigInt,
        from_route -> Text,
        to_route -> Text,
        count -> BigInt,
    }
}

diesel::table! {
    web_hour_sets_from (site_id) {
        site_id -> Text,
        complete_from -> BigInt,
    }
}

diesel::table! {
    web_month_tier (site_id) {
        site_id -> Text,
        complete_from -> BigInt,
    }
}

diesel::table! {
    web_number_counters (site_id) {
        site_id -> Text,
        next_number -> BigInt,
    }
}

diesel::table! {
    web_outbox (id) {
        id -> BigInt,
        site_id -> Text,
        visitor_id -> Text,
        session_id -> Text,
        kind -> Text,
        at -> BigInt,
        session_start -> BigInt,
        route -> Text,
        name -> Nullable<Text>,
        new_session -> BigInt,
        d_bounces -> BigInt,
        d_duration -> BigInt,
        d_engaged_sum -> BigInt,
        d_engaged_count -> BigInt,
        goals -> Nullable<Text>,
        new_goals -> Nullable<Text>,
        prev_route -> Nullable<Text>,
        pageview_no -> BigInt,
        vital_old -> Nullable<BigInt>,
        vital_new -> Nullable<BigInt>,
    }
}

diesel::table! {
    web_outbox_packs (id) {
        id -> BigInt,
        site_id -> Text,
        row_count -> BigInt,
        body -> Binary,
    }
}

diesel::table! {
    web_profile_terms (site_id, term, visitor_id) {
        site_id -> Text,
        term -> Text,
        visitor_id -> Text,
    }
}

diesel::table! {
    web_profiles (site_id, visitor_id) {
        site_id -> Text,
        visitor_id -> Text,
        name -> Nullable<Text>,
        email -> Nullable<Text>,
        attributes -> Text,
        identified_at -> BigInt,
        first_seen_at -> BigInt,
        last_seen_at -> BigInt,
    }
}

diesel::table! {
    web_regroup_jobs (site_id) {
        site_id -> Text,
        patterns -> Text,
        phase -> BigInt,
        cursor -> Text,
        started_at -> BigInt,
    }
}

diesel::table! {
    web_retention_jobs (site_id, data_class) {
        site_id -> Text,
        data_class -> Text,
        cutoff -> Nullable<BigInt>,
        last_run_at -> Nullable<BigInt>,
        next_run_at -> Nullable<BigInt>,
        last_deleted -> BigInt,
        last_error -> Nullable<Text>,
        purged_before -> Nullable<BigInt>,
        tracked_since -> Nullable<BigInt>,
    }
}

diesel::table! {
    web_retention_policies (site_id) {
        site_id -> Text,
        events_days -> BigInt,
        sessions_days -> BigInt,
        conversions_days -> BigInt,
        profiles_days -> BigInt,
        aggregates_days -> BigInt,
        enabled_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    web_route_groups (site_id, route) {
        site_id -> Text,
        route -> Text,
    }
}

diesel::table! {
    web_salts (day) {
        day -> BigInt,
        salt -> Binary,
    }
}

diesel::table! {
    web_session_goals (session_id, goal_id) {
        session_id -> Text,
        goal_id -> Text,
        site_id -> Text,
        started_at -> BigInt,
    }
}

diesel::table! {
    web_sessions (id) {
        id -> Text,
        site_id -> Text,
        visitor_id -> Text,
        started_at -> BigInt,
        last_at -> BigInt,
        end_at -> BigInt,
        entry_path -> Text,
        entry_route -> Text,
        exit_path -> Text,
        referrer -> Nullable<Text>,
        source -> Text,
        medium -> Text,
        campaign -> Nullable<Text>,
        term -> Nullable<Text>,
        content -> Nullable<Text>,
        affiliate_id -> Nullable<Text>,
        country -> Nullable<Text>,
        region -> Nullable<Text>,
        device -> Nullable<Text>,
        browser -> Nullable<Text>,
        os -> Nullable<Text>,
        language -> Nullable<Text>,
        pageviews -> BigInt,
        events -> BigInt,
        is_returning -> Bool,
        conversions -> BigInt,
        revenue_cents -> BigInt,
        version -> BigInt,
    }
}

diesel::table! {
    web_upgrades (name) {
        name -> Text,
        at -> BigInt,
    }
}

diesel::table! {
    web_visitor_numbers (site_id, visitor_id) {
        site_id -> Text,
        visitor_id -> Text,
        number -> BigInt,
    }
}

diesel::table! {
    web_visitor_sets (site_id, tier, bucket, dim, key) {
        site_id -> Text,
        tier -> Text,
        bucket -> BigInt,
        dim -> Text,
        key -> Text,
        bits -> Binary,
    }
}

diesel::table! {
    web_visitors (site_id, visitor_id) {
        site_id -> Text,
        visitor_id -> Text,
        session_id -> Text,
        session_started_at -> BigInt,
        last_at -> BigInt,
        current_path -> Text,
        current_route -> Text,
        sessions -> BigInt,
        handed_over -> Bool,
    }
}

diesel::table! {
    web_vital_digests (site_id, day, metric, route, device) {
        site_id -> Text,
        day -> BigInt,
        metric -> Text,
        route -> Text,
        device -> Text,
        pairs -> Binary,
    }
}

diesel::table! {
    web_whatsapp_refs (site_id, reference) {
        site_id -> Text,
        #[sql_name = "ref"]
        reference -> Text,
        visitor_id -> Text,
        session_id -> Text,
        number -> Text,
        path -> Text,
        clicked_at -> BigInt,
    }
}

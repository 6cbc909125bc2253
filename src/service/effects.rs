//! What a committed write changed that the rest of the daemon acts on, and
//! the one place that acts on it.
//!
//! A service write answers its value with its [`Effects`] ([`Written`]);
//! `Context::write` commits it through the group-commit writer and then hands
//! the effects to the [`Dispatch`] the actors layer implements (wake the sync
//! supervisor, wake the pixels' senders) and moves the read cache's
//! generation. No transport sends a wake-up by hand, so a new one (the
//! dashboard, analytics) cannot forget one. Wake-ups are hints: the rows are
//! the truth and the actors' periodic sweeps read them, so a lost one only
//! delays work.

use std::collections::BTreeSet;

/// What one write changed beyond its own rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effects {
    /// Ad account links or Meta tokens changed: the sync supervisor reconciles.
    pub sync_changed: bool,
    /// Sites whose pixel got conversions queued: their senders look now.
    pub conversions_queued: BTreeSet<String>,
    /// Contact hashes left the queue outside a send (a removed lead): SQLite's
    /// WAL gets scrubbed of them soon.
    pub hashes_erased: bool,
    /// Whether the write may change what cached reads (meta.status) show.
    /// True by default, the safe side; only writes that know better say no.
    pub changes_cached_reads: bool,
    /// Sites whose live visitors' rows changed (tracker events, an import,
    /// a conversion, a profile): this process's cached live state of them goes.
    pub live_changed: BTreeSet<String>,
    /// Lead Ads: Pages with new receipts (or newly linked): their actors look now.
    pub leadgen_pages: BTreeSet<String>,
}

impl Default for Effects {
    fn default() -> Self {
        Effects {
            sync_changed: false,
            conversions_queued: BTreeSet::new(),
            hashes_erased: false,
            changes_cached_reads: true,
            live_changed: BTreeSet::new(),
            leadgen_pages: BTreeSet::new(),
        }
    }
}

impl Effects {
    /// A write that leaves the cached reads alone and wakes nobody (the
    /// actors' own bookkeeping, keys and salts made once).
    pub fn quiet() -> Effects {
        Effects { changes_cached_reads: false, ..Effects::default() }
    }

    /// A web-analytics write that changed what `site_id`'s live rows show
    /// when `changed`, and nothing the other cached reads show.
    pub fn live(site_id: &str, changed: bool) -> Effects {
        let mut e = Effects::quiet();
        if changed {
            e.live_changed.insert(site_id.to_string());
        }
        e
    }

    /// A write that changed links or tokens.
    pub fn sync_changed() -> Effects {
        Effects { sync_changed: true, ..Effects::default() }
    }

    /// A lead write: it leaves cached reads alone unless it queued a
    /// conversion for `site_id` (conversion counts are part of meta.status).
    pub fn lead_write(site_id: &str, queued: bool) -> Effects {
        let mut e = Effects { changes_cached_reads: queued, ..Effects::default() };
        if queued {
            e.conversions_queued.insert(site_id.to_string());
        }
        e
    }

    /// Both writes' effects (a write made of several steps).
    pub fn merge(mut self, other: Effects) -> Effects {
        self.sync_changed |= other.sync_changed;
        self.conversions_queued.extend(other.conversions_queued);
        self.hashes_erased |= other.hashes_erased;
        self.changes_cached_reads |= other.changes_cached_reads;
        self.live_changed.extend(other.live_changed);
        self.leadgen_pages.extend(other.leadgen_pages);
        self
    }
}

/// A write's answer and what it changed.
#[derive(Debug)]
pub struct Written<T> {
    pub value: T,
    pub effects: Effects,
}

impl<T> Written<T> {
    pub fn new(value: T, effects: Effects) -> Written<T> {
        Written { value, effects }
    }

    /// A write with no wake-up to send (it still invalidates cached reads).
    pub fn plain(value: T) -> Written<T> {
        Written { value, effects: Effects::default() }
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Written<U> {
        Written { value: f(self.value), effects: self.effects }
    }
}

/// How the effects reach the actors: implemented by `actors::Dispatcher`.
/// Tests of services without actors use [`NoDispatch`].
pub trait Dispatch: Send + Sync + 'static {
    fn dispatch(&self, effects: &Effects);
}

/// Dispatches nothing (services run without actors: tools, unit tests).
pub struct NoDispatch;

impl Dispatch for NoDispatch {
    fn dispatch(&self, _: &Effects) {}
}

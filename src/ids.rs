//! Every generated id and random value of the daemon, made one way: from the
//! system's random source, failing as `INTERNAL` (never a panic) when it does.
//!
//! - lead ids: `ld_` + creation ms (48 bits) + 48 random bits, in hex. Time
//!   first, so new leads append to the primary-key and event indexes instead
//!   of touching a random page of each (fewer pages per commit, a smaller WAL);
//!   the random half keeps ids unguessable and unique across processes;
//! - run ids (the owner of a lease: an account sync run `as_`, a pixel's send
//!   run `cs_`): random, so two processes never hold the same lease;
//! - keys: `RASTRO_SECRETS_KEY` (32 bytes, base64) and the demo's host key;
//! - the dashboard's operator ids, session ids and CSRF tokens.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::error::{Error, Result};

/// `n` bytes from the system's random source.
pub fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| Error::internal(format!("the system random source failed: {e}")))?;
    Ok(bytes)
}

/// `n` bytes from the system's random source for an id, taken from a
/// per-thread block fetched 256 bytes at a time: a system call per event id
/// was 2-3 % of the writer thread under 50-event batches. Each byte is
/// served once (cleared as it is taken). Keys, tokens and secrets take
/// theirs from [`random_bytes`], straight from the source.
fn id_bytes<const N: usize>() -> Result<[u8; N]> {
    const BLOCK: usize = 256;
    const { assert!(N <= BLOCK) };
    thread_local! {
        static POOL: std::cell::RefCell<([u8; BLOCK], usize)> = const { std::cell::RefCell::new(([0; BLOCK], BLOCK)) };
    }
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        let (block, at) = &mut *pool;
        if *at + N > BLOCK {
            getrandom::fill(block).map_err(|e| Error::internal(format!("the system random source failed: {e}")))?;
            *at = 0;
        }
        let taken = &mut block[*at..*at + N];
        let mut out = [0u8; N];
        out.copy_from_slice(taken);
        taken.fill(0);
        *at += N;
        Ok(out)
    })
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// A lead's id, ordered by its creation time `now` (epoch ms).
pub fn lead_id(now: i64) -> Result<String> {
    let random: [u8; 6] = id_bytes()?;
    Ok(format!("ld_{:012x}{}", (now.max(0) as u64) & 0xffff_ffff_ffff, hex(&random)))
}

/// The kinds of run that hold a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// One run of an ad account's sync.
    AccountSync,
    /// One pass of a pixel's sender over its queue.
    ConversionSend,
    /// One pass of a Page's actor over its form-lead receipts.
    LeadFetch,
}

/// A fresh run id: the lease owner of one run.
pub fn run_id(kind: RunKind) -> Result<String> {
    let random: [u8; 9] = random_bytes()?;
    let prefix = match kind {
        RunKind::AccountSync => "as_",
        RunKind::ConversionSend => "cs_",
        RunKind::LeadFetch => "lf_",
    };
    Ok(format!("{prefix}{}", hex(&random)))
}

/// A fresh `RASTRO_SECRETS_KEY`: 32 random bytes, base64 (`rastrod keygen`).
pub fn secrets_key() -> Result<String> {
    Ok(STANDARD.encode(random_bytes::<32>()?))
}

/// A fresh random token of 24 bytes in hex (the demo's host key).
pub fn token() -> Result<String> {
    Ok(hex(&random_bytes::<24>()?))
}

/// A dashboard operator's id.
pub fn operator_id() -> Result<String> {
    Ok(format!("op_{}", hex(&random_bytes::<12>()?)))
}

/// A dashboard session id (the cookie's value) or CSRF token: 32 random bytes in hex.
pub fn session_secret() -> Result<String> {
    Ok(hex(&random_bytes::<32>()?))
}

/// A short random password (the demo operator's, printed at start).
pub fn demo_password() -> Result<String> {
    Ok(hex(&random_bytes::<8>()?))
}

/// The last time-ordered id value made by this process (see `time_ordered`).
static LAST_ORDERED: std::sync::Mutex<u128> = std::sync::Mutex::new(0);

/// `prefix` + 24 lowercase hex: 48-bit ms time then 48 random bits, strictly
/// increasing per process (web analytics' `s_`, `e_` ids, whose order pages follow: PAGE-07).
pub fn time_ordered(prefix: &str, now: i64) -> Result<String> {
    let random: [u8; 6] = id_bytes()?;
    let mut r = [0u8; 16];
    r[10..].copy_from_slice(&random);
    let candidate = ((now.max(0) as u128 & 0xffff_ffff_ffff) << 48) | u128::from_be_bytes(r);
    let value = {
        let mut last = LAST_ORDERED.lock().unwrap_or_else(|p| p.into_inner());
        *last = candidate.max(*last + 1) & 0xffff_ffff_ffff_ffff_ffff_ffff;
        *last
    };
    Ok(format!("{prefix}{value:024x}"))
}

/// `prefix` + 22 base64url random chars (web analytics' `v_`, `u_` ids).
pub fn random_b64(prefix: &str) -> Result<String> {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let bytes: [u8; 17] = id_bytes()?;
    let mut s = URL_SAFE_NO_PAD.encode(bytes);
    s.truncate(22);
    Ok(format!("{prefix}{s}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lead_ids_sort_by_creation_time_and_differ_within_a_millisecond() {
        let (a, b, c) = (lead_id(1_000).unwrap(), lead_id(1_000).unwrap(), lead_id(1_001).unwrap());
        assert_eq!(a.len(), 3 + 24);
        assert_ne!(a, b);
        assert!(a < c && b < c);
    }

    #[test]
    fn id_bytes_are_served_once_across_refills() {
        // 17 does not divide the block: takes straddle each refill.
        let taken: Vec<[u8; 17]> = (0..100).map(|_| id_bytes().unwrap()).collect();
        let distinct: std::collections::HashSet<_> = taken.iter().collect();
        assert_eq!(distinct.len(), taken.len());
        assert!(taken.iter().all(|b| b.iter().any(|&x| x != 0)), "no cleared byte is served");
    }

    #[test]
    fn run_ids_name_their_kind() {
        assert!(run_id(RunKind::AccountSync).unwrap().starts_with("as_"));
        let id = run_id(RunKind::ConversionSend).unwrap();
        assert!(id.starts_with("cs_") && id.len() == 3 + 18);
        assert_eq!(STANDARD.decode(secrets_key().unwrap()).unwrap().len(), 32);
        assert_eq!(token().unwrap().len(), 48);
    }
}

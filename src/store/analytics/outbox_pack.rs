//! The bytes of an outbox pack: one write's rollup rows of one site, in one
//! value (issue 25). A row per event cost an insert, a read and a delete of
//! 20 columns and their key; a pack costs those once per site and write.
//!
//! Layout: a version byte, then each row's fields in declaration order
//! (the site is the pack's column, so no row repeats it). Integers are
//! zigzag LEB128; `at` is written as its distance from the row before (a
//! write's events are minutes apart at most) and `session_start` as its
//! distance back from `at`. Texts are a length then UTF-8; an optional one
//! adds 1 to the length so that 0 is none. The visitor and the session are
//! `0` when they are the row before's (a batch is one visitor's), else
//! length + 1. The reader checks every length and refuses what does not
//! parse to the end: a damaged pack is an error, never a panic or a
//! half-read.

use super::OutboxRow;

const VERSION: u8 = 1;

/// `rows` as a pack's body.
pub fn encode<B: std::borrow::Borrow<OutboxRow>>(rows: &[B]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + rows.len() * 64);
    out.push(VERSION);
    let mut last: Option<&OutboxRow> = None;
    for o in rows {
        let o = o.borrow();
        repeat(&mut out, &o.visitor_id, last.map(|l| l.visitor_id.as_str()));
        repeat(&mut out, &o.session_id, last.map(|l| l.session_id.as_str()));
        text(&mut out, &o.kind);
        int(&mut out, o.at.wrapping_sub(last.map_or(0, |l| l.at)));
        int(&mut out, o.at.wrapping_sub(o.session_start));
        text(&mut out, &o.route);
        opt_text(&mut out, o.name.as_deref());
        for n in [o.new_session, o.d_bounces, o.d_duration, o.d_engaged_sum, o.d_engaged_count] {
            int(&mut out, n);
        }
        opt_text(&mut out, o.goals.as_deref());
        opt_text(&mut out, o.new_goals.as_deref());
        opt_text(&mut out, o.prev_route.as_deref());
        int(&mut out, o.pageview_no);
        opt_int(&mut out, o.vital_old);
        opt_int(&mut out, o.vital_new);
        last = Some(o);
    }
    out
}

/// The rows of a pack of `site_id`, in the order they were written.
pub fn decode(site_id: &str, body: &[u8]) -> Result<Vec<OutboxRow>, String> {
    let mut r = Reader { bytes: body, at: 0 };
    let version = r.byte()?;
    if version != VERSION {
        return Err(format!("an outbox pack of version {version}"));
    }
    let mut rows: Vec<OutboxRow> = Vec::new();
    while r.at < body.len() {
        let last = rows.last();
        let visitor_id = r.repeat(last.map(|l| l.visitor_id.as_str()))?;
        let session_id = r.repeat(last.map(|l| l.session_id.as_str()))?;
        let kind = r.text()?;
        let at = last.map_or(0, |l| l.at).wrapping_add(r.int()?);
        let session_start = at.wrapping_sub(r.int()?);
        let route = r.text()?;
        let name = r.opt_text()?;
        let [new_session, d_bounces, d_duration, d_engaged_sum, d_engaged_count] =
            [r.int()?, r.int()?, r.int()?, r.int()?, r.int()?];
        rows.push(OutboxRow {
            id: 0,
            site_id: site_id.to_string(),
            visitor_id,
            session_id,
            kind,
            at,
            session_start,
            route,
            name,
            new_session,
            d_bounces,
            d_duration,
            d_engaged_sum,
            d_engaged_count,
            goals: r.opt_text()?,
            new_goals: r.opt_text()?,
            prev_route: r.opt_text()?,
            pageview_no: r.int()?,
            vital_old: r.opt_int()?,
            vital_new: r.opt_int()?,
        });
    }
    Ok(rows)
}

fn uint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn int(out: &mut Vec<u8>, n: i64) {
    uint(out, ((n << 1) ^ (n >> 63)) as u64);
}

fn text(out: &mut Vec<u8>, s: &str) {
    uint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn opt_text(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.push(0),
        Some(s) => {
            uint(out, s.len() as u64 + 1);
            out.extend_from_slice(s.as_bytes());
        }
    }
}

/// `s`, or `0` when it is the row before's.
fn repeat(out: &mut Vec<u8>, s: &str, before: Option<&str>) {
    if before == Some(s) { out.push(0) } else { opt_text(out, Some(s)) }
}

fn opt_int(out: &mut Vec<u8>, n: Option<i64>) {
    match n {
        None => out.push(0),
        Some(n) => {
            out.push(1);
            int(out, n);
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let b = *self.bytes.get(self.at).ok_or("an outbox pack cut short")?;
        self.at += 1;
        Ok(b)
    }

    fn uint(&mut self) -> Result<u64, String> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err("an outbox pack with an overlong number".into())
    }

    fn int(&mut self) -> Result<i64, String> {
        let n = self.uint()?;
        Ok(((n >> 1) as i64) ^ -((n & 1) as i64))
    }

    fn str_of(&mut self, len: u64) -> Result<String, String> {
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| self.at.checked_add(len))
            .filter(|&end| end <= self.bytes.len())
            .ok_or("an outbox pack cut short")?;
        let s = std::str::from_utf8(&self.bytes[self.at..end]).map_err(|_| "an outbox pack with a text not UTF-8")?;
        self.at = end;
        Ok(s.to_string())
    }

    fn text(&mut self) -> Result<String, String> {
        let len = self.uint()?;
        self.str_of(len)
    }

    fn opt_text(&mut self) -> Result<Option<String>, String> {
        match self.uint()? {
            0 => Ok(None),
            n => self.str_of(n - 1).map(Some),
        }
    }

    fn repeat(&mut self, before: Option<&str>) -> Result<String, String> {
        match self.opt_text()? {
            Some(s) => Ok(s),
            None => before.map(str::to_string).ok_or_else(|| "an outbox pack repeating no row".to_string()),
        }
    }

    fn opt_int(&mut self) -> Result<Option<i64>, String> {
        match self.byte()? {
            0 => Ok(None),
            1 => self.int().map(Some),
            _ => Err("an outbox pack with a bad marker".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(visitor: &str, session: &str, kind: &str, at: i64) -> OutboxRow {
        OutboxRow {
            site_id: "loja".into(),
            visitor_id: visitor.into(),
            session_id: session.into(),
            kind: kind.into(),
            at,
            session_start: at - 60_000,
            route: "/p/:id".into(),
            ..OutboxRow::default()
        }
    }

    fn sample() -> Vec<OutboxRow> {
        let mut a = row("v_visitor0001", "s_1", "pageview", 1_764_600_000_000);
        a.new_session = 1;
        a.d_bounces = 1;
        a.prev_route = Some(String::new());
        a.pageview_no = 1;
        let mut b = row("v_visitor0001", "s_1", "engagement", 1_764_600_004_000);
        b.d_engaged_sum = 4000;
        b.d_engaged_count = -1;
        b.d_bounces = -1;
        b.d_duration = 4000;
        let mut c = row("v_visitor0002", "s_2", "vital", 1_764_599_000_000);
        c.name = Some("lcp".into());
        c.vital_old = Some(-5);
        c.vital_new = Some(i64::MAX);
        c.goals = Some("g_1 g_2".into());
        c.new_goals = Some("g_2".into());
        c.route = "/ção".into();
        let mut d = row("v_visitor0001", "s_2", "event", 0);
        (d.at, d.session_start) = (i64::MIN, i64::MAX);
        d.name = Some(String::new());
        d.vital_old = Some(0);
        vec![a, b, c, d]
    }

    #[test]
    fn a_pack_reads_back_as_the_rows_written_with_the_packs_site() {
        let rows = sample();
        let body = encode(&rows);
        assert_eq!(decode("loja", &body).unwrap(), rows);
        let other = decode("dolar", &body).unwrap();
        assert!(other.iter().all(|o| o.site_id == "dolar"));
        assert_eq!(decode("loja", &encode::<OutboxRow>(&[])).unwrap(), vec![]);
    }

    #[test]
    fn a_batch_of_one_visitor_costs_a_fraction_of_its_columns() {
        let rows: Vec<OutboxRow> = (0..50)
            .map(|i| {
                let mut o = row("v_0123456789abcdef0123", "s_0123456789abcdef0123", "pageview", 1_764_600_000_000 + i);
                o.prev_route = Some("/p/:id".into());
                o.pageview_no = i + 1;
                o
            })
            .collect();
        let per_row = encode(&rows).len() / rows.len();
        // The kind, route and previous route (24 bytes), a byte or three per
        // number, the ids not repeated: the row's own columns take 150 or more.
        assert!(per_row <= 42, "{per_row} bytes a row");
    }

    #[test]
    fn a_damaged_pack_is_an_error_never_a_panic() {
        let body = encode(&sample());
        for cut in 0..body.len() {
            let _ = decode("loja", &body[..cut]);
        }
        assert!(decode("loja", &[]).is_err());
        assert!(decode("loja", &[2]).is_err(), "an unknown version");
        assert!(decode("loja", &body[..body.len() - 1]).is_err(), "cut in the last row");
        assert!(decode("loja", &[VERSION, 0]).is_err(), "a repeat with no row before");
        assert!(decode("loja", &[VERSION, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).is_err());
        assert!(decode("loja", &[VERSION, 3, 0xc3, 0x28]).is_err(), "not UTF-8");
        let mut flipped = body;
        for i in 1..flipped.len() {
            flipped[i] ^= 0x5a;
            let _ = decode("loja", &flipped);
            flipped[i] ^= 0x5a;
        }
    }
}

//! A tiny MaxMind DB writer for the tests (the format's spec, IPv4 tree,
//! 24-bit records): tests build their own database and never download one.

use std::net::Ipv4Addr;

pub enum V {
    Str(String),
    U16(u16),
    U32(u32),
    U64(u64),
    Map(Vec<(&'static str, V)>),
    Arr(Vec<V>),
}

pub fn s(x: &str) -> V {
    V::Str(x.to_string())
}

fn control(out: &mut Vec<u8>, kind: u8, size: usize) {
    let (low, extra): (u8, Vec<u8>) = if size < 29 { (size as u8, vec![]) } else { (29, vec![(size - 29) as u8]) };
    if kind <= 7 {
        out.push((kind << 5) | low);
    } else {
        out.push(low);
        out.push(kind - 7);
    }
    out.extend(extra);
}

fn minimal(n: u64) -> Vec<u8> {
    n.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect()
}

fn encode(v: &V, out: &mut Vec<u8>) {
    match v {
        V::Str(x) => {
            control(out, 2, x.len());
            out.extend(x.as_bytes());
        }
        V::U16(n) => {
            let b = minimal(u64::from(*n));
            control(out, 5, b.len());
            out.extend(b);
        }
        V::U32(n) => {
            let b = minimal(u64::from(*n));
            control(out, 6, b.len());
            out.extend(b);
        }
        V::U64(n) => {
            let b = minimal(*n);
            control(out, 9, b.len());
            out.extend(b);
        }
        V::Map(kv) => {
            control(out, 7, kv.len());
            for (k, v) in kv {
                encode(&s(k), out);
                encode(v, out);
            }
        }
        V::Arr(items) => {
            control(out, 11, items.len());
            for v in items {
                encode(v, out);
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Rec {
    Empty,
    Node(usize),
    Data(usize),
}

/// An IPv4 City-style database mapping each network to its record.
pub fn ipv4_db(networks: &[(Ipv4Addr, u8, V)]) -> Vec<u8> {
    let mut data = Vec::new();
    let mut offsets = Vec::new();
    for (_, _, v) in networks {
        offsets.push(data.len());
        encode(v, &mut data);
    }
    let mut nodes: Vec<[Rec; 2]> = vec![[Rec::Empty, Rec::Empty]];
    for (i, (net, prefix, _)) in networks.iter().enumerate() {
        let bits = u32::from(*net);
        let mut node = 0;
        for d in 0..*prefix {
            let bit = ((bits >> (31 - d)) & 1) as usize;
            if d + 1 == *prefix {
                nodes[node][bit] = Rec::Data(i);
            } else {
                node = match nodes[node][bit] {
                    Rec::Node(n) => n,
                    _ => {
                        nodes.push([Rec::Empty, Rec::Empty]);
                        let n = nodes.len() - 1;
                        nodes[node][bit] = Rec::Node(n);
                        n
                    }
                };
            }
        }
    }
    let count = nodes.len();
    let mut out = Vec::new();
    for n in &nodes {
        for r in n {
            let value = match r {
                Rec::Empty => count,
                Rec::Node(i) => *i,
                Rec::Data(i) => count + 16 + offsets[*i],
            } as u32;
            out.extend(&value.to_be_bytes()[1..]);
        }
    }
    out.extend([0u8; 16]);
    out.extend(data);
    out.extend(b"\xAB\xCD\xEFMaxMind.com");
    let meta = V::Map(vec![
        ("binary_format_major_version", V::U16(2)),
        ("binary_format_minor_version", V::U16(0)),
        ("build_epoch", V::U64(1_764_547_200)),
        ("database_type", s("GeoIP2-City")),
        ("description", V::Map(vec![])),
        ("ip_version", V::U16(4)),
        ("languages", V::Arr(vec![])),
        ("node_count", V::U32(count as u32)),
        ("record_size", V::U16(24)),
    ]);
    encode(&meta, &mut out);
    out
}

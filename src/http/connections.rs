//! The cap on open connections per client address, enforced at accept time:
//! every accepted socket is counted against its peer's IP before the HTTP
//! dispatcher sees it, and one over the cap gets a `{code, message}` 503 and
//! is closed at once, so one client cannot hold the process's file
//! descriptors. (The total cap is actix-server's per-worker
//! `max_concurrent_connections`: past it, accepting pauses and new
//! connections wait in the kernel's backlog, holding no descriptor of ours.)

use std::collections::HashMap;
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_service::{Service, ServiceFactory, fn_factory, fn_service};
use actix_web::rt::net::TcpStream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Open connections by client address.
pub struct PerIp {
    max: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One counted connection; dropping it uncounts it.
pub struct Held {
    limits: Arc<PerIp>,
    ip: IpAddr,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut open = self.limits.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

impl PerIp {
    /// `max` connections per address; 0 counts nothing.
    pub fn new(max: usize) -> Arc<PerIp> {
        Arc::new(PerIp { max, open: Mutex::new(HashMap::new()) })
    }

    /// Counts a connection from `ip`, or None when that address is at the cap.
    pub fn enter(self: &Arc<Self>, ip: IpAddr) -> Option<Held> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(ip).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(Held { limits: self.clone(), ip })
    }

    /// Connections open from `ip` now.
    pub fn open_from(&self, ip: IpAddr) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).get(&ip).copied().unwrap_or(0)
    }
}

const REFUSAL_BODY: &str =
    r#"{"code":"UNAVAILABLE","message":"too many connections from this address; retry when some have closed"}"#;

/// Answers 503 and closes. The request is drained for a moment first: closing
/// with unread bytes would reset the connection and lose the answer.
async fn refuse(mut io: TcpStream) {
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\nretry-after: 1\r\n\r\n",
        REFUSAL_BODY.len()
    );
    let _ = tokio::time::timeout(Duration::from_millis(250), async {
        io.write_all(head.as_bytes()).await?;
        io.write_all(REFUSAL_BODY.as_bytes()).await?;
        io.shutdown().await?;
        let mut buf = [0u8; 2048];
        while io.read(&mut buf).await? > 0 {}
        Ok::<_, std::io::Error>(())
    })
    .await;
}

/// Wraps the HTTP service factory with the per-address count.
pub fn gate<F>(
    inner: F,
    limits: Arc<PerIp>,
) -> impl ServiceFactory<TcpStream, Config = (), Response = (), Error = F::Error, InitError = F::InitError>
where
    F: ServiceFactory<TcpStream, Config = (), Response = ()> + 'static,
    F::Service: 'static,
    F::Future: 'static,
{
    fn_factory(move || {
        let building = inner.new_service(());
        let limits = limits.clone();
        async move {
            let svc = Rc::new(building.await?);
            Ok(fn_service(move |io: TcpStream| {
                let (svc, limits) = (svc.clone(), limits.clone());
                async move {
                    let held = match io.peer_addr() {
                        Ok(peer) if limits.max > 0 => match limits.enter(peer.ip()) {
                            Some(held) => Some(held),
                            None => {
                                refuse(io).await;
                                return Ok(());
                            }
                        },
                        _ => None,
                    };
                    let outcome = svc.call(io).await;
                    drop(held);
                    outcome
                }
            }))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::PerIp;

    #[test]
    fn an_address_holds_at_most_its_cap() {
        let limits = PerIp::new(2);
        let (a, b): (std::net::IpAddr, std::net::IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let first = limits.enter(a).unwrap();
        let _second = limits.enter(a).unwrap();
        assert!(limits.enter(a).is_none(), "a third from the same address");
        assert!(limits.enter(b).is_some(), "another address is not held back");
        drop(first);
        assert_eq!(limits.open_from(a), 1);
        assert!(limits.enter(a).is_some(), "a closed connection frees its place");
    }
}
